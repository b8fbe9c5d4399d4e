#!/usr/bin/env bash
# The five programs that ask a model why (examples/cache.cpp, lens, patch, attribute, ablate) on a tiny gpt:
# each JSON line's keys and shapes, and the numbers checked against each other and against what they
# must equal: the cached logits against the lens's last row and attribute's logit difference, attribute's
# parts summing to it, patch's effects where the clean and corrupt prompts agree, ablate's loss against
# evaluate's. Then every refusal: exit 1 or 2, one line on stderr naming what was wrong, no file left.
#
#   interpret.sh TRAIN CACHE LENS PATCH ATTRIBUTE ABLATE EVALUATE WORK_DIR
set -u
train=$1 cache=$2 lens=$3 patch=$4 attribute=$5 ablate=$6 evaluate=$7 work=$8
rm -rf "$work" && mkdir -p "$work" || exit 1
failed=0
fail() { echo "FAIL: $*"; failed=1; }

text=$work/text.txt
for _ in $(seq 40); do printf 'the cat sat on the mat; a dog ran. '; done >"$text"
ckpt=$work/gpt.st
"$train" --model gpt --n-layer 2 --n-head 2 --n-embd 16 --block 16 --steps 5 --eval-iters 1 --sample 0 \
  --data "$text" --out "$ckpt" >/dev/null || { echo "FAIL: train"; exit 1; }

# The clean and corrupt prompts differ at position 4 only ('c' / 'm'); the answer and wrong token are one
# character each, both in the prompt (its ids tell the answer's).
clean="the cat sat" corrupt="the mat sat" answer=s wrong=a
json() {  # json NAME PROGRAM ARGS...: the program's one line into $work/NAME.json
  local name=$1
  shift
  "$@" --json >"$work/$name.json" 2>"$work/$name.err" || fail "$name: exit $?: $(cat "$work/$name.err")"
}
json cache "$cache" "$ckpt" --prompt "$clean" --out "$work/acts.st"
json cache_some "$cache" "$ckpt" --prompt "$clean" --out "$work/some.st" --names "blocks.*.attn.hook_pattern,logits"
json lens "$lens" "$ckpt" --prompt "$clean"
json attribute "$attribute" "$ckpt" --prompt "$clean" --answer "$answer" --wrong "$wrong"
json attribute_one "$attribute" "$ckpt" --prompt "$clean" --answer "$answer"
json patch_resid "$patch" "$ckpt" --clean "$clean" --corrupt "$corrupt" --answer "$answer" --wrong "$wrong" --site resid_pre
json patch_attn "$patch" "$ckpt" --clean "$clean" --corrupt "$corrupt" --answer "$answer" --wrong "$wrong" --site attn_out
json patch_mlp "$patch" "$ckpt" --clean "$clean" --corrupt "$corrupt" --answer "$answer" --wrong "$wrong" --site mlp_out
json patch_head "$patch" "$ckpt" --clean "$clean" --corrupt "$corrupt" --answer "$answer" --wrong "$wrong" --site head
json patch_grad "$patch" "$ckpt" --clean "$clean" --corrupt "$corrupt" --answer "$answer" --wrong "$wrong" \
  --site resid_pre --method attribution
json ablate "$ablate" "$ckpt" --data "$text" --batch 2 --block 8 --batches 2
json ablate_mean "$ablate" "$ckpt" --data "$text" --batch 2 --block 8 --batches 2 --mode mean
json evaluate "$evaluate" "$ckpt" --data "$text" --batch 2 --block 8 --batches 2

python3 - "$work" "$clean" "$corrupt" "$answer" "$wrong" <<'EOF' || failed=1
import json, math, os, struct, sys
from array import array

work, clean, corrupt, answer, wrong = sys.argv[1:]
L, H, T, p = 2, 2, len(clean), 4  # blocks, heads, tokens (characters), where the prompts differ
assert [i for i in range(T) if clean[i] != corrupt[i]] == [p]
failures = []
def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok: failures.append(what)
def close(a, b, rel=1e-4):
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))
def load(name):
    with open(os.path.join(work, name + ".json")) as f:
        lines = f.read().splitlines()
    check(len(lines) == 1, f"{name}: one line on stdout")
    return json.loads(lines[0]) if len(lines) == 1 else {}
def shape(rows):
    return [len(rows)] + sorted({len(r) for r in rows})
def safetensors(path):  # {name: (shape, values)}
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__": continue
        assert entry["dtype"] == "F32"
        begin, end = entry["data_offsets"]
        values = array("f")
        values.frombytes(data[8 + n + begin:8 + n + end])
        out[name] = (entry["shape"], values, header.get("__metadata__", {}))
    return out

# cache: the file, its names (hook names) and shapes, the batch of 1 leading
c = load("cache")
check(list(c) == ["file", "ids", "tokens", "tensors", "bytes"], f"cache keys {list(c)}")
check(c["tokens"] == list(clean) and len(c["ids"]) == T, "cache: ids and tokens are the prompt's characters")
acts = safetensors(os.path.join(work, "acts.st"))
check(c["bytes"] == os.path.getsize(os.path.join(work, "acts.st")) and c["tensors"] == len(acts), "cache: bytes, tensors")
expected = {"hook_embed": [1, T, 16], "hook_pos_embed": [1, T, 16], "blocks.0.hook_resid_pre": [1, T, 16],
            "blocks.1.attn.hook_pattern": [1, H, T, T], "blocks.1.attn.hook_z": [1, T, H, 8],
            "blocks.1.hook_mlp_out": [1, T, 16], "logits": [1, T, None]}
for name, want in expected.items():
    got = acts.get(name, (None,))[0]
    check(got is not None and got[:-1] == want[:-1] and (want[-1] is None or got[-1] == want[-1]), f"cache: {name} {got}")
check(all(name.startswith(("hook_", "blocks.", "ln_final.")) or name == "logits" for name in acts), "cache: hook names only")
check(json.loads(next(iter(acts.values()))[2]["ids"]) == c["ids"], "cache: the metadata's ids")
some = safetensors(os.path.join(work, "some.st"))
check(sorted(some) == ["blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern", "logits"], f"cache --names: {sorted(some)}")
rows = [sum(acts["blocks.0.attn.hook_pattern"][1][(h * T + t) * T:(h * T + t + 1) * T]) for h in range(H) for t in range(T)]
check(all(abs(r - 1) < 1e-5 for r in rows), "cache: each pattern row sums to 1")
V = acts["logits"][0][2]
logits = [list(acts["logits"][1][t * V:(t + 1) * V]) for t in range(T)]
def log_softmax(row):
    m = max(row)
    z = m + math.log(sum(math.exp(x - m) for x in row))
    return [x - z for x in row]

# lens: shapes, and its last row is the model's own logits (the cached ones)
l = load("lens")
check(list(l) == ["ids", "tokens", "logprob_next", "top", "top_tokens"], f"lens keys {list(l)}")
check(l["ids"] == c["ids"] and l["tokens"] == c["tokens"], "lens: the same ids and tokens as cache")
check(shape(l["logprob_next"]) == [L + 1, T - 1] and shape(l["top"]) == [L + 1, T] and shape(l["top_tokens"]) == [L + 1, T],
      f"lens shapes {shape(l['logprob_next'])} {shape(l['top'])} {shape(l['top_tokens'])}")
check(all(close(log_softmax(logits[t])[l["ids"][t + 1]], l["logprob_next"][L][t]) for t in range(T - 1)),
      "lens: logprob_next[L] = log_softmax of the cached logits at the next id")
check(l["top"][L] == [row.index(max(row)) for row in logits], "lens: top[L] = argmax of the cached logits")
check(all(x <= 0 for row in l["logprob_next"] for x in row), "lens: log-probabilities <= 0")
ids_of = dict(zip(l["tokens"], l["ids"]))
text_of = {i: t for t, i in ids_of.items()}
check(all(len(t) == 1 for row in l["top_tokens"] for t in row), "lens: top_tokens are characters")
check(all(l["top_tokens"][k][t] == text_of[i] for k in range(L + 1) for t, i in enumerate(l["top"][k]) if i in text_of),
      "lens: top_tokens are the top ids' texts (those the prompt has)")

# attribute: shapes, parts + bias = logit_diff = the cached logits' difference
a = load("attribute")
check(list(a) == ["ids", "tokens", "embed", "heads", "mlps", "bias", "logit_diff"], f"attribute keys {list(a)}")
check(shape(a["heads"]) == [L, H] and len(a["mlps"]) == L, "attribute: heads L x n_head, mlps L")
parts = a["embed"] + sum(map(sum, a["heads"])) + sum(a["mlps"]) + a["bias"]
check(close(parts, a["logit_diff"]), f"attribute: parts + bias {parts} = logit_diff {a['logit_diff']}")
ans, wr = ids_of[answer], ids_of[wrong]
check(close(a["logit_diff"], logits[-1][ans] - logits[-1][wr]), "attribute: logit_diff = the cached logits' difference")
one = load("attribute_one")
check(close(one["logit_diff"], logits[-1][ans]), "attribute without --wrong: the answer's logit")

# patch: clean/corrupt; resid_pre at block 0 and position p restores clean; before p nothing differs
r = load("patch_resid")
check(list(r) == ["site", "method", "clean", "corrupt", "effects"], f"patch keys {list(r)}")
check(r["site"] == "resid_pre" and r["method"] == "activation" and shape(r["effects"]) == [L, T], "patch resid_pre: L x T")
check(close(r["clean"], a["logit_diff"]), "patch: clean = attribute's logit_diff on the clean prompt")
check(close(r["effects"][0][p], r["clean"]), f"patch: effects[0][{p}] {r['effects'][0][p]} = clean {r['clean']}")
for site in ("resid", "attn", "mlp", "grad"):
    s = load("patch_" + site)
    check(shape(s["effects"]) == [L, T] and s["clean"] == r["clean"] and s["corrupt"] == r["corrupt"], f"patch {site}: L x T")
    check(all(close(s["effects"][k][q], s["corrupt"], 1e-5) for k in range(L) for q in range(p)),
          f"patch {s['site']} {s['method']}: effects before position {p} = corrupt")
check(abs(r["clean"] - r["corrupt"]) > 1e-6, "patch: the prompts' metrics differ (else the checks above are vacuous)")
check(shape(load("patch_head")["effects"]) == [L, H], "patch head: L x n_head")
check(load("patch_grad")["method"] == "attribution", "patch --method attribution")

# ablate: evaluate's windows and loss
b, e = load("ablate"), load("evaluate")
check(list(b) == ["mode", "loss", "heads", "tokens", "batches"], f"ablate keys {list(b)}")
check(b["mode"] == "zero" and b["tokens"] == 2 * 2 * 8 and b["batches"] == 2 and shape(b["heads"]) == [L, H],
      f"ablate: tokens {b['tokens']} = 2 x 2 x 8, batches 2, heads L x n_head")
check(close(b["loss"], e["loss"], 1e-5), f"ablate: loss {b['loss']} = evaluate's {e['loss']}")
m = load("ablate_mean")
check(m["mode"] == "mean" and close(m["loss"], b["loss"], 1e-6) and m["heads"] != b["heads"], "ablate --mode mean")
sys.exit(1 if failures else 0)
EOF

# refuses CODE PATTERN FILE PROGRAM ARGS...: exits CODE, one line on stderr matching PATTERN (a bash regex),
# and FILE (what it would have written; - for none) is not there
refuses() {
  local code=$1 pattern=$2 file=$3
  shift 3
  local err status
  err=$("$@" 2>&1 >/dev/null)
  status=$?
  if [[ $status != "$code" || ! $err =~ $pattern || $(printf '%s\n' "$err" | wc -l) != 1 ]]; then
    fail "$(basename "$1") ${*:2}: exit $status: $err"
  elif [[ $file != - && -e $file ]]; then
    fail "$(basename "$1") left $file"
  else
    echo "ok: refused (exit $status): $err"
  fi
}
out=$work/refused.st
refuses 2 "^cache: --names: 'blocks\.0\.hook_nothing' matches no hook point of the model \(it has [0-9]+: [a-z_.0-9]+, " "$out" \
  "$cache" "$ckpt" --prompt "$clean" --out "$out" --names "logits,blocks.0.hook_nothing"
refuses 2 "^cache: --names: 'blocks\.9\.\*' matches no hook point" "$out" "$cache" "$ckpt" --prompt "$clean" --out "$out" --names "blocks.9.*"
refuses 2 "^cache: --names: '' matches no hook point" "$out" "$cache" "$ckpt" --prompt "$clean" --out "$out" --names "logits,"
refuses 1 "^cache: .*--out.*$work/no_dir/a\.st" "$work/no_dir/a.st" "$cache" "$ckpt" --prompt "$clean" --out "$work/no_dir/a.st"
refuses 2 "^cache: --prompt is 17 characters, more than the model's block of 16" "$out" \
  "$cache" "$ckpt" --prompt "the cat sat on th" --out "$out"
refuses 2 "^cache: --prompt: .*'Z'" "$out" "$cache" "$ckpt" --prompt "Zebra" --out "$out"
refuses 1 "no_such\.st" "$out" "$cache" "$work/no_such.st" --prompt "$clean" --out "$out"
refuses 2 "^attribute: --answer 'at' is 2 tokens \(ids \[[0-9]+, [0-9]+\]\); it must be exactly one" - \
  "$attribute" "$ckpt" --prompt "$clean" --answer at
refuses 2 "^patch: --wrong 'at' is 2 tokens" - "$patch" "$ckpt" --clean "$clean" --corrupt "$corrupt" --answer o --wrong at --site head
refuses 2 "^patch: --clean is 11 tokens and --corrupt 12: patching needs as many in both" - \
  "$patch" "$ckpt" --clean "$clean" --corrupt "the cat sate" --answer o --wrong a --site resid_pre
refuses 2 "^patch: --site must be resid_pre, attn_out, mlp_out or head, got 'mlp'" - "$patch" "$ckpt" --clean "$clean" --corrupt "$corrupt" --answer o --wrong a --site mlp
refuses 2 "^patch: --wrong TOK is required" - "$patch" "$ckpt" --clean "$clean" --corrupt "$corrupt" --answer o --site head
refuses 2 "^ablate: --batches N is required" - "$ablate" "$ckpt" --data "$text"
refuses 1 "^ablate: --block 17 is longer than the model's block of 16" - "$ablate" "$ckpt" --data "$text" --block 17 --batches 1

# mlp_out on a model without MLPs (the attn_only kind, induction's model): refused; attribute's mlps empty
if "$train" --model attn_only --n-layer 2 --n-head 2 --n-embd 16 --block 16 --steps 2 --eval-iters 1 --sample 0 \
  --data "$text" --out "$work/attn_only.st" >/dev/null; then
  refuses 2 "^patch: --site mlp_out: this attn_only model has no hook point blocks\.0\.hook_mlp_out" - \
    "$patch" "$work/attn_only.st" --clean "$clean" --corrupt "$corrupt" --answer s --wrong a --site mlp_out
  json attn_only "$attribute" "$work/attn_only.st" --prompt "$clean" --answer s --wrong a
  python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); sys.exit(a["mlps"] != [] or len(a["heads"]) != 2)' \
    "$work/attn_only.json" && echo "ok: attribute on attn_only: mlps empty, 2 blocks of heads" || fail "attribute on attn_only: $(cat "$work/attn_only.json")"
else
  fail "train --model attn_only"
fi
exit $failed
