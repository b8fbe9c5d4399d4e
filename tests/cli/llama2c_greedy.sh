#!/usr/bin/env bash
# Greedy sampling of llama2.c's stories260K.bin equals run.c's, id for id (issue 42): for each line of
# tests/data/stories260K_greedy_ids.txt ("PROMPT: SAMPLED", the prompt's ids from BOS; README.md beside it
# says how run.c made them), `generate --temperature 0` from the prompt's ids after BOS (BOS alone: no
# --prompt), for 200 positions (201 - the prompt's ids sampled), gives the sampled ids in --json's "ids",
# stopping at a sampled BOS as run.c does; with --no-cache and on two threads too. Then the same model
# with a tokenizer.bin beside it prints text, and --tokenizer FILE names one elsewhere; train --init-from
# it keeps its tokenizer; refusals name the file and the field; export --llama2c writes it back.
#
#   llama2c_greedy.sh BIN_DIR IDS_FILE SHARED_DIR WORK_DIR
#
# Exit status: 0 passed, 1 failed, 77 skipped (no SHARED_DIR/models/stories260K.bin).
set -euo pipefail
bin=$1 expected=$2 shared=$3 work=$4
model=$shared/models/stories260K.bin
if [ ! -f "$model" ]; then
  echo "SKIPPED: no $model"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
ids_of() { tail -1 | python3 -c 'import json, sys; print(" ".join(map(str, json.loads(sys.stdin.read())["ids"])))'; }

cases=0
while IFS= read -r line; do
  [[ $line == \#* || -z $line ]] && continue
  prompt=${line%%:*} want=${line#*: }
  read -ra prompt_ids <<<"$prompt"
  [ "${prompt_ids[0]}" = 1 ] || fail "a prompt that does not start from BOS: $prompt"
  rest=${prompt#1}
  rest=${rest# }
  args=(--temperature 0 --tokens $((201 - ${#prompt_ids[@]})) --json)
  [ -n "$rest" ] && args+=(--prompt "$rest")
  for variant in "" "--no-cache" "--threads 2"; do
    # shellcheck disable=SC2086  # (the variant is its words)
    got=$("$bin/generate" "$model" "${args[@]}" $variant 2> err.txt | ids_of)
    [ "$got" = "$want" ] || fail "prompt '$prompt' $variant: run.c's ids are
$want
but generate gave
$got"
  done
  cases=$((cases + 1))
done < "$expected"
[ "$cases" = 3 ] || fail "$cases cases read from $expected, not 3"
grep -q "token ids only" err.txt || fail "no note that the model has no tokenizer: $(cat err.txt)"

# A tokenizer.bin of 512 tokens (README.md's filler: <unk>, BOS, EOS, the 256 byte tokens, <fillerN>):
# beside the model, or given as --tokenizer FILE, it spells the ids; BOS is not printed
python3 -c "
import struct
t = [b'<unk>', b'\n<s>\n', b'\n</s>\n'] + [b'<0x%02X>' % i for i in range(256)]
t += [b'<filler%d>' % i for i in range(len(t), 512)]
with open('tok512_filler.bin', 'wb') as f:
    f.write(struct.pack('<i', max(map(len, t))))
    for s in t: f.write(struct.pack('<fi', 0.0, len(s)) + s)"
mkdir beside && cp "$model" beside/ && cp tok512_filler.bin beside/tokenizer.bin
text=$("$bin/generate" beside/stories260K.bin --temperature 0 --tokens 5)
[ "$text" = "<filler461><filler461><filler401><filler401><filler401>" ] || fail "with tokenizer.bin beside: '$text'"
text=$("$bin/generate" "$model" --tokenizer tok512_filler.bin --temperature 0 --tokens 3)
[ "$text" = "<filler461><filler461><filler401>" ] || fail "with --tokenizer FILE: '$text'"
# train --init-from it: the checkpoint keeps llama2.c's tokenizer (and so samples from BOS), and a
# tokenizer.bin given with it must be the same file
for i in $(seq 50); do echo "Once upon a time, there was a little girl. $i"; done > story.txt
# (--temperature 0: train's greedy sample starts from BOS and stops at it, as generate's from the checkpoint)
"$bin/train" --init-from beside/stories260K.bin --data story.txt --steps 2 --batch 2 --block 32 --eval-iters 1 \
  --sample 40 --temperature 0 --out tuned.st > train_out.txt 2>&1 || fail "train --init-from: $(cat train_out.txt)"
grep -aq '"tokenizer.llama2c.file"' tuned.st || fail "the checkpoint does not keep llama2.c's tokenizer"
trained_sample=$(sed -n '/^sample:$/,$p' train_out.txt | tail -n +2)
generated=$("$bin/generate" tuned.st --temperature 0 --tokens 40)
[ -n "$generated" ] && [ "$trained_sample" = "$generated" ] ||
  fail "train's greedy sample '$trained_sample' is not generate's '$generated'"
[ -n "$("$bin/generate" tuned.st --tokenizer tok512_filler.bin --tokens 3)" ] || fail "tuned.st sampled nothing"
if "$bin/generate" tuned.st --tokenizer "$(dirname "$expected")/llama2c/tokenizer.bin" --tokens 3 2> refused.txt; then
  fail "another tokenizer.bin was taken for tuned.st"
fi
grep -q "the checkpoint's is another llama2.c tokenizer.bin" refused.txt || fail "other tokenizer: $(cat refused.txt)"

head -c 1000 tok512_filler.bin > short.bin
if "$bin/generate" "$model" --tokenizer short.bin --tokens 3 2> refused.txt; then fail "a truncated tokenizer was taken"; fi
grep -q "short.bin" refused.txt || fail "the refusal does not name the tokenizer: $(cat refused.txt)"

# refusals name the file and the field: a file cut short, a head count it does not have
head -c 500000 "$model" > short_model.bin
if "$bin/generate" short_model.bin --tokens 3 2> refused.txt; then fail "a truncated model file was taken"; fi
grep -q "short_model.bin.*the file is 500000 bytes, but its header (legacy, dim 64, .*the file is short" refused.txt ||
  fail "truncated: $(cat refused.txt)"
if "$bin/generate" "$model" --n-head 4 --tokens 3 2> refused.txt; then fail "--n-head 4 was taken for 8 heads"; fi
grep -q "n_head 4 was asked, but .*stories260K.bin disagrees: its header field 'n_heads' is 8" refused.txt ||
  fail "--n-head: $(cat refused.txt)"

# export --llama2c writes it back: the header and the weights byte for byte (the legacy file's rotary
# tables, which run.c skips, as export.py computes them), and the same greedy ids
"$bin/export" "$model" --llama2c back.bin > /dev/null 2>&1
size=$(stat -c %s "$model")
[ "$(stat -c %s back.bin)" = "$size" ] || fail "export --llama2c wrote $(stat -c %s back.bin) bytes, not $size"
tables=$((2 * 512 * (64 / 8 / 2) * 4))  # freq_cis_real and _imag: seq_len x head_size/2 each, fp32
cmp -n $((size - tables)) back.bin "$model" || fail "export --llama2c changed the header or the weights"
want=$(sed -n 's/^1: //p' "$expected")
got=$("$bin/generate" back.bin --temperature 0 --tokens 200 --json 2> /dev/null | ids_of)
[ "$got" = "$want" ] || fail "the exported file samples other ids: $got"
echo "stories260K.bin: run.c's greedy ids for all $cases prompts, cached, uncached and on two threads"
