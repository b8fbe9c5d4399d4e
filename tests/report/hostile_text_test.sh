#!/usr/bin/env bash
# train --report with HTML in what the page shows: the data file's name and the sample (the first
# characters of the validation split) are "<!--<script>...&...". The page's JSON must hold no "<", ">"
# or "&" (html::script_safe: \u003c, \u003e, \u0026), and in headless Chromium the page must still draw
# the run (an unescaped "<!--<script>" puts the HTML parser in its script-escape state and blanks it).
#
#   hostile_text_test.sh TRAIN WORK_DIR
#
# Exit status: 0 passed, 1 failed, 77 skipped (no chromium installed).
set -euo pipefail
train=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
source "$(dirname "${BASH_SOURCE[0]}")/chromium.sh"

hostile='<!--<script>&'
data="$work/d$hostile.txt" page=$work/run.html
# 900 characters to train on, then the 100 of the validation split, which start with the hostile text
{ for i in $(seq 75); do printf 'hello there '; done; printf '%s' "$hostile"
  for i in $(seq 29); do printf 'abc'; done; } >"$data"
"$train" --data "$data" --model gpt --n-embd 16 --n-head 2 --n-layer 1 --block 16 --steps 4 --eval-every 2 \
  --eval-iters 1 --sample 0 --report "$page" --json >"$work/run.json" 2>"$work/err.log" ||
  { echo "FAIL: train exited $?: $(tail -1 "$work/err.log")"; exit 1; }

failed=0
json_data=$(sed -n 's/.*<script type="application\/json" id="run-data">\(.*\)<\/script>.*/\1/p' "$page")
[[ -n $json_data ]] || { echo "FAIL: no run data in $page"; exit 1; }
if [[ $json_data == *[\<\>\&]* ]]; then
  echo "FAIL: the page's JSON has a literal <, > or &: $(grep -o '.\{20\}[<>&].\{20\}' <<<"$json_data" | head -3)"
  failed=1
fi
[[ $json_data == *'"sample":"\u003c!--\u003cscript\u003e\u0026'* ]] ||
  { echo "FAIL: the sample is not in the page's JSON, escaped"; failed=1; }

dump "file://$page" >"$work/dom.html"
steps=$(sed -n 's/.*"steps":\([0-9]*\).*/\1/p' "$work/run.json")
shown=$(grep -o 'id="summary-step">[^<]*' "$work/dom.html" | sed 's/.*>//')
[[ -n $steps && $shown == "$steps" ]] ||
  { echo "FAIL: the page shows last step '$shown', the run's is '$steps' (the page's script did not run)"; failed=1; }
grep -q "<th>data</th><td>[^<]*d&lt;!--&lt;script&gt;&amp;\.txt</td>" "$work/dom.html" ||
  { echo "FAIL: the settings table does not show the data file's name"; failed=1; }
grep -q '<text[^>]*>&lt;</text>' "$work/dom.html" ||
  { echo "FAIL: the attention maps do not label the sample's '<'"; failed=1; }
((failed == 0)) || { echo "chromium's messages: $work/chromium.log"; exit 1; }
echo "ok: '$hostile' in the data file's name and the sample: the page's JSON escapes it and Chromium draws the run"
