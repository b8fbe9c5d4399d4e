#!/usr/bin/env bash
# The programs on models made to a shape (llmc_model.py writes llm.c's file: GPT-2's vocabulary of 50257,
# a block of 2^20, weights of 1e38) without training one, for what only such shapes show:
#   - logits that are not finite (weights of 1e38, finite in the file) are refused by generate in
#     evaluate's words, before a token is drawn (it printed id V - 1 over and over, exit 0).
#
#   shaped_models.sh BIN_DIR PEAK_RSS LLMC_MODEL_PY WORK_DIR
set -u
bin=$1 peak=$2 make=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failed=0
fail() { echo "FAIL: $*"; failed=1; }
model() { python3 "$make" "$@" || { echo "cannot make $1"; exit 1; }; }
ids() {  # ids FILE N MOD: N uint16 ids (nanoGPT's token file), i * 7 % MOD
  python3 -c "import struct, sys; n, m = int(sys.argv[2]), int(sys.argv[3]); open(sys.argv[1], 'wb').write(struct.pack(f'<{n}H', *(i * 7 % m for i in range(n))))" "$@"
}
# refuses CODE PATTERN PROGRAM ARGS...: exits CODE with PATTERN (a bash regex) on stderr, nothing drawn on stdout
refuses() {
  local code=$1 pattern=$2 program=$3
  shift 3
  local err status
  "$bin/$program" "$@" >out.txt 2>err.txt
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

exit $failed
