#!/usr/bin/env bash
# The hostile cases of issue 39 (round 4) that need the programs and files: token files that are named
# pipes or are cut short while train reads them, exports that would replace, mix or leave files and
# folders, and a checkpoint whose settings were edited.
#
#   bash hostile_files.sh path/to/train work_dir     (evaluate, generate and export are train's neighbours)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/common.sh"
BIN=$(dirname "$TRAIN")
check() {  # check NAME CONDITION-STATUS MESSAGE: one line per case
    if [[ $2 == 0 ]]; then echo "ok   $1"; else echo "FAIL $1: $3"; sed 's/^/  | /' err.log 2>/dev/null | tail -3; failures=$((failures + 1)); fi
}
# N random uint16 ids below 300, as nanoGPT's train.bin
token_file() { python3 -c "
import random, struct, sys
random.seed(int(sys.argv[2]))
open(sys.argv[1], 'wb').write(struct.pack('<%dH' % int(sys.argv[3]), *[random.randrange(300) for _ in range(int(sys.argv[3]))]))" "$@"; }
token_file tokens.bin 1 20000
gpt2=(--model gpt2 --n-embd 32 --n-head 4 --n-layer 1 --block 16 --sample 0 --eval-iters 1)
"$TRAIN" "${gpt2[@]}" --data tokens.bin --steps 2 --out g.st >/dev/null 2>&1 || { echo "cannot make the fixtures"; exit 1; }

# --- token files that are named pipes: refused at once (open() waited forever for a writer) ----------
mkfifo pipe.bin
refuses evaluate_fifo_data 1 "pipe.bin.*is a named pipe \(FIFO\), not a token file" -- "$BIN/evaluate" g.st --data pipe.bin
mkdir beside && cp tokens.bin beside/train.bin && mkfifo beside/val.bin
refuses train_fifo_val_beside_train 1 "beside/val.bin.*named pipe" -- "$TRAIN" "${gpt2[@]}" --data beside/train.bin --steps 2

# --- a token file cut short while train reads it: a line naming it, the last checkpoint kept ---------
# (it died of SIGBUS, exit 135, with no message)
token_file big.bin 2 2000000
"$TRAIN" "${gpt2[@]}" --data big.bin --steps 1000000 --eval-every 50 --out cut.st >out.log 2>err.log &
pid=$!
for _ in $(seq 600); do [[ -e cut.st ]] && break; sleep 0.05; done
[[ -e cut.st ]] || fail "train saved no checkpoint in 30 s"
truncate -s 4096 big.bin
wait_for_exit "$pid" TERM >/dev/null
status=$?
[[ $status == 1 ]] && grep -q "big.bin.*was cut short while it was read" err.log && ! grep -qi "bus error" err.log
check token_file_cut_while_training $? "exit $status"
"$BIN/generate" cut.st --prompt "1 2" --tokens 2 >/dev/null 2>err.log
check token_file_cut_checkpoint_loads $? "the checkpoint does not load"

# --- export --hf: every output checked before any is written ----------------------------------------
"$TRAIN" --model gpt2 --n-embd 32 --n-head 2 --n-layer 1 --block 16 --sample 0 --eval-iters 1 --data tokens.bin --steps 2 \
    --out two_heads.st >/dev/null 2>&1 || fail "cannot make the 2-head checkpoint"
mkdir kept && echo '{"n_head": 2}' >kept/config.json
# (refused() would see the folders' times change: the checks make and remove their probe and lock files there)
"$BIN/export" g.st --hf kept >/dev/null 2>err.log
[[ $? == 2 && $(ls -A kept) == config.json && $(cat kept/config.json) == '{"n_head": 2}' ]] &&
    grep -q "kept/config.json exists; add --force" err.log
check export_keeps_config_json $? "kept/ holds $(ls -A kept | tr '\n' ' ')"
"$BIN/export" two_heads.st --hf mixed >/dev/null 2>err.log || fail "export two_heads.st"
rm mixed/config.json && mkdir mixed/config.json  # cannot be replaced: then the weights must not be either
before=$(md5sum mixed/model.safetensors)
"$BIN/export" g.st --hf mixed --force >/dev/null 2>err.log
[[ $? == 2 && $(md5sum mixed/model.safetensors) == "$before" ]] && grep -q "mixed/config.json is a directory" err.log
check export_force_does_not_mix $? "mixed/model.safetensors was replaced, or another refusal"
"$BIN/export" g.st --hf made/deeper >/dev/null 2>err.log
[[ -f made/deeper/config.json && -f made/deeper/model.safetensors ]]
check export_makes_its_folder $? "made/deeper holds $(ls made/deeper 2>&1)"
"$BIN/export" tokens.bin --hf refused/deeper >/dev/null 2>err.log  # (not a checkpoint: refused after the checks)
[[ $? == 1 && ! -e refused ]]
check export_refused_leaves_no_folder $? "refused/ is there: $(find refused 2>/dev/null | head -3)"

# --- a checkpoint's settings edited without its checksum: refused naming the file -------------------
python3 "$HERE/set_metadata.py" --keep-checksum g.st edited.st model.n_head=8 || fail "set_metadata.py failed"
refuses edited_metadata_refused 1 "edited.st.*the metadata does not match its checksum" -- "$BIN/generate" edited.st --prompt "1 2" --tokens 2

echo "$failures failed"
exit $((failures > 0))
