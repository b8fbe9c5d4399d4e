#!/usr/bin/env bash
# Sampling speed, ours cached and uncached (bench_generate) beside PyTorch sampling the nanoGPT way
# (pytorch_reference.py --sample), on 1 and 2 threads, in interleaved rounds; prints each JSON line, then
# the medians over the rounds. Builds nothing: give it a Release build directory.
#
#     bench/generate.sh build/release                  # ROUNDS=2 CHARS=2000 SHORT_CHARS=200: about 8 minutes
#
# Every sampler starts from a whole block of prompt, so a short run reads the windows of a long one. The
# uncached ones rerun the window for every character (a tenth of a second each at block 256), so they
# time SHORT_CHARS characters; the cached one times CHARS.
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
