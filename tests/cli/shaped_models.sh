#!/usr/bin/env bash
# The programs on models made to a shape (llmc_model.py writes llm.c's file: GPT-2's vocabulary of 50257,
# a block of 2^20, weights of 1e38) without training one, for what only such shapes show:
#   - logits that are not finite (weights of 1e38, finite in the file) are refused by generate in
#     evaluate's words, before a token is drawn (it printed id V - 1 over and over, exit 0);
#   - a pass larger than kPartBytes (examples/checkpoint_data.h) runs in parts, in bounded memory with the
#     same mean: evaluate --batch 16 of GPT-2's vocabulary, gradflow's gradient of the same 16 rows, and
#     head_scores --batch 400 of 128 heads (peak RSS, no timing); what one row cannot fit in this machine's
#     memory is refused before it is allocated, naming the figure (they ran into std::bad_alloc);
#   - a file of random bytes, or of llm.c's layout with another magic, is neither checkpoint nor llm.c's;
#     head_scores on a block of 1 names the file and the probe; a prompt past the block counts tokens.
#
#   shaped_models.sh BIN_DIR PEAK_RSS LLMC_MODEL_PY WORK_DIR
set -u
bin=$1 peak=$2 make=$3 work=$4
source "$(dirname "${BASH_SOURCE[0]}")/shaped_files.sh"  # model, ids, fail; in $work
# refuses CODE PATTERN PROGRAM ARGS...: exits CODE with PATTERN (a bash regex) on stderr, nothing drawn on stdout
refuses() {
  local code=$1 pattern=$2 program=$3
  shift 3
  local err status
  timeout 60 "$bin/$program" "$@" >out.txt 2>err.txt
  status=$?
  err=$(grep -v '^note: ' err.txt)
  if [[ $status == "$code" && $err =~ $pattern && ! -s out.txt ]]; then echo "ok: $program refused: $err"
  else fail "$program $*: exit $status: $err; stdout '$(head -c 80 out.txt)'"; fi
}

# --- logits that are not finite: generate says what evaluate says --------------------------------------
model huge.bin --block 16 --vocab 64 --layers 1 --heads 2 --width 8 --value 1e38
ids ids64.bin 2000 64
not_finite="the model's weights or logits are not finite"
refuses 1 "^evaluate: huge\.bin: the loss of window 0 \(tokens 0 to 64\) is -?nan: $not_finite$" evaluate huge.bin --data ids64.bin
out=$("$bin/generate" huge.bin --tokens 5 --prompt "3 4" 2>err.txt)
status=$?
[[ $status == 1 && $out == "3 4" ]] &&
  grep -Eq "^generate: huge\.bin: the logits of sampled token 1 hold -?nan \(at id 0\): $not_finite$" err.txt ||
  fail "generate on logits that are not finite: exit $status, printed '$out': $(cat err.txt)"

# --- memory: a forward pass in parts, what cannot fit refused ------------------------------------------
model wide.bin --block 256 --vocab 50257 --layers 1 --heads 2 --width 8 --seed 1
ids ids.bin 5000 50257
peak_kib() { "$peak" rss.txt "$bin/$1" "${@:2}" >run.out 2>err.txt || fail "$*: $(cat err.txt)"; cat rss.txt; }  # stdout in run.out
# 16 rows of 256 tokens: their logits and log-softmax 1.6 GB at once, in parts of 2 rows 0.2 GB; the
# same mean as the 16 rows one window at a time
kib=$(peak_kib evaluate wide.bin --data ids.bin --batch 16 --block 256 --batches 1 --json)
one=$(cat run.out)
each=$("$bin/evaluate" wide.bin --data ids.bin --batch 1 --block 256 --batches 16 --json 2>/dev/null)
echo "evaluate --batch 16 --block 256 of a vocabulary of 50257: peak RSS $kib KiB; $one; by rows: $each"
((kib < 400000)) || fail "evaluate --batch 16 took $kib KiB, not a part's 0.2 GB and the program's"
python3 -c "import json, sys; a, b = (json.loads(s)['loss'] for s in sys.argv[1:]); sys.exit(abs(a - b) > 1e-6 * abs(b))" "$one" "$each" ||
  fail "evaluate in parts: $one; the same rows one at a time: $each"

# gradflow's gradient in parts too: 16 rows at once kept 2.4 GB for backward; in parts the same gradient as
# the 16 rows one window at a time
kib=$(peak_kib gradflow wide.bin --data ids.bin --batch 16 --block 256 --json)
one=$(cat run.out)
each=$("$bin/gradflow" wide.bin --data ids.bin --batch 1 --block 256 --batches 16 --json 2>/dev/null)
echo "gradflow --batch 16 --block 256 of a vocabulary of 50257: peak RSS $kib KiB"
((kib < 600000)) || fail "gradflow --batch 16 took $kib KiB, not a part's and the program's"
python3 -c "
import json, sys
a, b = (json.loads(s) for s in sys.argv[1:])
worst = max(abs(p['grad_norm'] - q['grad_norm']) / q['grad_norm'] for p, q in zip(a['parameters'], b['parameters']))
sys.exit(worst > 1e-6 or len(a['parameters']) != len(b['parameters']) or abs(a['loss'] - b['loss']) > 1e-6 * b['loss'])" "$one" "$each" ||
  fail "gradflow in parts: ${one:0:300}; the same rows one window at a time: ${each:0:300}"

model heads.bin --block 100 --vocab 64 --layers 2 --heads 64 --width 64 --seed 2
kib=$(peak_kib head_scores heads.bin --batch 400 --json)
echo "head_scores --batch 400 of 128 heads of 100 positions: peak RSS $kib KiB"
((kib < 600000)) || fail "head_scores --batch 400 took $kib KiB, not its parts' 0.27 GB (2 GB at once)"
[[ $(cat run.out) == *'"name":"h.1.attn.heads.63","previous_token":'* ]] ||
  fail "head_scores --batch 400 does not score all 128 heads"

model long.bin --block 1048576 --vocab 50257 --layers 1 --heads 1 --width 8
more_than="more than this machine's [0-9.e+]+ GB"
refuses 1 "^evaluate: long\.bin: one row of --block 1048576 tokens would need about [0-9.e+]+ GB of memory \(0\.0352 GB of it the model's weights\), $more_than; choose a shorter --block$" \
  evaluate long.bin --data ids.bin --batch 1
refuses 1 "^head_scores: long\.bin: one probe sequence of --length 524288 \(1048576 tokens, every head's attention kept\) would need about [0-9.e+]+ GB of memory .*$more_than; choose a shorter --length$" \
  head_scores long.bin --length 524288
refuses 1 "^gradflow: long\.bin: one row of --block 1048576 tokens would need about [0-9.e+]+ GB of memory \(0\.0703 GB of it the model's weights and their gradients\), $more_than; choose a shorter --block$" \
  gradflow long.bin --data ids.bin --batch 1

# --- what a file is not, a block too short for the probe, a prompt counted in tokens ---------------------
LC_ALL=C awk 'BEGIN { srand(7); for (i = 0; i < 2048; i++) printf "%c", int(rand() * 256) }' >random.bin
neither="neither a tinygpt checkpoint \(a safetensors file, whose JSON header starts with '\{' at byte 8: here 0x9a\) nor llm\.c's model file"
refuses 1 "^generate: random\.bin: $neither \(whose first int32 is the magic 20240326: here 915922556\)$" generate random.bin
refuses 1 "^evaluate: random\.bin: $neither" evaluate random.bin --data ids.bin
cp huge.bin magic.bin && printf '\xc7\xd7\x34\x01' | dd of=magic.bin conv=notrunc status=none  # 20240327
refuses 1 "^generate: magic\.bin: neither a tinygpt checkpoint .* nor llm\.c's model file \(whose first int32 is the magic 20240326: here 20240327\)$" \
  generate magic.bin
printf 'abc' >three.bin
refuses 1 "^generate: three\.bin: neither a tinygpt checkpoint \(a safetensors file\) nor llm\.c's model file: its 3 bytes are too few for either's header$" \
  generate three.bin
model one.bin --block 1 --vocab 64 --layers 1 --heads 2 --width 8
refuses 1 "^head_scores: one\.bin: its block of 1 token is too short for the repeated-token probe, which needs at least 2 \(a random token and its repeat\)$" \
  head_scores one.bin
model four.bin --block 4 --vocab 64 --layers 1 --heads 2 --width 8 --seed 3
refuses 1 "^heatmap: the prompt has 5 tokens, more than the model's block of 4 \(four\.bin\)$" heatmap four.bin --prompt "1 2 3 4 5"
refuses 1 "^figure: the prompt has 5 tokens, more than the model's block of 4 \(four\.bin\)$" figure four.bin --prompt "1 2 3 4 5" --json
exit $failed
