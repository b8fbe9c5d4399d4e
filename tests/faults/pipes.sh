#!/usr/bin/env bash
# Closed pipes and full disks on examples/train's streams: stderr piped into `head -n 1` (SIGPIPE at the
# next progress line) only silences the progress, and the run trains to the end and saves; stdout into a
# pipe whose reader has gone ends figure, generate and train quietly with 141 (train saved first); stdout on a
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

# Standard output into a pipe whose reader has gone (`figure --json | head -c 10`, here made certain: the
# read end closed before the program starts): no message, exit 141, as a program SIGPIPE ends; train
# saves its checkpoint first.
reader_gone() {  # reader_gone NAME COMMAND...: runs it with such a stdout, expects 141 and no word of it on stderr
    local name=$1 status
    shift
    python3 -c 'import os, subprocess, sys
r, w = os.pipe(); os.close(r)
sys.exit(subprocess.run(sys.argv[1:], stdout=w, stderr=open("gone.err", "w")).returncode)' "$@"
    status=$?
    [[ $status == 141 ]] || fail "$name with its stdout's reader gone: exit $status, expected 141: $(tail -2 gone.err)"
    if grep -Eqi "pipe|cannot write|standard output" gone.err; then fail "$name with its stdout's reader gone said: $(grep -Ei "pipe|write|output" gone.err)"; fi
    echo "ok: $name with its stdout's reader gone: exit 141, no message"
}
bin=$(dirname "$TRAIN")
reader_gone "figure --json" "$bin/figure" --json
reader_gone "generate" "$bin/generate" piped.st --chars 50
reader_gone "train --json" "$TRAIN" "${model[@]}" --json --out reader_gone.st
[[ $(step_of reader_gone.st) == 30 ]] || fail "train with its stdout's reader gone: the checkpoint is not at step 30"

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
