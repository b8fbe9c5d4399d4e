#!/usr/bin/env bash
# The hostile cases of issue 25 that the programs themselves answer (the Python scripts' are in
# tests/python/): files planted beside an output (a symbolic link, a hard link or another user's file as
# the lock), another user's checkpoint in a sticky directory, names at the file system's length limit,
# closed standard streams, a file name with a newline, checkpoint settings past the flags' limits, a
# vocabulary shorter than the model's, and signals during an evaluation and during the sample.
#
#   bash hostile.sh path/to/train work_dir     (generate and plot_loss are train's neighbours)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/common.sh"
BIN=$(dirname "$TRAIN")
SET_METADATA="python3 $HERE/set_metadata.py"
failures=0
check() {  # check NAME CONDITION-STATUS MESSAGE: one line per case
    if [[ $2 == 0 ]]; then echo "ok   $1"; else echo "FAIL $1: $3"; sed 's/^/  | /' err.log 2>/dev/null | tail -3; failures=$((failures + 1)); fi
}
# Waits (up to 20 s) until PID has installed its handlers for SIGINT and SIGTERM (train's loop does,
# after reading its data): a signal sent earlier would end it the default way, whatever is tested.
wait_for_handlers() {
    local caught
    for _ in $(seq 400); do
        caught=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null)
        [[ -n $caught ]] && (((16#$caught & 0x4002) == 0x4002)) && return 0
        sleep 0.05
    done
    fail "PID $1 installed no handler for SIGINT and SIGTERM in 20 s"
}
tiny=(--model head --n-embd 8 --block 4 --batch 2 --eval-iters 1 --sample 0)
for _ in $(seq 40); do echo "hello world, hello there, the quick brown fox"; done >text.txt
"$TRAIN" "${tiny[@]}" --data text.txt --steps 20 --until 2 --out good.st --csv log.csv >/dev/null 2>&1 ||
    { echo "cannot make the fixtures"; exit 1; }

# --- lock files: planted links and files are refused and never written --------------------------
echo precious >victim.txt
ln -s victim.txt .o.st.lock
"$TRAIN" "${tiny[@]}" --steps 2 --out o.st >/dev/null 2>err.log
status=$?
[[ $status == 1 && $(cat victim.txt) == precious && ! -e o.st ]] && grep -q "its lock file ./.o.st.lock is a symbolic link" err.log
check lock_symlink $? "exit $status, victim.txt holds '$(head -c 40 victim.txt)'"
"$BIN/plot_loss" log.csv --out o.st >/dev/null 2>err.log  # the same lock in every program that writes
[[ $(cat victim.txt) == precious ]] && grep -q "is a symbolic link" err.log
check lock_symlink_plot_loss $? "plot_loss wrote through the link or did not say so"
rm -f .o.st.lock
ln victim.txt .o.st.lock
"$TRAIN" "${tiny[@]}" --steps 2 --out o.st >/dev/null 2>err.log
[[ $? == 1 && $(cat victim.txt) == precious ]] && grep -q "is a file with 2 names (hard links)" err.log
check lock_hardlink $? "a hard link to another file was taken as the lock"
rm -f .o.st.lock
if [[ $(id -u) == 0 ]]; then  # (only root can give a file to another user)
    echo 4242 >.o.st.lock && chown 12345 .o.st.lock
    "$TRAIN" "${tiny[@]}" --steps 2 --out o.st >/dev/null 2>err.log
    [[ $? == 1 && $(cat .o.st.lock) == 4242 ]] && grep -q "another user's file (uid 12345)" err.log
    check lock_other_users_file $? "another user's lock file was written"
    rm -f .o.st.lock
else
    echo "skip lock_other_users_file: needs root to plant another user's file"
fi

# --- a save that could not replace the file is refused before training (needs root to play two users) --
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
    # a folder of /tmp's, which any user reaches (the build tree may be under a folder only root enters),
    # with a copy of train in it
    shared=$(mktemp -d /tmp/tinygpt-sticky.XXXXXX) && chmod 1777 "$shared" || fail "cannot make a sticky folder"
    cp "$TRAIN" "$shared/train" && cp good.st text.txt "$shared/" && chown 12345 "$shared/good.st" &&
        chmod 755 "$shared/train" && chmod 644 "$shared/good.st" "$shared/text.txt" || fail "cannot fill $shared"
    as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    (cd "$shared" && "${as_nobody[@]}" ./train --resume good.st --data text.txt --steps 30 --eval-every 5 >/dev/null 2>err.log)
    status=$?
    cp "$shared/err.log" err.log 2>/dev/null
    [[ $status == 1 ]] && grep -q "good.st belongs to another user (uid 12345) in ., a directory with the sticky bit" err.log &&
        ! grep -q "step 5" err.log
    check sticky_directory $? "exit $status: not refused before training"
    rm -rf "$shared"
else
    echo "skip sticky_directory: needs root and setpriv to act as another user"
fi

# --- names at NAME_MAX: every save, lock and probe fits, however many saves ------------------------
for length in 242 255; do
    name=$(printf 'n%.0s' $(seq "$length"))
    "$TRAIN" "${tiny[@]}" --data text.txt --steps 12 --eval-every 1 --out "$name" >/dev/null 2>err.log
    status=$?
    [[ $status == 0 ]] && head -c 4096 "$name" | grep -aq '"train.step":"12"' && [[ -z $(find . -name ".n*") ]]
    check "name_of_$length" $? "exit $status with a $length-byte --out"
    rm -f "$name"
done

# --- closed standard streams are /dev/null, never the first file opened -----------------------------
for stream in 0 1 2; do
    case $stream in
    0) "$TRAIN" "${tiny[@]}" --steps 100000000 --out closed.st <&- >/dev/null 2>err.log & ;;
    1) "$TRAIN" "${tiny[@]}" --steps 100000000 --out closed.st >&- 2>err.log & ;;
    2) "$TRAIN" "${tiny[@]}" --steps 100000000 --out closed.st >/dev/null 2>&- & ;;
    esac
    pid=$!
    wait_for_handlers "$pid"
    target=$(readlink "/proc/$pid/fd/$stream")
    kill -INT "$pid"
    wait_for_exit "$pid" INT >/dev/null
    status=$?
    [[ $target == /dev/null && $status == 130 && $(step_of closed.st) -ge 0 ]]
    check "closed_fd_$stream" $? "fd $stream was '$target', exit $status"
    rm -f closed.st
done

# --- a file name with a newline stays on one line of the error -------------------------------------
"$TRAIN" "${tiny[@]}" --data $'no\nsuch file' >/dev/null 2>err.log
[[ $? == 1 && $(wc -l <err.log) == 1 ]] && grep -qF '"no\nsuch file"' err.log
check newline_in_name $? "the error is $(wc -l <err.log) lines"

# --- a checkpoint's settings get their flags' limits (edited metadata) --------------------------------
refused_setting() {  # NAME KEY=VALUE REGEX
    $SET_METADATA good.st edited.st "$2" || fail "set_metadata.py failed"
    local before
    before=$(md5sum edited.st)
    timeout 60 "$TRAIN" --resume edited.st --data text.txt >/dev/null 2>err.log
    local status=$?
    [[ $status == 1 && $(md5sum edited.st) == "$before" ]] && grep -Eq -- "$3" err.log
    check "$1" $? "exit $status"
}
refused_setting setting_eval_iters run.eval_iters=4000000000 "edited.st: run.eval_iters is 4000000000; it takes a whole number from 1 to 1048576"
refused_setting setting_sample run.sample=99999999999 "run.sample is 99999999999; it takes"
refused_setting setting_steps train.steps=18446744073709551615 "train.steps is 18446744073709551615; it takes"

# --- a vocabulary shorter than the model's is refused when the file is read, before any text ---------
$SET_METADATA good.st short_vocab.st tokenizer.vocabulary=ehlo || fail "set_metadata.py failed"
"$BIN/generate" short_vocab.st --chars 50 >out.log 2>err.log
[[ $? == 1 && ! -s out.log ]] && grep -q "short_vocab.st: its vocabulary has 4 tokens but its model's vocab is" err.log
check vocabulary_shorter_than_model $? "printed '$(head -c 40 out.log)'"

# --- signals are heard during an evaluation and during the sample --------------------------------
"$TRAIN" "${tiny[@]}" --data text.txt --steps 5 --eval-iters 1048576 --csv eval.csv --out eval.st >/dev/null 2>err.log &
pid=$!
wait_for_handlers "$pid"  # installed just before the step-0 evaluation of 2 x 1048576 batches
sleep 0.5
kill -TERM "$pid"
wait_for_exit "$pid" TERM >/dev/null
status=$?
[[ $status == 143 ]] && grep -q "interrupted at step 0; saved eval.st" err.log
check signal_during_evaluation $? "exit $status"
"$TRAIN" "${tiny[@]}" --data text.txt --steps 2 --sample 16777216 --out sample.st >out.log 2>err.log &
pid=$!
for _ in $(seq 200); do [[ -e sample.st ]] && break; sleep 0.05; done
sleep 0.5
kill -INT "$pid"
wait_for_exit "$pid" INT >/dev/null
status=$?
[[ $status == 130 ]] && grep -q "^sample:" out.log && grep -q "the sample was interrupted; sample.st holds step 2" err.log
check signal_during_sample $? "exit $status, stdout '$(head -c 60 out.log)'"

echo "$failures failed"
exit $((failures > 0))
