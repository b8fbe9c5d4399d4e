#!/usr/bin/env bash
# train --divisor none (issue 41, item 10): a gpt trained without the 1/sqrt(head width) divisor records it in
# its checkpoint, which gradflow, figure, heatmap, evaluate and generate load as such (figure names the divisor
# 1; generate's key-value cache gives the text the window gives); --resume keeps it and refuses the flag,
# --init-from refuses it, and a kind without heads refuses it.
#
#   divisor.sh BIN_DIR WORK_DIR
set -euo pipefail
bin=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
for i in $(seq 100); do echo "First Citizen: we are accounted poor citizens, the patricians good. $i"; done > small.txt
fail() { echo "FAIL: $*" >&2; exit 1; }

args=(--model gpt --n-embd 32 --n-head 2 --n-layer 1 --block 16 --data small.txt --eval-iters 1 --sample 0)
"$bin/train" "${args[@]}" --steps 6 --divisor none --out none.st 2> none.log > /dev/null
grep -q "^gpt model without the divisor (--divisor none), [0-9]* parameters" none.log || fail "train's first line: $(head -1 none.log)"
"$bin/train" "${args[@]}" --steps 6 --out sqrt.st > /dev/null
grep -aq '"model.scaled":"0"' none.st || fail "none.st does not record --divisor none"
grep -aq '"model.scaled":"1"' sqrt.st || fail "sqrt.st does not record the divisor"

"$bin/train" --resume none.st --data small.txt --steps 10 > /dev/null
grep -aq '"model.scaled":"0"' none.st || fail "the resumed none.st lost --divisor none"
if "$bin/train" --resume none.st --data small.txt --steps 12 --divisor sqrt 2> refused.txt; then fail "--resume took --divisor"; fi
grep -q -- "--divisor" refused.txt || fail "--resume's refusal: $(cat refused.txt)"
if "$bin/train" --init-from none.st --data small.txt --steps 1 --divisor sqrt 2> refused.txt; then fail "--init-from took --divisor"; fi
grep -q -- "--divisor" refused.txt || fail "--init-from's refusal: $(cat refused.txt)"
"$bin/train" --init-from none.st --data small.txt --steps 2 --eval-iters 1 --sample 0 --out tuned.st > /dev/null
grep -aq '"model.scaled":"0"' tuned.st || fail "--init-from none.st made a model with the divisor"
if "$bin/train" --model bigram --divisor none --data small.txt --steps 1 2> refused.txt; then fail "--divisor was taken for bigram"; fi
grep -q -- "--divisor does not apply to --model bigram" refused.txt || fail "bigram's refusal: $(cat refused.txt)"

page=$("$bin/figure" none.st --prompt "First" --json)
[[ $page =~ \"head_divisor\":1(\.0)?, ]] || fail "figure on none.st: ${page:0:300}"
page=$("$bin/figure" sqrt.st --prompt "First" --json)
[[ $page == *'"head_divisor":null,'* ]] || fail "figure on sqrt.st: ${page:0:300}"
flow=$("$bin/gradflow" none.st --data small.txt --json)
[[ $flow == *'"heads":[{"name":"blocks.0.attention.heads.0","entropy":'* ]] || fail "gradflow: ${flow:0:300}"
"$bin/heatmap" none.st --prompt "First Citizen" --color never > /dev/null
"$bin/evaluate" none.st --data small.txt --json > /dev/null
cached=$("$bin/generate" none.st --tokens 60 --seed 5)
uncached=$("$bin/generate" none.st --tokens 60 --seed 5 --no-cache)
[[ $cached == "$uncached" ]] || fail "generate: the cache sampled other text than the window without the divisor"
echo "divisor: --divisor none recorded, kept by --resume and --init-from, loaded by the programs: ${cached:0:30}"
