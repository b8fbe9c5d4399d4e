#!/usr/bin/env bash
# SIGKILL examples/train at random moments while it saves a checkpoint after every step, many times,
# each run resuming from what the last one left. After every kill the checkpoint at --out must load;
# at the end the checkpoint, which went through every kill and resume, must be byte-identical to the
# one a straight run saves at the same step, and a resumed run must report the same losses.
#
#   bash kill_during_save.sh path/to/train work_dir [kills]
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
KILLS=${3:-20}

# A checkpoint of about 1.3 MB written (and fsynced) after every step, so most of the time goes to saving.
model=(--model gpt --n-embd 64 --n-head 4 --n-layer 2 --block 4 --batch 2 --steps 100000 --seed 11)
every_step=(--eval-every 1 --eval-iters 1 --sample 0)
RANDOM=2024


# At least KILLS kills, and more (up to 4 KILLS) until one has landed in the middle of a save: how often
# that happens depends on how fast this build steps (an ASan build spends less of its time saving).
kills=0 mid_save=0 last_step=0 attempts=0
# A killed save leaves its temporary file (never read); the next save of the same path removes those of
# processes that no longer run. `left` holds what the kills so far left; `cleaned` counts the saves seen
# to remove them.
left="" cleaned=0
while ((kills < KILLS || (mid_save == 0 && kills < 4 * KILLS))); do
    ((attempts++ < 12 * KILLS)) || fail "only $kills kills after $attempts attempts"
    if [[ -f run.st ]]; then
        "$TRAIN" --resume run.st "${every_step[@]}" --out run.st >/dev/null 2>&1 &
    else
        "$TRAIN" "${model[@]}" "${every_step[@]}" --out run.st >/dev/null 2>&1 &
    fi
    pid=$!
    sleep "0.$((300 + RANDOM % 500))"  # 0.3 to 0.8 s: past the start, somewhere in the saves
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    [[ -f run.st ]] || continue  # killed before its first save: nothing to check yet
    kills=$((kills + 1))
    temps=$(find . -maxdepth 1 -name '.run.st.tmp-*' | wc -l)
    ((temps > 0)) && mid_save=$((mid_save + 1))
    step=$(step_of run.st) || exit 1
    ((step >= last_step)) || fail "the checkpoint went back from step $last_step to $step"
    if [[ -n $left ]] && ((step > last_step)); then  # this run saved: what the earlier kills left is gone
        for t in $left; do [[ -e $t ]] && fail "a save after a kill left the killed save's temporary file $t"; done
        cleaned=$((cleaned + 1))
    fi
    left=$(find . -maxdepth 1 -name '.run.st.tmp-*' -printf '%f\n')
    echo "kill $kills: checkpoint at step $step loads; temporary files left by the kill: $temps"
    last_step=$step
done
((mid_save > 0)) || fail "no kill landed while a checkpoint was being written"

if [[ -n $left ]]; then  # the last kill's leftovers, removed by one more save
    timeout 60 "$TRAIN" --resume run.st "${every_step[@]}" --until $((last_step + 1)) --out run.st >/dev/null 2>err.log ||
        fail "the run after the kills failed"
    [[ -z $(find . -maxdepth 1 -name '.run.st.tmp-*') ]] || fail "the next save left the killed saves' temporary files in place"
    cleaned=$((cleaned + 1))
fi
((cleaned > 0)) || fail "no save was seen removing what a killed save left"
echo "ok: $cleaned times a save after a kill mid-save removed the temporary file that kill had left"

# The checkpoint that lived through every kill against a straight run to the same step.
final=$(step_of run.st) || exit 1
# (with the same evaluation settings: the checkpoint stores them)
timeout 300 "$TRAIN" "${model[@]}" "${every_step[@]}" --until "$final" --out straight.st \
    >/dev/null 2>&1 || fail "the straight run to step $final failed"
cmp -s run.st straight.st || fail "after $kills kills the checkpoint at step $final differs from a straight run's"
more=$((final + 5))
resumed=$(timeout 60 "$TRAIN" --resume run.st --until "$more" --eval-iters 2 --sample 0 --json --out probe.st --force 2>/dev/null) ||
    fail "resuming after the kills failed"
straight=$(timeout 120 "$TRAIN" "${model[@]}" --eval-every 1000000 --eval-iters 2 --sample 0 --until "$more" --json \
    2>/dev/null) || fail "the straight run to step $more failed"
losses() { local t v; t=$(json_field train_loss "$1") && v=$(json_field val_loss "$1") && echo "train_loss $t, val_loss $v"; }
resumed_losses=$(losses "$resumed") && straight_losses=$(losses "$straight") ||
    fail "no train_loss and val_loss in train's JSON: resumed '$resumed', straight '$straight'"
[[ $resumed_losses == "$straight_losses" ]] || fail "step $more: resumed $resumed_losses, straight $straight_losses"
echo "$kills kills ($mid_save while a checkpoint was being written): the previous checkpoint always loaded;"
echo "the survivor at step $final is byte-identical to a straight run's, and resuming it to step $more" \
    "gives the straight run's losses ($straight_losses)"
rm -rf "$WORK"
