#!/usr/bin/python3
"""Draws the loss curves of bench/bf16_curves (float32 and bf16 products, the same seed) in one SVG (the
losses, and below them bf16's minus float32's with the 0.05 band) and prints the largest |bf16 - float32| of each split's evaluated loss (issue 44's tolerance: 0.05 at every
evaluation, llm.c's bf16 one). Plain SVG written by hand: matplotlib is not part of Debian's python3 here.

    /usr/bin/python3 bench/bf16_curves.py float32.csv bf16.csv --out bench/bf16_loss.svg --title "..."

Each CSV is bf16_curves' output: precision,step,train_loss,val_loss,seconds.
"""
import argparse
import csv
import sys


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no evaluations")
    return rows[0]["precision"], [(int(r["step"]), float(r["train_loss"]), float(r["val_loss"]),
                                   float(r["seconds"])) for r in rows]


def panel(parts, curves, box, ylabel, xlabel=None, hlines=()):
    """One plot into parts: curves [(label, colour, dash, [(step, value)])] in box (x, y, w, h), steps across,
    the legend at the right; hlines: [(value, label)] drawn grey and dotted (the tolerance)."""
    left, top, w, h = box
    steps = [s for _, _, _, pts in curves for s, _ in pts]
    values = [v for _, _, _, pts in curves for _, v in pts] + [v for v, _ in hlines]
    x0, x1, y0, y1 = min(steps), max(steps), min(values), max(values)
    pad = 0.05 * (y1 - y0 or 1)
    y0, y1 = y0 - pad, y1 + pad

    def X(s):
        return left + (s - x0) / (x1 - x0 or 1) * w

    def Y(v):
        return top + (y1 - v) / (y1 - y0) * h

    for i in range(6):  # horizontal grid with the value ticks, and the step ticks
        v = y0 + (y1 - y0) * i / 5
        parts.append(f'<line x1="{left}" x2="{left + w}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.3g}</text>')
        s = x0 + (x1 - x0) * i / 5
        parts.append(f'<text x="{X(s):.1f}" y="{top + h + 16}" text-anchor="middle">{s:.0f}</text>')
    if xlabel:
        parts.append(f'<text x="{left + w / 2}" y="{top + h + 34}" text-anchor="middle">{xlabel}</text>')
    parts.append(f'<text x="{left - 46}" y="{top + h / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 {left - 46} {top + h / 2})">{ylabel}</text>')
    parts.append(f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#444"/>')
    for v, label in hlines:
        parts.append(f'<line x1="{left}" x2="{left + w}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#888" '
                     f'stroke-dasharray="2,3"/>')
        parts.append(f'<text x="{left + w - 4}" y="{Y(v) - 4:.1f}" text-anchor="end" fill="#666">{label}</text>')
    for i, (label, colour, dash, pts) in enumerate(curves):
        d = " ".join(f"{X(s):.1f},{Y(v):.1f}" for s, v in pts)
        parts.append(f'<polyline points="{d}" fill="none" stroke="{colour}" stroke-width="1.8" '
                     f'stroke-dasharray="{dash}"/>')
        ly = top + 14 + 18 * i
        parts.append(f'<line x1="{left + w + 10}" x2="{left + w + 40}" y1="{ly}" y2="{ly}" stroke="{colour}" '
                     f'stroke-width="1.8" stroke-dasharray="{dash}"/>')
        parts.append(f'<text x="{left + w + 46}" y="{ly + 4}">{label}</text>')


def svg(a, b, title, out):
    """Both runs' losses (top), and bf16's minus float32's at each evaluation with the 0.05 band (below):
    at the top's scale the two curves lie on each other."""
    W, H = 760, 600
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    panel(parts, [("float32, train", "#1f77b4", "", [(r[0], r[1]) for r in a]),
                  ("bf16, train", "#d62728", "", [(r[0], r[1]) for r in b]),
                  ("float32, val", "#1f77b4", "5,3", [(r[0], r[2]) for r in a]),
                  ("bf16, val", "#d62728", "5,3", [(r[0], r[2]) for r in b])],
          (70, 36, 520, 300), "loss")
    panel(parts, [("train", "#2ca02c", "", [(x[0], y[1] - x[1]) for x, y in zip(a, b)]),
                  ("val", "#9467bd", "5,3", [(x[0], y[2] - x[2]) for x, y in zip(a, b)])],
          (70, 380, 520, 170), "bf16 - float32", "step", hlines=[(0.05, "+0.05"), (-0.05, "-0.05"), (0.0, "")])
    parts.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("float32_csv")
    parser.add_argument("bf16_csv")
    parser.add_argument("--out", required=True, help="the SVG to write")
    parser.add_argument("--title", default="float32 and bf16 products, the same seed")
    args = parser.parse_args()
    (p32, a), (p16, b) = read(args.float32_csv), read(args.bf16_csv)
    if (p32, p16) != ("float32", "bf16"):
        sys.exit(f"expected a float32 run then a bf16 run, got {p32} and {p16}")
    if [r[0] for r in a] != [r[0] for r in b]:
        sys.exit("the two runs were not evaluated at the same steps")
    train = max(abs(x[1] - y[1]) for x, y in zip(a, b))
    val = max(abs(x[2] - y[2]) for x, y in zip(a, b))
    where = max(zip(a, b), key=lambda xy: abs(xy[0][2] - xy[1][2]))[0][0]
    svg(a, b, args.title, args.out)
    print(f"{len(a)} evaluations, steps 0-{a[-1][0]}: max |bf16 - float32| train loss {train:.4f}, validation "
          f"{val:.4f} (at step {where}); final validation float32 {a[-1][2]:.4f}, bf16 {b[-1][2]:.4f}; "
          f"training time float32 {a[-1][3]:.0f} s, bf16 {b[-1][3]:.0f} s (one thread each, side by side); "
          f"within 0.05 at every evaluation: {'yes' if max(train, val) <= 0.05 else 'NO'}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
