#!/usr/bin/env bash
# The inspect tools on a gpt2 checkpoint: its heads (nn::GPT2Head, one per head of c_attn) are found by
# nn::attention_heads, so the report page, heatmap, figure, head_scores and gradflow show every one.
# heatmap's columns are as wide as the longest token's text, which for GPT-2's tokens is more than a
# character (here a token file's ids, " 12").
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

# a model of token ids: tokens " 5", " 12", " 3" are columns of 4 (the longest label and a space)
perl -e 'print pack("v*", map { $_ * 7 % 40 } 0 .. 2999)' > ids.bin
"$train" --model gpt2 --n-embd 16 --n-head 2 --n-layer 1 --block 8 --data ids.bin --steps 2 --eval-iters 1 --sample 0 \
  --out ids.st > /dev/null 2>&1
"$heatmap" ids.st --prompt "5 12 3" --color never > ids_map.txt
[ "$(sed -n 4p ids_map.txt)" = "      ␣5  ␣12 ␣3" ] || fail "heatmap's column labels: $(cat ids_map.txt)"
rows=$(sed -n 5,7p ids_map.txt | sed 's/␣/_/g')  # (one byte a column, for ${#row})
[[ $(head -1 <<<"$rows") =~ ^"   _5 @@@@"" "{8}$ ]] || fail "heatmap's first row: $(cat ids_map.txt)"
[ "$(while IFS= read -r row; do echo "${#row}"; done <<<"$rows" | sort -u)" = 18 ] ||
  fail "heatmap's rows are not all 18 columns (2 + a label of 3 + 1 + 3 cells of 4): $(cat ids_map.txt)"

page=$("$figure" run.st --prompt "First" --json)
[[ $page == *'"model":"gpt2"'*'"n_embd":32,"head_size":16,"head_divisor":null,'* ]] || fail "figure: ${page:0:300}"

scores=$("$head_scores" run.st --json)
[[ $scores == *'"length":8,'* && $scores == *'"name":"h.1.attn.heads.1","previous_token":'* ]] || fail "head_scores: $scores"

flow=$("$gradflow" run.st --data small.txt --json)
[[ $flow == *'"heads":[{"name":"h.0.attn.heads.0","entropy":'* ]] || fail "gradflow: ${flow:0:300}"
echo "gpt2's heads: the report page, heatmap, figure, head_scores and gradflow show them"
