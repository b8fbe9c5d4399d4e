#!/usr/bin/env bash
# The logs of a run killed and resumed equal a straight run's (issue 25, item 7). A run logs every step
# (--log-every 1, --grad-report) and saves every 40: killed with SIGKILL between two checkpoints, its
# logs are ahead of its checkpoint; the resume must drop those rows, not log them twice. After four
# kills and resumes, --csv (every column but tokens_per_s, a timing), --grad-csv and the report page's
# data (all but its run id) must be a straight run's. Then the same after SIGINT, which saves at the
# step it stops at: the row a straight run logs there must be in the log once.
#
#   bash kill_resume_logs.sh path/to/train work_dir
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
RANDOM=2025
model=(--model gpt --n-embd 32 --n-head 2 --n-layer 2 --block 16 --batch 8 --seed 3 --log-every 1 --grad-report 10
       --eval-iters 1 --sample 0)
logs_of() { echo --csv "$1.csv" --grad-csv "$1.grads.csv" --report "$1.html"; }
# the step a checkpoint is at, from its header ("" while there is none)
header_step() { head -c 65536 "$1" 2>/dev/null | grep -ao '"train.step":"[0-9]*"' | grep -o '[0-9]*'; }
last_row() { tail -n 1 "$1" | cut -d, -f1; }
page_data() { sed -n 's/.*id="run-data">\(.*\)<\/script>.*/\1/p' "$1" | sed 's/"run_id":"[^"]*",\{0,1\}//'; }
# same_logs RUN STRAIGHT: RUN's logs hold what STRAIGHT's do
same_logs() {
    diff <(cut -d, -f1-6 "$2.csv") <(cut -d, -f1-6 "$1.csv") >diff.log ||
        fail "$1.csv differs from $2.csv (tokens_per_s aside): $(grep -c '^>' diff.log) rows more, $(grep -c '^<' diff.log) fewer: $(head -3 diff.log | tr '\n' ' ')"
    cmp -s "$2.grads.csv" "$1.grads.csv" || fail "$1.grads.csv differs from $2.grads.csv: $(diff "$2.grads.csv" "$1.grads.csv" | head -3 | tr '\n' ' ')"
    [[ -n $(page_data "$2.html") && $(page_data "$1.html") == "$(page_data "$2.html")" ]] ||
        fail "the data of $1.html differs from $2.html's"
}

# SIGKILL between checkpoints, four times, each run resuming the last one's checkpoint.
killed=(--steps 800 --eval-every 40)
kills=0 ahead=0 attempts=0
while ((kills < 4)); do
    ((attempts++ < 20)) || fail "only $kills kills in $attempts runs"
    before=$(header_step run.st)
    if [[ -n $before ]]; then
        "$TRAIN" --resume run.st $(logs_of run) >/dev/null 2>err.log &
    else
        "$TRAIN" "${model[@]}" "${killed[@]}" $(logs_of run) --out run.st >/dev/null 2>err.log &
    fi
    pid=$!
    # a checkpoint after the one it started from, then a moment of logging past it
    for ((i = 0; i < 1000; ++i)); do
        now=$(header_step run.st)
        [[ -n $now ]] && ((now > ${before:--1})) && break
        kill -0 "$pid" 2>/dev/null || fail "the run ended before it was killed"
        sleep 0.01
    done
    sleep "0.0$((RANDOM % 9 + 1))"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    kills=$((kills + 1))
    step=$(header_step run.st) row=$(last_row run.csv)
    ((row > step)) && ahead=$((ahead + 1))
    echo "kill $kills: checkpoint at step $step, --csv at step $row"
done
((ahead > 0)) || fail "no kill left the log ahead of its checkpoint"
"$TRAIN" --resume run.st $(logs_of run) >/dev/null 2>err.log || fail "the last resume failed"
"$TRAIN" "${model[@]}" "${killed[@]}" $(logs_of straight) --out straight.st >/dev/null 2>err.log || fail "the straight run failed"
same_logs run straight
echo "ok: $kills kills ($ahead with the log ahead of the checkpoint) and resumes: --csv, --grad-csv and --report hold a straight run's rows"

# SIGINT at a step between evaluations (one only at the end): saved there, with its row.
stopped=(--steps 600 --eval-every 1000)
"$TRAIN" "${model[@]}" "${stopped[@]}" $(logs_of int) --out int.st >/dev/null 2>err.log &
pid=$!
for ((i = 0; i < 1000; ++i)); do
    [[ -f int.csv ]] && (($(wc -l <int.csv) > 50)) && break
    sleep 0.01
done
kill -INT "$pid"
wait_for_exit "$pid" INT
status=$?
[[ $status == 130 ]] || fail "SIGINT: exit status $status, expected 130"
step=$(header_step int.st)
[[ $(last_row int.csv) == "$step" ]] || fail "interrupted at step $step, the --csv log ends at step $(last_row int.csv)"
"$TRAIN" --resume int.st $(logs_of int) >/dev/null 2>err.log || fail "the resume after SIGINT failed"
"$TRAIN" "${model[@]}" "${stopped[@]}" $(logs_of straight_int) >/dev/null 2>err.log || fail "the straight run failed"
same_logs int straight_int
echo "ok: SIGINT at step $step and a resume: --csv, --grad-csv and --report hold a straight run's rows"
