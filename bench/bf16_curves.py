#!/usr/bin/python3
"""Draws the loss curves of bench/bf16_curves (float32 and bf16 products, the same seed) in one SVG and
prints the largest |bf16 - float32| of each split's evaluated loss (issue 44's tolerance: 0.05 at every
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


def svg(curves, title, out):
    """curves: [(label, colour, dash, [(step, loss)])]; one plot, steps across, loss up."""
    W, H, left, right, top, bottom = 720, 420, 60, 170, 36, 44
    steps = [s for _, _, _, pts in curves for s, _ in pts]
    losses = [v for _, _, _, pts in curves for _, v in pts]
    x0, x1 = min(steps), max(steps)
    y0, y1 = min(losses), max(losses)
    pad = 0.05 * (y1 - y0 or 1)
    y0, y1 = y0 - pad, y1 + pad

    def X(s):
        return left + (s - x0) / (x1 - x0 or 1) * (W - left - right)

    def Y(v):
        return top + (y1 - v) / (y1 - y0) * (H - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for i in range(6):  # horizontal grid and loss ticks
        v = y0 + (y1 - y0) * i / 5
        parts.append(f'<line x1="{left}" x2="{W - right}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    for i in range(6):  # step ticks
        s = x0 + (x1 - x0) * i / 5
        parts.append(f'<text x="{X(s):.1f}" y="{H - bottom + 16}" text-anchor="middle">{s:.0f}</text>')
    parts.append(f'<text x="{(left + W - right) / 2}" y="{H - 8}" text-anchor="middle">step</text>')
    parts.append(f'<text x="16" y="{(top + H - bottom) / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {(top + H - bottom) / 2})">loss</text>')
    parts.append(f'<rect x="{left}" y="{top}" width="{W - left - right}" height="{H - top - bottom}" fill="none" '
                 f'stroke="#444"/>')
    for i, (label, colour, dash, pts) in enumerate(curves):
        d = " ".join(f"{X(s):.1f},{Y(v):.1f}" for s, v in pts)
        parts.append(f'<polyline points="{d}" fill="none" stroke="{colour}" stroke-width="1.8" '
                     f'stroke-dasharray="{dash}"/>')
        ly = top + 14 + 18 * i
        parts.append(f'<line x1="{W - right + 10}" x2="{W - right + 40}" y1="{ly}" y2="{ly}" stroke="{colour}" '
                     f'stroke-width="1.8" stroke-dasharray="{dash}"/>')
        parts.append(f'<text x="{W - right + 46}" y="{ly + 4}">{label}</text>')
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
    svg([("float32, train", "#1f77b4", "", [(r[0], r[1]) for r in a]),
         ("bf16, train", "#d62728", "", [(r[0], r[1]) for r in b]),
         ("float32, val", "#1f77b4", "5,3", [(r[0], r[2]) for r in a]),
         ("bf16, val", "#d62728", "5,3", [(r[0], r[2]) for r in b])], args.title, args.out)
    print(f"{len(a)} evaluations, steps 0-{a[-1][0]}: max |bf16 - float32| train loss {train:.4f}, validation "
          f"{val:.4f} (at step {where}); final validation float32 {a[-1][2]:.4f}, bf16 {b[-1][2]:.4f}; "
          f"training time float32 {a[-1][3]:.0f} s, bf16 {b[-1][3]:.0f} s (one thread each, side by side); "
          f"within 0.05 at every evaluation: {'yes' if max(train, val) <= 0.05 else 'NO'}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
