#!/usr/bin/env bash
# Issue 43's speed experiment: asking GPT-2 small's shape (random weights, T 64) why, ours
# (bench/bench_interpret) beside PyTorch 1.13 with forward hooks (bench/interpret_pytorch.py, the reference
# tests/python/test_interpret_torch.py checks the programs against), in interleaved rounds, one thread by
# default, with the machine's FP32 FMA peak (bench_autograd's peak/fma) measured first. Prints each side's
# median of: a plain forward, a forward caching every hook point, head patching (144 patched runs) and
# attribution patching; the ratios the issue asks for; and the peak memory of `cache` writing every hook
# point of that model beside the file it writes. Builds nothing: give it a Release build directory.
#
#     bench/interpret.sh build/release            # ROUNDS=3 THREADS="1": about 4 minutes on a quiet machine
#
# Needs Debian's python3-torch (/usr/bin/python3) with OpenBLAS under it (libopenblas0-pthread).
set -euo pipefail
build=${1:?usage: bench/interpret.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
rounds=${ROUNDS:-3} threads_list=${THREADS:-1}
python=/usr/bin/python3
for f in bench/bench_interpret bench/bench_autograd examples/cache; do
  [[ -x $build/$f ]] || { echo "interpret.sh: build $build/$f first" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
torch_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(date -u '+%F %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/bench_autograd" --benchmark_filter='^peak/fma' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=json 2>/dev/null > "$tmp/peak.json"
for ((round = 1; round <= rounds; ++round)); do
  for threads in $threads_list; do
    "$build/bench/bench_interpret" --rounds 3 --threads "$threads" >> "$tmp/rows"
    "${torch_env[@]}" "$python" "$here/interpret_pytorch.py" --rounds 3 --threads "$threads" >> "$tmp/rows"
  done
done

# cache: every hook point of the model on 64 ids, its peak memory beside the file's size and the weights'
"$build/bench/bench_interpret" --write-model "$tmp/gpt2.st"
ids=$(seq -s ' ' 100 163)
/usr/bin/time -f '%M' -o "$tmp/rss" "$build/examples/cache" "$tmp/gpt2.st" --prompt "$ids" --out "$tmp/acts.st" > /dev/null
echo "{\"side\":\"cache\",\"peak_kib\":$(cat "$tmp/rss"),\"file_bytes\":$(stat -c %s "$tmp/acts.st"),\"weights_bytes\":$(stat -c %s "$tmp/gpt2.st")}" >> "$tmp/rows"

"$python" - "$tmp/rows" "$tmp/peak.json" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
peak = {int(b["name"].split("threads:")[1].split("/")[0].split("_")[0]): b["GFLOP"]
        for b in json.load(open(sys.argv[2]))["benchmarks"] if b["name"].endswith("_median")}
# a forward: 2 * (Linear weights + the tied output) * T, + 4 * L * T^2 * C for the attention
L, C, V, T = 12, 768, 50257, next(r["T"] for r in rows if "T" in r)
forward_gflop = (2 * (L * 12 * C * C + C * V) * T + 4 * L * T * T * C) / 1e9
print(f"peak/fma {peak[1]:.0f} GFLOP/s on one thread; a forward is {forward_gflop:.2f} GFLOP")
torch_row = next(r for r in rows if r["side"] == "pytorch")
print(f"PyTorch {torch_row['torch']}, BLAS {torch_row['blas']} ({torch_row['blas_path']})")
keys = [("forward_ms", "forward"), ("cache_all_ms", "run_with_cache, every hook point"),
        ("patch_head_ms", "patch --site head (144 patched runs)"), ("attribution_ms", "patch --site head --method attribution")]
for threads in sorted({r["threads"] for r in rows if "threads" in r}):
    med = {side: {k: statistics.median(r[k] for r in rows if r["side"] == side and r["threads"] == threads)
                  for k, _ in keys} for side in ("tinygpt", "pytorch")}
    n = sum(1 for r in rows if r["side"] == "tinygpt" and r["threads"] == threads)
    print(f"\n{threads} thread{'s' if threads > 1 else ''}, medians of {n} rounds (ms):")
    print(f"  {'':42} {'tinygpt':>10} {'PyTorch':>10} {'PyTorch / tinygpt':>18}")
    for k, name in keys:
        print(f"  {name:42} {med['tinygpt'][k]:10.1f} {med['pytorch'][k]:10.1f} {med['pytorch'][k] / med['tinygpt'][k]:17.2f}x")
    for side in ("tinygpt", "pytorch"):
        m = med[side]
        share = forward_gflop / (m["forward_ms"] / 1e3) / peak.get(threads, peak[1] * threads)
        print(f"  {side}: caching every hook {m['cache_all_ms'] / m['forward_ms']:.3f}x a forward; "
              f"activation patching {m['patch_head_ms'] / m['attribution_ms']:.1f}x attribution patching; "
              f"the forward at {100 * share:.0f}% of the FMA peak")
c = next(r for r in rows if r["side"] == "cache")
print(f"\ncache, every hook point on 64 ids: peak RSS {c['peak_kib'] / 1024:.0f} MiB for a {c['file_bytes'] / 2**20:.0f} MiB "
      f"file, the weights {c['weights_bytes'] / 2**20:.0f} MiB")
PY
