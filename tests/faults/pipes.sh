#!/usr/bin/env bash
# Closed pipes and full disks on examples/train's streams: stderr piped into `head -n 1` (SIGPIPE at the
# next progress line) only silences the progress, and the run trains to the end and saves; stdout on a
# full device is an error that names the stream (exit 1), with the checkpoint saved; --csv on a device is
# refused before training.
#
#   bash pipes.sh path/to/train work_dir
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
model=(--model gpt --n-embd 16 --n-head 2 --n-layer 1 --block 8 --batch 4 --steps 30 --eval-every 10 --eval-iters 1 --sample 0)

"$TRAIN" "${model[@]}" --out piped.st 2>&1 >/dev/null | head -n 1 >/dev/null
status=${PIPESTATUS[0]}
[[ $status == 0 ]] || fail "stderr piped into head -n 1: exit status $status, expected 0 (SIGPIPE killed the run?)"
[[ $(step_of piped.st) == 30 ]] || fail "stderr piped into head -n 1: the checkpoint is not at step 30"
echo "ok: stderr closed early: trained to step 30 and saved, exit 0"

if [[ -w /dev/full ]]; then
    "$TRAIN" "${model[@]}" --json --out stdout_full.st >/dev/full 2>err.log
    status=$?
    [[ $status == 1 ]] || fail "stdout on /dev/full: exit status $status, expected 1"
    grep -q "cannot write the results to standard output (No space left on device)" err.log ||
        fail "stdout on /dev/full: no message naming it: $(tail -1 err.log)"
    [[ $(step_of stdout_full.st) == 30 ]] || fail "stdout on /dev/full: the checkpoint is not at step 30"
    echo "ok: stdout on a full device: exit 1, '$(grep -o 'cannot write.*' err.log)', checkpoint at step 30"

    # A device is no log file: refused before training (a CSV on a full disk: disk_full.sh)
    "$TRAIN" "${model[@]}" --csv /dev/full --out csv_full.st >/dev/null 2>err.log
    status=$?
    [[ $status == 2 ]] || fail "--csv /dev/full: exit status $status, expected 2"
    grep -q -- "--csv /dev/full is a character device, not a file to write" err.log ||
        fail "--csv /dev/full: no message naming it: $(tail -1 err.log)"
    [[ -e csv_full.st ]] && fail "--csv /dev/full: trained before refusing it"
    echo "ok: --csv on a device: exit 2, '$(grep -o -- '--csv.*' err.log)'"
else
    echo "no writable /dev/full here: the full-device cases are skipped"
fi
rm -rf "$WORK"
