#!/usr/bin/env bash
# Our training step beside PyTorch's, for 1 and 2 threads, in one run, with the machine's FMA peak measured
# before and after; the peak resident memory of a short baby-GPT training run on each side; and nanoGPT's
# shakespeare_char model with its window T from 64 to 1,024 (step time, one thread, and peak memory of a
# short training run); then GPT-2 small (124M, V 50,257, random weights): B 4, T 64 on 1 and 2 threads,
# and B 1, T 1024 with each side's peak memory; with LLMC=<an llm.c checkout with train_gpt2 built
# (make train_gpt2)>, llm.c's CPU trainer on the same weights, B 4, T 64, too. Builds nothing: give it a
# Release build directory.
#
#     bench/compare.sh build/release            # about 8 minutes, and 10 more for GPT-2 (GPT2=0 skips it)
#     MIN_TIME=5 MEM_STEPS=50 WINDOWS=64,256 GPT2=0 bench/compare.sh build/release
#     LLMC=~/llm.c bench/compare.sh build/release   # llm.c's train_gpt2 beside them (15 minutes more)
#
# Needs Debian's python3-torch (run with /usr/bin/python3), OpenBLAS under it (libopenblas0-pthread: without
# it torch multiplies with the reference BLAS, 25x slower, and the ratios mean nothing; the script stops)
# and /usr/bin/time. Before timing, PyTorch loads our weights and batch (build/bench/export_weights) and must
# reach the same losses (1e-4 relative), or the script stops. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which
# this environment may set for old OpenBLAS builds, are unset for the PyTorch commands only (they slow a
# current OpenBLAS: OpenBLAS picks its best kernel for the CPU); ours does not use BLAS.
# Timings are medians of individual steps; on a shared machine they are noisy: compare within one run.
set -euo pipefail

build=${1:?usage: bench/compare.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
min_time=${MIN_TIME:-2}
mem_steps=${MEM_STEPS:-20}
windows=${WINDOWS:-64,128,256,512,1024}
gpt2=${GPT2:-1}
llmc=${LLMC:-}
[[ -z $llmc || -x $llmc/train_gpt2 ]] || { echo "compare.sh: LLMC=$llmc has no train_gpt2: make train_gpt2 there first" >&2; exit 1; }
python=/usr/bin/python3
for f in "$build/bench/bench_train_step" "$build/bench/export_weights" "$build/bench/bench_autograd" \
         "$build/examples/train" "$build/examples/export"; do
  [[ -x $f ]] || { echo "compare.sh: $f is missing: build $build first (Release)" >&2; exit 1; }
done
"$python" -c "import torch" 2>/dev/null || { echo "compare.sh: $python has no torch: apt-get install python3-torch" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
torch_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)
blas=$("${torch_env[@]}" "$python" "$here/pytorch_reference.py" --blas)
core=$("$python" -c 'import json, sys; b = json.loads(sys.argv[1]); print(b["core"] or "")' "$blas")
if [[ -z $core ]]; then
  echo "compare.sh: PyTorch does not multiply with OpenBLAS here ($blas):" \
       "apt-get install libopenblas0-pthread, or the ratios compare with the reference BLAS" >&2
  exit 1
fi
isa=$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || { grep -qw avx2 /proc/cpuinfo && echo AVX2 || echo "no AVX2"; })
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-<unset>} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-<unset>} in this shell;" \
     "unset for the PyTorch commands. torch $("$python" -c 'import torch; print(torch.__version__)')" \
     "multiplies with OpenBLAS, core $core. $(nproc) cores, $isa: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"

peak() {  # the machine's FP32 FMA peak on 1 and 2 threads, now (bench_autograd's peak/fma)
  "$build/bench/bench_autograd" --benchmark_filter='^peak/fma' --benchmark_repetitions=3 \
      --benchmark_report_aggregates_only=true --benchmark_format=json > "$tmp/peak$1.json"
}
peak 1

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
peak 2

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

# nanoGPT's shakespeare_char model by window T: step time (one thread, bench beside PyTorch) and the peak
# memory of a 3-step training run at each T (each side's peak is reached in the first step)
echo "nanoGPT's shakespeare_char model at T = $windows: step times ..." >&2
filter=$(echo "$windows" | sed 's/,/|/g')
"$build/bench/bench_train_step" --benchmark_filter="^scaling/nano/T:($filter)/" --benchmark_format=json \
    --benchmark_min_time="$min_time" > "$tmp/ours_windows.json"
"${torch_env[@]}" "$python" "$here/pytorch_reference.py" --windows nano --blocks "$windows" --min-time "$min_time" \
    > "$tmp/torch_windows.jsonl"
echo "... and peak memory" >&2
for T in ${windows//,/ }; do
  /usr/bin/time -v "$build/examples/train" --model gpt --data "$data" --n-layer 6 --n-head 6 --n-embd 384 \
      --block "$T" --batch 4 --steps 3 --eval-iters 1 --sample 0 --json > /dev/null 2> "$tmp/ours_T$T.time"
  /usr/bin/time -v "${torch_env[@]}" "$python" "$here/pytorch_reference.py" --train "$data" --config nano \
      --block "$T" --steps 3 > /dev/null 2> "$tmp/torch_T$T.time"
done

# GPT-2 small, random weights (GPT-2's init): B 4, T 64 (llm.c's demo) on 1 and 2 threads, both sides from
# our weights and batch (the losses checked, and the logits to 1e-5 with the tests' tinygpt_logits when it
# is built); then B 1, T 1024, each side in its own process for its peak memory (ours: bench_train_step;
# PyTorch: its own init, a random batch)
if [[ $gpt2 != 0 ]]; then
  echo "GPT-2 small: exporting its weights, then B 4, T 64 on each side ..." >&2
  "$build/bench/export_weights" "$tmp/weights" gpt2 >> "$tmp/export.txt"
  "$build/bench/bench_train_step" --benchmark_filter='^gpt2_step/gpt2/' --benchmark_format=json > "$tmp/ours_gpt2.json"
  logits=()
  [[ -x $build/tests/python/tinygpt_logits ]] && logits=(--logits "$build/tests/python/tinygpt_logits")
  for threads in 1 2; do
    "${torch_env[@]}" "$python" "$here/pytorch_reference.py" --weights "$tmp/weights" --configs gpt2 \
        --threads "$threads" "${logits[@]}" >> "$tmp/torch_gpt2.jsonl" 2>> "$tmp/check_gpt2.txt"
    logits=()  # (once is enough)
  done
  sort -u "$tmp/check_gpt2.txt"
  echo "GPT-2 small at B 1, T 1024 ..." >&2
  /usr/bin/time -v "$build/bench/bench_train_step" --benchmark_filter='^gpt2_step/gpt2-T1024/threads:1' \
      --benchmark_format=json > "$tmp/ours_gpt2_T1024.json" 2> "$tmp/ours_gpt2_T1024.time"
  /usr/bin/time -v "${torch_env[@]}" "$python" "$here/pytorch_reference.py" --windows gpt2-T1024 --blocks 1024 \
      > "$tmp/torch_gpt2_T1024.jsonl" 2> "$tmp/torch_gpt2_T1024.time"
  if [[ -n $llmc ]]; then
    # llm.c's train_gpt2 reads gpt2_124M.bin and dev/data/tinyshakespeare/*.bin from where it runs: our weights
    # as llm.c's version-3 file, random tokens in its token-file format; it prints "step N: ... (took X ms)"
    echo "llm.c's train_gpt2 on the same weights, 1 and 2 threads ..." >&2
    mkdir -p "$tmp/llmc/dev/data/tinyshakespeare"
    "$build/examples/export" "$tmp/weights/gpt2.safetensors" --llmc "$tmp/llmc/gpt2_124M.bin" > /dev/null
    "$python" - "$tmp/llmc/dev/data/tinyshakespeare" <<'PY'
import random, struct, sys
random.seed(1)
for split, n in (("train", 65536), ("val", 8192)):
    with open(f"{sys.argv[1]}/tiny_shakespeare_{split}.bin", "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
        f.write(struct.pack(f"<{n}H", *(random.randrange(50257) for _ in range(n))))
PY
    for threads in 1 2; do  # its first six steps (the first is cold), then it is stopped
      (cd "$tmp/llmc" && OMP_NUM_THREADS=$threads stdbuf -oL "$llmc/train_gpt2" | grep --line-buffered -m 6 took) \
          > "$tmp/llmc_$threads.txt" || true
    done
  fi
fi

"$python" - "$tmp" "$windows" <<'PY'
import json, os, re, statistics, sys
tmp, windows = sys.argv[1], [int(t) for t in sys.argv[2].split(",")]
def peaks(path):  # GFLOP/s on 1 and 2 threads, medians of 3
    return {int(re.search(r"threads:(\d+)", b["name"])[1]): b["GFLOP"]
            for b in json.load(open(path))["benchmarks"] if b["name"].endswith("_median")}
before, after = peaks(f"{tmp}/peak1.json"), peaks(f"{tmp}/peak2.json")
peak = {n: max(before[n], after[n]) for n in (1, 2)}
ours = {}
for b in json.load(open(f"{tmp}/ours.json"))["benchmarks"]:
    m = re.match(r"train_step/(\w+)/threads:(\d+)", b["name"])
    ours[(m[1], int(m[2]))] = b
theirs = {(r["config"], r["threads"]): r for r in map(json.loads, open(f"{tmp}/torch.jsonl"))}
names = {"tutorial": "tutorial (1 head, C 32, T 8, B 32)", "small": "4-layer (C 64, T 32, B 16)",
         "baby": "baby GPT (C 128, T 64, B 12)", "nano": "shakespeare_char (6 layers, C 384, T 256, B 4)"}
print()
print(f"FMA peak (bench_autograd peak/fma, the better of before and after the timings): "
      f"{peak[1]:.0f} GFLOP/s on one core, {peak[2]:.0f} on two (before {before[1]:.0f}/{before[2]:.0f}, "
      f"after {after[1]:.0f}/{after[2]:.0f})")
print()
print("| model | threads | ours ms/step | PyTorch ms/step | PyTorch / ours | ours tokens/s | ours GFLOP/s | of peak |")
# tokens/s and GFLOP/s from the median step, as the times (Google Benchmark's own counters use the mean)
print("|---|---|---|---|---|---|---|---|")
for name in names:
    for threads in (1, 2):
        o, t = ours[(name, threads)], theirs[(name, threads)]
        gflops = o['step_gflop'] / o['median_ms'] * 1e3
        print(f"| {names[name]} | {threads} | {o['median_ms']:.3f} | {t['median_ms']:.3f} | "
              f"{t['median_ms'] / o['median_ms']:.2f}x | {o['step_tokens'] / o['median_ms'] * 1e3:,.0f} | "
              f"{gflops:.1f} | {gflops / peak[threads]:.0%} |")
print()
for name in names:
    one, two = ours[(name, 1)]["median_ms"], ours[(name, 2)]["median_ms"]
    print(f"two threads over one, {name}: ours {one / two:.2f}x, PyTorch "
          f"{theirs[(name, 1)]['median_ms'] / theirs[(name, 2)]['median_ms']:.2f}x")
def rss(path):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(path).read())
    return int(m[1]) / 1024
o, t = rss(f"{tmp}/ours.time"), rss(f"{tmp}/torch.time")
print(f"peak resident memory, baby-GPT training run: ours {o:.1f} MiB, PyTorch {t:.1f} MiB "
      f"(ours is {o / t:.1%} of PyTorch's)")

ours_w = {int(re.search(r"T:(\d+)", b["name"])[1]): b for b in json.load(open(f"{tmp}/ours_windows.json"))["benchmarks"]}
theirs_w = {r["block"]: r for r in map(json.loads, open(f"{tmp}/torch_windows.jsonl"))}
print()
print("shakespeare_char model (6 layers, 6 heads, C 384, B 4) by window T, one thread; peak memory of a "
      "3-step training run")
print()
print("| T | ours ms/step | PyTorch ms/step | PyTorch / ours | ours GFLOP/s | of peak | ours peak MiB | "
      "PyTorch peak MiB | ours / PyTorch |")
print("|---|---|---|---|---|---|---|---|---|")
for T in windows:
    o, t = ours_w[T], theirs_w[T]
    gflops = o["step_gflop"] / o["median_ms"] * 1e3
    om, tm = rss(f"{tmp}/ours_T{T}.time"), rss(f"{tmp}/torch_T{T}.time")
    print(f"| {T} | {o['median_ms']:.1f} | {t['median_ms']:.1f} | {t['median_ms'] / o['median_ms']:.2f}x | "
          f"{gflops:.1f} | {gflops / peak[1]:.0%} | {om:.0f} | {tm:.0f} | {om / tm:.0%} |")

if os.path.exists(f"{tmp}/ours_gpt2.json"):
    ours_g = {int(re.search(r"threads:(\d+)", b["name"])[1]): b for b in json.load(open(f"{tmp}/ours_gpt2.json"))["benchmarks"]}
    torch_g = {r["threads"]: r for r in map(json.loads, open(f"{tmp}/torch_gpt2.jsonl"))}
    llmc_g = {}
    for threads in (1, 2):
        path = f"{tmp}/llmc_{threads}.txt"
        if os.path.exists(path):
            took = [float(x) for x in re.findall(r"took ([0-9.]+) ms", open(path).read())][1:]  # the first is cold
            if took:
                llmc_g[threads] = statistics.median(took)
    step_gflop = ours_g[1]["step_gflop"]
    print()
    print(f"GPT-2 small (124M, V 50,257, random weights), B 4, T 64: forward, backward, AdamW; "
          f"{step_gflop:.1f} GFLOP a step; medians of 5 steps{' (llm.c: of its steps 1-5)' if llmc_g else ''}")
    print()
    print("| threads | ours s/step | PyTorch s/step | PyTorch / ours | llm.c s/step | llm.c / ours | ours GFLOP/s | of peak |")
    print("|---|---|---|---|---|---|---|---|")
    for threads in (1, 2):
        o, t = ours_g[threads]["median_ms"], torch_g[threads]["median_ms"]
        l = llmc_g.get(threads)
        gflops = step_gflop / o * 1e3
        print(f"| {threads} | {o / 1e3:.2f} | {t / 1e3:.2f} | {t / o:.2f}x | {f'{l / 1e3:.2f}' if l else '-'} | "
              f"{f'{l / o:.2f}x' if l else '-'} | {gflops:.1f} | {gflops / peak[threads]:.0%} |")
    print(f"two threads over one: ours {ours_g[1]['median_ms'] / ours_g[2]['median_ms']:.2f}x, PyTorch "
          f"{torch_g[1]['median_ms'] / torch_g[2]['median_ms']:.2f}x"
          + (f", llm.c {llmc_g[1] / llmc_g[2]:.2f}x" if len(llmc_g) == 2 else ""))
    (o,) = json.load(open(f"{tmp}/ours_gpt2_T1024.json"))["benchmarks"]
    (t,) = map(json.loads, open(f"{tmp}/torch_gpt2_T1024.jsonl"))
    om, tm = rss(f"{tmp}/ours_gpt2_T1024.time"), rss(f"{tmp}/torch_gpt2_T1024.time")
    gflops = o["step_gflop"] / o["median_ms"] * 1e3
    print()
    print("GPT-2 small at B 1, T 1024, one thread: step time, and the peak memory of the process (parameters, "
          "gradients and AdamW's moments are 1.98 GB)")
    print()
    print("| ours s/step | PyTorch s/step | PyTorch / ours | ours GFLOP/s | of peak | ours peak MiB | PyTorch peak MiB |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {o['median_ms'] / 1e3:.2f} | {t['median_ms'] / 1e3:.2f} | {t['median_ms'] / o['median_ms']:.2f}x | "
          f"{gflops:.1f} | {gflops / peak[1]:.0%} | {om:.0f} | {tm:.0f} |")
PY
