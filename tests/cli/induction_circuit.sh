#!/usr/bin/env bash
# Issue 43's criteria on the induction lab's model (induction --out, the default 2000 steps):
#  - zero-ablating the strongest induction head raises the loss on repeated sequences at least 3x more
#    than ablating any first-layer head but the previous-token head, and the first-layer head whose
#    ablation costs most is the previous-token head the lab names;
#  - activation patching of each head from clean repeated sequences into ones whose last token is
#    corrupted: every induction head (layer 1) gives back a share of the metric, the layer-0 heads but little;
#  - attribution patching's head effects, pooled over the pairs, rank like activation patching's
#    (Spearman >= 0.9);
# each on three draws of the sequences (--seed). The checkpoint reads back as the attn_only kind with a
# character tokenizer (a, b, c, ...), and `evaluate` measures it.
#
#   induction_circuit.sh BIN_DIR WORK_DIR
set -euo pipefail
bin=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin/induction" --out induction.st --json 2> /dev/null | tail -1 > lab.json
grep -aq '"model.kind":"attn_only"' induction.st || fail "induction --out did not save the attn_only kind"
for seed in 1 2 3; do
  "$bin/induction_circuit" induction.st --seed "$seed" --json > "circuit$seed.json"
done
python3 - <<'PY' || fail "the criteria above (figures printed)"
import json
lab = json.load(open("lab.json"))
previous = lab["previous_token_head"]
ok = True
for seed in (1, 2, 3):
    c = json.load(open(f"circuit{seed}.json"))
    rise = [[a - c["loss"] for a in layer] for layer in c["ablated"]]
    costliest0 = max(range(len(rise[0])), key=lambda h: rise[0][h])
    induction = c["induction_head"]["head"]
    others = max(r for h, r in enumerate(rise[0]) if h != costliest0)
    ratio = rise[1][induction] / max(others, 1e-9)
    restored = c["restored"]
    print(f"seed {seed}: lab's previous-token head {previous['layer']}.{previous['head']}, costliest first-layer "
          f"head 0.{costliest0}; induction head 1.{induction} raises the loss {rise[1][induction]:.3f}, "
          f"{ratio:.1f}x the most of any other first-layer head ({others:.3f}); restored per head "
          f"{[[round(s, 3) for s in layer] for layer in restored]}; Spearman {c['spearman']:.3f}")
    ok &= previous["layer"] == 0 and costliest0 == previous["head"]
    ok &= ratio >= 3
    ok &= all(s > 0.05 for s in restored[1]) and sum(restored[1]) > 0.5
    ok &= all(abs(s) < min(restored[1]) for h, s in enumerate(restored[0]))
    ok &= c["spearman"] >= 0.9
raise SystemExit(0 if ok else 1)
PY

# the checkpoint is a model like any other: evaluate reads its letters
python3 -c "
import random
random.seed(5)
letters = 'abcdefghijklmnopqrstuvwx'
print(''.join(s + s for s in (''.join(random.choice(letters) for _ in range(20)) for _ in range(40))), end='')
" > repeats.txt
"$bin/evaluate" induction.st --data repeats.txt --batch 4 --block 40 --json > evaluate.json
python3 -c "
import json, math
e = json.load(open('evaluate.json'))
assert e['loss'] < 0.75 * math.log(24), e  # half of every row repeats: far below chance
" || fail "evaluate on repeated letters: $(cat evaluate.json)"
echo "induction_circuit: ok"
