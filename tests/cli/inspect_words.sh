#!/usr/bin/env bash
# What the inspection tools say, checked against their own --json figures (computed apart from the table's
# order and the words):
#   - head_scores: the table is sorted by each head's highest score, --top N rows of it and a line saying
#     how many are left out; in words, per score, the head with the highest one and its share in percent;
#     --top with --json is refused;
#   - induction: the previous-token and induction heads in words: "layer L head H: P% of its attention";
#   - gradflow CKPT: the checkpoint's training step (none for GPT-2's weights), no update/param column but
#     a line saying why; per head the median row gradient and the share of flat rows, which tell a saturated
#     head (llm.c weights x 3: most rows flat) from a healthy one (zero weights: none flat), and say which;
#     --threads 2 gives the same figures as one thread.
#
#   inspect_words.sh BIN_DIR LLMC_MODEL_PY WORK_DIR
set -u
bin=$1 make=$2 work=$3
source "$(dirname "${BASH_SOURCE[0]}")/shaped_files.sh"  # model, ids, fail; in $work
ok() { echo "ok: $*"; }
for i in $(seq 60); do echo "First Citizen: we are accounted poor citizens, the patricians good. $i"; done > small.txt
"$bin/train" --model gpt --n-embd 32 --n-head 4 --n-layer 2 --block 16 --data small.txt --steps 30 --eval-iters 1 --sample 0 \
  --out run.st > /dev/null 2>&1 || { echo "cannot train run.st"; exit 1; }

# --- head_scores -----------------------------------------------------------------------------------------
"$bin/head_scores" run.st --length 6 --json > scores.json || fail "head_scores --json: exit $?"
"$bin/head_scores" run.st --length 6 --top 3 > top3.txt || fail "head_scores --top 3: exit $?"
"$bin/head_scores" run.st --length 6 --top 0 > all.txt || fail "head_scores --top 0: exit $?"
python3 - scores.json top3.txt all.txt <<'PY' || failed=1
import json, re, sys
# (the JSON's scores are rounded to 4 decimals: heads within 1e-4 of each other may come in either order)
heads = {(h["layer"], h["head"]): h for h in json.load(open(sys.argv[1]))["heads"]}
keys = ("previous_token", "duplicate_token", "induction")
highest = {k: max(h[s] for s in keys) for k, h in heads.items()}
bad = []
for path, n in ((sys.argv[2], 3), (sys.argv[3], len(heads))):
    shown = [(int(m[1]), int(m[2])) for m in re.finditer(r"^ +(\d+) +(\d+) +[0-9.]+ +[0-9.]+ +[0-9.]+  [a-z-]+$", open(path).read(), re.M)]
    order = [highest[k] for k in shown]
    if len(shown) != n or any(b > a + 1e-4 for a, b in zip(order, order[1:])) or \
            any(highest[k] > order[-1] + 1e-4 for k in heads if k not in shown):
        bad.append(f"{path}: rows {shown} with highest scores {order}, not the {n} highest of {highest}")
top3, every = open(sys.argv[2]).read(), open(sys.argv[3]).read()
if f"(3 of {len(heads)} heads, by their highest score; --top 0 shows every one)\n" not in top3 or "heads, by their" in every:
    bad.append(f"the line on the heads left out: {top3!r} / {every[-200:]!r}")
looks_at = {"previous_token": ("previous-token", "on the token before"),
            "duplicate_token": ("duplicate-token", "on the earlier occurrence of the same token"),
            "induction": ("induction", "on the token after the earlier occurrence of the same token")}
for k, (name, where) in looks_at.items():
    m = re.search(rf"^The strongest {name} head is layer (\d+) head (\d+): ([0-9.]+)% of its attention {where}\.$", top3, re.M)
    named = m and heads.get((int(m[1]), int(m[2])))
    if not named or named[k] < max(h[k] for h in heads.values()) - 1e-4 or abs(float(m[3]) - 100 * named[k]) > (0.06 if "." in m[3] else 0.51):
        bad.append(f"the strongest {name} head in words: {m and m[0]!r}, the scores {[(key, h[k]) for key, h in heads.items()]}")
print("\n".join("FAIL: head_scores " + b for b in bad) or f"ok: head_scores sorted, --top 3 and --top 0, the strongest heads in words:\n{top3}")
sys.exit(1 if bad else 0)
PY
err=$("$bin/head_scores" run.st --top 3 --json 2>&1 >/dev/null)
status=$?
[[ $status == 2 && $err == "head_scores: --top applies to the table: --json lists every head; see --help" ]] && ok "head_scores --top --json: $err" ||
  fail "head_scores --top 3 --json: exit $status: $err"

# --- induction -------------------------------------------------------------------------------------------
"$bin/induction" --json --steps 20 --eval-every 10 --batch 8 --eval-batch 8 --block 16 --segment 3:6 --n-embd 16 \
  --control-n-embd 16 > induction.txt 2>/dev/null || fail "induction: exit $?"
python3 - induction.txt <<'PY' || failed=1
import json, re, sys
text = open(sys.argv[1]).read()
figures = json.loads(text.splitlines()[-1])
bad = []
for key, words in (("previous_token_head", "the previous-token head is layer (\\d+) head (\\d+): ([0-9.]+)% of its attention on the previous token"),
                   ("induction_head", "the induction head is layer (\\d+) head (\\d+): ([0-9.]+)% of a repeated token's attention on the "
                                      "token after its earlier occurrence")):
    h, m = figures[key], re.search(rf"^  {words}$", text, re.M)
    if not m or (int(m[1]), int(m[2])) != (h["layer"], h["head"]) or abs(float(m[3]) - 100 * h["score"]) > (0.06 if "." in m[3] else 0.51):
        bad.append(f"{key} {h}: {m and m[0]!r}")
print("\n".join("FAIL: induction " + b for b in bad) or "ok: induction says\n" + "\n".join(l for l in text.splitlines() if " head is " in l))
sys.exit(1 if bad else 0)
PY

# --- gradflow --------------------------------------------------------------------------------------------
flow=$("$bin/gradflow" run.st --data small.txt 2>/dev/null)
head=$(head -1 <<<"$flow")
if [[ $head == "the gradient of the gpt model in run.st, saved at step 30, on the first 1 window of 4 x 16 tokens of small.txt (mean loss "* &&
      $flow != *update/param\ * && $flow == *"(no update/param: this takes a gradient and changes no weight; train --grad-report shows each step's update)"* ]]; then
  ok "gradflow on a checkpoint of step 30: $head"
else
  fail "gradflow on a checkpoint of step 30: ${flow:0:600}"
fi
[[ $("$bin/gradflow" run.st --data small.txt --json 2>/dev/null) == *'"model":"gpt","step":30,'* ]] || fail "gradflow --json does not name step 30"
model zero.bin --block 64 --vocab 64 --layers 1 --heads 2 --width 64
model saturated.bin --block 64 --vocab 64 --layers 1 --heads 2 --width 64 --seed 1 --scale 3
ids ids.bin 5000 64
for m in zero saturated; do
  "$bin/gradflow" $m.bin --data ids.bin --json > $m.json 2>/dev/null || fail "gradflow $m.bin --json: exit $?"
  "$bin/gradflow" $m.bin --data ids.bin > $m.txt 2>/dev/null || fail "gradflow $m.bin: exit $?"
done
"$bin/gradflow" saturated.bin --data ids.bin --json --threads 2 > threads.json 2>/dev/null || fail "gradflow --threads 2: exit $?"
cmp -s saturated.json threads.json && ok "gradflow --threads 2 prints what one thread does" ||
  fail "gradflow --threads 2: $(head -c 300 threads.json); one thread: $(head -c 300 saturated.json)"
python3 - <<'PY' || failed=1
import json
bad = []
zero, saturated = json.load(open("zero.json")), json.load(open("saturated.json"))
if zero["step"] is not None or "saved at step" in open("zero.txt").read():
    bad.append(f"GPT-2's weights have no step: {zero['step']}")
for h in zero["heads"]:
    if not (h["flat_rows"] == 0 and h["row_gradient_median"] > 0.1):
        bad.append(f"zero weights (even attention): {h}")
for h in saturated["heads"]:
    if not (h["flat_rows"] > 0.5 and h["row_gradient_median"] < 1e-3):
        bad.append(f"weights x 3 (saturated attention): {h}")
said = {"zero.txt": "No head has most of its rows flat",
        "saturated.txt": "2 of 2 heads have most of their rows flat, their attention stuck where it looks:\n  h.0.attn.heads.0 ("}
for path, words in said.items():
    if words not in open(path).read():
        bad.append(f"{path} does not say {words!r}")
print("\n".join("FAIL: gradflow " + b for b in bad) or
      f"ok: gradflow's heads: zero weights {[(h['row_gradient_median'], h['flat_rows']) for h in zero['heads']]}, "
      f"saturated {[(h['entropy'], h['largest_share'], h['row_gradient_median'], h['flat_rows']) for h in saturated['heads']]}")
exit(1 if bad else 0)
PY
exit $failed
