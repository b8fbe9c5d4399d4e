#!/usr/bin/env bash
# The figure in a real browser: writes the page with examples/figure, opens it in headless Chromium in
# each of the four checkbox states (and once without a fragment, for the defaults), and checks with
# figure_dom_check that every number the page shows is the library's (from `figure --json`, same seed)
# to the precision shown, and that the fragment's row and step were applied. Then the layout at 800 and
# 1280 px, on a trained model's head 5 of layer 5 reading a prompt of 49 characters (a page once 3469 px
# wide; 15 made it 1464): the page fits the window (the grid scrolls inside itself), the explanation is
# in view, every row and column has its label and none overlaps; screenshots in WORK_DIR.
#
#   run_figure_test.sh FIGURE TRAIN FIGURE_DOM_CHECK WORK_DIR
#
# Exit status: 0 passed, 1 failed, 77 skipped (no chromium or python3-websocket; dev/setup installs them).
set -euo pipefail
figure=$1 train=$2 checker=$3 work=$4

rm -rf "$work"
mkdir -p "$work"
source "$(dirname "${BASH_SOURCE[0]}")/../report/chromium.sh"
page=$work/figure.html
"$figure" --seed 7 --out "$page"
"$figure" --seed 7 --json >"$work/figure.json"

# Self-contained: nothing is fetched (no URLs, external scripts, styles, fonts or images).
if grep -Eqi 'https?://|<link|<img|[[:space:]]src=|@import|@font-face|url\(' "$page"; then
  echo "FAIL: $page refers to something outside itself:"
  grep -Eoi '.{0,40}(https?://|<link|<img|[[:space:]]src=|@import|@font-face|url\().{0,40}' "$page" | head -5
  exit 1
fi

# URL fragment, then the state the page must show. The four checkbox states cover every step and the
# first and last rows; the empty fragment must give the defaults (x through Wq and Wk, divided, last
# row, first step).
checks=(
  "raw=0&scale=1&row=5&step=3" "raw=0&scale=1&row=5&step=3"
  "raw=1&scale=1&row=3&step=2" "raw=1&scale=1&row=3&step=2"
  "raw=0&scale=0&row=7&step=4" "raw=0&scale=0&row=7&step=4"
  "raw=1&scale=0&row=0&step=1" "raw=1&scale=0&row=0&step=1"
  "" "raw=0&scale=1&row=7&step=0"
)
failed=0
for ((k = 0; k < ${#checks[@]}; k += 2)); do
  fragment=${checks[k]} expect=${checks[k + 1]}
  dom=$work/dom-$((k / 2)).html
  dump "file://$page${fragment:+#$fragment}" >"$dom"
  "$checker" "$work/figure.json" "$dom" "$expect" || failed=1
done

# The layout: a GPT of 6 layers of 6 heads, one step trained, its head 5 of layer 5.
for i in $(seq 40); do echo "First Citizen: we are accounted poor citizens, the patricians good."; done >"$work/small.txt"
"$train" --model gpt --n-embd 12 --n-head 6 --n-layer 6 --block 64 --data "$work/small.txt" --steps 1 --eval-iters 1 \
  --sample 0 --out "$work/gpt.st" >/dev/null 2>&1
prompt="First Citizen: we are accounted poor citizens, th" T=49
"$figure" "$work/gpt.st" --layer 5 --head 5 --prompt "$prompt" --out "$work/figure-$T.html" >/dev/null
grep -q '"layer":5,"head":5,' "$work/figure-$T.html" || { echo "FAIL: the page is not of head 5 of layer 5"; failed=1; }
# at the first step and at the blend, every row and column of the grid labelled
layout "$work" "file://$work/figure-$T.html" "file://$work/figure-$T.html#step=4" --visible '#caption' \
  --labels "#grid th.key=$T" --labels "#grid th.query=$T" --shot "$work/figure-$T-{page}-{width}.png" || failed=1
if ((failed)); then
  echo "chromium's messages: $work/chromium.log"
  exit 1
fi
echo "the figure shows the library's numbers in every state"
