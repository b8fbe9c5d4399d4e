#!/usr/bin/env python3
"""Training in the page (examples/web/) beside the same training natively, one run, side by side.

The page's worker runs the copy task's single head (web_api.cpp's train_steps) compiled to WebAssembly;
web_api runs the same code natively, first on the portable kernels (TINYGPT_ISA=portable: the ones the
WebAssembly build compiles), then on this CPU's best. Each round: a fresh run of STEPS steps, in the
page and natively; the medians over ROUNDS rounds, interleaved.

  /usr/bin/python3 bench/web_training.py build/wasm/examples/web/tinygpt-lab.html build/release/examples/web_api [STEPS] [ROUNDS]

Two times for the page: the steps alone (timed inside the module, as web_api times itself) and the
wall clock from the click on "train" to the last step (the worker's messages and the page's redrawing
included).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "web"))
import chromium_page  # noqa: E402


def native_ms(web_api, steps, isa):
    env = dict(os.environ, **({"TINYGPT_ISA": isa} if isa else {}))
    out = subprocess.run([web_api, '{"call": "train_start"}', json.dumps({"call": "train_steps", "steps": steps})],
                         check=True, capture_output=True, text=True, env=env).stdout.splitlines()
    return 1000 * json.loads(out[1])["seconds"] / steps


def page_ms(page, steps):
    page.eval("document.getElementById('train-reset').click()")
    page.wait_for("window.tinygpt.training && window.tinygpt.training.losses.length === 0 && !window.tinygpt.training.running",
                  30, "a fresh run")
    start = time.time()
    page.eval(f"document.getElementById('train-count').value = {steps}; document.getElementById('train-start').click()")
    page.wait_for(f"window.tinygpt.training.losses.length >= {steps} && !window.tinygpt.training.running", 600, f"{steps} steps")
    wall = time.time() - start
    t = page.eval("window.tinygpt.training")
    n = len(t["losses"])
    return 1000 * t["seconds_total"] / n, 1000 * wall / n


def main():
    page_path, web_api = sys.argv[1:3]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    work = tempfile.mkdtemp(prefix="web-bench-")
    page = chromium_page.Page("file://" + os.path.abspath(page_path), work)
    rows = {"page (steps alone)": [], "page (wall clock)": [], "native portable": [], "native best": []}
    try:
        page.wait_for("!!(window.tinygpt && window.tinygpt.lab)", 120, "the page")
        for _ in range(rounds):
            alone, wall = page_ms(page, steps)
            rows["page (steps alone)"].append(alone)
            rows["page (wall clock)"].append(wall)
            rows["native portable"].append(native_ms(web_api, steps, "portable"))
            rows["native best"].append(native_ms(web_api, steps, None))
    finally:
        page.close()
    portable = statistics.median(rows["native portable"])
    print(f"copy task, single head (C 32, T 16, B 16), {steps} steps a round, {rounds} rounds, medians:")
    print(f"{'':22} {'ms a step':>10} {'speed of native portable':>26}")
    for name, values in rows.items():
        m = statistics.median(values)
        print(f"{name:22} {m:10.4f} {portable / m:25.2f}x")


if __name__ == "__main__":
    main()
