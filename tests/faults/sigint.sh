#!/usr/bin/env bash
# SIGINT during training: examples/train finishes its step, saves to --out, says where, exits 130; a
# second SIGINT right behind the first changes nothing. SIGHUP does the same and exits 129. The checkpoint is the one a straight run saves
# at the same step. Without --out it still stops cleanly and says that nothing was saved.
#
#   bash sigint.sh path/to/train work_dir
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
model=(--model gpt --n-embd 64 --n-head 4 --n-layer 2 --block 16 --batch 8 --steps 100000 --seed 3 --sample 0)

# interrupt SIGNALS...: trains in the background, sends each signal after a second of training.
interrupt() {
    "$TRAIN" "${model[@]}" --eval-every 50 --eval-iters 2 "${out[@]}" >out.log 2>err.log &
    local pid=$!
    sleep 1.5
    for signal in "$@"; do kill "-$signal" "$pid"; done
    wait_for_exit "$pid" "$1"
}

out=(--out run.st)
interrupt INT INT
status=$?
[[ $status == 130 ]] || fail "exit status $status after SIGINT, expected 130"
line=$(grep -E '^interrupted at step [0-9]+; saved run\.st$' err.log) || fail "no 'interrupted at step N; saved run.st' line"
step=$(sed -E 's/interrupted at step ([0-9]+);.*/\1/' <<<"$line")
((step > 0)) || fail "interrupted at step 0"
[[ -z $(find . -name '.run.st.tmp-*') ]] || fail "a temporary file was left behind"
# the same evaluation settings as the interrupted run: the checkpoint stores them
"$TRAIN" "${model[@]}" --eval-every 50 --eval-iters 2 --until "$step" --out straight.st >/dev/null 2>&1 ||
    fail "the straight run to step $step failed"
cmp -s run.st straight.st || fail "the checkpoint saved on SIGINT differs from a straight run's at step $step"
echo "ok: SIGINT, SIGINT: exit 130, '$line', the checkpoint equals a straight run's at step $step"

out=(--out run.st --force)  # run.st is the last case's checkpoint
interrupt HUP  # a closed terminal or ssh session
status=$?
[[ $status == 129 ]] || fail "exit status $status after SIGHUP, expected 129"
grep -Eq '^interrupted at step [0-9]+; saved run\.st$' err.log || fail "no 'interrupted at step N; saved run.st' line after SIGHUP"
[[ -z $(find . -name '.run.st.tmp-*') ]] || fail "a temporary file was left behind after SIGHUP"
echo "ok: SIGHUP: exit 129, '$(grep '^interrupted' err.log)'"

out=()
interrupt INT
status=$?
[[ $status == 130 ]] || fail "exit status $status after SIGINT without --out, expected 130"
grep -Eq '^interrupted at step [0-9]+; nothing saved \(no --out\)$' err.log || fail "no 'nothing saved' line"
echo "ok: SIGINT without --out: exit 130, '$(grep '^interrupted' err.log)'"
rm -rf "$WORK"
