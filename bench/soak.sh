#!/usr/bin/env bash
# Soak: a long run of a small GPT (default 30,000 steps, evaluating and saving a checkpoint every 1,000)
# with its resident memory (VmRSS) sampled every few seconds. Prints the samples, then the mean of the
# first and last quarters and the growth between them: flat means no leak along the training loop,
# the evaluations or the saves. Not part of the test suite (minutes, not seconds).
#
#   bash bench/soak.sh path/to/train [steps] [seconds between samples]
set -uo pipefail
TRAIN=$(realpath "${1:-build/release/examples/train}")
STEPS=${2:-30000}
EVERY=${3:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

"$TRAIN" --model gpt --n-embd 32 --n-head 4 --n-layer 2 --block 16 --batch 8 --steps "$STEPS" --lr 3e-3 \
    --eval-every 1000 --eval-iters 20 --sample 100 --out "$WORK/soak.st" --json >"$WORK/out.json" 2>"$WORK/err.log" &
pid=$!
samples=()
start=$SECONDS
sleep 1  # past the start-up (exec, data, model): from here on the loop's memory alone
while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
    if [[ -n $rss ]]; then
        samples+=("$rss")
        step=$(grep -Eo 'step [0-9]+' "$WORK/err.log" | tail -1)
        printf '%5d s  %-12s VmRSS %6d kB\n' $((SECONDS - start)) "${step:-start}" "$rss"
    fi
    sleep "$EVERY"
done
wait "$pid" || { echo "training failed:"; tail -5 "$WORK/err.log"; exit 1; }
cat "$WORK/out.json"
n=${#samples[@]}
((n >= 8)) || { echo "only $n samples: too short a run to judge"; exit 1; }
q=$((n / 4))
printf '%s\n' "${samples[@]}" | awk -v n="$n" -v q="$q" '
    NR <= q { first += $1 } NR > n - q { last += $1 } NR == 1 || $1 > max { max = $1 }
    END {
        first /= q; last /= q
        printf "%d samples over the run; VmRSS first quarter %.0f kB, last quarter %.0f kB, growth %+.0f kB (%+.2f%%), peak %d kB\n",
               n, first, last, last - first, 100 * (last - first) / first, max
    }'
