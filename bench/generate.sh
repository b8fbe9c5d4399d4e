#!/usr/bin/env bash
# Sampling speed, ours cached and uncached (bench_generate) beside PyTorch sampling the nanoGPT way
# (pytorch_reference.py --sample), on 1 and 2 threads, in interleaved rounds; prints each JSON line, then
# the medians over the rounds. Builds nothing: give it a Release build directory.
#
#     bench/generate.sh build/release                  # ROUNDS=2 CHARS=2000 SHORT_CHARS=200: about 8 minutes
#     GPT2=0 bench/generate.sh build/release           # without GPT-2 small's part (GPT2_TOKENS=200: 3 minutes)
#
# Every sampler starts from a whole block of prompt, so a short run reads the windows of a long one. The
# uncached ones rerun the window for every character (a tenth of a second each at block 256), so they
# time SHORT_CHARS characters; the cached one times CHARS.
#
# Then GPT-2 small (124M, random weights), cached, from a 16-token prompt: its decoding alone per token
# (bench_generate's decode_ms_per_token) on 1 and 2 threads, against the ceiling the memory sets: a token
# reads every weight once, so at most peak/bandwidth (bench_autograd, before and after, the better kept)
# divided by the weights' bytes tokens a second. Beside it, in the same rounds, the same decoding with bf16
# products (issue 44: the weights rounded to bfloat16 once a run, bench_generate's PRECISION bf16) against
# the halved-bytes ceiling: peak/bandwidth divided by half the weights' bytes (BF16=0 leaves it out).
set -euo pipefail
build=${1:?usage: bench/generate.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
rounds=${ROUNDS:-2} chars=${CHARS:-2000} short=${SHORT_CHARS:-200}
python=/usr/bin/python3
[[ -x $build/bench/bench_generate ]] || { echo "generate.sh: build $build/bench/bench_generate first" >&2; exit 1; }
torch_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), avx512f: $(grep -qw avx512f /proc/cpuinfo && echo yes || echo no)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for ((round = 1; round <= rounds; ++round)); do
  "$build/bench/bench_generate" "$chars" "$short" baby,shakespeare 1,2 | tee -a "$log"
  for threads in 1 2; do
    "${torch_env[@]}" "$python" "$here/pytorch_reference.py" --sample baby,shakespeare --chars "$short" --threads "$threads" | tee -a "$log"
  done
done
"$python" - "$log" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
def sampler(r): return r.get("sampler") or ("cached" if r["cache"] else "uncached")
med = {}
for r in rows:
    med.setdefault((r["config"], r["threads"], sampler(r)), []).append(r["chars_per_s"])
assert all(r.get("same_text", True) for r in rows), "an uncached text differs from the cached one"
print("\n| model | threads | cached | uncached | PyTorch (nanoGPT's way) | cached / uncached | cached / PyTorch |")
print("|---|---|---|---|---|---|---|")
for config in ("baby", "shakespeare"):
    for threads in (1, 2):
        c, u, p = (statistics.median(med[(config, threads, s)]) for s in ("cached", "uncached", "pytorch"))
        print(f"| {config} | {threads} | {c:.0f} | {u:.1f} | {p:.1f} | {c / u:.1f}x | {c / p:.0f}x |")
PY

if [[ ${GPT2:-1} != 0 ]]; then
  [[ -x $build/bench/bench_autograd ]] || { echo "generate.sh: build $build/bench/bench_autograd first" >&2; exit 1; }
  glog=$(mktemp)
  trap 'rm -f "$log" "$glog" "$glog".bw*' EXIT
  bandwidth() {
    "$build/bench/bench_autograd" --benchmark_filter='^peak/bandwidth' --benchmark_repetitions=3 \
        --benchmark_report_aggregates_only=true --benchmark_format=json 2>/dev/null > "$1"
  }
  bandwidth "$glog.bw1"
  for ((round = 1; round <= rounds; ++round)); do
    "$build/bench/bench_generate" "${GPT2_TOKENS:-200}" 0 gpt2-small 1,2 16 | tee -a "$glog"
    [[ ${BF16:-1} == 0 ]] || "$build/bench/bench_generate" "${GPT2_TOKENS:-200}" 0 gpt2-small 1,2 16 bf16 | tee -a "$glog"
  done
  bandwidth "$glog.bw2"
  "$python" - "$glog" <<'PY'
import json, re, statistics, sys
log = sys.argv[1]
def bandwidth(path):
    return {int(re.search(r"threads:(\d+)", b["name"])[1]): b["GB_per_s"]
            for b in json.load(open(path))["benchmarks"] if b["name"].endswith("_median")}
before, after = bandwidth(log + ".bw1"), bandwidth(log + ".bw2")
rows = [json.loads(line) for line in open(log)]
print(f"\nGPT-2 small, cached decoding from a 16-token prompt; memory bandwidth (peak/bandwidth) "
      f"{max(before[1], after[1]):.1f} GB/s on one thread, {max(before[2], after[2]):.1f} on two "
      f"(before {before[1]:.1f}/{before[2]:.1f}, after {after[1]:.1f}/{after[2]:.1f})")
print("\n| products | threads | ms/token | tokens/s | ceiling (bandwidth / weight bytes) | of the ceiling |")
print("|---|---|---|---|---|---|")
for precision in ("float32", "bf16"):
    for threads in (1, 2):
        mine = [r for r in rows if r["threads"] == threads and r.get("precision", "float32") == precision]
        if not mine:
            continue
        ms = statistics.median(r["decode_ms_per_token"] for r in mine)
        # bf16 reads each weight's bfloat16 copy: half the bytes (embeddings' rows and biases, a few, stay float)
        weight_bytes = mine[0]["weight_bytes"] / (2 if precision == "bf16" else 1)
        ceiling = max(before[threads], after[threads]) * 1e9 / weight_bytes
        name = f"bf16 ({mine[0]['bf16_kernel']})" if precision == "bf16" else precision
        print(f"| {name} | {threads} | {ms:.1f} | {1e3 / ms:.1f} | {ceiling:.1f} tokens/s ({weight_bytes / 1e6:.0f} MB "
              f"a token) | {1e3 / ms / ceiling:.0%} |")
PY
fi
