// The report page: the data as JSON inside a <script type="application/json">, and a small inline script
// that draws it (SVG line charts, or heatmaps when there are more series than colours; attention maps with
// a slider over the evaluations and a layer and head picker). Nothing is fetched.
#include "run_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <autograd/autograd.h>
#include <fmt/format.h>
#include <nn/attention.h>
#include <nn/files/atomic_file.h>
#include <nn/train/trainer.h>

#include "axis_label.h"
#include "script_json.h"

namespace report {

namespace {

constexpr std::string_view kDataStart = "<script type=\"application/json\" id=\"run-data\">";
constexpr std::string_view kDataEnd = "</script>";

double rounded(double v, double per_unit) { return std::round(v * per_unit) / per_unit; }
// NaN (not measured) becomes null in the JSON
nlohmann::ordered_json number_or_null(double v, double per_unit) {
    return std::isnan(v) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(rounded(v, per_unit));
}
// The step of an entry of "log" ([step, ...]) or of "grads" and "evals" ({"step": step, ...}); none for an
// entry without a whole-number step (a page not written by train).
std::optional<int64_t> step_of(const nlohmann::ordered_json& entry) {
    const nlohmann::ordered_json* step = entry.is_array() && !entry.empty()              ? &entry[0]
                                         : entry.is_object() && entry.contains("step") ? &entry["step"]
                                                                                       : nullptr;
    if (step == nullptr || !step->is_number_integer()) return std::nullopt;
    return step->get<int64_t>();
}
double significant(double v, int digits) { return std::stod(fmt::format("{:.{}g}", v, digits)); }

// The attention maps' labels (axis_label.h): the sample's tokens, or without them its characters.
nlohmann::ordered_json labels_of(const std::string& sample, const nlohmann::ordered_json& tokens) {
    nlohmann::ordered_json labels = nlohmann::ordered_json::array();
    for (const auto& token : tokens) labels.push_back(axis::label(token.get<std::string>()));
    for (size_t i = 0; tokens.empty() && i < sample.size();) {
        const size_t n = std::max<size_t>(1, axis::utf8_length(sample, i));
        labels.push_back(axis::label(sample.substr(i, n)));
        i += n;
    }
    return labels;
}

// The page around the data: styles, layout and the drawing script.
constexpr std::string_view kPageHead = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tinygpt run report</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}
.charts{display:flex;flex-wrap:wrap;gap:16px}.maps{display:flex;flex-wrap:wrap;gap:12px}
.head-map{font-size:12px}svg text{font:11px system-ui,sans-serif}.head-map svg text{font:10px system-ui,sans-serif}
.heatmap{max-width:100%;overflow-x:auto}.legend .key svg{vertical-align:middle}
.legend{max-width:560px}.legend span{margin-right:12px;white-space:nowrap}
.heatmap svg text{font:9px system-ui,sans-serif}
</style></head><body>
<h1>tinygpt run report</h1>
<table id="summary"><tr><th>last step</th><td id="summary-step"></td></tr>
<tr><th>train loss</th><td id="summary-train-loss"></td></tr>
<tr><th>val loss</th><td id="summary-val-loss"></td></tr>
<tr><th>learning rate</th><td id="summary-lr"></td></tr>
<tr><th>logged rows</th><td id="summary-rows"></td></tr>
<tr><th>evaluations</th><td id="summary-evals"></td></tr></table>
<h2>Loss and learning rate</h2><div class="charts" id="loss-charts"></div>
<h2>Gradient norms per parameter</h2>
<p id="grad-scale-choice" hidden><label><input type="checkbox" id="grad-own-scale"> each parameter on its own scale
(how its norm changes over the run), not one scale for all (which parameters get the largest)</label></p>
<div class="charts" id="grad-charts"></div>
<h2>Attention on a fixed sample</h2>
<p><input type="range" id="eval-slider" min="0" max="0" value="0"> evaluation at step <b id="eval-step"></b>
(drag to step back through earlier evaluations)</p>
<p><label>layer <select id="layer-select"></select></label> <label>head <select id="head-select"></select></label>
<span id="maps-shown"></span> <span id="maps-labels"></span></p>
<div class="maps" id="maps"></div>
<h2>Heads over training: entropy and largest share</h2><div class="charts" id="head-charts"></div>
<h2>Settings</h2><table id="settings"></table>
)html";

constexpr std::string_view kPageScript = R"html(<script>
"use strict";
const D = JSON.parse(document.getElementById("run-data").textContent);
const colors = ["#1f77b4","#d62728","#2ca02c","#ff7f0e","#9467bd","#8c564b","#e377c2","#7f7f7f","#bcbd22","#17becf"];
const esc = s => String(s).replace(/[&<>"]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;"}[c]));
const fmtNum = v => (v === null || v === undefined) ? "" : (Math.abs(v) >= 1e-3 && Math.abs(v) < 1e4 ? v.toPrecision(4) : v.toExponential(2));
// Text widths in the page's font, for labels that must not collide.
const textWidth = (() => { const c = document.createElement("canvas").getContext("2d"); return (s, px = 11) => { c.font = `${px}px system-ui, sans-serif`; return c.measureText(s).width; }; })();
// Ticks at round numbers: about n multiples of 1, 2 or 5 x 10^k from lo to hi (svg_chart.h's rule),
// each written with the decimals the step needs.
function roundTicks(lo, hi, n) {
  const raw = (hi - lo) / n, p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
  const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const values = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; ++k) values.push(k * step);
  return {step, values, text: v => decimals > 6 ? v.toExponential(0) : v.toFixed(decimals).replace(/^-(0\.?0*)$/, "$1")};
}
// On a log axis (values in log10): whole decades, with 2 and 5 between them over at most two decades.
function logTicks(lo, hi) {
  const a = Math.floor(lo + 1e-9), b = Math.max(Math.ceil(hi - 1e-9), a + 1), values = [];
  for (let k = a; k <= b; ++k) for (const m of b - a <= 2 ? [1, 2, 5] : [1]) if (k + Math.log10(m) <= b + 1e-9) values.push(k + Math.log10(m));
  const every = Math.ceil((b - a + 1) / 7);  // at most about 7 labels
  return {lo: a, hi: b, values: values.filter(v => Math.abs(v - Math.round(v)) > 1e-9 || (Math.round(v) - a) % every === 0),
          text: v => { const t = Number(Math.pow(10, v).toPrecision(1)); return t >= 1e-3 && t < 1e5 ? String(t) : t.toExponential(0); }};
}
// A line's look, drawn in the chart and in its legend: {color, width, dash, marker: "dot" or "ring"}.
const lineStyle = s => `stroke="${s.color}" stroke-width="${s.width || 1.5}"${s.dash ? ` stroke-dasharray="${s.dash}"` : ""}`;
const marker = (s, x, y) => s.marker === "ring" ? `<circle cx="${x}" cy="${y}" r="3.5" fill="none" stroke="${s.color}" stroke-width="1.3"/>`
                            : s.marker === "dot" ? `<circle cx="${x}" cy="${y}" r="2.2" fill="${s.color}"/>` : "";
// series: [{name, points: [[x, y], ...], and the look above (a colour by default)}], drawn in order; a log
// y axis when asked (non-positive values skipped). Ticks at round numbers, the y axis widened to them.
function chart(title, series, logY) {
  series = series.map((s, i) => ({color: colors[i % colors.length], ...s}));
  const W = 380, H = 230, R = 12, T = 22, B = 38;
  const f = y => logY ? Math.log10(y) : y;
  const pts = series.flatMap(s => s.points).filter(p => p[1] !== null && (!logY || p[1] > 0));
  let svg = "", L = 40;
  if (pts.length) {
    let x0 = Math.min(...pts.map(p => p[0])), x1 = Math.max(...pts.map(p => p[0]));
    let y0 = Math.min(...pts.map(p => f(p[1]))), y1 = Math.max(...pts.map(p => f(p[1])));
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) { const d = Math.abs(y0) * 0.1 || 0.5; y0 -= d; y1 += d; }
    let yt;
    if (logY) { yt = logTicks(y0, y1); y0 = yt.lo; y1 = yt.hi; }
    else { yt = roundTicks(y0, y1, 5); y0 = Math.floor(y0 / yt.step + 1e-9) * yt.step; y1 = Math.ceil(y1 / yt.step - 1e-9) * yt.step; yt = roundTicks(y0, y1, 5); }
    const xt = roundTicks(x0, x1, Math.min(5, x1 - x0));  // (steps are whole: a tick every step at most)
    L = Math.ceil(12 + Math.max(...yt.values.map(v => textWidth(yt.text(v)))));
    const X = x => L + (x - x0) / (x1 - x0) * (W - L - R), Y = y => T + (y1 - y) / (y1 - y0) * (H - T - B);
    for (const v of yt.values) svg += `<line x1="${L}" x2="${W-R}" y1="${Y(v).toFixed(1)}" y2="${Y(v).toFixed(1)}" stroke="#eee"/>` +
      `<text class="tick y" x="${L-5}" y="${(Y(v) + 4).toFixed(1)}" text-anchor="end">${yt.text(v)}</text>`;
    for (const v of xt.values) svg += `<line x1="${X(v).toFixed(1)}" x2="${X(v).toFixed(1)}" y1="${T}" y2="${H-B}" stroke="#eee"/>` +
      `<text class="tick x" x="${X(v).toFixed(1)}" y="${H-B+14}" text-anchor="middle">${xt.text(v)}</text>`;
    svg += `<rect x="${L}" y="${T}" width="${W-L-R}" height="${H-T-B}" fill="none" stroke="#bbb"/>`;
    svg += `<text x="${(L + W - R) / 2}" y="${H-6}" text-anchor="middle">step</text>`;
    for (const s of series) {
      const p = s.points.filter(q => q[1] !== null && (!logY || q[1] > 0));
      if (!p.length) continue;
      const xy = p.map(q => [X(q[0]).toFixed(1), Y(f(q[1])).toFixed(1)]);
      svg += `<polyline class="line" fill="none" ${lineStyle(s)} points="${xy.map(q => q.join(",")).join(" ")}"><title>${esc(s.name)}</title></polyline>`;
      if (p.length < 40) svg += xy.map(([x, y]) => marker(s, x, y)).join("");
    }
  }
  const key = s => `<span class="key"><svg width="30" height="10"><line x1="2" y1="5" x2="28" y2="5" ${lineStyle(s)}/>${marker(s, 15, 5)}</svg> ${esc(s.name)}</span>`;
  return `<div><svg width="${W}" height="${H}" role="img"><text x="${L}" y="14">${esc(title)}${logY ? " (log scale)" : ""}</text>${svg}</svg>` +
         `<div class="legend">${series.map(key).join(" ")}</div></div>`;
}
// More series than colours read badly as lines (148 for GPT-2 small): a heatmap instead, one row per
// series and one column per step (at most 240, evenly picked), its colour the value (log10 when logY) on
// one scale for every row, or with ownScale each row from its own smallest to its largest.
function heatmap(kind, title, names, steps, value, logY, ownScale) {
  const cols = steps.length > 240 ? Array.from({length: 240}, (_, k) => Math.round(k * (steps.length - 1) / 239)) : steps.map((_, c) => c);
  const f = v => (v === null || v === undefined || (logY && !(v > 0))) ? null : logY ? Math.log10(v) : v;
  const grid = names.map((_, r) => cols.map(c => f(value(r, c))));
  const range = vs => { const p = vs.filter(v => v !== null); return p.length ? [Math.min(...p), Math.max(...p)] : [0, 1]; };
  const all = range(grid.flat());
  const cellW = Math.max(2, Math.min(24, Math.floor(640 / Math.max(cols.length, 1)))), cellH = 9;
  const L = Math.min(220, 10 + 5 * Math.max(0, ...names.map(n => n.length))), T = 22, B = 16;
  const W = Math.max(L + cols.length * cellW + 10, L + 7 * title.length), H = T + names.length * cellH + B;
  const shade = t => `hsl(215,65%,${(96 - 72 * t).toFixed(1)}%)`;
  const lab = v => logY ? fmtNum(Math.pow(10, v)) : fmtNum(v);
  let svg = `<div class="heatmap" data-kind="${kind}"><svg width="${W}" height="${H}" role="img"><text x="${L}" y="12">${esc(title)}</text>`;
  names.forEach((name, r) => {
    const [lo, hi] = ownScale ? range(grid[r]) : all, y = T + r * cellH;
    svg += `<g class="${kind}-row" data-name="${esc(name)}"><text x="${L - 4}" y="${y + cellH - 1}" text-anchor="end">${esc(name)}</text>`;
    grid[r].forEach((v, c) => {
      if (v === null) return;
      const t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
      svg += `<rect x="${L + c * cellW}" y="${y}" width="${cellW}" height="${cellH}" fill="${shade(t)}"><title>${esc(name)}, step ${steps[cols[c]]}: ${fmtNum(value(r, cols[c]))}</title></rect>`;
    });
    svg += "</g>";
  });
  // the first and last steps under their columns, or both in one label where they would collide
  const yEnd = T + names.length * cellH + 12, first = `step ${steps[cols[0]]}`, last = `step ${steps[cols[cols.length - 1]]}`;
  if (cols.length && textWidth(first, 9) + textWidth(last, 9) + 8 <= cols.length * cellW)
    svg += `<text class="tick x" x="${L}" y="${yEnd}">${first}</text><text class="tick x" x="${L + cols.length * cellW}" y="${yEnd}" text-anchor="end">${last}</text>`;
  else if (cols.length) svg += `<text class="tick x" x="${L}" y="${yEnd}">steps ${steps[cols[0]]} to ${steps[cols[cols.length - 1]]}</text>`;
  svg += "</svg>";
  const key = [0, 0.25, 0.5, 0.75, 1].map(t => `<span style="background:${shade(t)}">&nbsp;&nbsp;&nbsp;&nbsp;</span>`).join("");
  svg += `<div class="legend">${key} ${ownScale ? "each row from its own smallest (light) to its largest (dark)" : `${esc(lab(all[0]))} (light) to ${esc(lab(all[1]))} (dark)${logY ? ", log scale" : ""}`}${cols.length < steps.length ? `; ${cols.length} of ${steps.length} steps shown` : ""}</div></div>`;
  return svg;
}
// Lines when the colours tell the series apart, else a heatmap. series: names; columns: steps; value(r, c).
const manySeries = n => n > colors.length;
function seriesView(kind, title, names, steps, value, logY, ownScale) {
  return manySeries(names.length)
    ? heatmap(kind, title, names, steps, value, logY, ownScale)
    : chart(title, names.map((name, r) => ({name, points: steps.map((s, c) => [s, value(r, c)])})), logY);
}
// The page's state in the URL fragment (#eval=1&layer=11&head=3&scale=own), so that a view can be linked.
const state = new URLSearchParams(location.hash.replace(/^#/, ""));
const saveState = () => history.replaceState(null, "", "#" + state.toString());
const column = k => D.log.map(r => [r[0], r[k]]);
const lastWith = k => { for (let i = D.log.length - 1; i >= 0; --i) if (D.log[i][k] !== null) return D.log[i]; return null; };
const trainRow = lastWith(2), valRow = lastWith(3), last = D.log.length ? D.log[D.log.length - 1] : null;
document.getElementById("summary-step").textContent = last ? last[0] : "";
document.getElementById("summary-train-loss").textContent = trainRow ? trainRow[2].toFixed(6) : "";
document.getElementById("summary-val-loss").textContent = valRow ? valRow[3].toFixed(6) : "";
document.getElementById("summary-lr").textContent = last ? String(last[4]) : "";
document.getElementById("summary-rows").textContent = D.log.length;
document.getElementById("summary-evals").textContent = D.evals.length;
// The train and val losses are measured at the same steps and often nearly equal: the val line is dashed
// over the train line, so where they meet both show.
document.getElementById("loss-charts").innerHTML =
  chart("loss", [{name: "batch loss", points: column(1), width: 1}, {name: "train loss", points: column(2), width: 2.5, marker: "dot"},
                 {name: "val loss", points: column(3), width: 1.8, dash: "6 4", marker: "ring"}], false) +
  chart("learning rate", [{name: "lr", points: column(4)}], false);
const ownScale = document.getElementById("grad-own-scale");
ownScale.checked = state.get("scale") === "own";
function drawGrads() {
  document.getElementById("grad-scale-choice").hidden = !(D.grads.length && manySeries(D.parameters.length));
  document.getElementById("grad-charts").innerHTML = D.grads.length
    ? seriesView("grad", "gradient norm", D.parameters, D.grads.map(g => g.step), (i, c) => D.grads[c].norms[i], true, ownScale.checked)
    : "<p>no gradient norms recorded</p>";
}
ownScale.addEventListener("change", () => { if (ownScale.checked) state.set("scale", "own"); else state.delete("scale"); saveState(); drawGrads(); });
drawGrads();
const evalSteps = D.evals.map(e => e.step);
document.getElementById("head-charts").innerHTML = D.heads.length
  ? seriesView("entropy", "mean row entropy (nats)", D.heads, evalSteps, (h, c) => D.evals[c].entropy[h], false, false) +
    seriesView("largest", "mean largest share", D.heads, evalSteps, (h, c) => D.evals[c].largest[h], false, false)
  : "<p>this model has no attention heads</p>";
document.getElementById("settings").innerHTML =
  Object.entries(D.settings).map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(typeof v === "object" ? JSON.stringify(v) : v)}</td></tr>`).join("");
// The heads by layer: a head's name without its last number ("h.11.attn.heads" of "h.11.attn.heads.3").
const layers = [];
D.heads.forEach((name, h) => {
  const group = name.replace(/\.?\d+$/, "");
  let layer = layers.find(l => l.name === group);
  if (!layer) layers.push(layer = {name: group, heads: []});
  layer.heads.push(h);
});
const widest = Math.max(0, ...layers.map(l => l.heads.length));
const layerSelect = document.getElementById("layer-select"), headSelect = document.getElementById("head-select");
layerSelect.innerHTML = `<option value="all">all layers</option>` + layers.map((l, i) => `<option value="${i}">${esc(l.name || "heads")}</option>`).join("");
headSelect.innerHTML = `<option value="all">all heads</option>` + Array.from({length: widest}, (_, i) => `<option value="${i}">${i}</option>`).join("");
// A few heads are all drawn; many (GPT-2 small's 144) start at the first layer's.
const picked = (key, count, fallback) => { const v = state.get(key); return v === "all" || (/^\d+$/.test(v || "") && Number(v) < count) ? v : fallback; };
layerSelect.value = picked("layer", layers.length, D.heads.length > 16 ? "0" : "all");
headSelect.value = picked("head", widest, "all");
const shownHeads = () => {
  const inLayers = layerSelect.value === "all" ? layers : [layers[Number(layerSelect.value)]];
  return inLayers.flatMap(l => headSelect.value === "all" ? l.heads : l.heads.slice(Number(headSelect.value), Number(headSelect.value) + 1));
};
function drawMaps(k) {
  const e = D.evals[k];
  document.getElementById("eval-step").textContent = e ? e.step : "";
  if (!e) { document.getElementById("maps").innerHTML = "<p>no evaluation yet</p>"; return; }
  const heads = shownHeads();
  document.getElementById("maps-shown").textContent = `${heads.length} of ${D.heads.length} heads`;
  // The sample's tokens as labels (axis_label.h: one a character or GPT-2 token, ␣ for a space), upright.
  // Where the widest would run into its neighbour only every k-th column is labelled, and every k-th row
  // where a row is lower than the text; every cell's tooltip names its row's and column's token.
  const labels = D.labels, n = labels.length, cell = Math.max(6, Math.min(14, Math.floor(240 / Math.max(n, 1))));
  const widestLabel = Math.max(6, ...labels.map(l => textWidth(l, 10)));  // (10 px: .head-map's text)
  const colEvery = Math.ceil((widestLabel + 4) / cell), rowEvery = Math.ceil(13 / cell);
  const left = Math.ceil(widestLabel) + 6, top = 16, right = Math.ceil(widestLabel / 2);
  const every = (k, what) => k > 1 ? `1 ${what} in ${k}` : `every ${what}`;
  document.getElementById("maps-labels").textContent = colEvery > 1 || rowEvery > 1
    ? `· labels on ${every(colEvery, "column")} and ${every(rowEvery, "row")}; a cell's tooltip names both tokens` : "";
  document.getElementById("maps").innerHTML = heads.map(h => {
    const name = D.heads[h];
    let s = `<div class="head-map" data-head="${esc(name)}"><div>${esc(name)}</div><svg width="${left + n * cell + right}" height="${top + n * cell}">`;
    for (let i = 0; i < n; ++i) {
      if (i % colEvery === 0) s += `<text class="col" x="${left + i * cell + cell / 2}" y="${top - 4}" text-anchor="middle">${esc(labels[i])}</text>`;
      if (i % rowEvery === 0) s += `<text class="row" x="${left - 3}" y="${top + i * cell + cell / 2 + 4}" text-anchor="end">${esc(labels[i])}</text>`;
      for (let j = 0; j <= i; ++j) {
        const w = e.maps[h][i][j];
        s += `<rect x="${left + j * cell}" y="${top + i * cell}" width="${cell}" height="${cell}" fill="#1f4e9c" fill-opacity="${w}"><title>${esc(labels[i])} \u2192 ${esc(labels[j])}: ${w}</title></rect>`;
      }
    }
    return s + `</svg><div>entropy ${e.entropy[h].toFixed(3)}, largest share ${e.largest[h].toFixed(3)}</div></div>`;
  }).join("");
}
const slider = document.getElementById("eval-slider");
slider.max = Math.max(0, D.evals.length - 1);
const asked = state.get("eval");
slider.value = asked !== null && /^\d+$/.test(asked) ? Math.min(Number(asked), D.evals.length - 1) : D.evals.length - 1;
const redraw = key => () => { state.set(key, key === "eval" ? slider.value : (key === "layer" ? layerSelect : headSelect).value); saveState(); drawMaps(Number(slider.value)); };
slider.addEventListener("input", redraw("eval"));
layerSelect.addEventListener("change", redraw("layer"));
headSelect.addEventListener("change", redraw("head"));
drawMaps(Number(slider.value));
</script>
</body></html>
)html";

}  // namespace

RunReport::RunReport(nlohmann::ordered_json settings) {
    data_ = {{"settings", std::move(settings)},
             {"sample", ""},
             {"tokens", nlohmann::ordered_json::array()},
             {"labels", nlohmann::ordered_json::array()},
             {"heads", nlohmann::ordered_json::array()},
             {"parameters", nlohmann::ordered_json::array()},
             {"log", nlohmann::ordered_json::array()},
             {"grads", nlohmann::ordered_json::array()},
             {"evals", nlohmann::ordered_json::array()}};
}

RunReport RunReport::read(const std::filesystem::path& path, nlohmann::ordered_json settings) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string page = buffer.str();
    const size_t start = page.find(kDataStart);
    const size_t end = start == std::string::npos ? start : page.find(kDataEnd, start);
    if (!in || end == std::string::npos)
        throw std::runtime_error(fmt::format("--report {}: not a report page written by train (no run data in it)", path.string()));
    RunReport report(std::move(settings));
    try {
        nlohmann::ordered_json old = nlohmann::ordered_json::parse(page.substr(start + kDataStart.size(), end - start - kDataStart.size()));
        for (const char* key : {"sample", "heads", "parameters", "log", "grads", "evals"}) report.data_[key] = old.at(key);
        if (old.contains("tokens")) report.data_["tokens"] = old["tokens"];  // (pages before it have none)
        report.data_["labels"] = labels_of(report.data_["sample"].get<std::string>(), report.data_["tokens"]);
        if (old.contains("run_id")) {
            const auto id = old["run_id"].get<std::string>();
            if (!nn::is_run_id(id))  // (not shown: it may hold anything)
                throw std::runtime_error(fmt::format("--report {}: its run id ({} bytes) is not one train writes", path.string(), id.size()));
            report.data_["run_id"] = id;
        }
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(fmt::format("--report {}: its run data cannot be read: {}", path.string(), e.what()));
    }
    for (const char* key : {"log", "grads", "evals"}) {
        const nlohmann::ordered_json& entries = report.data_[key];
        if (!entries.is_array() || !std::all_of(entries.begin(), entries.end(), [](const auto& e) { return step_of(e).has_value(); }))
            throw std::runtime_error(fmt::format("--report {}: its run data cannot be read: \"{}\" is not a list of entries "
                                                 "with a step each", path.string(), key));
    }
    return report;
}

std::string RunReport::run_id() const { return data_.contains("run_id") ? data_["run_id"].get<std::string>() : std::string(); }

void RunReport::set_run_id(const std::string& id) { data_["run_id"] = id; }

void RunReport::drop_after(int64_t step) {
    for (const char* key : {"log", "grads", "evals"}) {
        auto& entries = data_[key];
        entries.erase(std::remove_if(entries.begin(), entries.end(),
                                     [&](const auto& e) { return step_of(e).value_or(std::numeric_limits<int64_t>::max()) > step; }),
                      entries.end());
    }
}

void RunReport::add_log(int64_t step, double batch_loss, double train_loss, double val_loss, double lr) {
    // rounded as the --csv log is: losses to 6 decimals, the rate to 6 significant digits
    data_["log"].push_back({step, number_or_null(batch_loss, 1e6), number_or_null(train_loss, 1e6),
                            number_or_null(val_loss, 1e6), significant(lr, 6)});
}

void RunReport::add_gradients(const nn::GradientReport& gradients) {
    auto& names = data_["parameters"];
    if (names.empty())
        for (const nn::ParameterFlow& p : gradients.parameters) names.push_back(p.name);
    nlohmann::ordered_json norms = nlohmann::ordered_json::array();
    for (const nn::ParameterFlow& p : gradients.parameters) norms.push_back(significant(p.grad_norm, 4));
    data_["grads"].push_back({{"step", gradients.step}, {"norms", std::move(norms)}});
}

void RunReport::add_attention(int64_t step, nn::LanguageModel& model, std::span<const int64_t> sample_ids,
                              const std::string& sample_text, const std::vector<std::string>& token_texts) {
    autograd::check(token_texts.empty() || token_texts.size() == sample_ids.size(),
          "RunReport::add_attention: {} token texts for a sample of {} tokens", token_texts.size(), sample_ids.size());
    const auto T = static_cast<int64_t>(sample_ids.size());
    {
        autograd::NoGradGuard no_grad;
        model.eval();
        (void)model(sample_ids, 1, T);
        model.train();
    }
    data_["sample"] = sample_text;
    data_["tokens"] = token_texts;
    data_["labels"] = labels_of(sample_text, data_["tokens"]);
    auto& names = data_["heads"];
    const bool naming = names.empty();
    nlohmann::ordered_json maps = nlohmann::ordered_json::array(), entropy = maps, largest = maps;
    for (const nn::AttentionHead& head : nn::attention_heads(model)) {
        if (!head.module.last_attention().defined()) continue;
        if (naming) names.push_back(head.name);
        const autograd::Tensor& w = head.module.last_attention();  // (1, T, T)
        const std::span<const float> values = w.data();
        nlohmann::ordered_json map = nlohmann::ordered_json::array();
        for (int64_t i = 0; i < T; ++i) {
            nlohmann::ordered_json row = nlohmann::ordered_json::array();
            for (int64_t j = 0; j <= i; ++j) row.push_back(rounded(values[static_cast<size_t>(i * T + j)], 1e3));
            map.push_back(std::move(row));
        }
        maps.push_back(std::move(map));
        const nn::AttentionStats stats = nn::attention_stats(w);
        entropy.push_back(rounded(stats.entropy, 1e4));
        largest.push_back(rounded(stats.largest_share, 1e4));
    }
    data_["evals"].push_back({{"step", step}, {"maps", std::move(maps)}, {"entropy", std::move(entropy)}, {"largest", std::move(largest)}});
}

std::string RunReport::html() const {
    // safe inside <script>: no "<", ">" or "&" in it (html::script_safe)
    const std::string json = html::script_safe(data_.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    std::string page(kPageHead);
    page += kDataStart;
    page += json;
    page += kDataEnd;
    page += "\n";
    page += kPageScript;
    return page;
}

void RunReport::write(const std::filesystem::path& path, const std::string& who) const {
    nn::write_file_atomically(path, html(), who);
}

}  // namespace report
