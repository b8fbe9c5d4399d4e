#!/usr/bin/env bash
# A resumed run continues only its own report page (issue 25, item 8). A run that writes a page gets a
# run id, stored in its checkpoints ("run.id") and in the page ("run_id"). A resume naming another run's
# page, a page without an id, or a file that is no page is refused (exit 1) naming both runs, before
# any file changes (its --csv included); with --force a new page of this run replaces it. The run's own
# page is continued, each step once.
#
#   bash resume_report.sh path/to/train work_dir
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
run=(--model bigram --steps 20 --eval-every 5 --eval-iters 1 --sample 0 --until 10)
"$TRAIN" "${run[@]}" --log-every 1 --out a.st --report a.html >/dev/null 2>err.log || fail "cannot make run a"
"$TRAIN" "${run[@]}" --log-every 1 --seed 2 --out b.st --report b.html --csv b.csv >/dev/null 2>err.log || fail "cannot make run b"
"$TRAIN" "${run[@]}" --seed 3 --out c.st >/dev/null 2>err.log || fail "cannot make run c (no page)"
checkpoint_id() { head -c 65536 "$1" | grep -ao '"run.id":"[^"]*"' | cut -d'"' -f4; }
page_id() { grep -o '"run_id":"[^"]*"' "$1" | cut -d'"' -f4; }
page_steps() { grep -o '"log":\[\[[^"]*\]\]' "$1" | grep -o '\[[0-9]*,' | tr -d '[,' | tr '\n' ' '; }
a=$(checkpoint_id a.st) b=$(checkpoint_id b.st)
sed "s/,\"run_id\":\"$a\"//" a.html >old.html  # a page from before run ids
sed "s/\"run_id\":\"$a\"/\"run_id\":\"$a\\\\n<b>\"/" a.html >damaged.html  # a run id with a newline and HTML in it
sed 's/"log":\[\[0,/"log":[[1e300,/' a.html >bad_step.html  # a step that is no whole number (cast to one, undefined)
echo "the project's notes" >notes.txt

advice="a resumed run continues only its own page: name another file, or add --force to start a new page$"
refuses other_run 1 "^train: --report a.html is the page of run $a, and --resume b.st is run $b; $advice" -- \
    "$TRAIN" --resume b.st --report a.html --csv b.csv
refuses run_without_page 1 "^train: --report a.html is the page of run $a, and --resume c.st is a run without one \(it wrote no page\); $advice" -- \
    "$TRAIN" --resume c.st --report a.html
refuses page_without_id 1 "^train: --report old.html is a page without a run id, and --resume a.st is run $a; $advice" -- \
    "$TRAIN" --resume a.st --report old.html
refuses not_a_page 1 "^train: --report notes.txt: not a report page written by train \(no run data in it\); $advice" -- \
    "$TRAIN" --resume a.st --report notes.txt
refuses damaged_id 1 "^train: --report damaged.html: its run id \(20 bytes\) is not one train writes; $advice" -- \
    "$TRAIN" --resume a.st --report damaged.html
refuses bad_step 1 "^train: --report bad_step.html: its run data cannot be read: \"log\" is not a list of entries with a step each; $advice" -- \
    "$TRAIN" --resume a.st --report bad_step.html
((failures == 0)) || fail "$failures case(s) failed"
[[ $a =~ ^[0-9a-f]{16}$ && $b =~ ^[0-9a-f]{16}$ && $a != "$b" ]] || fail "the runs' ids are '$a' and '$b'"
[[ $(page_id a.html) == "$a" && $(page_id b.html) == "$b" ]] || fail "a page's run id is not its checkpoint's"
[[ -z $(checkpoint_id c.st) ]] || fail "a run without a page has a run id"
echo "ok   the runs' ids, in their checkpoints and pages: $a, $b"

"$TRAIN" --resume b.st --report a.html --force >/dev/null 2>err.log || fail "--force: resuming b with a's page failed"
[[ $(page_id a.html) == "$b" && $(checkpoint_id b.st) == "$b" ]] || fail "--force: a.html is not run b's page"
# (the page's rows: every step, --log-every 1)
[[ $(page_steps a.html) == "$(seq -s ' ' 11 20) " ]] ||
  fail "--force: the new page holds steps $(page_steps a.html), expected 11 to 20 (b's, from its resume)"
echo "ok   --force: a new page of run b replaces run a's"
"$TRAIN" --resume c.st --report c.html >/dev/null 2>err.log || fail "resuming c with a new page failed"
c=$(checkpoint_id c.st)
[[ -n $c && $(page_id c.html) == "$c" ]] || fail "run c's new page has run id '$(page_id c.html)', its checkpoint '$c'"
echo "ok   a run without an id gets one with its first page: $c"
"$TRAIN" "${run[@]}" --log-every 1 --out own.st --report own.html >/dev/null 2>err.log || fail "cannot make run own"
"$TRAIN" --resume own.st --report own.html >/dev/null 2>err.log || fail "resuming with its own page failed"
[[ $(page_steps own.html) == "$(seq -s ' ' 0 20) " ]] || fail "its own page holds steps $(page_steps own.html), expected 0 to 20, each once"
echo "ok   a resumed run continues its own page"
