#!/usr/bin/env bash
# A resumed run appends only to its own logs (issue 25, item 4): --csv and --grad-csv continue a file
# only when its first line is that log's header, and never an input. Anything else (a text file, a
# checkpoint, the other log's kind, an empty file, a header without its newline) is refused before any
# work (exit 2), naming the flag and the file, as a fresh run refuses an existing file, and so is a log
# with a row that does not start with a step (exit 1); every file stays as it was. With --force the file is replaced by a new log; the run's own log is continued.
#
#   bash resume_logs.sh path/to/train work_dir
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
run=(--model bigram --steps 4 --eval-every 2 --eval-iters 1 --sample 0)
"$TRAIN" "${run[@]}" --until 2 --out run.st --csv run.csv --grad-csv grads.csv --grad-report 1 >/dev/null 2>err.log ||
    fail "cannot make the fixtures"
echo "the project's notes" >README.md
cp run.st precious.st
: >empty.csv
head -n 1 run.csv | tr -d '\n' >no_newline.csv
{ head -n 1 run.csv; echo "the text to train on"; } >data.txt  # an input that starts as a log does
{ head -n 2 run.csv; echo "<script>alert(1)</script>"; } >damaged.csv  # a log, but not all rows

not_log="exists and is not a train --csv log \(its first line is not \"step,batch_loss,train_loss,val_loss,lr,grad_norm,tokens_per_s\"\); a resumed run appends only to its own log: name another file, or add --force to replace it; see --help"
resume=("$TRAIN" --resume run.st)
refuses readme 2 "^train: --csv README.md $not_log$" -- "${resume[@]}" --csv README.md
refuses checkpoint 2 "^train: --csv precious.st $not_log$" -- "${resume[@]}" --csv precious.st
refuses empty 2 "^train: --csv empty.csv $not_log$" -- "${resume[@]}" --csv empty.csv
refuses header_without_newline 2 "^train: --csv no_newline.csv $not_log$" -- "${resume[@]}" --csv no_newline.csv
refuses grad_csv_other_log 2 "^train: --grad-csv run.csv exists and is not a train --grad-csv log \(its first line is not \"step,kind,name,grad_norm" -- \
    "${resume[@]}" --grad-csv run.csv
refuses csv_other_log 2 "^train: --csv grads.csv $not_log$" -- "${resume[@]}" --csv grads.csv
refuses csv_the_checkpoint 2 "^train: --csv run.st is the same file as --resume run.st" -- "${resume[@]}" --csv run.st
# (train's own --data must be the checkpoint's: this one is refused as an output before it is read)
refuses csv_an_input 2 "^train: --csv data.txt is the same file as --data data.txt" -- "${resume[@]}" --data data.txt --csv data.txt
refuses damaged_row 1 "^train: --csv damaged.csv: line 3 is not a row of the log \(it does not start with a step\)$" -- \
    "${resume[@]}" --csv damaged.csv
((failures == 0)) || fail "$failures case(s) failed"

"${resume[@]}" --csv README.md --force --until 3 --out forced.st >/dev/null 2>err.log || fail "--force: the resumed run failed"
[[ $(head -n 1 README.md) == "$(head -n 1 run.csv)" && $(tail -n 1 README.md | cut -d, -f1) == 3 ]] ||
    fail "--force did not replace README.md with a new log"
echo "ok   --force replaces a file that is not a log with a new log"
"${resume[@]}" --csv run.csv --grad-csv grads.csv >/dev/null 2>err.log || fail "resuming into its own logs failed"
[[ $(cut -d, -f1 run.csv | tr '\n' ' ') == "step 0 1 2 3 4 " ]] || fail "its own log holds steps $(cut -d, -f1 run.csv | tr '\n' ' ')"
[[ $(cut -d, -f1 grads.csv | uniq | tr '\n' ' ') == "step 1 2 3 4 " ]] || fail "its own --grad-csv holds steps $(cut -d, -f1 grads.csv | uniq | tr '\n' ' ')"
echo "ok   a resumed run continues its own logs, without --force"
