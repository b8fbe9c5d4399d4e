// The page examples/figure writes: HTML, CSS and a script that only displays the numbers embedded
// between the two halves (the JSON that `figure --json` prints). Nothing is loaded from anywhere:
// system fonts, inline style and script.
//
// The DOM is also what tests/figure checks: every number shown is an element
//   <td class="cell ..." data-m="KIND" data-i="I" data-j="J">text</td>
// with KIND one of grid (the T x T grid at the current step), sum (its rows' shares added up), scores /
// scaled / masked / shares / rowsum (the selected row at each stage of its journey), weight, values,
// output (the blend); and <main> carries data-raw, data-scale, data-row and data-step.
#pragma once

#include <string_view>

namespace figure {

inline constexpr std::string_view kPageBeforeData = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Self-attention, one row at a time · tinygpt</title>
<style>
:root {
  --bg: #f7f6f2; --paper: #fff; --ink: #1f2933; --muted: #66707a; --line: #dedbd2;
  --accent: #c2410c; --accent-soft: #fde7d9;
  --pos: 217, 95, 14; --neg: 37, 99, 200; --share: 13, 128, 120;
  --mono: ui-monospace, "SFMono-Regular", "Cascadia Mono", Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace;
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 18px 24px 36px; }
header h1 { font-size: 21px; margin: 0; letter-spacing: -0.01em; }
header p { margin: 2px 0 0; color: var(--muted); font-size: 14px; }
.controls { display: flex; flex-wrap: wrap; align-items: center; gap: 10px 20px; margin: 14px 0 16px;
  padding: 10px 14px; background: var(--paper); border: 1px solid var(--line); border-radius: 10px; }
.controls label { display: inline-flex; align-items: center; gap: 7px; cursor: pointer; user-select: none; }
.controls input[type=checkbox] { width: 17px; height: 17px; accent-color: var(--accent); margin: 0; }
.controls .hint { color: var(--muted); font-size: 13px; }
.player { display: inline-flex; align-items: center; gap: 6px; }
button { font: inherit; cursor: pointer; border: 1px solid var(--line); background: var(--paper); color: var(--ink);
  border-radius: 7px; padding: 3px 10px; }
button:hover { border-color: var(--accent); }
button.play { background: var(--accent); color: #fff; border-color: var(--accent); font-size: 16px; padding: 3px 16px; }
button:disabled { opacity: .35; cursor: default; }
.stages { display: inline-flex; gap: 4px; }
.stages button { font-size: 13px; padding: 3px 9px; color: var(--muted); }
.stages button.done { color: var(--ink); }
.stages button.now { background: var(--accent-soft); border-color: var(--accent); color: var(--accent); font-weight: 600; }
.spacer { flex: 1; }
a.link { font-family: var(--mono); font-size: 12px; color: var(--muted); text-decoration: none; }
a.link:hover { color: var(--accent); }
/* The grid takes what room it needs up to what the window leaves beside the caption, and scrolls inside
   itself beyond that (its row and column labels stay in view); below 900 px the caption goes under it. */
.layout { display: grid; grid-template-columns: minmax(0, max-content) minmax(300px, 1fr); gap: 26px; align-items: start; }
@media (max-width: 900px) { .layout { grid-template-columns: minmax(0, 1fr); } }
.scroller { overflow: auto; max-height: 80vh; }
.scroller th { background: var(--paper); }
.scroller th.query, .scroller th.stage { position: sticky; left: 0; z-index: 1; }
.scroller tr:first-child th { position: sticky; top: 0; z-index: 1; }
.scroller tr:first-child th:first-child { z-index: 2; }
table.compact td.cell { min-width: 44px; height: 28px; font-size: 12px; padding: 0 3px; }
.panel { background: var(--paper); border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; }
.panel h2 { font-size: 14px; margin: 0 0 8px; color: var(--muted); font-weight: 600; letter-spacing: .02em; }
table { border-collapse: separate; border-spacing: 3px; }
td.cell { font-family: var(--mono); font-variant-numeric: tabular-nums; text-align: center; font-size: 13px;
  min-width: 54px; height: 36px; padding: 0 5px; border-radius: 5px; transition: background-color .25s, opacity .25s; }
table.grid td.cell { cursor: pointer; }
td.cell.masked { background: repeating-linear-gradient(135deg, #e9e7e3 0 5px, #f3f2ef 5px 10px) !important;
  color: #a3a09a !important; }
td.cell.dim { opacity: .38; }
td.cell.sel { box-shadow: 0 0 0 2px var(--accent); }
td.cell.sum { background: #f1f0ec; color: var(--muted); }
th { font-weight: 600; font-size: 13px; color: var(--muted); }
th.key { font-family: var(--mono); font-size: 14px; color: var(--ink); padding-bottom: 2px; }
th.query { font-family: var(--mono); font-size: 14px; color: var(--ink); text-align: right; padding-right: 6px; cursor: pointer; }
th.query.sel { color: var(--accent); }
th.query.sel::before { content: "▸ "; }
th.corner { font-weight: 400; font-size: 11px; text-align: left; line-height: 1.25; vertical-align: bottom; }
th.stage { text-align: right; padding-right: 8px; font-size: 13px; white-space: nowrap; }
tr.now th.stage { color: var(--accent); }
tr.now td.cell:not(.masked) { box-shadow: 0 0 0 2px var(--accent); }
.caption .step { font-size: 13px; color: var(--accent); font-weight: 700; letter-spacing: .02em; }
.caption h3 { margin: 2px 0 8px; font-size: 19px; }
.caption p { margin: 0 0 10px; }
.caption code, .formula { font-family: var(--mono); font-size: 13.5px; background: #f3f1ec; padding: 1px 5px; border-radius: 4px; }
.caption .formula { display: inline-block; margin: 2px 0 10px; padding: 4px 9px; }
.caption .measure { color: var(--muted); font-size: 14px; border-top: 1px solid var(--line); padding-top: 8px; margin: 0; }
.below { margin-top: 18px; display: grid; grid-template-columns: minmax(0, 1fr); gap: 18px; }
.blend td.cell { min-width: 46px; height: 28px; font-size: 12px; }
.blend td.op { color: var(--muted); text-align: center; padding: 0 2px; }
.blend tr.out td.cell { box-shadow: 0 0 0 2px var(--accent); font-weight: 600; }
.blend tr.rule td { border-top: 1px solid var(--line); height: 2px; padding: 0; }
.blend tr.masked td.cell.weight ~ td.cell { opacity: .25; }
.legend { color: var(--muted); font-size: 13px; margin: 6px 0 0; }
.swatch { display: inline-block; width: 34px; height: 10px; border-radius: 3px; vertical-align: middle; margin: 0 4px; }
footer { margin-top: 20px; color: var(--muted); font-size: 13px; }
</style>
</head>
<body>
<main id="figure" data-raw="" data-scale="" data-row="" data-step="">
  <header>
    <h1>Self-attention, one row at a time</h1>
    <p id="source"></p>
  </header>
  <div class="controls">
    <label><input type="checkbox" id="raw"> compare x with x</label>
    <label><input type="checkbox" id="scale"> <span id="scale-label">divide by √width</span></label>
    <span class="player">
      <button id="back" title="previous step (←)">◀</button>
      <button id="play" class="play" title="next step (→)">▶</button>
    </span>
    <span class="stages" id="stages"></span>
    <span class="hint">click a row to follow it · ↑ ↓ rows · ← → steps</span>
    <span class="spacer"></span>
    <a class="link" id="link" href="#">#</a>
  </div>
  <div class="layout">
    <div class="panel">
      <h2 id="grid-title"></h2>
      <div class="scroller"><table class="grid" id="grid"></table></div>
      <p class="legend" id="legend"></p>
    </div>
    <div class="panel caption" id="caption"></div>
  </div>
  <div class="below">
    <div class="panel" id="journey-panel"><h2 id="journey-title"></h2><div class="scroller"><table id="journey"></table></div></div>
    <div class="panel blend" id="blend-panel"><h2 id="blend-title"></h2><div class="scroller"><table id="blend"></table></div></div>
  </div>
  <footer id="footer"></footer>
</main>
<script id="figure-data" type="application/json">
)html";

inline constexpr std::string_view kPageAfterData = R"html(</script>
<script>
"use strict";
(function () {
  // Everything below only displays the numbers above: each was computed by tinygpt (examples/figure).
  const data = JSON.parse(document.getElementById("figure-data").textContent);
  const T = data.window;
  // A long window's numbers in smaller cells (the grid then scrolls inside itself: .scroller).
  for (const id of ["grid", "journey"]) document.getElementById(id).classList.toggle("compact", T > 10);
  const STAGES = ["scores", "scaled", "masked", "shares", "blend"];
  const state = { raw: 0, scale: 1, row: T - 1, step: 0 };
  const $ = (id) => document.getElementById(id);

  // --- the URL fragment holds the state: #raw=1&scale=0&row=3&step=2 ---------------------------------
  function readHash() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ""));
    const pick = (key, max, fallback) => {
      const v = params.get(key);
      return v !== null && /^[0-9]+$/.test(v) && Number(v) <= max ? Number(v) : fallback;
    };
    state.raw = pick("raw", 1, 0);
    state.scale = pick("scale", 1, 1);
    state.row = pick("row", T - 1, T - 1);
    state.step = pick("step", 4, 0);
  }
  const fragment = () => `#raw=${state.raw}&scale=${state.scale}&row=${state.row}&step=${state.step}`;
  function go(change) {
    Object.assign(state, change);
    if (location.hash !== fragment()) history.replaceState(null, "", fragment());
    render();
  }

  // --- formatting ---------------------------------------------------------------------------------------
  function num(v, digits = 2) {
    if (v === null) return "−∞";
    let s = v.toFixed(digits);
    if (/^-0\.?0*$/.test(s)) s = s.slice(1);
    return s.replace("-", "−");
  }
  const pct = (v) => (v === null ? "–" : `${(v * 100).toFixed(0)}%`);
  const short = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(2));
  // Colour of a score or value (diverging, against the range) and of a share (0 to 1).
  function tint(cell, v, range, share) {
    if (v === null) return;
    const a = share ? Math.sqrt(v) : Math.min(1, Math.abs(v) / (range || 1));  // small shares stay visible
    const rgb = share ? "var(--share)" : v >= 0 ? "var(--pos)" : "var(--neg)";
    cell.style.backgroundColor = `rgba(${rgb}, ${(0.06 + 0.84 * a).toFixed(3)})`;
    cell.style.color = a > 0.55 ? "#fff" : "";
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  // One number on the page: the attributes tests/figure reads, in this order.
  function cell(kind, i, j, v, extra) {
    const c = el("td", "cell" + (extra ? " " + extra : ""));
    c.setAttribute("data-m", kind);
    c.setAttribute("data-i", String(i));
    c.setAttribute("data-j", String(j));
    c.textContent = num(v);
    return c;
  }

  // What a stage shows, for the grid and the journey.
  function stageMatrix(st, stage) {
    return [st.scores, st.scaled, st.masked, st.shares, st.shares][stage];
  }
  function paint(c, st, stage, v, masked) {
    if (masked) c.classList.add("masked");
    else tint(c, v, st.scores_range, stage >= 3);
  }
  // The divisor of a state: √width, or the head's own when it divides by something else (data.head_divisor).
  const ownDivisor = (st) => !st.raw && data.head_divisor !== null;
  const divisorName = (st) => (ownDivisor(st) ? short(st.divisor) : `√${st.width}`);
  function stageName(st, stage) {
    return [
      st.raw ? "x·x scores" : "Q·K scores",
      st.scale ? `÷ ${divisorName(st)}` : "not divided",
      "masked",
      "softmax shares",
      "blend of values",
    ][stage];
  }
  const label = (i) => data.labels[i];
  const rowName = (i) => (data.source === "checkpoint" ? `row ${i} (“${label(i)}”)` : `row ${i}`);

  // --- the grid: every row at the current stage ----------------------------------------------------------
  function renderGrid(st) {
    const grid = $("grid");
    grid.replaceChildren();
    const stage = Math.min(state.step, 3);
    const m = stageMatrix(st, stage);
    const head = el("tr");
    head.append(el("th", "corner", "looking ↓ · looked at →"));
    for (let j = 0; j < T; j++) head.append(el("th", "key", label(j)));
    if (stage === 3) head.append(el("th", "", "Σ"));
    grid.append(head);
    for (let i = 0; i < T; i++) {
      const tr = el("tr");
      const sel = i === state.row;
      const th = el("th", "query" + (sel ? " sel" : ""), label(i));
      th.addEventListener("click", () => go({ row: i }));
      tr.append(th);
      for (let j = 0; j < T; j++) {
        const masked = stage >= 2 && st.masked[i][j] === null;
        const c = cell("grid", i, j, m[i][j], sel ? "sel" : "dim");
        paint(c, st, stage, m[i][j], masked);
        c.addEventListener("click", () => go({ row: i }));
        tr.append(c);
      }
      if (stage === 3) tr.append(cell("sum", i, 0, st.row_sums[i], "sum" + (sel ? "" : " dim")));
      grid.append(tr);
    }
    const what = ["the scores", "the scores, " + (st.scale ? "scaled" : "not divided"), "the masked scores",
      "the shares", "the shares"][state.step];
    $("grid-title").textContent = `The grid: ${what} (${T} × ${T})`;
    $("legend").replaceChildren();
    const legend = $("legend");
    if (stage < 3) {
      legend.append("negative", swatch("var(--neg)"), swatch("var(--pos)"), "positive  ·  ");
    } else {
      legend.append("0", swatch("var(--share)"), "1 share  ·  ");
    }
    legend.append(`rows: the position doing the looking; columns: the position being looked at`);
  }
  function swatch(rgb) {
    const s = el("span", "swatch");
    s.style.background = `rgba(${rgb}, 0.85)`;
    return s;
  }

  // --- the journey: the selected row through every stage so far ----------------------------------------
  function renderJourney(st) {
    const table = $("journey");
    table.replaceChildren();
    const i = state.row;
    $("journey-title").textContent = `The journey of ${rowName(i)}`;
    const head = el("tr");
    head.append(el("th"));
    for (let j = 0; j < T; j++) head.append(el("th", "key", label(j)));
    table.append(head);
    const last = Math.min(state.step, 3);
    for (let stage = 0; stage <= last; stage++) {
      const tr = el("tr", stage === state.step ? "now" : "");
      tr.append(el("th", "stage", stageName(st, stage)));
      const m = stageMatrix(st, stage);
      for (let j = 0; j < T; j++) {
        const masked = stage >= 2 && st.masked[i][j] === null;
        const c = cell(STAGES[stage], i, j, m[i][j]);
        paint(c, st, stage, m[i][j], masked);
        tr.append(c);
      }
      if (stage === 3) tr.append(cell("rowsum", i, 0, st.row_sums[i], "sum"));
      table.append(tr);
    }
  }

  // --- the blend: shares times values, added up -----------------------------------------------------------
  function renderBlend(st) {
    const panel = $("blend-panel");
    const table = $("blend");
    table.replaceChildren();
    panel.hidden = state.step !== 4;
    if (state.step !== 4) return;
    const i = state.row;
    $("blend-title").textContent =
      `The blend: ${rowName(i)}'s output = Σ share × value (values: ${T} positions × width ${data.head_size})`;
    for (let j = 0; j < T; j++) {
      const masked = st.masked[i][j] === null;
      const tr = el("tr", masked ? "masked" : "");
      tr.append(el("th", "query", label(j)));
      const w = cell("weight", i, j, st.shares[i][j], "weight");
      paint(w, st, 3, st.shares[i][j], masked);
      tr.append(w, el("td", "op", "×"));
      for (let k = 0; k < data.head_size; k++) {
        const c = cell("values", j, k, st.values[j][k]);
        tint(c, st.values[j][k], st.values_range, false);
        tr.append(c);
      }
      table.append(tr);
    }
    const rule = el("tr", "rule");
    rule.append(el("td"), el("td"), el("td"));
    for (let k = 0; k < data.head_size; k++) rule.append(el("td"));
    table.append(rule);
    const out = el("tr", "out");
    out.append(el("th", "query sel", label(i)), el("td", "op", "output"), el("td", "op", "="));
    for (let k = 0; k < data.head_size; k++) {
      const c = cell("output", i, k, st.output[i][k]);
      tint(c, st.output[i][k], st.values_range, false);
      out.append(c);
    }
    table.append(out);
  }

  // --- the caption: what this step does, in the tutorial's words ---------------------------------------
  function renderCaption(st) {
    const box = $("caption");
    box.replaceChildren();
    const i = state.row;
    const W = st.width, d = short(st.divisor);
    const titles = [
      st.raw ? "Compare x with x" : "Every query against every key",
      st.scale ? (ownDivisor(st) ? "Divide by the head's own divisor" : `Divide by √${W}`) : "Not divided",
      "The future is off limits",
      "Softmax: shares that add to 100%",
      "What comes out: a blend of values",
    ];
    const formulas = [
      st.raw ? "scores = x @ x.T" : "scores = Q @ K.T",
      st.scale
        ? ownDivisor(st) ? `scores = scores / ${d}   (√${W} = ${short(Math.sqrt(W))})` : `scores = scores / √${W}   (÷ ${d})`
        : "scores = scores   (no divisor)",
      "scores[i, j] = −∞ where j > i",
      "shares = softmax(scores, dim=-1)",
      "out = shares @ V",
    ];
    const text = [
      st.raw
        ? `Row ${i}, column j holds x[${i}] · x[j]: the rows themselves, dotted. Dot a row with itself and every ` +
          `product is a square: never negative, nothing cancels. So the diagonal piles up, and every position ` +
          `starts the contest for its own attention with a lead over every stranger.`
        : `One cell: row ${i}, column j holds position ${i}'s query dotted with position j's key, one number for ` +
          `how strongly what ${i} is looking for matches what j offers. The whole square is a single ` +
          `multiplication; the .T lays the keys on their side so every query-row meets every key-row.`,
      st.scale && ownDivisor(st)
        ? `This head does not divide by √${W}: it divides by its own divisor, ${d}. A dot product adds up as ` +
          `many products as the vectors are wide, and √${W} = ${short(Math.sqrt(W))} would cancel that growth; ` +
          `a smaller divisor leaves the scores bigger and the shares sharper, a larger one fades them.`
        : st.scale
        ? `A dot product adds up as many products as the vectors are wide, so wider heads mean bigger scores. ` +
          `The spread grows exactly like the square root of the width, so dividing by exactly that, √${W} = ${d}, ` +
          `cancels it. The colours fade: same range as the raw scores.`
        : `Nothing is divided. Skip it and the scores get big, softmax turns big scores into a spike, and a ` +
          `spike is flat: nudge any of those numbers and almost nothing changes, so almost no gradient comes back.`,
      `Position ${i} is being asked what comes after it; if it could look further it would simply read the ` +
        `answer. So everything above the diagonal is masked: set to −∞ before the softmax, because exp(−∞) is ` +
        `exactly zero. Forbidden positions end up with no weight at all, the permitted ones keep their relative sizes.`,
      `Every row adds to 100% (the Σ column): attention distributes a fixed amount of interest; it never creates ` +
        `more. The first position can only see itself.` +
        (st.raw ? " With x compared with x the diagonal lights up: each row keeps most of its attention for itself." : ""),
      `Each row of shares buys a blend: the output is the share-weighted average of the values, one new vector ` +
        `of width ${data.head_size} per position. ` +
        (i === 0
          ? "The first position can only see itself, so its output is exactly its own value, unchanged."
          : `Row ${i} now holds what it read from positions 0 to ${i}, in the proportions above.`),
    ];
    box.append(el("div", "step", `Step ${state.step + 1} of 5 · ${STAGES[state.step]} · ${rowName(i)}`));
    box.append(el("h3", "", titles[state.step]));
    box.append(el("div", "formula", formulas[state.step]));
    box.append(el("p", "", text[state.step]));
    const m = el("p", "measure");
    m.textContent =
      `In this state, over the looking rows 1 to ${T - 1}: each keeps at least ${pct(st.self_share.min)} ` +
      `of its attention for itself (median ${pct(st.self_share.median)}), and a row's largest share runs ` +
      `from ${num(st.largest_share.min)} to ${num(st.largest_share.max)}.`;
    if (T > 1) box.append(m);
    box.setAttribute("data-step", String(state.step));
  }

  function renderControls(st) {
    const raw = $("raw"), scale = $("scale");
    raw.checked = state.raw === 1;
    raw.toggleAttribute("checked", raw.checked);
    scale.checked = state.scale === 1;
    scale.toggleAttribute("checked", scale.checked);
    $("scale-label").textContent = ownDivisor(st)
      ? `divide by the head's divisor (${short(st.divisor)})`
      : `divide by √width (√${st.width} = ${short(st.divisor)})`;
    $("back").disabled = state.step === 0;
    const play = $("play");
    play.textContent = state.step === 4 ? "↺" : "▶";
    play.title = state.step === 4 ? "start the journey again" : "next step (→)";
    const stages = $("stages");
    stages.replaceChildren();
    STAGES.forEach((name, s) => {
      const b = el("button", s === state.step ? "now" : s < state.step ? "done" : "",
        `${s + 1} ${s === 1 ? (st.scale ? "÷ " + divisorName(st) : "no ÷") : name}`);
      b.addEventListener("click", () => go({ step: s }));
      stages.append(b);
    });
    const link = $("link");
    link.textContent = fragment();
    link.href = fragment();
    const root = $("figure");
    root.dataset.raw = String(state.raw);
    root.dataset.scale = String(state.scale);
    root.dataset.row = String(state.row);
    root.dataset.step = String(state.step);
  }

  function render() {
    const st = data.states[2 * state.raw + state.scale];
    renderControls(st);
    renderGrid(st);
    renderJourney(st);
    renderBlend(st);
    renderCaption(st);
  }

  // --- static text and events -------------------------------------------------------------------------------
  $("source").textContent =
    data.source === "random"
      ? `tinygpt · ${data.description}. Nothing is trained, so which position attends to which is arbitrary; ` +
        `the triangle, the rows adding to one and what the divisor does are true of every head.`
      : `tinygpt · ${data.description} “${data.prompt}” (${T} ${data.unit}; x has width ${data.n_embd}, the head ${data.head_size}).`;
  $("footer").textContent =
    `Every number on this page was computed by tinygpt (examples/figure, from the head's queries, keys, values ` +
    `and divisor) for each of the four ` +
    `checkbox states and embedded in the page; the script only displays them. ` +
    (data.source === "random" ? `Seed ${data.seed}.` : `Checkpoint ${data.checkpoint}, model ${data.model}.`) +
    ` The state is in the address: link it, reload it.`;
  $("raw").addEventListener("change", (e) => go({ raw: e.target.checked ? 1 : 0 }));
  $("scale").addEventListener("change", (e) => go({ scale: e.target.checked ? 1 : 0 }));
  $("play").addEventListener("click", () => {
    go({ step: state.step === 4 ? 0 : state.step + 1 });
    if (state.step === 4) $("blend-panel").scrollIntoView({ behavior: "smooth", block: "nearest" });
  });
  $("back").addEventListener("click", () => go({ step: Math.max(0, state.step - 1) }));
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" && e.key === " ") return;
    if (e.key === "ArrowRight") go({ step: Math.min(4, state.step + 1) });
    else if (e.key === "ArrowLeft") go({ step: Math.max(0, state.step - 1) });
    else if (e.key === "ArrowDown") go({ row: Math.min(T - 1, state.row + 1) });
    else if (e.key === "ArrowUp") go({ row: Math.max(0, state.row - 1) });
    else return;
    e.preventDefault();
  });
  window.addEventListener("hashchange", () => { readHash(); render(); });
  readHash();
  render();
})();
</script>
</body>
</html>
)html";

}  // namespace figure
