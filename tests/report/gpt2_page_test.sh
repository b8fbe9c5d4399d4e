#!/usr/bin/env bash
# The report page at GPT-2 small's counts (148 parameter tensors, 12 layers of 12 heads), on a short
# run of a narrow gpt2 model as a new user runs it (no --log-every), opened in headless Chromium:
# - the gradient norms are a heatmap with one row per parameter (4 + 12 per layer), the head
#   statistics one row per head;
# - the page has rows often enough that the warmup shows (the peak rate inside the run, not at an end);
# - the layer and head picker, set from the URL fragment, draws the maps asked for;
# - the maps are labelled by token, not by character: GPT-2's tokens are words and pieces (here a token
#   file's ids, " 20"), upright (a rotated ␣ reads as ɹ), every row, and every other column where the
#   labels are wider than a column, none on another at 800 and 1280 px (screenshots in WORK_DIR);
# - the settings are gpt2's: gelu_exact, not gpt's gpt2_init or multihead's feed_forward.
#
#   gpt2_page_test.sh TRAIN WORK_DIR
#
# Exit status: 0 passed, 1 failed, 77 skipped (no chromium installed; dev/setup installs it).
set -euo pipefail
train=$1 work=$2

rm -rf "$work"
mkdir -p "$work"
source "$(dirname "${BASH_SOURCE[0]}")/chromium.sh"
page=$work/run.html
layers=12 heads=12 steps=40
"$train" --model gpt2 --n-embd 48 --n-head $heads --n-layer $layers --block 8 --batch 4 --steps $steps --warmup 10 \
  --lr 1e-3 --eval-every $steps --eval-iters 1 --sample 0 --report "$page" >/dev/null 2>"$work/train.log"

failed=0
count() { grep -o "$2" "$1" | sort -u | wc -l; }  # count DOM-FILE PATTERN: distinct matches

dump "file://$page" >"$work/dom.html"
# GPT-2's block has 12 tensors (ln_1, c_attn, c_proj, ln_2, c_fc, mlp's c_proj: weight and bias or gain
# and bias); wte, wpe and ln_f's gain and bias besides.
check "gradient heatmap rows" "$(count "$work/dom.html" 'class="grad-row" data-name="[^"]*"')" $((4 + 12 * layers))
check "gradient heatmap row of the last tensor" "$(count "$work/dom.html" 'class="grad-row" data-name="h\.11\.mlp\.c_proj\.bias"')" 1
check "head entropy heatmap rows" "$(count "$work/dom.html" 'class="entropy-row" data-name="h\.[0-9]*\.attn\.heads\.[0-9]*"')" $((layers * heads))
# Rows every min(eval-every, steps) / 20 = 2 steps: 21 rows, so that the warmup to 1e-3 (10 steps) and the
# decay show: the largest rate drawn is near 1e-3, inside the run. At evaluations only, the page had
# steps 0 and 40, at rates 9.1e-5 and 1.0e-4: a rate that seemed to rise.
check "logged rows" "$(shown "$work/dom.html" summary-rows)" $((steps / 2 + 1))
peak=$(grep -o '"log":\[\[[^"]*\]\]' "$page" | grep -o '\[[0-9][^]]*\]' | tr -d '[]' |
  awk -F, -v last=$steps '$5 + 0 > best { best = $5 + 0; step = $1 } END { print (best > 9e-4 && step > 0 && step < last) ? "inside" : "at step " step ": " best }')
check "the largest learning rate on the page" "$peak" inside

# The picker: the fragment's layer and head, or all of a layer's heads, or one head in every layer.
# Without one, many heads start at the first layer's.
picked() {  # picked FRAGMENT EXPECTED-HEADS...
  local fragment=$1 dom=$work/dom-$((++picks)).html
  dump "file://$page${fragment:+#$fragment}" >"$dom"
  shift
  check "maps drawn for '#$fragment'" "$(grep -o 'class="head-map" data-head="[^"$]*"' "$dom" | cut -d'"' -f4 | tr '\n' ' ')" "$* "
}
picks=0
picked "" $(for h in $(seq 0 $((heads - 1))); do echo h.0.attn.heads.$h; done)
picked "layer=11&head=3" h.11.attn.heads.3
picked "layer=5" $(for h in $(seq 0 $((heads - 1))); do echo h.5.attn.heads.$h; done)
picked "layer=all&head=7" $(for l in $(seq 0 $((layers - 1))); do echo h.$l.attn.heads.7; done)
picked "eval=0&layer=2&head=1" h.2.attn.heads.1
check "evaluation shown with eval=0" "$(shown "$work/dom-5.html" eval-step)" 0
check "how many heads are shown, said" "$(shown "$work/dom-2.html" maps-shown)" "1 of $((layers * heads)) heads"
# a layer or head the model does not have falls back to the default view
picked "layer=12&head=99" $(for h in $(seq 0 $((heads - 1))); do echo h.0.attn.heads.$h; done)

# Each parameter on its own scale, from the fragment too.
dump "file://$page#scale=own" >"$work/dom-own.html"
own() { grep -o '</span> each row from its own smallest' "$1" | wc -l; }  # own DOM-FILE: rows on their own scales, in a legend
check "heatmaps on each row's own scale from #scale=own" "$(own "$work/dom-own.html")" 1
check "heatmaps on each row's own scale without it" "$(own "$work/dom.html")" 0

# A model of token ids: the sample's text (" 20 27 34 ...") is longer than its 16 tokens. The page once
# labelled the maps with its characters, read past the maps' rows and drew none.
perl -e 'print pack("v*", map { $_ * 7 % 40 } 0 .. 2999)' >"$work/train.bin"
"$train" --model gpt2 --n-embd 16 --n-head 2 --n-layer 1 --block 16 --steps 2 --eval-iters 1 --sample 0 \
  --data "$work/train.bin" --report "$work/ids.html" >/dev/null 2>"$work/ids.log"
dump "file://$work/ids.html" >"$work/ids-dom.html"
check "maps drawn for a model of token ids" "$(count "$work/ids-dom.html" 'class="head-map" data-head="h\.[^"]*"')" 2
first_map=$(perl -0ne 'print $1 if /(class="head-map".*?<\/svg>)/s' "$work/ids-dom.html")
check "the first map's row labels, one a token" "$(grep -o 'class="row"[^>]*>␣[0-9]*<' <<<"$first_map" | wc -l)" 16
check "the first map's column labels, one a token, every other" "$(grep -o 'class="col"[^>]*>␣[0-9]*<' <<<"$first_map" | wc -l)" 8
check "labels turned" "$(grep -c 'rotate(' <<<"$first_map" || true)" 0
check "the settings listed" "$(grep -o '<th>\(gelu_exact\|gpt2_init\|feed_forward\)</th>' "$work/dom.html" | tr '\n' ' ' || true)" \
  "<th>gelu_exact</th> "
layout "$work" "file://$work/ids.html" --labels '.head-map text.row=32' --labels '.head-map text.col=16' \
  --shot "$work/ids-{width}.png" || failed=1

if ((failed)); then
  echo "chromium's messages: $work/chromium.log"
  exit 1
fi
echo "the report page at GPT-2's counts: one heatmap row per parameter and per head, the schedule's rows, the picker, maps by token"
