#!/usr/bin/env bash
# Cached decoding of a stories15M-shaped Llama (issue 42's "Speed and memory"): our `generate` beside
# llama2.c's run.c on the same model file, greedy, 256 positions from BOS and a prompt, on 1 and 2 threads, in
# interleaved rounds; prints each run's tokens/s, then the medians, ours / run.c, and each side's share of
# the ceiling the memory sets (a token reads every weight once: peak/bandwidth / the weights' bytes).
# Builds nothing: give it a Release build directory (generate, bench_autograd, llama2c_file built) and a
# run.c binary built outside the project:
#
#     git --git-dir=LLAMA2C_GIT show HEAD:run.c > /tmp/runc/run.c
#     gcc -Ofast -march=native -fopenmp /tmp/runc/run.c -lm -o /tmp/runc/run
#     bench/llama_decode.sh build/release /tmp/runc/run          # ROUNDS=5 STEPS=256: about two minutes
#
# The model is random weights written by our own code (bench/llama2c_file.cpp: dim 288, 6 layers, 6 heads,
# 6 KV heads, hidden 768, vocab 32,000, seq_len 256, tied; 61 MB), made once into $build/bench/ unless
# MODEL=FILE names another. run.c needs a tokenizer of 32,000 tokens: llama2.c's, tests/data/llama2c/.
# run.c prints STEPS pieces (the prompt's 4, then STEPS - 4 sampled), as generate --tokens STEPS - 4 does.
# run.c's tokens/s is its own "achieved tok/s" (STEPS - 1 forwards over the time after the first); ours
# is generate --json's tokens_per_s (the tokens sampled over the whole time, the prompt's forward included).
# The prompt ("Once upon a time", PROMPT_TOKENS 4 after BOS; set both to change it) is there because a
# random tied model's greedy choice is the token it was given (the residual stream carries its embedding to
# the logits x @ embed^T): from BOS alone both would draw BOS and stop; from the prompt they repeat " time".
# "same text": both printed the same greedy text (random weights have near ties, so a difference in the
# last bits of a logit may part them; the work is the same either way unless one stops at BOS early).
set -euo pipefail
build=${1:?usage: bench/llama_decode.sh BUILD_DIR RUN_C_BINARY}
runc=${2:?usage: bench/llama_decode.sh BUILD_DIR RUN_C_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
rounds=${ROUNDS:-5} steps=${STEPS:-256} threads_list=${THREADS:-1 2}
prompt=${PROMPT:-Once upon a time} prompt_tokens=${PROMPT_TOKENS:-4}
tokenizer=${TOKENIZER:-$here/../tests/data/llama2c/tokenizer.bin}
model=${MODEL:-$build/bench/stories15M_random.bin}
python=/usr/bin/python3
for program in examples/generate bench/bench_autograd bench/llama2c_file; do
  [[ -x $build/$program ]] || { echo "llama_decode.sh: build $build/$program first" >&2; exit 1; }
done
[[ -x $runc ]] || { echo "llama_decode.sh: no run.c binary at $runc" >&2; exit 1; }
[[ -f $model ]] || "$build/bench/llama2c_file" "$model"
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(date -u '+%F %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
bandwidth() {
  "$build/bench/bench_autograd" --benchmark_filter='^peak/bandwidth' --benchmark_repetitions=3 \
      --benchmark_report_aggregates_only=true --benchmark_format=json 2>/dev/null > "$1"
}
bandwidth "$log/bw1"
for ((round = 1; round <= rounds; ++round)); do
  for threads in $threads_list; do
    "$build/examples/generate" "$model" --tokenizer "$tokenizer" --temperature 0 --prompt "$prompt" \
        --tokens $((steps - prompt_tokens)) --threads "$threads" --json > "$log/ours.txt"
    OMP_NUM_THREADS=$threads "$runc" "$model" -z "$tokenizer" -t 0 -n "$steps" -i "$prompt" > "$log/runc.txt" 2> "$log/runc.err"
    "$python" - "$log" "$threads" <<'PY' | tee -a "$log/rows"
import json, re, sys
log, threads = sys.argv[1], int(sys.argv[2])
ours_lines = open(f"{log}/ours.txt").read().rstrip("\n").split("\n")
ours = json.loads(ours_lines[-1])
runc = float(re.search(r"achieved tok/s: ([0-9.]+)", open(f"{log}/runc.err").read())[1])
same = "\n".join(ours_lines[:-1]).strip() == open(f"{log}/runc.txt").read().strip()
print(json.dumps({"threads": threads, "ours_tokens": ours["tokens"], "ours_tokens_per_s": round(ours["tokens_per_s"], 1),
                  "runc_tokens_per_s": round(runc, 1), "same_text": same}))
PY
  done
done
bandwidth "$log/bw2"
"$python" - "$log" "$model" <<'PY'
import json, os, re, statistics, sys
log, model = sys.argv[1], sys.argv[2]
def bandwidth(path):
    return {int(re.search(r"threads:(\d+)", b["name"])[1]): b["GB_per_s"]
            for b in json.load(open(path))["benchmarks"] if b["name"].endswith("_median")}
before, after = bandwidth(log + "/bw1"), bandwidth(log + "/bw2")
# the bytes a token reads: the file less its 28-byte header and the rotary tables nobody reads (2 T H/2)
dim, hidden, layers, heads, kv_heads, vocab, seq_len = (int(x) for x in
    __import__("struct").unpack("<7i", open(model, "rb").read(28)))
weights = os.path.getsize(model) - 28 - 4 * seq_len * (dim // heads)
rows = [json.loads(line) for line in open(log + "/rows")]
print(f"\nweights {weights / 1e6:.1f} MB a token; peak/bandwidth {max(before[1], after[1]):.1f} GB/s on one thread, "
      f"{max(before.get(2, 0), after.get(2, 0)):.1f} on two (before {before[1]:.1f}/{before.get(2, 0):.1f}, "
      f"after {after[1]:.1f}/{after.get(2, 0):.1f}); {len(rows)} runs, same text in "
      f"{sum(r['same_text'] for r in rows)}")
# ours / run.c per round too: a pair runs back to back, so its ratio is less moved by the host's load drifting
print("\n| threads | ours tokens/s | run.c tokens/s | ours / run.c | per round (min-max) | ceiling tokens/s | "
      "ours of ceiling | run.c of ceiling |")
print("|---|---|---|---|---|---|---|---|")
for threads in sorted({r["threads"] for r in rows}):
    mine = [r for r in rows if r["threads"] == threads]
    ours = statistics.median(r["ours_tokens_per_s"] for r in mine)
    runc = statistics.median(r["runc_tokens_per_s"] for r in mine)
    pairs = [r["ours_tokens_per_s"] / r["runc_tokens_per_s"] for r in mine]
    ceiling = max(before[threads], after[threads]) * 1e9 / weights
    print(f"| {threads} | {ours:.0f} | {runc:.0f} | {ours / runc:.2f}x | {statistics.median(pairs):.2f}x "
          f"({min(pairs):.2f}-{max(pairs):.2f}) | {ceiling:.0f} | {ours / ceiling:.0%} | {runc / ceiling:.0%} |")
PY
