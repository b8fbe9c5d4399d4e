#!/usr/bin/env bash
# The gpt2 kind through the programs (issue 28's first slice): train on characters, a run stopped at step
# 10 and resumed ends byte-identical to a straight run (dropout 0.1: its generator must resume too), with
# the exact parameter count; --gelu exact is recorded in the checkpoint, generate samples from it (with the key-value cache the
# same text as without), and --gelu is refused for another kind.
#
#   gpt2_train.sh TRAIN GENERATE WORK_DIR
set -euo pipefail
train=$1 generate=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
for i in $(seq 200); do echo "First Citizen: we are accounted poor citizens, the patricians good. $i"; done > small.txt
fail() { echo "FAIL: $*" >&2; exit 1; }

args=(--model gpt2 --n-embd 64 --n-head 2 --n-layer 2 --block 32 --data small.txt --steps 20 --dropout 0.1 --eval-iters 2 --sample 0)
"$train" "${args[@]}" --out straight.st 2> straight.log > /dev/null
# V C + T C (the tables; the output is tied to wte) + L (12 C^2 + 13 C) (the blocks' Linears and norms) + 2 C (ln_f)
header=$(head -1 straight.log)
[[ $header =~ ^gpt2\ model,\ ([0-9]+)\ parameters,\ vocabulary\ ([0-9]+) ]] || fail "train's first line: $header"
C=64 T=32 L=2 V=${BASH_REMATCH[2]}
expected=$((V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C))
[ "${BASH_REMATCH[1]}" = "$expected" ] || fail "$header: expected $expected parameters"
"$train" "${args[@]}" --out split.st --until 10 > /dev/null
"$train" --resume split.st --data small.txt > /dev/null
cmp straight.st split.st || fail "a run resumed at step 10 differs from the straight run"

"$train" "${args[@]}" --gelu exact --out exact.st > /dev/null
# (the checkpoint records it; tests/test_gpt2.cpp shows the two GELUs give different logits)
grep -aq '"model.gelu_exact":"1"' exact.st || fail "exact.st does not record --gelu exact"
grep -aq '"model.gelu_exact":"0"' straight.st || fail "straight.st does not record the tanh GELU"

sample=$("$generate" straight.st --chars 40 --seed 3)
[ "${#sample}" -ge 30 ] || fail "generate gave '$sample'"
# the key-value cache: the same text as rerunning the window, over several windows (block 32), with either
# GELU; --json says which decoder ran
for st in straight.st exact.st; do
  cached=$("$generate" $st --tokens 150 --seed 5 --samples 2 --json)
  uncached=$("$generate" $st --tokens 150 --seed 5 --samples 2 --json --no-cache)
  number='[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?'
  [[ $cached =~ \{\"chars\":[0-9]+,\"tokens\":300,\"seconds\":$number,\"chars_per_s\":$number,\"tokens_per_s\":$number,\"precision\":\"float32\",\"cache\":true,\"ids\":\[[0-9,]+\]\}$ ]] ||
    fail "$st: generate --json did not report the cache: ${cached##*$'\n'}"
  [[ ${uncached##*$'\n'} == *'"cache":false,"ids":['*']}' ]] || fail "$st: --no-cache reported: ${uncached##*$'\n'}"
  [[ ${cached%$'\n'*} == "${uncached%$'\n'*}" ]] || fail "$st: --no-cache sampled other text"
done

if "$train" --model gpt --gelu exact --data small.txt --steps 1 2> refused.txt; then fail "--gelu was taken for --model gpt"; fi
grep -q -- "--gelu does not apply to --model gpt" refused.txt || fail "refusal: $(cat refused.txt)"
echo "gpt2: trained, resumed byte-exactly, --gelu exact recorded, sampled: ${sample:0:30}"
