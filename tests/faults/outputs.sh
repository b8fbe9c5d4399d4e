#!/usr/bin/env bash
# The files the programs write are checked before any work (examples/support/cli.h): an output is never
# an input or another output (compared by device and inode: a hard link or a symbolic link to the input
# counts), never a device, FIFO, socket, directory or symbolic link, and an existing file is replaced only
# with --force (a resumed checkpoint and its logs are the run's own). One run per output: a second run on
# the same --out refuses, naming the first one's PID. Each refusal leaves every file as it was.
#
#   bash outputs.sh path/to/train work_dir      (the other programs are train's neighbours)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
BIN=$(dirname "$TRAIN")
failures=0

for _ in $(seq 40); do echo "hello world, hello there, the quick brown fox"; done >text.txt
small=(--model head --n-embd 8 --block 8 --batch 4 --eval-iters 1 --sample 0)
"$TRAIN" "${small[@]}" --data text.txt --steps 4 --until 2 --out run.st --csv run.csv >/dev/null 2>&1 ||
    fail "cannot make the fixtures"
echo "an unrelated file" >notes.txt
ln text.txt hardlink.txt
ln -s text.txt symlink.txt
mkfifo fifo
mkdir a_dir logs

# expect NAME CODE REGEX -- PROGRAM ARGS...: PROGRAM ARGS must exit CODE with stderr matching REGEX
# (grep -E) and change no file here.
expect() {
    local name=$1 code=$2 regex=$3
    shift 4
    local before after status
    before=$(ls -l --time-style=+%s.%N -I logs; md5sum -- *.st *.txt *.csv 2>/dev/null)
    timeout 60 "$@" >logs/stdout.log 2>logs/stderr.log </dev/null
    status=$?
    after=$(ls -l --time-style=+%s.%N -I logs; md5sum -- *.st *.txt *.csv 2>/dev/null)
    local problem=""
    [[ $status == "$code" ]] || problem="exit status $status, expected $code"
    grep -Eq -- "$regex" logs/stderr.log || problem+="${problem:+; }stderr does not match '$regex'"
    [[ $before == "$after" ]] || problem+="${problem:+; }a file changed: $(diff <(echo "$before") <(echo "$after") | head -3)"
    if [[ -n $problem ]]; then
        echo "FAIL $name: $problem"
        echo "  $*"
        sed 's/^/  | /' logs/stderr.log | tail -5
        failures=$((failures + 1))
    else
        echo "ok   $name: $(grep -Eo -- "$regex" logs/stderr.log | head -1)"
    fi
}
same="is the same file as"
train=("$TRAIN" "${small[@]}" --steps 4)

# An output that is an input.
expect data_as_out 2 "--out text.txt $same --data text.txt" -- "${train[@]}" --data text.txt --out text.txt
expect data_as_csv 2 "--csv text.txt $same --data text.txt" -- "${train[@]}" --data text.txt --csv text.txt
expect data_as_out_forced 2 "--out text.txt $same --data text.txt" -- "${train[@]}" --data text.txt --out text.txt --force
expect hard_link_to_data 2 "--out hardlink.txt $same --data text.txt" -- "${train[@]}" --data text.txt --out hardlink.txt --force
expect resume_as_csv 2 "--csv run.st $same --resume run.st" -- "$TRAIN" --resume run.st --data text.txt --csv run.st
expect resume_as_grad_csv 2 "--grad-csv run.st $same --resume run.st" -- "$TRAIN" --resume run.st --data text.txt --grad-csv run.st
expect out_as_csv 2 "--csv new.st is also --out new.st" -- "${train[@]}" --out new.st --csv new.st
expect plot_loss_own_input 2 "--out run.csv $same CSV run.csv" -- "$BIN/plot_loss" run.csv --out run.csv --force
cp run.csv log.svg  # a log named .svg: the default chart (the CSV's name with .svg) is the log itself
expect plot_loss_default_own_input 2 "log.svg $same CSV log.svg" -- "$BIN/plot_loss" log.svg
expect gradflow_two_outputs 2 "--svg g.out is also --csv g.out" -- "$BIN/gradflow" --steps 0 --trials 1 --csv g.out --svg g.out
expect figure_own_checkpoint 2 "--out run.st $same --checkpoint run.st" -- \
    "$BIN/figure" --checkpoint run.st --prompt hello --out run.st --force

# What an output may not be.
expect device 2 "--out /dev/null is a character device" -- "${train[@]}" --out /dev/null --force
expect fifo 2 "--out fifo is a named pipe \(FIFO\)" -- "${train[@]}" --out fifo --force
expect directory 2 "--out a_dir is a directory" -- "${train[@]}" --out a_dir --force
expect symlink 2 "--out symlink.txt is a symbolic link; name the file it points to" -- "${train[@]}" --out symlink.txt --force
expect figure_device 2 "--out /dev/null is a character device" -- "$BIN/figure" --out /dev/null
expect gradflow_fifo 2 "--dot fifo is a named pipe" -- "$BIN/gradflow" --steps 0 --trials 1 --dot fifo
[[ -p fifo ]] || { echo "FAIL: the FIFO was replaced"; failures=$((failures + 1)); }

# An existing file: only with --force.
expect existing_out 2 "--out notes.txt exists; add --force to replace it" -- "${train[@]}" --out notes.txt
expect existing_csv 2 "--csv notes.txt exists; add --force to replace it" -- "${train[@]}" --csv notes.txt
expect existing_report 2 "--report notes.txt exists; add --force to replace it" -- "${train[@]}" --report notes.txt
expect existing_chart 2 "--out notes.txt exists; add --force" -- "$BIN/plot_loss" run.csv --out notes.txt
touch run.svg
expect existing_default_chart 2 "run.svg exists; add --force" -- "$BIN/plot_loss" run.csv
rm -f run.svg
expect existing_page 2 "--out notes.txt exists; add --force" -- "$BIN/figure" --out notes.txt
expect other_checkpoint 2 "--out run.st exists; add --force" -- "${train[@]}" --data text.txt --out run.st
"${train[@]}" --data text.txt --out notes.txt --force >/dev/null 2>&1 && cmp -s notes.txt <(echo "an unrelated file") &&
    { echo "FAIL: --force did not replace notes.txt"; failures=$((failures + 1)); }
echo "ok   --force replaces an existing file"

# A resumed run saves back to its checkpoint and appends to its log, without --force.
"$TRAIN" "${small[@]}" --steps 4 --until 2 --out resumed.st --csv resumed.csv >/dev/null 2>&1 || fail "cannot make resumed.st"
"$TRAIN" --resume resumed.st --csv resumed.csv --eval-iters 1 --sample 0 >/dev/null 2>err.log ||
    fail "resuming into its own checkpoint and log failed"
[[ $(step_of resumed.st) == 4 ]] || fail "the resumed run did not save back to its checkpoint"
# Resumed past its last step (--until beyond --steps), it says that there is nothing to train (it said nothing)
"$TRAIN" --resume resumed.st --until 6 --eval-iters 1 --sample 0 --out ended.st --csv none >/dev/null 2>err.log ||
    fail "resuming a finished run failed: $(tail -1 err.log)"
grep -q "^the run ended at its last step, 4: nothing to train (a larger --steps extends it)$" err.log ||
    fail "a finished run resumed said: $(cat err.log)"
echo "ok   a finished run resumed says it has nothing to train"
# (a row every step: --log-every's default for 4 steps)
[[ $(wc -l <resumed.csv) == 6 ]] || fail "the resumed run's log has $(wc -l <resumed.csv) lines, expected 6 (header, steps 0 to 4)"
echo "ok   --resume saves back to its checkpoint and appends to its log, no --force needed"
# A resumed run continues its report page: a file that is not one is refused before any step.
expect resumed_report_not_a_page 1 "--report notes.txt: not a report page written by train" -- \
    "$TRAIN" --resume resumed.st --steps 6 --report notes.txt --eval-iters 1 --sample 0

# One run per output: the second run names the first one's PID and changes nothing. The first run saves
# nothing before its signal (its evaluation, and so its saving, is past its last step), so any change is
# the second run's.
"$TRAIN" --model head --n-embd 8 --steps 100000 --eval-every 1000000 --eval-iters 1 --sample 0 --out locked.st >/dev/null 2>&1 &
first=$!
for _ in $(seq 100); do [[ -e .locked.st.lock ]] && break; sleep 0.05; done
expect second_run 1 "--out locked.st is being written by another run \(PID $first\)" -- "${train[@]}" --out locked.st --force
kill -INT "$first"
wait "$first"
status=$?
[[ $status == 130 ]] || { echo "FAIL: the first run exited $status after SIGINT, expected 130"; failures=$((failures + 1)); }
[[ -e .locked.st.lock ]] && { echo "FAIL: the lock file stayed after the run"; failures=$((failures + 1)); }
"${train[@]}" --out locked.st --force >/dev/null 2>err.log || fail "the output could not be used again after the first run ended"
echo "ok   the lock is gone with its run; the output is free again"

((failures == 0)) || { echo "$failures case(s) failed"; exit 1; }
echo "every output was checked before any work, and every refusal left the files as they were"
rm -rf "$WORK"
