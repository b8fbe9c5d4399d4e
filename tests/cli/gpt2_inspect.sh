#!/usr/bin/env bash
# The inspect tools on a gpt2 checkpoint: its heads (nn::GPT2Head, one per head of c_attn) are found by
# nn::attention_heads, so the report page, heatmap, figure, head_scores and gradflow show every one.
#
#   gpt2_inspect.sh TRAIN HEATMAP FIGURE HEAD_SCORES GRADFLOW WORK_DIR
set -euo pipefail
train=$1 heatmap=$2 figure=$3 head_scores=$4 gradflow=$5 work=$6
rm -rf "$work" && mkdir -p "$work" && cd "$work"
for i in $(seq 100); do echo "First Citizen: we are accounted poor citizens, the patricians good. $i"; done > small.txt
fail() { echo "FAIL: $*" >&2; exit 1; }

"$train" --model gpt2 --n-embd 32 --n-head 2 --n-layer 2 --block 16 --data small.txt --steps 10 --eval-iters 1 --sample 0 \
  --out run.st --report run.html > /dev/null
grep -q '"heads":\["h.0.attn.heads.0","h.0.attn.heads.1","h.1.attn.heads.0","h.1.attn.heads.1"\]' run.html ||
  fail "the report page does not list gpt2's four heads"

map=$("$heatmap" run.st --prompt "First Citizen" --layer 1 --head 1 --color never)
[[ $map == *"head 1 of layer 1 of the trained gpt2 model"* ]] || fail "heatmap: $map"

page=$("$figure" run.st --prompt "First" --json)
[[ $page == *'"model":"gpt2"'*'"n_embd":32,"head_size":16,"head_divisor":null,'* ]] || fail "figure: ${page:0:300}"

scores=$("$head_scores" run.st --json)
[[ $scores == *'"length":8,'* && $scores == *'"name":"h.1.attn.heads.1","previous_token":'* ]] || fail "head_scores: $scores"

flow=$("$gradflow" run.st --data small.txt --json)
[[ $flow == *'"heads":[{"name":"h.0.attn.heads.0","entropy":'* ]] || fail "gradflow: ${flow:0:300}"
echo "gpt2's heads: the report page, heatmap, figure, head_scores and gradflow show them"
