#!/usr/bin/env bash
# examples/evaluate on every model kind: one JSON line with the windows it counted; and its refusals, each
# naming what was wrong (exit 1 for a file that does not fit, 2 for the command line).
#
#   evaluate.sh TRAIN EVALUATE WORK_DIR
set -u
train=$1 evaluate=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
failed=0
fail() { echo "FAIL: $*"; failed=1; }

text=$work/text.txt
for _ in $(seq 60); do printf 'the cat sat on the mat; a dog ran. '; done >"$text"  # 2,100 characters
declare -A sizes=([bigram]="--block 8" [average]="--n-embd 16 --block 8" [head]="--n-embd 16 --block 8"
                  [multihead]="--n-embd 16 --n-head 2 --block 8" [gpt]="--n-embd 16 --n-head 2 --n-layer 1 --block 8")
for kind in bigram average head multihead gpt; do
  # shellcheck disable=SC2086
  "$train" --model "$kind" ${sizes[$kind]} --data "$text" --steps 20 --eval-iters 1 --sample 0 \
    --out "$work/$kind.st" >/dev/null || { fail "train --model $kind"; continue; }
  # windows of 2 x 8 tokens, each needing 17: (2100 - 1) / 16 = 131 whole ones, 2096 tokens
  out=$("$evaluate" "$work/$kind.st" --data "$text" --batch 2 --block 8 --json) || { fail "evaluate $kind: exit $?"; continue; }
  if [[ $out =~ ^\{\"loss\":([0-9.]+),\"perplexity\":[0-9.]+,\"tokens\":2096,\"batches\":131\}$ ]]; then
    echo "ok: $kind: $out"
  else
    fail "evaluate $kind printed: $out"
  fi
done

# refuses CODE PATTERN ARGS...: evaluate ARGS exits CODE with PATTERN (a bash regex) on stderr
refuses() {
  local code=$1 pattern=$2
  shift 2
  local err status
  err=$("$evaluate" "$@" 2>&1 >/dev/null)
  status=$?
  if [[ $status == "$code" && $err =~ $pattern ]]; then echo "ok: refused: $err"; else fail "evaluate $*: exit $status: $err"; fi
}
ckpt=$work/gpt.st
printf 'the c' >"$work/short.txt"
printf 'THE CAT' >"$work/capitals.txt"
printf '\x01\x00\xff\x00' >"$work/ids.bin"  # nanoGPT's uint16 ids 1 and 255: 255 is past the vocabulary
refuses 2 "^evaluate: --data FILE is required" "$ckpt"
refuses 2 "^evaluate: --batch needs a whole number from 1" "$ckpt" --data "$text" --batch 0
refuses 1 "--block 9 is longer than the model's block of 8 \\($ckpt\\)" "$ckpt" --data "$text" --block 9
refuses 1 "--data $work/short.txt has 5 tokens: one window of --batch 4 x --block 8 needs 33" "$ckpt" --data "$work/short.txt"
refuses 1 "--data $text holds 131 whole windows of 2 x 8 tokens \\(2100 tokens\\), fewer than --batches 132" \
  "$ckpt" --data "$text" --batch 2 --batches 132
refuses 1 "$work/capitals.txt: .*not in the vocabulary.*'C'" "$ckpt" --data "$work/capitals.txt"
refuses 1 "$work/ids.bin.*255" "$ckpt" --data "$work/ids.bin"
refuses 1 "no_such.st" "$work/no_such.st" --data "$text"
exit $failed
