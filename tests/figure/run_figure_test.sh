#!/usr/bin/env bash
# The figure in a real browser: writes the page with examples/figure, opens it in headless Chromium in
# each of the four checkbox states (and once without a fragment, for the defaults), and checks with
# figure_dom_check that every number the page shows is the library's (from `figure --json`, same seed)
# to the precision shown, and that the fragment's row and step were applied. Then takes a screenshot.
#
#   run_figure_test.sh FIGURE FIGURE_DOM_CHECK WORK_DIR
#
# Exit status: 0 passed, 1 failed, 77 skipped (no chromium installed; dev/setup installs it).
set -euo pipefail
figure=$1 checker=$2 work=$3

browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $browser ]]; then
  echo "chromium is not installed (dev/setup installs it): skipping the figure's browser test"
  exit 77
fi

rm -rf "$work"
mkdir -p "$work"
page=$work/figure.html
"$figure" --seed 7 --out "$page"
"$figure" --seed 7 --json >"$work/figure.json"

# Self-contained: nothing is fetched (no URLs, external scripts, styles, fonts or images).
if grep -Eqi 'https?://|<link|<img|[[:space:]]src=|@import|@font-face|url\(' "$page"; then
  echo "FAIL: $page refers to something outside itself:"
  grep -Eoi '.{0,40}(https?://|<link|<img|[[:space:]]src=|@import|@font-face|url\().{0,40}' "$page" | head -5
  exit 1
fi

run=0
browse() {  # browse OUTPUT-FLAG... URL: one headless run with a fresh profile, its noise to a log
  run=$((run + 1))
  local profile=$work/profile-$run
  mkdir -p "$profile"
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --disable-dev-shm-usage --user-data-dir="$profile" \
    --virtual-time-budget=2000 "$@" \
    2>>"$work/chromium.log"
}

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
  browse --dump-dom "file://$page${fragment:+#$fragment}" >"$dom"
  "$checker" "$work/figure.json" "$dom" "$expect" || failed=1
done

# A screenshot of one state: a PNG of the window's size with something on it.
shot=$work/figure.png
browse --screenshot="$shot" --window-size=1200,900 "file://$page#raw=1&scale=1&row=6&step=4" >/dev/null
if [[ ! -s $shot ]]; then
  echo "FAIL: no screenshot at $shot"
  failed=1
else
  read -r -a header <<<"$(od -An -tx1 -N24 "$shot" | tr '\n' ' ')"
  size=$(wc -c <"$shot")
  width=$((16#${header[16]}${header[17]}${header[18]}${header[19]}))
  height=$((16#${header[20]}${header[21]}${header[22]}${header[23]}))
  if [[ "${header[*]:1:3}" != "50 4e 47" || $width -ne 1200 || $height -ne 900 || $size -lt 20000 ]]; then
    echo "FAIL: $shot is not a 1200x900 PNG with something on it (${width}x${height}, $size bytes)"
    failed=1
  else
    echo "screenshot $shot: ${width}x${height}, $size bytes"
  fi
fi

if ((failed)); then
  echo "chromium's messages: $work/chromium.log"
  exit 1
fi
echo "the figure shows the library's numbers in every state"
