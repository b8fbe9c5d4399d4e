#!/usr/bin/env bash
# The llama kind through the programs (issue 42): train on characters with grouped-query attention
# (--n-kv-head 2 of 4 heads) and --ffn-hidden 172, the exact parameter count; a run stopped at step 10
# and resumed ends byte-identical to a straight run; its settings are recorded in the checkpoint; generate
# samples the same text with the key-value cache as without; heatmap, head_scores, gradflow and the report
# page find its heads; export --llama2c writes run.c's file of it (the same loss read back); its flags are
# refused for another kind, and a bad n_kv_head by name.
#
#   llama_train.sh BIN_DIR WORK_DIR
set -euo pipefail
bin=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
for i in $(seq 200); do echo "First Citizen: we are accounted poor citizens, the patricians good. $i"; done > small.txt
fail() { echo "FAIL: $*" >&2; exit 1; }

args=(--model llama --n-embd 32 --n-head 4 --n-kv-head 2 --ffn-hidden 172 --n-layer 2 --block 32 --data small.txt
  --steps 20 --eval-iters 2 --sample 0)
"$bin/train" "${args[@]}" --out straight.st 2> straight.log > /dev/null
# V C (tied) + L (2 C^2 (q, o) + 2 C KV (k, v: 2 heads of 8) + 3 C F + 2 C (the norms)) + C (the last norm)
header=$(head -1 straight.log)
[[ $header =~ ^llama\ model,\ ([0-9]+)\ parameters,\ vocabulary\ ([0-9]+) ]] || fail "train's first line: $header"
C=32 KV=16 F=172 L=2 V=${BASH_REMATCH[2]}
expected=$((V * C + L * (2 * C * C + 2 * C * KV + 3 * C * F + 2 * C) + C))
[ "${BASH_REMATCH[1]}" = "$expected" ] || fail "$header: expected $expected parameters"
"$bin/train" "${args[@]}" --out split.st --until 10 > /dev/null 2>&1
"$bin/train" --resume split.st --data small.txt > /dev/null 2>&1
cmp straight.st split.st || fail "a run resumed at step 10 differs from the straight run"
for field in '"model.n_kv_head":"2"' '"model.ffn_hidden":"172"' '"model.rope_theta":"10000"' \
  '"model.norm_eps":"1e-05"' '"model.tied_embeddings":"1"'; do
  grep -aq "$field" straight.st || fail "straight.st does not record $field"
done

# untied, another theta and eps: recorded; the key-value cache gives the text of rerunning the window, over
# several windows (block 16)
"$bin/train" --model llama --n-embd 32 --n-head 4 --n-kv-head 1 --n-layer 2 --block 16 --data small.txt --steps 10 \
  --eval-iters 1 --sample 0 --unembedding untied --rope-theta 500 --norm-eps 1e-6 --out run.st --report run.html \
  > /dev/null 2>&1
for field in '"model.tied_embeddings":"0"' '"model.rope_theta":"500"' '"model.norm_eps":"1e-06"'; do
  grep -aq "$field" run.st || fail "run.st does not record $field"
done
for st in straight.st run.st; do
  cached=$("$bin/generate" $st --tokens 100 --seed 5 --samples 2 --json)
  uncached=$("$bin/generate" $st --tokens 100 --seed 5 --samples 2 --json --no-cache)
  [[ ${cached##*$'\n'} == *'"tokens":200,'*'"cache":true,"ids":['*']}' ]] || fail "$st: generate --json: ${cached##*$'\n'}"
  [[ ${uncached##*$'\n'} == *'"cache":false,"ids":['*']}' ]] || fail "$st: --no-cache reported: ${uncached##*$'\n'}"
  [[ ${cached%$'\n'*} == "${uncached%$'\n'*}" ]] || fail "$st: --no-cache sampled other text"
done

# the inspect tools: four query heads a layer (the key-value heads they share are not heads of their own)
heads='"layers.0.self_attn.heads.0","layers.0.self_attn.heads.1","layers.0.self_attn.heads.2","layers.0.self_attn.heads.3"'
grep -q "\"heads\":\[$heads,\"layers.1.self_attn.heads.0\"" run.html || fail "the report page does not list llama's heads"
settings=$(grep -o '"settings":{[^}]*}' run.html)
[[ $settings == *'"model":"llama"'*'"n_kv_head":1,'*'"rope_theta":500.0,"norm_eps":1e-06,"tied_embeddings":false'* &&
  $settings != *dropout* ]] || fail "the report page's settings: $settings"
map=$("$bin/heatmap" run.st --prompt "First Citizen" --layer 1 --head 3 --color never)
[[ $map == *"head 3 of layer 1 of the trained llama model"* ]] || fail "heatmap: $map"
scores=$("$bin/head_scores" run.st --json)
[[ $scores == *'"model":"llama"'*'"name":"layers.1.self_attn.heads.3","previous_token":'* ]] || fail "head_scores: $scores"
flow=$("$bin/gradflow" run.st --data small.txt --json)
[[ $flow == *'"name":"layers.0.self_attn.q_proj.weight"'*'"heads":[{"name":"layers.0.self_attn.heads.0","entropy":'* ]] ||
  fail "gradflow: ${flow:0:300}"

# export --llama2c: run.c's legacy file, read back as the same model (the same loss on the same ids);
# refused for another kind, and for a theta or eps run.c does not compute with, by name
"$bin/export" straight.st --llama2c straight.bin > /dev/null
perl -e 'print pack("v*", map { $_ * 7 % 33 } 0 .. 2999)' > ids.bin
loss_of() { "$bin/evaluate" "$1" --data ids.bin --batch 2 --block 32 --batches 3 --json 2> /dev/null | grep -o '"loss":[^,]*'; }
[ -n "$(loss_of straight.st)" ] || fail "evaluate gave no loss for straight.st"
[ "$(loss_of straight.st)" = "$(loss_of straight.bin)" ] ||
  fail "export --llama2c: the file's loss $(loss_of straight.bin) is not the checkpoint's $(loss_of straight.st)"
if "$bin/export" run.st --llama2c run.bin 2> refused.txt; then fail "export --llama2c took rope_theta 500"; fi
grep -q "run.st: .*rope_theta is 500, but run.c turns by 10000" refused.txt || fail "export refusal: $(cat refused.txt)"
[ ! -e run.bin ] || fail "a refused export wrote run.bin"

refused() {  # refused MESSAGE ARGS...: train exits 2 or 1 with MESSAGE
  local message=$1
  shift
  if "$bin/train" "$@" --data small.txt --steps 1 --sample 0 2> refused.txt > /dev/null; then fail "train $* was taken"; fi
  grep -qF -- "$message" refused.txt || fail "train $*: $(cat refused.txt)"
}
refused "--n-kv-head does not apply to --model gpt" --model gpt --n-kv-head 2
refused "--unembedding does not apply to --model gpt2" --model gpt2 --unembedding untied
refused "--dropout does not apply to --model llama" --model llama --dropout 0.1
refused "n_kv_head 3 must divide n_head 4" --model llama --n-head 4 --n-kv-head 3
refused "n_embd / n_head = 12 / 4 = 3 must be even" --model llama --n-embd 12 --n-head 4
refused "--rope-theta needs a number above 0" --model llama --rope-theta 0
echo "llama: trained, resumed byte-exactly, settings recorded, sampled with the cache, its heads inspected"
