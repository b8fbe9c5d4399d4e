#!/usr/bin/env python3
"""A page's layout in headless Chromium at window widths a reader has (800 and 1280 px by default):

  - the page is no wider than the window (nothing to scroll sideways: a wide map scrolls inside itself);
  - each --visible SELECTOR: every element it matches lies inside the window, left to right;
  - each --whole SELECTOR: every element it matches is shown whole, not cut by a box that clips it
    (overflow other than visible) nor by the window;
  - each --labels SELECTOR=MIN: at least MIN elements, each with text, no two overlapping (their boxes
    on screen, rotated text included, share less than half a pixel square);
then a screenshot of the whole page at each width (SHOT with {width} and {page}, the URL's number from 1,
replaced). Each URL is opened anew at each width, in one browser.

  page_layout.py WORK URL... [--width W]... [--visible SEL]... [--whole SEL]... [--labels SEL=MIN]... [--shot SHOT]

Run by /usr/bin/python3 (Debian's python3-websocket; chromium_page.py). Exit status: 0 every check
passed, 1 one failed (each on stdout), 77 skipped (no chromium or no python3-websocket).
"""
import argparse
import json
import os
import sys

# The checks, in the page: a list of problems, empty when the layout holds.
CHECKS_JS = r"""
((visible, whole, labels) => {
  const problems = [], W = window.innerWidth;
  const name = (e) => e.id ? "#" + e.id : e.tagName.toLowerCase() + (e.getAttribute("class") ? "." + e.getAttribute("class").split(/\s+/).join(".") : "");
  const r1 = (v) => Math.round(v * 10) / 10;
  const wide = document.documentElement.scrollWidth;
  if (wide > W) problems.push(`the page is ${wide} px wide in a window of ${W} px`);
  for (const sel of visible) {
    const all = [...document.querySelectorAll(sel)];
    if (!all.length) problems.push(`${sel}: nothing on the page`);
    for (const e of all) {
      const r = e.getBoundingClientRect();
      if (r.width <= 0 || r.height <= 0) problems.push(`${sel} (${name(e)}): not shown`);
      else if (r.left < -0.5 || r.right > W + 0.5) problems.push(`${sel} (${name(e)}): runs from x ${r1(r.left)} to ${r1(r.right)}, outside the window of ${W} px`);
    }
  }
  for (const sel of whole) {
    const all = [...document.querySelectorAll(sel)];
    if (!all.length) problems.push(`${sel}: nothing on the page`);
    for (const e of all) {
      const r = e.getBoundingClientRect();
      let right = W, left = 0, by = "the window";
      for (let a = e.parentElement; a; a = a.parentElement) {
        if (getComputedStyle(a).overflowX === "visible") continue;
        const b = a.getBoundingClientRect();
        if (b.right < right) { right = b.right; by = name(a); }
        left = Math.max(left, b.left);
      }
      if (r.right > right + 0.5 || r.left < left - 0.5)
        problems.push(`${sel} (${name(e)}): ${r1(r.width)} px wide, cut at x ${r1(right)} by ${by}`);
    }
  }
  for (const [sel, least] of labels) {
    const all = [...document.querySelectorAll(sel)];
    if (all.length < least) problems.push(`${sel}: ${all.length} labels, expected at least ${least}`);
    const boxes = all.map((e) => [e, e.getBoundingClientRect()]);
    for (const [e] of boxes) if (!e.textContent.trim()) problems.push(`${sel} (${name(e)}): a label without text`);
    let overlaps = 0;
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, ra] = boxes[i], [b, rb] = boxes[j];
        const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
        const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
        if (w > 0 && h > 0 && w * h > 0.5 && ++overlaps <= 3)
          problems.push(`${sel}: "${a.textContent}" and "${b.textContent}" overlap (${r1(w)} x ${r1(h)} px)`);
      }
    }
    if (overlaps > 3) problems.push(`${sel}: ${overlaps} overlapping pairs in all`);
  }
  return problems;
})
"""


def check_layout(page, visible=(), whole=(), labels=()):
    """The problems of the page's layout in its current window (an empty list when it holds)."""
    return page.eval(f"{CHECKS_JS}({json.dumps(list(visible))}, {json.dumps(list(whole))}, {json.dumps(list(labels))})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("work")
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--width", type=int, action="append")
    parser.add_argument("--visible", action="append", default=[])
    parser.add_argument("--whole", action="append", default=[])
    parser.add_argument("--labels", action="append", default=[])
    parser.add_argument("--shot")
    args = parser.parse_args()
    labels = []
    for spec in args.labels:
        sel, _, least = spec.rpartition("=")
        labels.append([sel, int(least)])
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import chromium_page
    except ImportError as e:
        print(f"python3-websocket is not installed (dev/setup installs it): skipping ({e})")
        return 77
    if not chromium_page.browser_path():
        print("chromium is not installed (dev/setup installs it): skipping")
        return 77
    os.makedirs(args.work, exist_ok=True)
    failed = 0
    widths = args.width or [800, 1280]
    page = chromium_page.Page("about:blank", args.work, width=widths[0], height=900)
    try:
        for n, url in enumerate(args.urls, 1):
            for width in widths:
                page.set_viewport(width, 900)
                page.open(url)
                page.wait_for(f"decodeURI(location.href) === decodeURI({json.dumps(url)}) && document.readyState === 'complete'",
                              30, f"{url}'s load")
                page.pump(0.2)
                problems = check_layout(page, args.visible, args.whole, labels) + page.errors
                page.errors.clear()
                where = f"{url.rsplit('/', 1)[-1]} at {width} px"
                for p in problems:
                    print(f"FAIL  {where}: {p}")
                if not problems:
                    print(f"ok    {where}: the page fits the window; {len(args.visible)} visible, {len(args.whole)} whole, "
                          f"{len(labels)} kinds of labels present and apart")
                failed += bool(problems)
                if args.shot:
                    page.screenshot(args.shot.replace("{width}", str(width)).replace("{page}", str(n)))
    finally:
        page.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
