#!/usr/bin/env bash
# GPT-2 weights and token files without a tokenizer (docs/gpt2_weights.md#without-a-tokenizer-token-ids):
# a gpt2 model trained from scratch on a token file takes the files' largest id + 1 as its vocabulary;
# it, its Hugging Face export and its llm.c export fine-tune on the token file (stopped and resumed
# byte-identical to a straight run), evaluate gives the same loss from all three and from nanoGPT's and
# llm.c's files of the same ids, and the end-of-run sample and generate print token ids. Refused, naming
# the file, nothing written: text for a model without a tokenizer, an id past the vocabulary, llm.c's
# model file as --data, a token file of another version, a prompt that is not ids.
#
#   token_file_no_tokenizer.sh BIN_DIR WORK_DIR
set -euo pipefail
bin=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
# ids(COUNT, MULTIPLIER, MODULUS): i * MULTIPLIER % MODULUS for i < COUNT, as perl's list for pack
ids() { echo "map { \$_ * $2 % $3 } 0 .. $(($1 - 1))"; }
perl -e "print pack('v*', $(ids 3000 7 40))" > train.bin  # largest id 39
perl -e "print pack('v*', $(ids 400 11 37))" > val.bin
perl -e "print pack('V256', 20240520, 1, 400), pack('v*', $(ids 400 11 37))" > val_llmc.bin  # llm.c's header, the same ids
echo "First Citizen: we are accounted poor citizens." > text.txt

# from scratch: the vocabulary is 40, said on stderr; the sample is 5 ids after the default prompt (39)
tiny=(--model gpt2 --n-embd 32 --n-head 2 --n-layer 1 --block 16 --eval-iters 1 --seed 3)
"$bin/train" "${tiny[@]}" --data train.bin --steps 2 --sample 5 --out base.st > out.txt 2> err.txt || fail "from scratch: $(cat err.txt)"
grep -q "no --tokenizer was given: the vocabulary is the token files' largest id + 1, 40," err.txt || fail "$(cat err.txt)"
grep -q "^gpt2 model, [0-9]* parameters, vocabulary 40, 3000 training / 400 validation tokens" err.txt || fail "$(cat err.txt)"
[ "$(sed -n 2p out.txt)" = "sample (token ids; no tokenizer):" ] || fail "the sample's title: $(cat out.txt)"
[[ $(sed -n 3p out.txt) =~ ^39(\ ([0-9]|[1-3][0-9])){5}$ ]] || fail "the sample is not 39 and 5 ids below 40: $(cat out.txt)"
"$bin/export" base.st --hf hf > /dev/null
"$bin/export" base.st --llmc m.bin > /dev/null

first_loss=
for f in base.st hf/model.safetensors m.bin; do
  loss=$("$bin/evaluate" $f --data val.bin --batches 2 --json 2> /dev/null) || fail "evaluate $f"
  llmc_loss=$("$bin/evaluate" $f --data val_llmc.bin --batches 2 --json 2> /dev/null) || fail "evaluate $f on llm.c's file"
  first_loss=${first_loss:-$loss}
  [[ $loss == '{"loss":'* && $loss == "$first_loss" && $llmc_loss == "$loss" ]] ||
    fail "evaluate $f: $loss, on llm.c's file $llmc_loss, base.st: $first_loss"
  # fine-tuning: stopped at step 2 and resumed, the same checkpoint as a straight run; the sample in ids
  run=(--init-from $f --data train.bin --steps 4 --eval-iters 1 --sample 3 --prompt "7 8")
  "$bin/train" "${run[@]}" --until 2 --out split.st --force > /dev/null 2> err.txt || fail "train --init-from $f: $(cat err.txt)"
  grep -q "no tokenizer.*token ids only" err.txt || [ $f = base.st ] || fail "$f: no note: $(cat err.txt)"
  "$bin/train" --resume split.st --data train.bin > /dev/null 2> err.txt || fail "train --resume ($f): $(cat err.txt)"
  "$bin/train" "${run[@]}" --out straight.st --force > out.txt 2> err.txt || fail "train --init-from $f: $(cat err.txt)"
  cmp split.st straight.st || fail "$f: a run resumed at step 2 differs from the straight run"
  [[ $(sed -n 3p out.txt) =~ ^7\ 8(\ [0-9]+){3}$ ]] || fail "$f: the sample: $(cat out.txt)"
  grep -q '"tokenizer.kind":"token-ids"' straight.st || fail "$f: the checkpoint does not say it has no tokenizer"
  text=$("$bin/generate" straight.st --tokens 4 --prompt "1 2" --seed 5 2> /dev/null) || fail "generate ($f)"
  [[ $text =~ ^1\ 2(\ [0-9]+){4}$ ]] || fail "generate ($f): '$text'"
done
"$bin/train" --init-from m.bin --data train.bin --steps 2 --eval-iters 1 --sample 0 --report page.html > /dev/null 2> err.txt ||
  fail "train --report: $(cat err.txt)"
[ -s page.html ] || fail "no report page"

refused() {  # refused PATTERN COMMAND...: exit 1, stderr matching PATTERN, no x.st written
  local pattern=$1 rc=0
  shift
  "$@" > /dev/null 2> err.txt || rc=$?
  [ "$rc" = 1 ] && grep -Eq -- "$pattern" err.txt || fail "$* exited $rc: $(cat err.txt)"
  [ ! -e x.st ] || fail "$*: wrote x.st"
}
refused "text.txt is text, but m.bin has no tokenizer \(token ids only\): give it a tokenizer directory" \
  "$bin/train" --init-from m.bin --data text.txt --out x.st
refused "text.txt is text, but base.st has no tokenizer" "$bin/evaluate" base.st --data text.txt
refused "straight.st: it has no tokenizer, only token ids: resume it on the token file" \
  "$bin/train" --resume straight.st --data text.txt --out x.st
perl -e "print pack('v*', 1, 2, 3, 40, 5)" > past.bin
refused "past.bin.*token 40 at position 3 is outside the vocabulary \[0, 40\)" "$bin/train" --init-from m.bin --data past.bin --out x.st
refused "m.bin.*is llm.c's model file \(magic 20240326\), not a token file" "$bin/train" "${tiny[@]}" --data m.bin --out x.st
perl -e "print pack('V256', 20240520, 2, 3), pack('v*', 1, 2, 3)" > v2.bin
refused "v2.bin.*version 2" "$bin/evaluate" base.st --data v2.bin
refused "base.st has no tokenizer, only token ids: .*'hello' is not one" "$bin/generate" base.st --prompt "hello"
echo "no tokenizer: vocabulary 40 from the token file; base.st and its exports give $first_loss; samples in ids"
