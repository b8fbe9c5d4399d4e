#!/usr/bin/env bash
# examples/ladder.sh reads train's --json line: run against a stand-in for train that trains a bigram
# for two steps on a small text (whatever flags the rung asks for), each of the six rows must show the
# params, val loss and seconds that train printed, and the exit status must follow the verdicts.
#
#   ladder_reads_train.sh LADDER TRAIN WORK_DIR
set -uo pipefail
ladder=$1 train=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
printf 'hello world, hello there\n%.0s' {1..20} >"$work/text.txt"
cat >"$work/train" <<STUB
#!/usr/bin/env bash
exec "$train" --model bigram --block 4 --steps 2 --eval-iters 1 --sample 0 --data "$work/text.txt" --json
STUB
chmod +x "$work/train"
json=$("$work/train") || { echo "FAIL: train did not run"; exit 1; }
echo "train: $json"

out=$(bash "$ladder" "$work/text.txt" "$work/train" 2>"$work/err.log"); code=$?
echo "$out"
cat "$work/err.log"
rows=$(grep -cE '^.{30} +[0-9]+ +[0-9]+\.[0-9]{4} +[0-9]+\.[0-9]{2} +[-+][0-9]+\.[0-9]{3} +[0-9]+\.[0-9] (ok|FAIL)$' <<<"$out")
[[ $rows == 6 ]] || { echo "FAIL: $rows of the 6 rungs read train's figures"; exit 1; }
# train's own parameter count (a reader apart from ladder.sh's) on every row
params=$(grep -oE '"params" *: *[0-9]+' <<<"$json" | grep -oE '[0-9]+$')
[[ $(tail -n +2 <<<"$out" | awk '{ print $(NF - 5) }' | sort -u) == "$params" ]] ||
    { echo "FAIL: the rows do not show train's $params parameters"; exit 1; }
failed_rows=$(grep -c ' FAIL$' <<<"$out")
if ((failed_rows > 0 && code != 1 || failed_rows == 0 && code != 0)); then
  echo "FAIL: $failed_rows rungs failed and ladder.sh exited $code"
  exit 1
fi
echo "ladder.sh read train's JSON for all six rungs (exit $code)"
