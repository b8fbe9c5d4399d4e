#!/usr/bin/env bash
# Our gemm beside the other libraries' sgemm at every shape of the models' training steps (bench_autograd's
# step_gemms: the tutorial, small, baby and shakespeare_char models), one thread each, as a markdown table:
# shape, layout, calls per step, GFLOP/s of ours (avx512, avx2) and of each library built in (openblas,
# blis, libxsmm, onednn: see bench/CMakeLists.txt), the best library, ours (the kernel gemm picks) / best.
#
#     bench/gemm_peers.sh BUILD_DIR [ROUNDS] [MIN_TIME]     # e.g. bench/gemm_peers.sh build/release
#
# Each round is one run of bench_autograd over all of them in random order (Google Benchmark's random
# interleaving), ROUNDS rounds (default 3) of at least MIN_TIME seconds per benchmark (default 0.05); the
# table gives the median of the rounds, so a burst of load on a shared machine hits one of them and
# not one library's column. Rates are per CPU second, as bench_autograd's GFLOP counters, the FMA peak
# (peak/fma/threads:1) too: the share of peak is then not lowered by other processes' turns on the core.
#
# Each library at its best: OpenBLAS picks its kernel for the CPU itself (OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE, which dev/setup's environment may set, are unset for the runs); BLIS 0.9 takes an
# AVX-512 Ice Lake for haswell, so on a CPU with AVX-512 its column is the better, per shape, of its
# detected kernels and its skx kernels (BLIS_ARCH_TYPE=skx, a second run of the BLIS benchmarks in each
# round); oneDNN and BLIS's OpenMP build are held to one thread by OMP_NUM_THREADS=1 and by
# bench_autograd itself.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 3 ]]; then
    echo "usage: $0 BUILD_DIR [ROUNDS] [MIN_TIME]" >&2
    exit 2
fi
bench="$1/bench/bench_autograd"
rounds="${2:-3}"
min_time="${3:-0.05}"
if [[ ! -x "$bench" ]]; then
    echo "gemm_peers.sh: $bench not found (build the bench_autograd target)" >&2
    exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() {  # run NAME FILTER [ENV...]
    local name="$1" filter="$2"
    shift 2
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 "$@" "$bench" \
        --benchmark_filter="$filter" --benchmark_enable_random_interleaving=true \
        --benchmark_min_time="$min_time" --benchmark_format=json --benchmark_out="$out/$name.json" \
        --benchmark_out_format=json >/dev/null 2>"$out/$name.log" ||
        { cat "$out/$name.log" >&2; echo "gemm_peers.sh: bench_autograd failed ($name)" >&2; exit 1; }
}

blis_skx=0
if grep -qw avx512f /proc/cpuinfo 2>/dev/null && "$bench" --benchmark_list_tests --benchmark_filter='^gemm/blis/' 2>/dev/null | grep -q .; then
    blis_skx=1
fi
for ((r = 1; r <= rounds; ++r)); do
    echo "gemm_peers.sh: round $r of $rounds" >&2
    run "round$r" '^(peak/fma/threads:1|gemm/(avx512|avx2|openblas|blis|libxsmm|onednn)/)'
    if ((blis_skx)); then run "round$r-blis-skx" '^gemm/blis/' BLIS_ARCH_TYPE=skx; fi
done

python3 - "$out" <<'EOF'
import glob, json, os, re, statistics, sys
from collections import defaultdict

out = sys.argv[1]
rates = defaultdict(list)   # (kernel, layout, shape) -> GFLOP/s of each round
labels, peak, context = {}, [], None
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    with open(path) as f:
        doc = json.load(f)
    skx = path.endswith("-blis-skx.json")
    if not skx:
        context = doc["context"]
    for b in doc["benchmarks"]:
        name = b["name"]
        if name.startswith("peak/fma/threads:1"):
            # per CPU second, as the gemm rates (it runs on the benchmark's thread): wall rate x wall / CPU
            peak.append(b["GFLOP"] * b["real_time"] / b["cpu_time"])
            continue
        m = re.match(r"gemm/([^/]+)/(NN|NT|TN)/(\d+x\d+x\d+)$", name)
        if not m or not b.get("label", "").startswith("step: "):
            continue
        kernel, layout, shape = m.groups()
        if skx:
            kernel = "blis-skx"
        rates[(kernel, layout, shape)].append(b["GFLOP"])
        labels[(layout, shape)] = b["label"][len("step: "):]

med = {key: statistics.median(v) for key, v in rates.items()}
ours = "avx512" if any(k[0] == "avx512" for k in med) else "avx2"
ours_kernels = [k for k in ("avx512", "avx2") if any(key[0] == k for key in med)]
peer_names = [p for p in ("openblas", "blis", "libxsmm", "onednn") if any(key[0] == p for key in med)]
peak_gflops = statistics.median(peak) if peak else None

def rate(kernel, layout, shape):
    if kernel == "blis":  # the better of BLIS's detected and skx kernels
        vals = [med.get((k, layout, shape)) for k in ("blis", "blis-skx")]
        vals = [v for v in vals if v is not None]
        return max(vals) if vals else None
    return med.get((kernel, layout, shape))

def calls_of(label):  # "small 512 calls, baby 4 calls" -> {model: calls}
    return {m: int(c) for m, c in re.findall(r"(\w+) (\d+) calls", label)}

models = ["tutorial", "small", "baby", "shakespeare_char"]
order = {m: i for i, m in enumerate(models)}
def key(item):
    (layout, shape), label = item
    first = min(calls_of(label), key=lambda m: order.get(m, 99))
    return (order.get(first, 99), -calls_of(label)[first], layout, shape)

print(f"gemm, one thread: ours ({ours}) beside {', '.join(peer_names) or 'no other library'}; GFLOP/s (median of "
      f"{len(peak) or '?'} rounds); host {context['host_name'] if context else '?'}, "
      f"{context.get('gemm_peers', '?') if context else '?'}")
if peak_gflops:
    print(f"\npeak/fma/threads:1 {peak_gflops:.1f} GFLOP/s (per CPU second) in the same run\n")
head = ["shape MxNxK", "layout", "calls per step"] + [f"ours {k}" for k in ours_kernels] + peer_names + \
       ["best peer", f"ours / best", "ours % peak"]
print("| " + " | ".join(head) + " |")
print("|" + "|".join("---" if i < 3 else "--:" for i in range(len(head))) + "|")
step_time = defaultdict(lambda: [0.0, 0.0])  # model -> [ours seconds, best peer's seconds] per step
behind = []
for (layout, shape), label in sorted(labels.items(), key=key):
    M, N, K = map(int, shape.split("x"))
    flops = 2.0 * M * N * K
    row = [shape, layout, label]
    for k in ours_kernels:
        v = rate(k, layout, shape)
        row.append(f"{v:.1f}" if v else "-")
    best, best_name = None, "-"
    for p in peer_names:
        v = rate(p, layout, shape)
        row.append(f"{v:.1f}" if v else "-")
        if v and (best is None or v > best):
            best, best_name = v, p
    mine = rate(ours, layout, shape)
    ratio = mine / best if mine and best else None
    row += [best_name, f"{ratio:.2f}x" if ratio else "-",
            f"{100 * mine / peak_gflops:.0f}%" if mine and peak_gflops else "-"]
    if ratio is not None and ratio < 1.0:
        row[-2] = f"**{row[-2]}**"
        behind.append((layout, shape, ratio, best_name))
    print("| " + " | ".join(row) + " |")
    for model, calls in calls_of(label).items():
        if mine and best:
            step_time[model][0] += calls * flops / (mine * 1e9)
            step_time[model][1] += calls * flops / (best * 1e9)

print("\nAll gemm calls of one step (calls x time per call), ours vs the best library at each shape:\n")
print("| model | ours ms | best peers ms | ours / best |")
print("|---|--:|--:|--:|")
for model in sorted(step_time, key=lambda m: order.get(m, 99)):
    o, b = step_time[model]
    print(f"| {model} | {1e3 * o:.3f} | {1e3 * b:.3f} | {b / o:.2f}x |")
print(f"\n{len(behind)} of {len(labels)} shapes below 1.0x the best library" +
      (": " + ", ".join(f"{l} {s} {r:.2f}x ({n})" for l, s, r, n in behind) if behind else ""))
EOF
