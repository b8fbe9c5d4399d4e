#!/usr/bin/env bash
# The programs' progress (examples/support/progress.h) as a user at a terminal sees it, on a pseudo-terminal
# (on_terminal.py), and as a log or a pipe gets it:
#   - on a terminal, each program that can run for seconds draws the bar: loading a checkpoint (MB),
#     evaluate (tokens), head_scores (probe sequences), gradflow on a checkpoint (tokens) and its study (rows,
#     then training steps), train (steps, with its loss): each ends at done/total with the rate and the time
#     it took; a narrow terminal gets lines cut to its width less one column (a full one would wrap);
#   - with stderr a file, not one bar line: no carriage return, no escape sequence, no bar;
#   - Ctrl-C in evaluate prints the mean of the windows measured (the same loss as a run of that many
#     windows), says so on stderr, and exits 130.
#
#   progress.sh BIN_DIR ON_TERMINAL_PY LLMC_MODEL_PY WORK_DIR
set -u
bin=$1 terminal=$2 make=$3 work=$4
source "$(dirname "${BASH_SOURCE[0]}")/shaped_files.sh"  # model, ids, fail; in $work
# drawn: every line the terminal was given in err.txt, a line each time \r or \n starts one, escape sequences out
drawn() { tr '\r' '\n' <err.txt | sed 's/\x1b\[[0-9;]*[A-Za-z]//g' | grep -v '^$'; }

model m.bin --block 32 --vocab 64 --layers 1 --heads 2 --width 16 --seed 1
ids ids.bin 20000 64
bar="\[#{30}\]"  # a bar at its end
# on_terminal PATTERN... -- PROGRAM ARGS: runs it with stderr on a terminal; each PATTERN (a bash regex) must
# match a line drawn there
on_terminal() {
  local patterns=()
  while [[ $1 != -- ]]; do patterns+=("$1"); shift; done
  shift
  python3 "$terminal" out.txt err.txt -- "$bin/$1" "${@:2}" || { fail "$* on a terminal: exit $?: $(drawn | tail -3)"; return; }
  local lines pattern missing=0
  lines=$(drawn)
  for pattern in "${patterns[@]}"; do
    grep -Eq -- "$pattern" <<<"$lines" || { fail "$1 on a terminal drew no line like '$pattern': $(tail -3 <<<"$lines")"; missing=1; }
  done
  ((missing)) || echo "ok: $1 on a terminal: $(grep -E -- "${patterns[-1]}" <<<"$lines" | tail -1)"
}
loaded="^loading m\.bin $bar ([0-9.]+)/\1 MB  [0-9.]+ MB/s  in 0m[0-9]{2}s$"
on_terminal "$loaded" "^evaluate $bar 12800/12800 tokens  [0-9.]+ tokens/s  in [0-9]+m[0-9]{2}s$" -- \
  evaluate m.bin --data ids.bin --batch 4 --batches 100
on_terminal "$loaded" "^head_scores $bar 16/16 sequences  [0-9.]+ sequences/s  in 0m[0-9]{2}s$" -- head_scores m.bin
on_terminal "$loaded" "^gradflow $bar 384/384 tokens  [0-9.]+ tokens/s  in 0m[0-9]{2}s$" -- gradflow m.bin --data ids.bin --batches 3
on_terminal "^the study $bar 16/16 rows  " "^training $bar 6/6 steps  [0-9.]+ steps/s  in 0m[0-9]{2}s$" -- gradflow --trials 2 --steps 3
on_terminal "$loaded" -- heatmap m.bin --prompt "1 2 3" --color never
on_terminal "$loaded" -- generate m.bin --tokens 3 --prompt "1 2"
on_terminal "^$bar 20/20 loss [0-9.]+ [0-9]+ tok/s ETA 0m00s *$" -- train --model head --steps 20 --eval-iters 1 --sample 0

# a narrow terminal: every line drawn within its 40 columns less one
python3 "$terminal" out.txt err.txt --columns 40 -- "$bin/evaluate" m.bin --data ids.bin --batch 4 --batches 100 ||
  fail "evaluate on a terminal of 40 columns: exit $?"
widest=$(drawn | grep -E '\[[#.]+' | python3 -c "import sys; print(max((len(l.rstrip('\n')) for l in sys.stdin), default=0))")
if [[ $widest == 39 ]]; then echo "ok: on a terminal of 40 columns the widest bar drawn has 39: $(drawn | grep '^evaluate' | tail -1)"
else fail "on a terminal of 40 columns the widest bar drawn has $widest columns: $(drawn | head -3)"; fi

# not a terminal: not one bar line on stderr
for run in "evaluate m.bin --data ids.bin --batch 4 --batches 100" "head_scores m.bin" "gradflow m.bin --data ids.bin" \
           "gradflow --trials 2 --steps 3" "generate m.bin --tokens 3 --prompt 1"; do
  # shellcheck disable=SC2086  # (the words of $run are the arguments)
  "$bin/"$run >out.txt 2>err.txt || fail "$run: exit $?: $(cat err.txt)"
  if grep -q $'[\r\x1b]' err.txt || grep -Eq '\[[#.]{30}\]| MB/s|in 0m' err.txt; then fail "$run with stderr a file wrote a bar: $(cat -v err.txt)"
  else echo "ok: $run with stderr a file: $(grep -c '' err.txt) lines, no bar ($(head -c 60 err.txt))"; fi
done

# --- Ctrl-C in evaluate: the mean of the windows done ----------------------------------------------------
# a window of 4 x 64 tokens through GPT-2's vocabulary takes milliseconds, the 1100 of them far more
model slow.bin --block 64 --vocab 50257 --layers 1 --heads 2 --width 16 --seed 2
ids slow_ids.bin 300000 50257
python3 "$terminal" out.txt err.txt --interrupt "evaluate \[[#.]+\] [1-9][0-9]*/" -- \
  "$bin/evaluate" slow.bin --data slow_ids.bin --batch 4 --block 64 --json
status=$?
interrupted=$(cat out.txt)
windows=$(python3 -c "import json, sys; print(json.loads(sys.argv[1])['batches'])" "$interrupted" 2>/dev/null)
if [[ $status == 130 && $windows =~ ^[0-9]+$ ]] && ((windows > 0 && windows < 1171)); then
  if ! grep -q "^evaluate: interrupted after $windows of 1171 windows: the loss shown is their mean$" <(drawn); then
    fail "evaluate after Ctrl-C does not say how many windows its mean is of: $(drawn | tail -2)"
  else
    straight=$("$bin/evaluate" slow.bin --data slow_ids.bin --batch 4 --block 64 --batches "$windows" --json 2>/dev/null)
    if [[ $straight == "$interrupted" ]]; then echo "ok: Ctrl-C in evaluate: exit 130, $interrupted, as --batches $windows; $(drawn | tail -1)"
    else fail "evaluate interrupted after $windows windows printed $interrupted; --batches $windows prints $straight"; fi
  fi
else
  fail "evaluate after Ctrl-C: exit $status, stdout '${interrupted:0:100}': $(drawn | tail -2)"
fi
exit $failed
