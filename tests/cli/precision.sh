#!/usr/bin/env bash
# train, generate and evaluate --precision (issue 44): a bf16 run says so (its first line, --json with the
# kernel), its checkpoint records it and a resume keeps it, with --precision the same or not at all;
# another precision on resume, or a name that is neither, is refused naming both; --help says whether
# this CPU multiplies bfloat16 itself; generate and evaluate decode in bf16 when asked.
#
#   precision.sh BIN_DIR WORK_DIR
set -euo pipefail
bin=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
for i in $(seq 100); do echo "First Citizen: we are accounted poor citizens, the patricians good. $i"; done > small.txt
fail() { echo "FAIL: $*" >&2; exit 1; }
kernel='"bf16_kernel":"(avx512_bf16|avx512|avx2|portable)"'

args=(--model gpt2 --n-embd 32 --n-head 2 --n-layer 1 --block 16 --data small.txt --eval-iters 1 --sample 0)
out=$("$bin/train" "${args[@]}" --steps 4 --precision bf16 --out bf16.st --json 2> bf16.log)
grep -q "^gpt2 model, [0-9]* parameters, .*, bf16 products (" bf16.log || fail "train's first line: $(head -1 bf16.log)"
[[ $out =~ \"steps\":4,\"precision\":\"bf16\",.*,$kernel\}$ ]] || fail "train --json: $out"
grep -aq '"train.bf16":"1"' bf16.st || fail "bf16.st does not record --precision bf16"
out=$("$bin/train" "${args[@]}" --steps 4 --out float32.st --json 2> /dev/null)
[[ $out == *'"precision":"float32",'* && $out != *bf16_kernel* ]] || fail "a float32 run's --json: $out"
grep -aq '"train.bf16":"0"' float32.st || fail "float32.st does not record float32"

# a resume keeps the checkpoint's precision, given the same or not given
out=$("$bin/train" --resume bf16.st --steps 6 --json 2> /dev/null)
[[ $out == *'"steps":6,"precision":"bf16",'* ]] || fail "resumed without --precision: $out"
out=$("$bin/train" --resume bf16.st --steps 8 --precision bf16 --json 2> /dev/null)
[[ $out == *'"steps":8,"precision":"bf16",'* ]] || fail "resumed with --precision bf16: $out"
grep -aq '"train.bf16":"1"' bf16.st || fail "the resumed bf16.st lost --precision bf16"
# ... and refuses another, naming both, before any work (exit 2, the checkpoint untouched)
before=$(cksum < bf16.st)
code=0; "$bin/train" --resume bf16.st --steps 10 --precision float32 2> refused.txt || code=$?
[[ $code == 2 ]] || fail "--resume bf16.st --precision float32 exited $code"
grep -q "^train: --precision float32 cannot change a resumed run: --resume [^ ]*bf16.st was trained in bf16, which it keeps" refused.txt ||
  fail "the refusal: $(cat refused.txt)"
[[ $(wc -l < refused.txt) == 1 ]] || fail "the refusal is not one line: $(cat refused.txt)"
[[ $(cksum < bf16.st) == "$before" ]] || fail "a refused resume changed bf16.st"
code=0; "$bin/train" --resume float32.st --steps 6 --precision bf16 2> refused.txt || code=$?
[[ $code == 2 ]] && grep -q "^train: --precision bf16 cannot change a resumed run: .* was trained in float32" refused.txt ||
  fail "--resume float32.st --precision bf16: $code $(cat refused.txt)"
# a new run from its weights may choose
out=$("$bin/train" --init-from float32.st --data small.txt --steps 2 --eval-iters 1 --sample 0 --precision bf16 --json 2> /dev/null)
[[ $out == *'"precision":"bf16",'* ]] || fail "--init-from float32.st --precision bf16: $out"

# a name that is neither, refused naming the flag and the names
declare -A given=([train]="" [generate]="bf16.st" [evaluate]="bf16.st --data small.txt")
for program in train generate evaluate; do
  code=0; "$bin/$program" ${given[$program]} --precision fp16 2> refused.txt > /dev/null || code=$?
  [[ $code == 2 ]] && grep -qx "$program: --precision needs float32 or bf16, got 'fp16'; see --help" refused.txt ||
    fail "$program --precision fp16: $code $(cat refused.txt)"
  help=$("$bin/$program" --help)
  [[ $help == *"  --precision P "* && $help == *"float32"* ]] || fail "$program --help has no --precision"
  [[ $help == *"this CPU multiplies bfloat16 itself"* || $help == *"this CPU has no bfloat16 arithmetic"* ]] ||
    fail "$program --help does not say what bf16 costs here"
done

# generate and evaluate in bf16: the same checkpoint, decoded so; a greedy sample of a float32 checkpoint
# is text either way
out=$("$bin/generate" bf16.st --chars 20 --seed 3 --json)
[[ ${out##*$'\n'} == *'"precision":"float32","cache":true,'* ]] || fail "generate --json: ${out##*$'\n'}"
out=$("$bin/generate" bf16.st --chars 20 --seed 3 --precision bf16 --json)
[[ ${out##*$'\n'} == *'"precision":"bf16","cache":true,'* ]] || fail "generate --precision bf16 --json: ${out##*$'\n'}"
cached=$("$bin/generate" bf16.st --tokens 40 --seed 5 --precision bf16)
uncached=$("$bin/generate" bf16.st --tokens 40 --seed 5 --precision bf16 --no-cache)
[[ $cached == "$uncached" ]] || fail "generate --precision bf16: the cache and the window sampled other text"
out=$("$bin/evaluate" bf16.st --data small.txt --batch 2 --block 16 --precision bf16)
[[ $out == "loss "*", bf16 products ("*")" ]] || fail "evaluate --precision bf16: $out"
f32=$("$bin/evaluate" bf16.st --data small.txt --batch 2 --block 16 --json)
b16=$("$bin/evaluate" bf16.st --data small.txt --batch 2 --block 16 --json --precision bf16)
[[ $f32 != "$b16" ]] || fail "evaluate gave the same loss in float32 and bf16: $f32"
echo "ok"
