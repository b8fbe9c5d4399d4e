#!/usr/bin/env bash
# train --report in a real browser: a short run, resumed once (the page continues, as the CSV does),
# then the page opened in headless Chromium; the numbers its script writes into the page must be the
# run's, from its --csv log and its --json line. Then what the page draws: the loss chart's ticks at round
# numbers (not only its ends), the val loss dashed over the train loss and both in the legend, the
# settings of the model's kind only, and at 800 and 1280 px a page that fits the window, with every row
# and column of the maps labelled and no label on another (screenshots in WORK_DIR).
#
#   run_report_test.sh TRAIN WORK_DIR
#
# Exit status: 0 passed, 1 failed, 77 skipped (no chromium installed; dev/setup installs it).
set -euo pipefail
train=$1 work=$2

rm -rf "$work"
mkdir -p "$work"
source "$(dirname "${BASH_SOURCE[0]}")/chromium.sh"
page=$work/run.html csv=$work/run.csv
common=(--csv "$csv" --report "$page" --eval-iters 2 --sample 0)
"$train" --model gpt --n-embd 16 --n-head 2 --n-layer 2 --block 12 --steps 30 --until 20 --eval-every 10 \
  --log-every 5 --out "$work/run.safetensors" "${common[@]}" >/dev/null 2>"$work/first.log"
"$train" --resume "$work/run.safetensors" --eval-every 10 --json "${common[@]}" >"$work/run.json" 2>"$work/second.log"

# Self-contained: nothing is fetched (no URLs, external scripts, styles, fonts or images).
if grep -Eqi 'https?://|<link|<img|[[:space:]]src=|@import|@font-face|url\(' "$page"; then
  echo "FAIL: $page refers to something outside itself"
  exit 1
fi

dump "file://$page" >"$work/dom.html"
dump "file://$page#eval=0" >"$work/dom-first.html"

failed=0
same() {  # same WHAT PAGE EXPECTED: numerically equal
  if [[ -z $2 ]] || ! awk -v a="$2" -v b="$3" 'BEGIN { exit !(a + 0 == b + 0) }'; then
    echo "FAIL: the page shows $1 '$2', the run's is '$3'"
    failed=1
  else
    echo "ok: $1 $2"
  fi
}
json() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" "$work/run.json"; }
last_csv=$(tail -n 1 "$csv")
csv_field() { cut -d, -f"$1" <<<"$last_csv"; }

same "last step" "$(shown "$work/dom.html" summary-step)" "$(json steps)"
same "last step (csv)" "$(shown "$work/dom.html" summary-step)" "$(csv_field 1)"
same "val loss" "$(shown "$work/dom.html" summary-val-loss)" "$(json val_loss)"
same "val loss (csv)" "$(shown "$work/dom.html" summary-val-loss)" "$(csv_field 4)"
same "train loss" "$(shown "$work/dom.html" summary-train-loss)" "$(json train_loss)"
same "learning rate (csv)" "$(shown "$work/dom.html" summary-lr)" "$(csv_field 5)"
same "logged rows (csv, both runs)" "$(shown "$work/dom.html" summary-rows)" "$(($(wc -l <"$csv") - 1))"
same "evaluations (csv rows with a val loss)" "$(shown "$work/dom.html" summary-evals)" \
  "$(awk -F, 'NR > 1 && $4 != "" { n++ } END { print n }' "$csv")"
same "attention maps at the last evaluation's step" "$(shown "$work/dom.html" eval-step)" "$(json steps)"
same "attention maps at the first evaluation's step (#eval=0)" "$(shown "$work/dom-first.html" eval-step)" 0
same "heads drawn (2 layers x 2 heads)" "$(grep -o 'data-head="blocks\.[0-9]*\.attention\.heads\.[0-9]*"' "$work/dom.html" | sort -u | wc -l)" 4

# The loss chart (the first, with its legend): its ticks, evenly spaced by 1, 2 or 5 x 10^k, at least 4 on each axis.
loss_chart=$(perl -0ne 'print $1 if /id="loss-charts"><div>(.*?<div class="legend">.*?<\/div>)/s' "$work/dom.html")
for axis in x y; do
  ticks=$(grep -o "class=\"tick $axis\"[^>]*>[^<]*" <<<"$loss_chart" | sed 's/.*>//' | tr '\n' ' ' || true)
  verdict=$(awk -v t="$ticks" 'BEGIN { n = split(t, v, " "); if (n < 4) { print "fewer than 4"; exit }
    step = v[2] - v[1]; e = log(step) / log(10) + 1e-9; k = int(e); if (k > e) k--; m = step / 10 ^ k
    for (i = 3; i <= n; i++) if ((v[i] - v[i - 1] - step) ^ 2 > 1e-12) { print "uneven"; exit }
    print (m - 1) ^ 2 < 1e-9 || (m - 2) ^ 2 < 1e-9 || (m - 5) ^ 2 < 1e-9 ? "round" : "a step of " step }')
  check "the loss chart's $axis ticks ($ticks)" "$verdict" round
done
# the lines, dashed or not, in the chart and in its legend
dashed() { perl -ne 'while (/'"$1"'/g) { my $k = $1; my ($name) = $k =~ /(?:<\/svg> |<title>)(.*)$/; print $name, $k =~ /dasharray/ ? " (dashed)," : "," }'; }
check "the lines" "$(dashed '(<polyline[^>]*><title>[^<]*)' <<<"$loss_chart")" "batch loss,train loss,val loss (dashed),"
check "the legend's keys" "$(dashed 'class="key">(.*?)<\/span>' <<<"$loss_chart")" "batch loss,train loss,val loss (dashed),"
# The settings of a gpt: n_head and gpt2_init, not multihead's feed_forward or gpt2's gelu_exact.
check "the settings listed" "$(grep -o '<th>\(n_head\|gpt2_init\|feed_forward\|gelu_exact\)</th>' "$work/dom.html" | tr '\n' ' ' || true)" \
  "<th>n_head</th> <th>gpt2_init</th> "
# The layout: 4 maps of the 12 characters of the sample.
layout "$work" "file://$page" --visible '#settings' --labels '#loss-charts text.tick=16' --labels '.head-map text.row=48' \
  --labels '.head-map text.col=48' --shot "$work/report-{width}.png" || failed=1

if ((failed)); then
  echo "chromium's messages: $work/chromium.log"
  exit 1
fi
echo "the report page shows the run's numbers"
