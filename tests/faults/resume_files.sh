#!/usr/bin/env bash
# A resumed run finds its files (issue 41, items 1 and 2). A checkpoint keeps its run's --data file (path,
# size, checksum) and its --csv, --grad-csv and --report, beside it by paths relative to it, so `train --resume
# CKPT` alone, from another directory, trains on that data and continues those files, saying so. `none` or
# another file changes an output. A data file that is missing or changed is refused, naming it and why.
# An output that is missing or no longer the run's is left alone (never created or replaced, even with
# --force), with a line saying so. A checkpoint that names no files (saved before they were kept) resumes
# as before, and without --data says which data it needs. And by default the log has a row about 20
# times between evaluations (--log-every), so plot_loss has a curve.
#
#   bash resume_files.sh path/to/train work_dir
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
set_metadata=(python3 "$(dirname "${BASH_SOURCE[0]}")/set_metadata.py")
steps() { tail -n +2 "$1" | cut -d, -f1 | uniq | tr '\n' ' '; }
page_steps() { grep -o '"evals":\[.*' "$1" | grep -o '"step":[0-9]*' | cut -d: -f2 | tr '\n' ' '; }

mkdir pristine elsewhere
for i in $(seq 400); do echo "First Citizen: we are accounted poor citizens. $i"; done >pristine/data.txt
bytes=$(stat -c %s pristine/data.txt)
run=(--model bigram --steps 40 --eval-every 20 --eval-iters 1 --sample 0)
(cd pristine && "$TRAIN" "${run[@]}" --data data.txt --until 6 --out run.st --csv run.csv --grad-csv grads.csv --grad-report 5 \
    --report run.html >/dev/null 2>../err.log) || fail "the first run failed"
[[ $(steps pristine/run.csv) == "0 1 2 3 4 5 6 " ]] ||
    fail "the log of a run to step 6 holds steps $(steps pristine/run.csv), not a row every min(20, 40) / 20 = 1 step (--log-every's default)"
echo "ok   a run logs a row every min(--eval-every, --steps) / 20 steps by default: $(steps pristine/run.csv)"
fresh() { rm -rf "$1" && cp -r pristine "$1"; }

# --resume alone, from another directory: the same data, and every log and the page continued.
fresh run
(cd elsewhere && "$TRAIN" --resume ../run/run.st >/dev/null 2>../err.log) || fail "train --resume ../run/run.st alone failed"
grep -qxF -- "--resume ../run/run.st: on its --data ../run/data.txt (unchanged: $bytes bytes)" err.log ||
    fail "no line naming the data file it trains on"
grep -qxF -- "--resume ../run/run.st: continuing its --csv ../run/run.csv, --grad-csv ../run/grads.csv, --report ../run/run.html; give --csv FILE or --csv none to change that" err.log ||
    fail "no line naming the files it continues"
[[ $(steps run/run.csv) == "$(seq -s ' ' 0 40) " ]] || fail "the continued log holds steps $(steps run/run.csv)"
[[ $(steps run/grads.csv) == "5 10 15 20 25 30 35 40 " ]] || fail "the continued --grad-csv holds steps $(steps run/grads.csv)"
[[ $(page_steps run/run.html) == "0 6 20 40 " ]] || fail "the continued page holds evaluations at $(page_steps run/run.html)"
[[ -z $(ls -A elsewhere) ]] || fail "the resumed run wrote into the directory it ran in: $(ls -A elsewhere)"
echo "ok   --resume alone: $(grep -c '^--resume' err.log) lines say what it uses; the log, --grad-csv and the page go on to step 40"

# --csv none, or another file, changes the log; the checkpoint then keeps that.
fresh none
(cd none && "$TRAIN" --resume run.st --csv none >/dev/null 2>../err.log) || fail "--csv none failed"
cmp -s none/run.csv pristine/run.csv || fail "--csv none: the log changed"
! grep -aq '"outputs.csv"' none/run.st || fail "--csv none: the checkpoint still names a log"
grep -aq '"outputs.report":"run.html"' none/run.st || fail "--csv none: the checkpoint no longer names its page"
[[ $(page_steps none/run.html) == "0 6 20 40 " ]] || fail "--csv none: the page was not continued"
fresh other
(cd other && "$TRAIN" --resume run.st --csv other.csv >/dev/null 2>../err.log) || fail "--csv other.csv failed"
cmp -s other/run.csv pristine/run.csv || fail "--csv other.csv: the checkpoint's log changed"
[[ $(steps other/other.csv) == "$(seq -s ' ' 7 40) " ]] || fail "--csv other.csv holds steps $(steps other/other.csv)"
grep -aq '"outputs.csv":"other.csv"' other/run.st || fail "--csv other.csv: the checkpoint does not name it"
# the checkpoint's --grad-csv given for another flag: that flag's file, not continued as the --grad-csv too
fresh swap
(cd swap && "$TRAIN" --resume run.st --csv grads.csv --force >/dev/null 2>../err.log) || fail "--csv grads.csv --force failed"
grep -qxF -- "--resume run.st: not continuing its --grad-csv grads.csv: the command line gives it as --csv" err.log ||
    fail "no line saying the checkpoint's --grad-csv is given as --csv"
[[ $(head -1 swap/grads.csv) == step,batch_loss,* ]] || fail "grads.csv is not the --csv log now: $(head -1 swap/grads.csv)"
echo "ok   --csv none writes no log and the checkpoint names none; --csv other.csv logs there and is kept; a file given"
echo "     for another flag is that flag's"

# An output that is missing or no longer the run's is not continued, and nothing is created or replaced.
fresh gone
rm gone/run.csv
echo "the project's notes" >gone/grads.csv
(cd elsewhere && "$TRAIN" --model bigram --steps 2 --eval-iters 1 --sample 0 --report another.html >/dev/null 2>&1) || fail "another run failed"
mv elsewhere/another.html gone/run.html
(cd gone && "$TRAIN" --resume run.st --force >/dev/null 2>../err.log) || fail "resuming without its outputs failed"
for line in "--csv run.csv: it is missing" "--grad-csv grads.csv: it is no longer a train --grad-csv log" \
            "--report run.html: it is the page of another run now"; do
    grep -qxF -- "--resume run.st: not continuing its $line" err.log || fail "no 'not continuing its $line'"
done
[[ ! -e gone/run.csv && $(cat gone/grads.csv) == "the project's notes" ]] || fail "a missing or foreign output was created or replaced"
[[ $(page_steps gone/run.html) == "0 2 " ]] || fail "another run's page was changed"
echo "ok   an output that is missing or not the run's is named and left alone, even with --force"

# The data file missing or changed: refused before any work, naming the file and why.
advice="give --data FILE, the file it was trained on"
fresh data && cd data || fail "cannot enter data/"
trained_on="^train: --resume run.st was trained on data.txt, which"
echo "one more line" >>data.txt
refuses data_longer 1 "$trained_on has changed since: $bytes bytes then, $((bytes + 14)) now; $advice$" -- "$TRAIN" --resume run.st
cp ../pristine/data.txt data.txt && sed -i '1s/First/Frist/' data.txt
refuses data_edited 1 "$trained_on has changed since: the same $bytes bytes, but other bytes in them \(its checksum differs\); $advice$" -- \
    "$TRAIN" --resume run.st
refuses data_given_edited 1 "^train: run.st: the checkpoint was trained on different data \($bytes tokens\); resume with the same data file$" -- \
    "$TRAIN" --resume run.st --data data.txt
rm data.txt
refuses data_missing 1 "$trained_on is missing now; $advice$" -- "$TRAIN" --resume run.st
((failures == 0)) || fail "$failures case(s) failed"
# the data moved: given with --data, the run goes on, and its checkpoint names the new place
mkdir moved && cp ../pristine/data.txt moved/text.txt
"$TRAIN" --resume run.st --data moved/text.txt --csv none >/dev/null 2>../err.log || fail "resuming on the moved data failed"
grep -aq '"data.file":"moved/text.txt"' run.st || fail "the checkpoint does not name the moved data"
cd .. || exit 1

# A checkpoint saved before the files were kept: as before, and without --data it says what it needs.
fresh old && cd old || fail "cannot enter old/"
"${set_metadata[@]}" ../pristine/run.st run.st -data.file -data.file_bytes -data.file_checksum -outputs.csv -outputs.grad_csv \
    -outputs.report || fail "set_metadata.py failed"
refuses old_without_data 1 "^train: --resume run.st names no data file \(checkpoints saved by older versions do not\) and was not trained on the built-in copy task: give --data FILE, the file of $bytes tokens it was trained on$" -- \
    "$TRAIN" --resume run.st
((failures == 0)) || fail "$failures case(s) failed"
"$TRAIN" --resume run.st --data data.txt >/dev/null 2>../err.log || fail "an old checkpoint does not resume with --data"
! grep -q "continuing" ../err.log || fail "an old checkpoint continued logs it does not name: $(grep continuing ../err.log)"
cmp -s run.csv ../pristine/run.csv || fail "an old checkpoint's resume wrote to a log it does not name"
echo "ok   a checkpoint that names no files resumes as before; without --data it names the tokens it needs"
