# Sourced by the fault scripts (bash faults/NAME.sh path/to/train work_dir ...): TRAIN is the program,
# the work dir is made afresh and entered, and fail MESSAGE stops the script with the last lines of
# err.log, when there is one; step_of CHECKPOINT prints the step it is at.
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
# The step of a checkpoint, by loading it (--until 1 is behind it, so no step runs; what a resumed run
# saves at its end goes to a scratch file, replaced each time, not back over the checkpoint under test).
step_of() {
    local out
    out=$(timeout 60 "$TRAIN" --resume "$1" --until 1 --eval-iters 1 --sample 0 --json --out probe.st --force 2>"$1.err") ||
        fail "$1 does not load: $(tail -1 "$1.err")"
    sed -E 's/.*"steps": ([0-9]+).*/\1/' <<<"$out"
}
