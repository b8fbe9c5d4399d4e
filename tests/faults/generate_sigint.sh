#!/usr/bin/env bash
# SIGINT while generating: examples/generate stops after the character it is printing, keeps what it
# printed (a prefix of the uninterrupted text, ending in a newline), says how many characters, exits 130;
# with --json its last line still reports them. SIGTERM exits 143.
#
#   bash generate_sigint.sh path/to/train work_dir path/to/generate
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
GENERATE=$(realpath "$3")
"$TRAIN" --model gpt --n-embd 16 --n-head 2 --n-layer 1 --block 8 --steps 2 --eval-iters 1 --sample 0 --out run.st \
    >/dev/null 2>err.log || fail "train could not make the checkpoint"

# interrupt SIGNAL ARGS...: generates (far more than a second's worth) in the background, signals after a second.
interrupt() {
    local signal=$1
    shift
    "$GENERATE" run.st --prompt "ab" --seed 5 --chars 16000000 "$@" >out.txt 2>err.log &
    local pid=$!
    sleep 1
    kill "-$signal" "$pid"
    wait_for_exit "$pid" "$signal"
}

interrupt INT
status=$?
[[ $status == 130 ]] || fail "exit status $status after SIGINT, expected 130"
line=$(grep -E '^generate: interrupted after [0-9]+ characters$' err.log) || fail "no 'interrupted after N characters' line"
chars=$(sed -E 's/.* after ([0-9]+) .*/\1/' <<<"$line")
((chars > 0 && chars < 16000000)) || fail "interrupted after $chars characters"
# what was printed is what an uninterrupted run of that many characters prints
"$GENERATE" run.st --prompt "ab" --seed 5 --chars "$chars" >straight.txt 2>/dev/null || fail "the straight run of $chars failed"
cmp -s out.txt straight.txt || fail "the text printed before SIGINT is not the straight run's $chars characters"
echo "ok: SIGINT: exit 130, '$line', the text equals a straight run's"

interrupt TERM --json --no-cache
status=$?
[[ $status == 143 ]] || fail "exit status $status after SIGTERM, expected 143"
chars=$(sed -nE 's/^generate: interrupted after ([0-9]+) characters$/\1/p' err.log)
[[ -n $chars ]] || fail "no 'interrupted after N characters' line after SIGTERM"
json=$(tail -n 1 out.txt)
[[ $(json_field chars "$json") == "$chars" ]] || fail "--json's last line '$json' does not count the $chars characters"
[[ $(json_field cache "$json") == false ]] || fail "--json's last line '$json' does not say cache false"
echo "ok: SIGTERM with --json --no-cache: exit 143, $chars characters, '$json'"
rm -rf "$WORK"
