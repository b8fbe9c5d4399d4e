// DOT text, as autograd::to_dot writes it (autograd/graph.h), parsed and laid out for lab.html, which draws it:
//   dotGraph.parse(text)  -> {title, nodes: Map of id -> {id, attrs, order, lines, shape, dashed, filled, fillcolor},
//                             edges: [{from, to}]}
//   dotGraph.layout(graph) -> {nodes (each given x, y, w, h, layer), layers, preds, succs, chains (the points
//                             each edge runs through, one per layer it crosses), width, height}
// A layered (Sugiyama) drawing: a node's layer is its longest path from a leaf, the order within layers comes
// from sweeps by the neighbours' mean positions. Text is measured in the page's 11 px node font.
"use strict";
const dotGraph = (function () {
  function parseDot(text) {
    // tokens: quoted strings (with \" \\ \n escapes), ids / numbers, punctuation, -> and --
    const toks = [];
    let i = 0;
    const n = text.length;
    while (i < n) {
      const c = text[i];
      if (/\s/.test(c)) { i++; continue; }
      if (c === "/" && text[i + 1] === "/") { while (i < n && text[i] !== "\n") i++; continue; }
      if (c === "/" && text[i + 1] === "*") { const e = text.indexOf("*/", i + 2); i = e < 0 ? n : e + 2; continue; }
      if (c === "#" && (i === 0 || text[i - 1] === "\n")) { while (i < n && text[i] !== "\n") i++; continue; }
      if (c === '"') {
        let s = "";
        i++;
        while (i < n && text[i] !== '"') {
          if (text[i] === "\\" && i + 1 < n) {
            const e = text[i + 1];
            s += e === "n" || e === "l" || e === "r" ? "\n" : e === "\n" ? "" : e === '"' || e === "\\" ? e : "\\" + e;
            i += 2;
          } else s += text[i++];
        }
        i++;
        toks.push({ t: "id", v: s, q: true });
        continue;
      }
      if (c === "-" && (text[i + 1] === ">" || text[i + 1] === "-")) { toks.push({ t: "edge", v: text.slice(i, i + 2) }); i += 2; continue; }
      if ("{}[]=;,:".includes(c)) { toks.push({ t: c }); i++; continue; }
      if (c === "<") {  // an HTML label: kept as text
        let depth = 0, s = "";
        while (i < n) { if (text[i] === "<") depth++; if (text[i] === ">") depth--; s += text[i++]; if (!depth) break; }
        toks.push({ t: "id", v: s.slice(1, -1) });
        continue;
      }
      const m = /^[A-Za-z0-9_.\u0080-\uffff-]+/.exec(text.slice(i, i + 200));
      if (m) { toks.push({ t: "id", v: m[0] }); i += m[0].length; continue; }
      i++;  // anything else is skipped
    }
    const g = { title: "", nodes: new Map(), edges: [] };
    let p = 0;
    const peek = () => toks[p] || { t: "eof" };
    function attrs() {
      const a = {};
      while (peek().t === "[") {
        p++;
        while (p < toks.length && peek().t !== "]") {
          if (peek().t === "id") {
            const k = toks[p++].v;
            if (peek().t === "=") { p++; a[k] = peek().t === "id" ? toks[p++].v : ""; } else a[k] = "true";
          } else p++;
        }
        p++;
      }
      return a;
    }
    function node(id) {
      if (!g.nodes.has(id)) g.nodes.set(id, { id, attrs: {}, order: g.nodes.size });
      return g.nodes.get(id);
    }
    // header: [strict] (di)graph [name] {
    while (p < toks.length && peek().t !== "{") p++;
    p++;
    while (p < toks.length) {
      const tk = peek();
      if (tk.t === "}" || tk.t === ";" || tk.t === ",") { p++; continue; }
      if (tk.t !== "id") { p++; continue; }
      if (!tk.q && /^(graph|node|edge)$/i.test(tk.v) && toks[p + 1] && toks[p + 1].t === "[") {
        p++;
        const a = attrs();
        if (tk.v.toLowerCase() === "graph" && a.label !== undefined) g.title = a.label;
        continue;
      }
      if (!tk.q && /^subgraph$/i.test(tk.v)) { p++; if (peek().t === "id") p++; continue; }
      p++;
      if (peek().t === "=") { p++; if (peek().t === "id") { if (tk.v === "label") g.title = toks[p].v; p++; } continue; }  // graph attribute
      if (peek().t === ":") { p++; if (peek().t === "id") p++; if (peek().t === ":") { p += 2; } }  // ports ignored
      const chain = [tk.v];
      while (peek().t === "edge") {
        p++;
        if (peek().t === "id") { chain.push(toks[p++].v); if (peek().t === ":") { p++; if (peek().t === "id") p++; } } else break;
      }
      const a = attrs();
      if (chain.length === 1) Object.assign(node(chain[0]).attrs, a);
      else {
        chain.forEach((id) => node(id));
        for (let k = 0; k + 1 < chain.length; k++) g.edges.push({ from: chain[k], to: chain[k + 1] });
      }
    }
    for (const nd of g.nodes.values()) {
      const label = nd.attrs.label !== undefined ? nd.attrs.label : nd.id;
      nd.lines = label.split("\n").filter((s, k, all) => s !== "" || k < all.length - 1);
      if (!nd.lines.length) nd.lines = [""];
      nd.shape = (nd.attrs.shape || "ellipse").toLowerCase();
      const style = (nd.attrs.style || "").toLowerCase().split(/[\s,]+/);
      nd.dashed = style.includes("dashed") || style.includes("dotted");
      nd.filled = style.includes("filled");
      nd.fillcolor = nd.attrs.fillcolor || nd.attrs.color || "#ff8080";
    }
    return g;
  }

  const measure = (() => {
    const ctx = document.createElement("canvas").getContext("2d");
    return (s, bold) => {
      ctx.font = `${bold ? "700 " : ""}11px system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", Arial, sans-serif`;
      return ctx.measureText(s).width;
    };
  })();

  function layoutGraph(g) {
    const nodes = [...g.nodes.values()];
    const preds = new Map(nodes.map((nd) => [nd.id, []])), succs = new Map(nodes.map((nd) => [nd.id, []]));
    for (const e of g.edges) { preds.get(e.to).push(e.from); succs.get(e.from).push(e.to); }
    // layer = the longest path from a leaf (iterative, safe on a cycle)
    const layer = new Map();
    const state = new Map();
    for (const start of nodes) {
      if (layer.has(start.id)) continue;
      const stack = [[start.id, 0]];
      while (stack.length) {
        const top = stack[stack.length - 1];
        const [id, k] = top;
        const ps = preds.get(id);
        state.set(id, 1);
        if (k < ps.length) {
          top[1]++;
          const p = ps[k];
          if (!layer.has(p) && state.get(p) !== 1) stack.push([p, 0]);
        } else {
          let l = 0;
          for (const p of ps) if (layer.has(p)) l = Math.max(l, layer.get(p) + 1);
          layer.set(id, l);
          state.set(id, 2);
          stack.pop();
        }
      }
    }
    // a leaf (a weight, the data, a mask) is drawn just above its first user rather than at the very top,
    // so its edges stay short; every op keeps its layer, the longest path from a leaf
    for (const nd of nodes) {
      const users = succs.get(nd.id);
      if (!preds.get(nd.id).length && users.length) layer.set(nd.id, Math.max(0, Math.min(...users.map((u) => layer.get(u))) - 1));
    }
    for (const nd of nodes) {
      const widths = nd.lines.map((s, k) => measure(s, k === 0));
      const w = Math.max(30, ...widths);
      const h = nd.lines.length * 14;
      if (nd.shape === "ellipse" || nd.shape === "oval" || nd.shape === "circle") { nd.w = w * 1.22 + 22; nd.h = h + 18; }
      else { nd.w = w + 18; nd.h = h + 10; }
    }
    // an edge over several layers runs through one point per layer between (Sugiyama's dummy nodes), which
    // take part in the ordering and the placement, so long edges go round the boxes rather than through them
    const L = Math.max(0, ...layer.values()) + 1;
    const layers = Array.from({ length: L }, () => []);
    for (const nd of nodes) layers[layer.get(nd.id)].push(nd);
    const up = new Map(nodes.map((nd) => [nd.id, []])), down = new Map(nodes.map((nd) => [nd.id, []]));
    const chains = g.edges.map((e) => {
      const chain = [];
      let prev = e.from;
      const l0 = layer.get(e.from), l1 = layer.get(e.to);
      for (let l = l0 + 1; l < l1; l++) {
        const d = { id: `dummy${up.size}`, dummy: true, w: 8, h: 0, order: 1e9 + up.size, lines: [] };
        up.set(d.id, [prev]); down.set(d.id, []);
        down.get(prev).push(d.id);
        layers[l].push(d);
        chain.push(d);
        prev = d.id;
      }
      up.get(e.to).push(prev); down.get(prev).push(e.to);
      return chain;
    });
    const all = new Map([...nodes, ...chains.flat()].map((nd) => [nd.id, nd]));
    // order within a layer: a few sweeps by the mean position of the inputs (down) and of the users (up)
    const pos = new Map();
    layers.forEach((ly) => ly.forEach((nd, k) => pos.set(nd.id, (k + 0.5) / ly.length)));
    const mean = (ids, fallback) => (ids.length ? ids.reduce((s, id) => s + pos.get(id), 0) / ids.length : fallback);
    for (let sweep = 0; sweep < 8; sweep++) {
      const goingDown = sweep % 2 === 0;
      const order = goingDown ? [...layers.keys()] : [...layers.keys()].reverse();
      for (const l of order) {
        const ly = layers[l];
        const key = new Map(ly.map((nd) => [nd.id, mean(goingDown ? up.get(nd.id) : down.get(nd.id), pos.get(nd.id))]));
        ly.sort((a, b) => key.get(a.id) - key.get(b.id) || a.order - b.order);
        ly.forEach((nd, k) => pos.set(nd.id, (k + 0.5) / ly.length));
      }
    }
    // x: each node under the mean of its neighbours, then pushed apart in order
    const GAP = 22, VGAP = 46;
    const x = new Map();
    const gapOf = (a, b) => (a.dummy && b.dummy ? 6 : a.dummy || b.dummy ? 12 : GAP);
    layers.forEach((ly) => {
      let at = 0;
      ly.forEach((nd, k) => { if (k) at += gapOf(ly[k - 1], nd); x.set(nd.id, at + nd.w / 2); at += nd.w; });
      const shift = at / 2;
      ly.forEach((nd) => x.set(nd.id, x.get(nd.id) - shift));
    });
    const place = (ly, want) => {
      const target = ly.map((nd) => want(nd));
      const got = target.slice();
      for (let k = 1; k < ly.length; k++) got[k] = Math.max(got[k], got[k - 1] + (ly[k - 1].w + ly[k].w) / 2 + gapOf(ly[k - 1], ly[k]));
      const shift = target.reduce((s, t, k) => s + t - got[k], 0) / Math.max(1, ly.length);
      ly.forEach((nd, k) => x.set(nd.id, got[k] + shift));
    };
    for (let it = 0; it < 10; it++) {
      const goingDown = it % 2 === 0;
      const order = goingDown ? [...layers.keys()] : [...layers.keys()].reverse();
      for (const l of order) {
        place(layers[l], (nd) => {
          const ids = goingDown ? up.get(nd.id) : down.get(nd.id);
          const other = goingDown ? down.get(nd.id) : up.get(nd.id);
          const use = ids.length ? ids : other;
          return use.length ? use.reduce((s, id) => s + x.get(id), 0) / use.length : x.get(nd.id);
        });
      }
    }
    // y: one band per layer
    const bands = [];
    let top = 0;
    layers.forEach((ly) => {
      const h = Math.max(10, ...ly.filter((nd) => !nd.dummy).map((nd) => nd.h));
      bands.push({ top, h });
      for (const nd of ly) nd.y = top + h / 2;
      top += h + VGAP;
    });
    let minX = Infinity, maxX = -Infinity;
    for (const nd of all.values()) { minX = Math.min(minX, x.get(nd.id) - nd.w / 2); maxX = Math.max(maxX, x.get(nd.id) + nd.w / 2); }
    for (const [id, nd] of all) { nd.x = x.get(id) - minX; nd.layer = layer.has(id) ? layer.get(id) : null; }
    chains.forEach((chain) => chain.forEach((d) => { const l = layers.findIndex((ly) => ly.includes(d)); d.layer = l; d.top = bands[l].top; d.bottom = bands[l].top + bands[l].h; }));
    return { nodes, layers, preds, succs, chains, width: maxX - minX, height: Math.max(0, top - VGAP) };
  }

  return { parse: parseDot, layout: layoutGraph };
})();
