#!/usr/bin/env python3
"""The page's calls run natively (examples/web/web_api): what the page shows is what the library computes.

  web_api_test.py WEB_API LAB

- lab: the answer is `lab --json`'s, exactly;
- head: the map is the softmax of the masked scores, rows summing to 1, nothing above the diagonal;
  scaled = scores / divisor (√16, or 1 without the divisor); with raw, a letter that repeats brings its
  row back (equal x·x scores); the gradient of the scores is 0 above the diagonal, not 0 everywhere, and
  each of its rows sums to 0 (the softmax ignores a shift: the op's own gradient is checked against finite
  differences in the Catch2 tests); without the divisor the map is sharper; the graph is DOT of
  sum(output * upstream), through softmax; a sentence of non-ASCII characters has one position and one
  label per character ("é", not \xc3 and \xa9), a repeated one brings its row back, and ASCII's rows are
  the table's;
- saturation: without the divisor the row gradient collapses as the width grows, with it it does not;
- training: a run continued (25 + 35 steps) equals one straight run of 60 bit for bit, the loss starts
  near ln V and falls, and the probe's rows sum to 1;
- bad requests are answered with an error that names the call and the argument, and exit status 1; so
  is a saturation call whose work (heads x the sum of (width + window)^2) is past its limit, each number
  within its own.
"""
import json
import math
import subprocess
import sys

failures = []


def check(ok, message):
    print(("ok    " if ok else "FAIL  ") + message)
    if not ok:
        failures.append(message)


def call(web_api, *requests, status=0):
    # (a call past its limits ran for most of an hour: 120 s fails it instead)
    p = subprocess.run([web_api, *map(json.dumps, requests)], capture_output=True, text=True, timeout=120)
    if p.returncode != status:
        raise SystemExit(f"web_api {requests}: exit status {p.returncode}, expected {status}: {p.stderr}")
    return [json.loads(line) for line in p.stdout.splitlines()]


def main():
    web_api, lab = sys.argv[1:3]
    native_lab = json.loads(subprocess.run([lab, "--json", "--seed", "3"], check=True, capture_output=True, text=True).stdout)
    check(call(web_api, {"call": "lab", "seed": 3})[0] == native_lab, "lab: the answer is lab --json's (seed 3)")

    sentence = "the cat sat on the mat"
    T = len(sentence)
    for raw in (False, True):
        for divide in (True, False):
            h = call(web_api, {"call": "head", "sentence": sentence, "raw": raw, "divide": divide})[0]
            name = f"head raw={raw} divide={divide}"
            rows_ok = all(abs(sum(r) - 1) < 1e-5 for r in h["shares"])
            above = all(h["shares"][i][j] == 0 and h["masked"][i][j] is None and h["score_grad"][i][j] == 0
                        for i in range(T) for j in range(i + 1, T))
            check(h["T"] == T and len(h["labels"]) == T and h["labels"][3] == "␣" and rows_ok and above,
                  f"{name}: rows of the map sum to 1; above the diagonal share 0, score masked, gradient 0")
            divisor = 4.0 if divide else 1.0
            check(h["divisor"] == divisor and all(abs(h["scaled"][i][j] - h["scores"][i][j] / divisor) < 1e-5
                                                  for i in range(T) for j in range(T)),
                  f"{name}: scaled = scores / {divisor}")
            # softmax of the masked row, recomputed here
            worst = 0.0
            for i in range(T):
                row = h["masked"][i][:i + 1]
                top = max(row)
                e = [math.exp(v - top) for v in row]
                worst = max(worst, max(abs(a / sum(e) - b) for a, b in zip(e, h["shares"][i])))
            check(worst < 1e-5, f"{name}: the map is the softmax of the masked scores ({worst:.1e})")
            # the gradient through the softmax: dL/ds_ij = p_ij (g_ij - sum_k p_ik g_ik), g = dL/dp
            # Here g is unknown, but each row of dL/ds sums to 0 (softmax is shift-invariant).
            sums = max(abs(sum(r)) for r in h["score_grad"])
            check(sums < 1e-4 and any(abs(v) > 1e-6 for r in h["score_grad"] for v in r),
                  f"{name}: each row of the scores' gradient sums to 0 (softmax ignores a shift; {sums:.1e}), not all 0")
            if raw:
                # "the" at 0 and 15: the same letters, the same rows, so x·x scores repeat exactly
                check(abs(h["scores"][15][0] - h["scores"][15][15]) < 1e-5 and abs(h["scores"][0][0] - h["scores"][15][15]) < 1e-5,
                      f"{name}: a repeated letter brings its row back (x·x equal)")
            check(h["graph"].startswith("digraph") and "output·upstream" in h["graph"] and "softmax" in h["graph"]
                  and "output_dot_upstream" in h and "loss" not in h,
                  f"{name}: the graph is DOT of sum(output * upstream), through softmax")
            if not raw and divide:
                plain = h
            if not raw and not divide:
                sharper = sum(max(r) for r in h["shares"][1:]) > sum(max(r) for r in plain["shares"][1:])
                check(sharper, "head: without the divisor the map is sharper")

    # One position per character, labelled by character: "é" and "日" are one each, the space ␣.
    h = call(web_api, {"call": "head", "sentence": "é日 é日", "raw": True})[0]
    check(h["T"] == 5 and h["labels"] == ["é", "日", "␣", "é", "日"],
          f"head: a non-ASCII sentence, one position and label a character: {h['T']} positions, {h['labels']}")
    check(abs(h["scores"][3][0] - h["scores"][3][3]) < 1e-5 and abs(h["scores"][4][1] - h["scores"][4][4]) < 1e-5,
          "head: a repeated non-ASCII character brings its row back (x·x equal)")
    ascii_row = call(web_api, {"call": "head", "sentence": "ab", "raw": True})[0]["scores"][0][0]
    check(abs(call(web_api, {"call": "head", "sentence": "aé", "raw": True})[0]["scores"][0][0] - ascii_row) < 1e-6,
          "head: an ASCII character's row is the same beside a non-ASCII one")

    s = call(web_api, {"call": "saturation", "widths": [2, 128], "heads": 20})[0]
    check(call(web_api, {"call": "saturation"})[0]["widths"] == [2, 4, 8, 16, 32, 64, 128, 256],
          "saturation: the page's call (the defaults) is within the limit on one call's work")
    check(s["raw"]["row_gradient"][1] < 0.1 * s["raw"]["row_gradient"][0]
          and s["divided"]["row_gradient"][1] > 0.5 * s["divided"]["row_gradient"][0],
          f"saturation: width 128 without the divisor {s['raw']['row_gradient'][1]:.2e} against "
          f"{s['raw']['row_gradient'][0]:.2e} at width 2; with it {s['divided']['row_gradient']}")

    a = call(web_api, {"call": "train_start"}, {"call": "train_steps", "steps": 60})
    b = call(web_api, {"call": "train_start"}, {"call": "train_steps", "steps": 25}, {"call": "train_steps", "steps": 35})
    losses = a[1]["losses"]
    check(b[1]["losses"] + b[2]["losses"] == losses and b[2]["step"] == 60,
          "training: a run continued (25 + 35 steps) equals one of 60 steps, bit for bit")
    check(sum(losses[-10:]) / 10 < losses[0] - 0.3 and abs(losses[0] - math.log(len(a[0]["vocab"]))) < 0.3,
          f"training: the loss starts near ln V and falls ({losses[0]:.3f} → {sum(losses[-10:]) / 10:.3f})")
    check(all(abs(sum(r) - 1) < 1e-5 for r in a[1]["attention"]) and len(a[1]["attention"]) == 16,
          "training: the probe window's 16 rows of attention sum to 1")

    bad = [({"call": "head"}, "head: needs a sentence"),
           ({"call": "head", "sentence": "é" * 65}, "head: the sentence has 65 characters; it must have 1 to 64"),
           ({"call": "head", "sentence": ""}, "head: the sentence is empty; it must have 1 to 64 characters"),
           ({"call": "head", "sentence": "ab", "raw": 1}, "head: raw must be true or false"),
           ({"call": "saturation", "widths": [0]}, "saturation: widths must be"),
           ({"call": "saturation", "heads": 5000}, "saturation: heads must be an integer from 1 to 1000, not 5000"),
           # each number within its limit, their product (most of an hour) over the call's
           ({"call": "saturation", "widths": [1024] * 12, "heads": 1000, "window": 64},
            "saturation: 1000 heads x the sum over widths [" + ",".join(["1024"] * 12) + "] of (width + window 64)^2 "
            "is 1.42e+10, over the limit of 3e+07 for one call"),
           ({"call": "train_steps"}, "train_steps: no run"),
           ({"call": "fly"}, "no call named \"fly\""),
           ({"sentence": "a"}, "a request is an object with \"call\"")]
    for request, expected in bad:
        answer = call(web_api, request, status=1)[0]
        check(expected in answer.get("error", ""), f"{json.dumps(request)[:60]} → error: {answer.get('error')}")
    p = subprocess.run([web_api, "{not json"], capture_output=True, text=True)
    check(p.returncode == 1 and "parse" in json.loads(p.stdout)["error"], f"not JSON → {p.stdout.strip()[:80]}")
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
