# Sourced by the fault scripts (bash faults/NAME.sh path/to/train work_dir ...): TRAIN is the program,
# the work dir is made afresh and entered, and fail MESSAGE stops the script with the last lines of
# err.log, when there is one; step_of CHECKPOINT prints the step it is at; json_field NAME JSON prints the
# value of a top-level field of train's --json line; wait_for_exit PID SIGNAL waits up to 10 s for a
# signalled program to end and returns its exit status.
set -uo pipefail
TRAIN=$(realpath "$1")
WORK=$2
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
cd "$WORK" || exit 1
fail() {
    echo "FAIL: $*"
    sed 's/^/  | /' err.log 2>/dev/null | tail -5
    exit 1
}
# The step of a checkpoint: read from its header ("train.step" in the metadata), then the checkpoint is
# loaded by resuming it for one step (--until must be past the checkpoint's step; a finished run trains
# nothing) into a scratch file, not back over the checkpoint under test.
step_of() {
    local step
    step=$(head -c 65536 "$1" 2>/dev/null | grep -ao '"train.step":"[0-9]*"' | grep -o '[0-9]*') ||
        fail "$1 has no train.step in its header"
    timeout 60 "$TRAIN" --resume "$1" --until $((step + 1)) --eval-iters 1 --sample 0 --out probe.st --force \
        --csv none --grad-csv none --report none >/dev/null 2>"$1.err" ||
        fail "$1 does not load: $(tail -1 "$1.err")"
    echo "$step"
}
# a number or string of a flat JSON object (train --json), whatever the spacing; exit 1 when it is missing
json_field() {
    local value
    value=$(sed -nE "s/.*\"$1\"[[:space:]]*:[[:space:]]*(\"[^\"]*\"|[^,}[:space:]]*).*/\1/p" <<<"$2")
    [[ -n $value ]] && echo "$value"
}
# The exit status of a program that was sent SIGNAL: it must end within 10 s (a kill -KILL and a failure if not).
wait_for_exit() {
    local pid=$1 signal=$2 waited=0
    while kill -0 "$pid" 2>/dev/null; do
        ((waited++ < 100)) || { kill -KILL "$pid"; fail "still running 10 s after SIG$signal"; }
        sleep 0.1
    done
    wait "$pid"
}
# refuses NAME CODE REGEX -- PROGRAM ARGS...: PROGRAM ARGS must exit CODE with stderr (err.log) matching
# REGEX (grep -E) and leave every other file here as it was (contents and times); a failure counts in
# $failures.
failures=0
files_here() { ls -l --time-style=+%s.%N -I err.log; find . -maxdepth 1 -type f ! -name err.log -exec md5sum {} + | sort; }
refuses() {
    local name=$1 code=$2 regex=$3 before after status problem=""
    shift 4
    before=$(files_here)
    timeout 60 "$@" >/dev/null 2>err.log </dev/null
    status=$?
    after=$(files_here)
    [[ $status == "$code" ]] || problem="exit status $status, expected $code"
    grep -Eq -- "$regex" err.log || problem+="${problem:+; }stderr does not match '$regex'"
    [[ $before == "$after" ]] || problem+="${problem:+; }a file changed: $(diff <(echo "$before") <(echo "$after") | head -3)"
    if [[ -n $problem ]]; then
        echo "FAIL $name: $problem"
        sed 's/^/  | /' err.log | tail -3
        failures=$((failures + 1))
    else
        echo "ok   $name: $(grep -Eo -- "$regex" err.log | head -1)"
    fi
}
