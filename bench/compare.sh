#!/usr/bin/env bash
# Our training step beside PyTorch's, for 1 and 2 threads, in one run; then the peak resident memory of a
# short baby-GPT training run on each side. Builds nothing: give it a Release build directory.
#
#     bench/compare.sh build/release            # about 3 minutes
#     MIN_TIME=5 MEM_STEPS=50 bench/compare.sh build/release
#
# Needs Debian's python3-torch (run with /usr/bin/python3) and /usr/bin/time. Before timing, PyTorch loads
# our weights and batch (build/bench/export_weights) and must reach the same losses (1e-4 relative), or
# the script stops. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which this environment may set for old OpenBLAS
# builds, are unset for the PyTorch commands only (they slow a current OpenBLAS); ours does not use BLAS.
# Timings are medians of individual steps; on a shared machine they are noisy: compare within one run.
set -euo pipefail

build=${1:?usage: bench/compare.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
min_time=${MIN_TIME:-2}
mem_steps=${MEM_STEPS:-20}
python=/usr/bin/python3
for f in "$build/bench/bench_train_step" "$build/bench/export_weights" "$build/examples/train"; do
  [[ -x $f ]] || { echo "compare.sh: $f is missing: build $build first (Release)" >&2; exit 1; }
done
"$python" -c "import torch" 2>/dev/null || { echo "compare.sh: $python has no torch: apt-get install python3-torch" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
torch_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-<unset>} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-<unset>} in this shell;" \
     "unset for the PyTorch commands. torch $("$python" -c 'import torch; print(torch.__version__)')," \
     "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"

"$build/bench/export_weights" "$tmp/weights" > "$tmp/export.txt"

echo "timing ours (bench_train_step, ${min_time} s per case) ..." >&2
"$build/bench/bench_train_step" --benchmark_filter='^train_step/' --benchmark_format=json \
    --benchmark_min_time="$min_time" > "$tmp/ours.json"
for threads in 1 2; do
  echo "timing PyTorch on $threads thread(s) ..." >&2
  "${torch_env[@]}" "$python" "$here/pytorch_reference.py" --weights "$tmp/weights" --threads "$threads" \
      --min-time "$min_time" >> "$tmp/torch.jsonl" 2>> "$tmp/check.txt"
done
sort -u "$tmp/check.txt"

# peak memory: a baby-GPT run of a few steps on tiny Shakespeare (or a generated text of the same alphabet)
data=$root/../shared/data/tinyshakespeare.txt
if [[ ! -f $data ]]; then
  data=$tmp/text.txt
  "$python" -c "import random; random.seed(1); a='abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ.,;:!?\n'; print(''.join(random.choice(a) for _ in range(1000000)))" > "$data"
fi
echo "peak memory: $mem_steps baby-GPT steps each on $(basename "$data") ..." >&2
/usr/bin/time -v "$build/examples/train" --model gpt --data "$data" --n-layer 4 --n-head 4 --n-embd 128 --block 64 \
    --batch 12 --steps "$mem_steps" --eval-iters 1 --sample 0 --json > /dev/null 2> "$tmp/ours.time"
/usr/bin/time -v "${torch_env[@]}" "$python" "$here/pytorch_reference.py" --train "$data" --steps "$mem_steps" \
    > /dev/null 2> "$tmp/torch.time"

"$python" - "$tmp" <<'PY'
import json, re, sys
tmp = sys.argv[1]
ours = {}
for b in json.load(open(f"{tmp}/ours.json"))["benchmarks"]:
    m = re.match(r"train_step/(\w+)/threads:(\d+)", b["name"])
    ours[(m[1], int(m[2]))] = b
theirs = {(r["config"], r["threads"]): r for r in map(json.loads, open(f"{tmp}/torch.jsonl"))}
names = {"tutorial": "tutorial (1 head, C 32, T 8, B 32)", "small": "4-layer (C 64, T 32, B 16)",
         "baby": "baby GPT (C 128, T 64, B 12)"}
print()
print("| model | threads | ours ms/step | PyTorch ms/step | PyTorch / ours | ours tokens/s | ours GFLOP/s |")
# tokens/s and GFLOP/s from the median step, as the times (Google Benchmark's own counters use the mean)
print("|---|---|---|---|---|---|---|")
for name in ["tutorial", "small", "baby"]:
    for threads in (1, 2):
        o, t = ours[(name, threads)], theirs[(name, threads)]
        print(f"| {names[name]} | {threads} | {o['median_ms']:.3f} | {t['median_ms']:.3f} | "
              f"{t['median_ms'] / o['median_ms']:.2f}x | {o['step_tokens'] / o['median_ms'] * 1e3:,.0f} | "
              f"{o['step_gflop'] / o['median_ms'] * 1e3:.1f} |")
print()
for name in ["tutorial", "small", "baby"]:
    one, two = ours[(name, 1)]["median_ms"], ours[(name, 2)]["median_ms"]
    print(f"two threads over one, {name}: ours {one / two:.2f}x, PyTorch "
          f"{theirs[(name, 1)]['median_ms'] / theirs[(name, 2)]['median_ms']:.2f}x")
def rss(path):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(path).read())
    return int(m[1]) / 1024
o, t = rss(f"{tmp}/ours.time"), rss(f"{tmp}/torch.time")
print(f"peak resident memory, baby-GPT training run: ours {o:.1f} MiB, PyTorch {t:.1f} MiB "
      f"(ours is {o / t:.1%} of PyTorch's)")
PY
