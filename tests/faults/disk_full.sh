#!/usr/bin/env bash
# A save that cannot complete leaves the old checkpoint intact and says why:
#  - a full disk: a 256 KB tmpfs filled to 4 KB from the top when this user may mount one (root), otherwise skipped;
#  - a file size limit (ulimit -f, SIGXFSZ ignored), which fails write() the way a full disk does: on the
#    checkpoint (the old one stays), and on a --csv log that outgrows it (the step's checkpoint is saved);
#  - an --out whose directory is a regular file, or does not exist: refused before training starts.
#
#   bash disk_full.sh path/to/train work_dir
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# About 250 KB a checkpoint; the first one is written at step 2, the failing save at step 4.
model=(--model gpt --n-embd 32 --n-head 2 --n-layer 2 --block 8 --batch 4 --steps 100 --eval-iters 1 --sample 0)
"$TRAIN" "${model[@]}" --until 2 --out good.st >/dev/null 2>&1 || fail "cannot make the first checkpoint"

# check_intact DIR: DIR/run.st is still the first checkpoint, loads, and no temporary file is left.
check_intact() {
    cmp -s "$1/run.st" good.st || fail "the old checkpoint changed"
    [[ -z $(find "$1" -name '.run.st.tmp-*') ]] || fail "a temporary file was left in $1"
    step_of "$1/run.st" >/dev/null  # loads it (or fails, naming it)
}

# The file size limit: every file this process writes stops at 64 KB.
mkdir limited && cp good.st limited/run.st
(ulimit -f 64 && trap '' XFSZ && exec "$TRAIN" --resume limited/run.st --until 4 --out limited/run.st) >out.log 2>err.log
status=$?
[[ $status == 1 ]] || fail "exit status $status with a file size limit, expected 1"
grep -Eq "^train: checkpoint: cannot write 'limited/run\.st': write failed \(File too large\)" err.log ||
    fail "no 'write failed (File too large)' message"
check_intact limited
echo "ok: file size limit: '$(grep -o 'checkpoint: .*' err.log)', the old checkpoint intact"

# The log outgrows the limit while the checkpoint does not (a bigram's is about 2 KB, the CSV grows by a
# line per evaluation): its write fails after that step's checkpoint is saved, on any machine.
(ulimit -f 4 && trap '' XFSZ && exec "$TRAIN" --model bigram --steps 400 --eval-every 1 --eval-iters 1 --sample 0 \
    --csv limited/log.csv --out limited/csv.st) >out.log 2>err.log
status=$?
[[ $status == 1 ]] || fail "a --csv over the file size limit: exit status $status, expected 1"
line=$(grep -Eo -- "--csv limited/log\.csv: cannot write \(File too large\); the checkpoint of step [0-9]+ is saved" err.log) ||
    fail "a --csv over the file size limit: no message naming it"
[[ $(step_of limited/csv.st) == $(grep -Eo '[0-9]+ is saved' <<<"$line" | grep -Eo '[0-9]+') ]] ||
    fail "a --csv over the file size limit: the checkpoint is not at the step the message names"
echo "ok: --csv over the file size limit: exit 1, '$line'"

# A real full disk, where mounting is allowed.
mkdir full
if mount -t tmpfs -o size=256k tmpfs full 2>/dev/null; then
    trap 'umount "$WORK/full" 2>/dev/null' EXIT
    small=("${model[@]}" --n-embd 16)
    "$TRAIN" "${small[@]}" --until 2 --out full/run.st >/dev/null 2>&1 || fail "cannot train into the tmpfs"
    cp full/run.st small.st
    # Fill the disk but for 4 KB, far less than a checkpoint.
    dd if=/dev/zero of=full/filler bs=1k count=$(($(df -k --output=avail full | tail -1) - 4)) status=none
    "$TRAIN" --resume full/run.st --until 4 --out full/run.st >out.log 2>err.log
    status=$?
    [[ $status == 1 ]] || fail "exit status $status on a full disk, expected 1"
    grep -Eq "^train: checkpoint: cannot write 'full/run\.st': write failed \(No space left on device\)" err.log ||
        fail "no 'No space left on device' message"
    cmp -s full/run.st small.st || fail "the old checkpoint on the full disk changed"
    [[ -z $(find full -name '.run.st.tmp-*') ]] || fail "a temporary file was left on the full disk"
    step_of full/run.st >/dev/null
    echo "ok: full disk (tmpfs): '$(grep -o 'checkpoint: .*' err.log)', the old checkpoint intact"
    # The log on the disk filled to the last byte, the checkpoint elsewhere: its first row (the evaluation
    # at step 0, before any checkpoint) fails, naming the file and the step. (The ulimit case above covers
    # a log that fails after a checkpoint is saved.)
    cat /dev/zero >full/filler2 2>/dev/null
    "$TRAIN" "${small[@]}" --steps 20 --eval-every 10 --csv full/log.csv --out csv_full.st >out.log 2>err.log
    status=$?
    [[ $status == 1 ]] || fail "--csv on a full disk: exit status $status, expected 1"
    grep -q -- "--csv full/log.csv: cannot write (No space left on device) at step 0" err.log ||
        fail "--csv on a full disk: no message naming it"
    [[ ! -e csv_full.st ]] || fail "--csv on a full disk: a checkpoint was saved after the log failed at step 0"
    echo "ok: --csv on a full disk: exit 1, '$(grep -o -- '--csv.*' err.log)'"
    umount full
    trap - EXIT
else
    echo "skipped: a full tmpfs (mount is not allowed here)"
fi

# Unwritable places, refused before the first step.
echo "not a directory" >a_file.txt
for out in a_file.txt/run.st no/such/dir/run.st; do
    "$TRAIN" --resume good.st --until 4 --out "$out" >out.log 2>err.log
    status=$?
    [[ $status == 1 ]] || fail "exit status $status for --out $out, expected 1"
    grep -Eq -- "--out $out: (.* is not a directory|cannot use .* as its directory: No such file or directory)" err.log ||
        fail "no message naming --out $out"
    grep -q "step 3" err.log && fail "trained before refusing --out $out"
    echo "ok: --out $out: '$(grep -o -- '--out.*' err.log)'"
done
rm -rf "$WORK"
