#!/usr/bin/env python3
"""The page of examples/web/ in headless Chromium, against the same library built natively:

  1. the six cells of the lab run in the page: #lab-summary reads "N passed, 0 failed" and every value
     equals the native lab's --json within 1e-5 relative (the largest difference is printed);
  2. the live head: after each change (the sentence edited, each checkbox toggled) the map the page
     draws equals native nn::Head's for the same options (web_api's head call), within 1e-5 of the
     map's largest value, and differs from the map before the change;
  3. training in the worker: train runs the count of steps asked for (200) and stops by itself, its
     losses equal the native run's within 1e-4 and fall; continue runs as many more; stop stops a run;
  4. the saturation chart and the graph are drawn;
  5. the layout at 1280 and 800 px, on a sentence of non-ASCII characters: the page fits the window,
     the maps are shown whole, labelled by character, the labels apart (screenshots in WORK);
  6. no request leaves the page: each request of the page and its worker is paused, and anything but the
     page's own file is refused and fails the test; no console error either.

  page_test.py PAGE WEB_API LAB WORK     (exit 0 passed, 1 failed, 77 skipped: no chromium)
"""
import json
import math
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chromium_page  # noqa: E402
import page_layout  # noqa: E402

failures = []


def check(ok, message):
    print(("ok    " if ok else "FAIL  ") + message)
    if not ok:
        failures.append(message)


def native(web_api, *requests):
    out = subprocess.run([web_api, *map(json.dumps, requests)], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def numbers(value, path=""):
    """Every number in a JSON value with its path; None (a NaN or infinity) and bools as they are."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from numbers(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from numbers(v, f"{path}[{i}]")
    else:
        yield path, value


def largest_relative_difference(page, native_value):
    """(difference, path): the largest |a − b| / max(|a|, |b|) over the numbers, inf on a mismatch of
    structure or of a non-number."""
    a, b = list(numbers(page)), list(numbers(native_value))
    if [p for p, _ in a] != [p for p, _ in b]:
        return math.inf, "the structure differs"
    worst = (0.0, "")
    for (path, x), (_, y) in zip(a, b):
        if isinstance(x, bool) or isinstance(y, bool) or x is None or y is None or isinstance(x, str):
            if x != y:
                return math.inf, f"{path}: {x} against {y}"
            continue
        d = abs(x - y) / max(abs(x), abs(y)) if x != y else 0.0
        worst = max(worst, (d, f"{path}: {x} against {y}"))
    return worst


MAP = """(() => { const s = document.getElementById('%s');
  const cells = [...s.querySelectorAll('rect.cell')];
  return {stage: s.dataset.stage, rows: +s.dataset.rows, cols: +s.dataset.cols,
          cells: cells.map(c => [+c.dataset.i, +c.dataset.j, c.dataset.value === 'null' ? null : +c.dataset.value])}; })()"""


def as_matrix(drawn):
    m = [[None] * drawn["cols"] for _ in range(drawn["rows"])]
    for i, j, v in drawn["cells"]:
        m[i][j] = v
    return m


def matrix_difference(drawn, expected):
    """Largest |a − b| over the map, relative to its largest |value|; inf when shapes or nulls differ."""
    if len(drawn) != len(expected) or any(len(a) != len(b) for a, b in zip(drawn, expected)):
        return math.inf
    scale = max((abs(v) for row in expected for v in row if v is not None), default=1.0) or 1.0
    worst = 0.0
    for a_row, b_row in zip(drawn, expected):
        for a, b in zip(a_row, b_row):
            if (a is None) != (b is None):
                return math.inf
            if a is not None:
                worst = max(worst, abs(a - b) / scale)
    return worst


def main():
    page_path, web_api, lab, work = sys.argv[1:5]
    if not chromium_page.browser_path():
        print("chromium is not installed (dev/setup installs it): skipping")
        return 77
    os.makedirs(work, exist_ok=True)
    url = "file://" + os.path.abspath(page_path)
    page = chromium_page.Page(url, work)
    try:
        run_checks(page, web_api, lab, work)
        check(not page.errors, f"no console error or exception in the page ({page.errors[:3]})")
        outside = [u for u in page.requests if u != url and not u.startswith(("data:", "blob:"))]
        schemes = {}
        for u in page.requests:
            kind = "the page" if u == url else u.split(":")[0] + ":"
            schemes[kind] = schemes.get(kind, 0) + 1
        check(not outside and not page.refused,
              f"no request leaves the page: {len(page.requests)} requested {schemes}, "
              f"{len(outside)} outside the page's file ({[u[:80] for u in outside[:3]]}), {len(page.refused)} refused")
    finally:
        page.close()
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


def run_checks(page, web_api, lab, work):
    # 1. The lab.
    summary = page.wait_for("(() => { const e = document.getElementById('lab-summary');"
                            " return e && /^\\d+ passed, \\d+ failed$/.test(e.textContent.trim()) && e.textContent.trim(); })()",
                            120, "#lab-summary")
    native_lab = json.loads(subprocess.run([lab, "--json"], check=True, capture_output=True, text=True).stdout)
    check(summary == f"{native_lab['passed']} passed, 0 failed", f"#lab-summary reads \"{summary}\" (natively {native_lab['passed']} passed)")
    page_lab = page.eval("window.tinygpt.lab")
    difference, where = largest_relative_difference(page_lab["cells"], native_lab["cells"])
    check(difference <= 1e-5, f"every lab value within 1e-5 relative of the native lab's: largest {difference:.2e} ({where})")
    ticks = page.eval("document.querySelectorAll('.check.pass').length")
    check(ticks == native_lab["passed"], f"{ticks} checks shown passed (✓) in the page")

    # 2. The live head: each change, then the map against native nn::Head.
    page.wait_for("!!(window.tinygpt && window.tinygpt.head)", 30, "the head's first answer")
    state = {"sentence": page.eval("document.getElementById('sentence').value"), "raw": False, "divide": True, "journey": False}
    before = as_matrix(page.eval(MAP % "head-map"))
    # Each checkbox twice, each time where it changes what the map shows (the divisor does not change the
    # scores that the journey's first stage shows, so it is toggled with the journey off).
    changes = [("divide", "click"), ("raw", "click"), ("journey", "click"), ("raw", "click"), ("journey", "click"),
               ("divide", "click"), ("sentence", "the cat sat on the mat and the cat sat")]
    for what, how in changes:
        if how == "click":
            page.eval(f"document.getElementById('{what}').click()")
            state[what] = not state[what]
        else:
            page.eval(f"(() => {{ const e = document.getElementById('sentence'); e.value = {json.dumps(how)};"
                      " e.dispatchEvent(new Event('input', {bubbles: true})); })()")
            state["sentence"] = how
        page.pump(0.3)
        drawn = page.eval(MAP % "head-map")
        expected_stage = "scores" if state["journey"] else "shares"
        answer = native(web_api, {"call": "head", "sentence": state["sentence"], "raw": state["raw"], "divide": state["divide"]})[0]
        m = as_matrix(drawn)
        d = matrix_difference(m, answer[expected_stage])
        label = f"{what} {'→ ' + ('on' if state.get(what) else 'off') if how == 'click' else 'edited'}"
        check(drawn["stage"] == expected_stage and d <= 1e-5,
              f"{label}: the map shows {drawn['stage']}, as native nn::Head's {expected_stage} (largest difference {d:.1e})")
        check(m != before, f"{label}: the map changed")
        before = m
    grad = as_matrix(page.eval(MAP % "score-grad"))
    d = matrix_difference(grad, answer["score_grad"])
    check(d <= 1e-5, f"the scores' gradient as native backward() gives it (largest difference {d:.1e})")

    # The head's scalar named for what it is, and a sentence past the limit said in one line.
    line = page.eval("document.getElementById('grad-line').textContent")
    check("sum(output · upstream)" in line and "loss" not in line, f"#grad-line: {line}")
    set_sentence = "(s => { const e = document.getElementById('sentence'); e.value = s; e.dispatchEvent(new Event('input', {bubbles: true})); })"
    page.eval(f"{set_sentence}({json.dumps('x' * 65)})")
    note = page.eval("document.getElementById('head-error').textContent")
    check("65 characters" in note and "  " not in note, f"#head-error: {note}")
    page.eval(f"{set_sentence}({json.dumps(state['sentence'])})")

    # 3. Training in the worker: the count of steps asked for, then it stops by itself.
    count = page.eval("+document.getElementById('train-count').value")
    training = "window.tinygpt.training"
    reference = native(web_api, {"call": "train_start"}, {"call": "train_steps", "steps": 2 * count})[1]["losses"]
    for done in (count, 2 * count):  # train, then continue
        button = page.eval("document.getElementById('train-start').textContent")
        page.eval("document.getElementById('train-start').click()")
        page.wait_for(f"{training}.losses.length >= {done} && !{training}.running", 120, f"{done} training steps")
        page.pump(1.0)
        losses = page.eval(f"{training}.losses")
        worst = max(abs(a - b) for a, b in zip(losses, reference))
        check(len(losses) == done and worst <= 1e-4,
              f"{button}: {len(losses)} steps, then it stops by itself; every loss the native run's within 1e-4 "
              f"(largest difference {worst:.1e}; {losses[0]:.4f} → {losses[-1]:.4f})")
    check(sum(losses[-10:]) / 10 < losses[0] - 0.1, "the loss falls")
    page.eval("document.getElementById('train-count').value = 100000; document.getElementById('train-start').click()")
    page.wait_for(f"{training}.losses.length > {2 * count} + 20", 30, "a long run")
    page.eval("document.getElementById('train-stop').click()")
    page.pump(0.5)
    stopped = page.eval(f"{training}.losses.length")
    page.pump(1.0)
    check(page.eval(f"{training}.losses.length") == stopped, f"stop stops a run of 100000 steps (at step {stopped})")
    losses = page.eval(f"{training}.losses")
    reference = native(web_api, {"call": "train_start"}, {"call": "train_steps", "steps": len(losses)})[1]["losses"]
    worst = max(abs(a - b) for a, b in zip(losses, reference))
    check(worst <= 1e-4, f"all {len(losses)} losses as one native run's (largest difference {worst:.1e})")

    # 4. The saturation chart and the graph.
    page.wait_for("document.querySelectorAll('#saturation-chart circle').length > 0", 60, "the saturation chart")
    saturation = page.eval("window.tinygpt.saturation")
    native_saturation = native(web_api, {"call": "saturation"})[0]
    difference, where = largest_relative_difference(saturation, native_saturation)
    check(difference <= 1e-5, f"the saturation study as natively: largest difference {difference:.2e} ({where})")
    nodes = page.eval("document.querySelectorAll('#graph g.node').length")
    edges = page.eval("document.querySelectorAll('#graph path.edge').length")
    dot = answer["graph"]
    dot_nodes = len(re.findall(r"^\s*n\d+ \[", dot, re.M))
    check(nodes == dot_nodes and edges == dot.count(" -> ") and nodes > 10,
          f"the graph drawn has the DOT's {nodes} nodes and {edges} edges")

    # 5. The layout, on a sentence of non-ASCII characters: one label a character, as native.
    sentence = "naïve café, déjà vu"
    page.eval(f"{set_sentence}({json.dumps(sentence)})")
    labels = native(web_api, {"call": "head", "sentence": sentence})[0]["labels"]
    check(labels == [c if c != " " else "␣" for c in sentence], f"the sentence's labels, one a character: {labels}")
    maps = ["#head-map", "#score-grad", "#head-output", "#saturation-chart", "#loss-curve", "#train-map"]
    for width in (1280, 800):
        page.set_viewport(width, 2000)
        page.pump(0.5)
        drawn = page.eval("[...document.querySelectorAll('#head-map text.lab.col')].map(e => e.textContent)")
        problems = page_layout.check_layout(page, visible=["#lab-summary", "#graph-wrap"], whole=maps,
                                            labels=[["#head-map text.lab", 2 * len(sentence)], ["#score-grad text.lab", 2 * len(sentence)]])
        check(not problems and drawn == labels, f"at {width} px: the page fits the window, the maps whole and labelled by character, "
                                                f"the labels apart {problems[:4]} {drawn}")
        page.screenshot(os.path.join(work, f"page-{width}.png"))


if __name__ == "__main__":
    sys.exit(main())
