#!/usr/bin/env bash
# A training step of a SmolLM-135M-shaped Llama (issue 42: 30 layers, C 576, 9 heads, 3 KV heads, F 1,536,
# V 49,152, tied; random weights; B 4, T 64): ours (bench_train_step's llama_step/smollm) beside PyTorch 1.13
# running python/tinygpt_torch's Llama on the same weights and batch (pytorch_reference.py --configs smollm,
# which first requires the same losses, 1e-4 relative), on 1 and 2 threads, in interleaved rounds, with
# the machine's FP32 FMA peak (bench_autograd's peak/fma) measured before and after. Prints each side's
# median step, the ratio, and each side's share of the peak (FLOPs: 6 * Linear weights, the tied output
# included, * tokens + 12 * layers * C * T * tokens for attention; bench/train_step.h's step_flops).
# Builds nothing: give it a Release build directory.
#
#     bench/llama_step.sh build/release              # ROUNDS=2: about 3 minutes on a quiet machine
#
# Needs Debian's python3-torch (/usr/bin/python3) with OpenBLAS under it (libopenblas0-pthread);
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for PyTorch's commands, as bench/compare.sh does.
set -euo pipefail
build=${1:?usage: bench/llama_step.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
rounds=${ROUNDS:-2} threads_list=${THREADS:-1 2}
python=/usr/bin/python3
for f in bench/bench_train_step bench/export_weights bench/bench_autograd; do
  [[ -x $build/$f ]] || { echo "llama_step.sh: build $build/$f first" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
torch_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(date -u '+%F %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg);" \
     "PyTorch $("$python" -c 'import torch; print(torch.__version__)'), $("${torch_env[@]}" "$python" "$here/pytorch_reference.py" --blas)"
peak() {
  "$build/bench/bench_autograd" --benchmark_filter='^peak/fma' --benchmark_repetitions=3 \
      --benchmark_report_aggregates_only=true --benchmark_format=json 2>/dev/null > "$tmp/peak$1.json"
}
peak 1
"$build/bench/export_weights" "$tmp/weights" smollm
for ((round = 1; round <= rounds; ++round)); do
  for threads in $threads_list; do
    "$build/bench/bench_train_step" --benchmark_filter="^llama_step/smollm/threads:$threads/" \
        --benchmark_format=json 2>/dev/null > "$tmp/ours.json"
    "$python" - "$tmp/ours.json" "$threads" <<'PY' | tee -a "$tmp/rows"
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"][0]
print(json.dumps({"side": "ours", "threads": int(sys.argv[2]), "median_ms": round(b["median_ms"], 1),
                  "step_gflop": b["step_gflop"], "loss": b["loss"]}))
PY
    "${torch_env[@]}" "$python" "$here/pytorch_reference.py" --weights "$tmp/weights" --configs smollm \
        --threads "$threads" 2>/dev/null | "$python" -c '
import json, sys
r = json.loads(sys.stdin.read().strip().split("\n")[-1])
print(json.dumps({"side": "pytorch", "threads": r["threads"], "median_ms": round(r["median_ms"], 1), "loss": r["loss"]}))' \
        | tee -a "$tmp/rows"
  done
done
peak 2
"$python" - "$tmp" <<'PY'
import json, re, statistics, sys
tmp = sys.argv[1]
def peak(path):
    return {int(re.search(r"threads:(\d+)", b["name"])[1]): b["GFLOP"]
            for b in json.load(open(path))["benchmarks"] if b["name"].endswith("_median")}
before, after = peak(f"{tmp}/peak1.json"), peak(f"{tmp}/peak2.json")
rows = [json.loads(line) for line in open(f"{tmp}/rows")]
gflop = next(r["step_gflop"] for r in rows if r["side"] == "ours")
print(f"\nstep {gflop:.1f} GFLOP; peak/fma {max(before[1], after[1]):.0f} GFLOP/s on one thread, "
      f"{max(before.get(2, 0), after.get(2, 0)):.0f} on two (before {before[1]:.0f}/{before.get(2, 0):.0f}, "
      f"after {after[1]:.0f}/{after.get(2, 0):.0f})")
print("\n| threads | ours ms | PyTorch ms | PyTorch / ours | ours GFLOP/s (of peak) | PyTorch GFLOP/s (of peak) |")
print("|---|---|---|---|---|---|")
for threads in sorted({r["threads"] for r in rows}):
    ours = statistics.median(r["median_ms"] for r in rows if r["side"] == "ours" and r["threads"] == threads)
    torch = statistics.median(r["median_ms"] for r in rows if r["side"] == "pytorch" and r["threads"] == threads)
    p = max(before[threads], after[threads])
    print(f"| {threads} | {ours:.0f} | {torch:.0f} | {torch / ours:.2f}x | {gflop / ours * 1e3:.0f} "
          f"({gflop / ours * 1e3 / p:.0%}) | {gflop / torch * 1e3:.0f} ({gflop / torch * 1e3 / p:.0%}) |")
PY
