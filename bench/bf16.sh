#!/usr/bin/env bash
# bfloat16 products (issue 44) side by side, in interleaved rounds, medians: GPT-2 small's training step
# (B 4, T 64, random weights) ours in float32 and in bf16 (bench_train_step's gpt2_step and gpt2_step_bf16)
# beside PyTorch's in float32 and under torch.autocast("cpu", dtype=torch.bfloat16) (pytorch_reference.py
# --precision bf16), on 1 and 2 threads; GPT-2 small's cached decoding in both precisions against the
# memory's ceiling (peak/bandwidth over the weights' bytes, halved for bf16); the peak resident memory of
# each step's process; peak/fma and peak/bandwidth before and after; the CPU and the bf16 kernel that ran.
# Prints a markdown table. With CURVES=1 also trains a GPT-2-shaped model on tiny Shakespeare in both
# precisions from one seed (bench/bf16_curves, the two side by side, a core each) and draws the curves
# (bench/bf16_curves.py) into $SVG. Builds nothing: give it a Release build directory.
#
#     bench/bf16.sh build/release                      # ROUNDS=3: about 15 minutes
#     CURVES=1 SVG=bench/bf16_loss.svg bench/bf16.sh build/release   # and the curves, 10-20 minutes more
#
# PyTorch 1.13's autocast step is slow here (seconds a step), so it runs in the first TORCH_BF16_ROUNDS
# rounds only (default 1); every other case runs in every round. Before timing, PyTorch loads our weights
# and batch and must reach our float32 losses (float32: to 1e-4 relative; autocast: to 0.05, llm.c's bf16
# tolerance), and bench_train_step requires each small model's bf16 loss within 0.05 of its float32 one.
# Needs Debian's python3-torch with OpenBLAS under it (libopenblas0-pthread), as bench/compare.sh.
set -euo pipefail

build=${1:?usage: bench/bf16.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
rounds=${ROUNDS:-3} torch_bf16_rounds=${TORCH_BF16_ROUNDS:-1} tokens=${GPT2_TOKENS:-200}
python=/usr/bin/python3
for f in bench_train_step export_weights bench_generate bench_autograd bf16_curves; do
  [[ -x $build/bench/$f ]] || { echo "bf16.sh: $build/bench/$f is missing: build $build first (Release)" >&2; exit 1; }
done
"$python" -c "import torch" 2>/dev/null || { echo "bf16.sh: $python has no torch: apt-get install python3-torch" >&2; exit 1; }
torch_env=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE)  # as compare.sh: they slow a current OpenBLAS
blas=$("${torch_env[@]}" "$python" "$here/pytorch_reference.py" --blas)
core=$("$python" -c 'import json, sys; print(json.loads(sys.argv[1])["core"] or "")' "$blas")
[[ -n $core ]] || { echo "bf16.sh: PyTorch does not multiply with OpenBLAS ($blas): apt-get install libopenblas0-pthread" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  echo "flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx512f|avx512_bf16|amx_bf16|amx_tile)$' | tr '\n' ' ')"
  echo "cores=$(nproc)"
  echo "torch=$("$python" -c 'import torch; print(torch.__version__)') openblas core $core"
  echo "openblas_package=$(dpkg-query -W -f='${Package} ${Version}' libopenblas0-pthread 2>/dev/null || echo none)"
} > "$tmp/machine.txt"
cat "$tmp/machine.txt"

peaks() {  # peak/fma and peak/bandwidth on 1 and 2 threads, medians of 3
  "$build/bench/bench_autograd" --benchmark_filter='^peak/(fma|bandwidth)' --benchmark_repetitions=3 \
      --benchmark_report_aggregates_only=true --benchmark_format=json 2>/dev/null > "$tmp/peaks$1.json"
}
peaks 1
"$build/bench/export_weights" "$tmp/weights" gpt2 > /dev/null

for ((round = 1; round <= rounds; ++round)); do
  echo "round $round of $rounds: ours (float32, bf16), PyTorch, decoding ..." >&2
  "$build/bench/bench_train_step" --benchmark_filter='^gpt2_step(_bf16)?/gpt2/' --benchmark_format=json \
      > "$tmp/ours$round.json" 2>> "$tmp/check.txt"
  precisions=(float32)
  ((round <= torch_bf16_rounds)) && precisions+=(bf16)
  for precision in "${precisions[@]}"; do
    for threads in 1 2; do
      "${torch_env[@]}" "$python" "$here/pytorch_reference.py" --weights "$tmp/weights" --configs gpt2 \
          --threads "$threads" --precision "$precision" >> "$tmp/torch.jsonl" 2>> "$tmp/check.txt"
    done
  done
  for precision in float32 bf16; do
    "$build/bench/bench_generate" "$tokens" 0 gpt2-small 1,2 16 "$precision" >> "$tmp/decode.jsonl"
  done
done
peaks 2
sort -u "$tmp/check.txt" | grep -E 'check' >&2 || true

echo "peak resident memory: one process per precision, B 4, T 64, one thread ..." >&2
for name in gpt2_step gpt2_step_bf16; do
  /usr/bin/time -v "$build/bench/bench_train_step" --benchmark_filter="^$name/gpt2/.*threads:1/" \
      --benchmark_format=json > /dev/null 2> "$tmp/$name.time"
done

"$python" - "$tmp" "$rounds" <<'PY'
import json, re, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
machine = dict(line.rstrip("\n").split("=", 1) for line in open(f"{tmp}/machine.txt"))
def peaks(path):
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b["name"].endswith("_median"):
            kind = "fma" if b["name"].startswith("peak/fma") else "bandwidth"
            out[(kind, int(re.search(r"threads:(\d+)", b["name"])[1]))] = b["GFLOP"] if kind == "fma" else b["GB_per_s"]
    return out
before, after = peaks(f"{tmp}/peaks1.json"), peaks(f"{tmp}/peaks2.json")
peak = {k: max(before[k], after[k]) for k in before}
ours, kernel = {}, None
for r in range(1, rounds + 1):
    for b in json.load(open(f"{tmp}/ours{r}.json"))["benchmarks"]:
        m = re.match(r"gpt2_step(_bf16)?/gpt2/(?:kernel:(\w+)/)?threads:(\d+)", b["name"])
        kernel = kernel or m[2]
        ours.setdefault(("bf16" if m[1] else "float32", int(m[3])), []).append(b["median_ms"])
        step_gflop = b["step_gflop"]
torch = {}
for r in map(json.loads, open(f"{tmp}/torch.jsonl")):
    torch.setdefault((r["precision"], r["threads"]), []).append(r["median_ms"])
med = lambda xs: statistics.median(xs)
print(f"\nGPT-2 small (124M, random weights), B 4, T 64: forward, backward, clip, AdamW; {step_gflop:.1f} GFLOP a step. "
      f"Medians over {rounds} interleaved rounds of each side's median of 5 steps (PyTorch autocast: "
      f"{len(torch.get(('bf16', 1), []))} round(s)).")
print(f"{machine['cpu']}, {machine['cores']} cores, flags: {machine['flags'].strip()}; bf16 kernel: {kernel}; "
      f"torch {machine['torch']} ({machine['openblas_package']})")
print(f"peak/fma {peak[('fma', 1)]:.0f} / {peak[('fma', 2)]:.0f} GFLOP/s, peak/bandwidth {peak[('bandwidth', 1)]:.1f} / "
      f"{peak[('bandwidth', 2)]:.1f} GB/s on 1 / 2 threads (the better of before "
      f"{before[('fma', 1)]:.0f}/{before[('fma', 2)]:.0f}, {before[('bandwidth', 1)]:.1f}/{before[('bandwidth', 2)]:.1f} and after "
      f"{after[('fma', 1)]:.0f}/{after[('fma', 2)]:.0f}, {after[('bandwidth', 1)]:.1f}/{after[('bandwidth', 2)]:.1f})\n")
print("| threads | ours float32 s | ours bf16 s | bf16 / float32 speed (target >= 1.6x) | bf16 of the float32 FMA peak | "
      "PyTorch float32 s | PyTorch autocast bf16 s | ours bf16 / PyTorch float32 (target >= 4x) | ours float32 / PyTorch float32 |")
print("|---|---|---|---|---|---|---|---|---|")
for t in (1, 2):
    o32, o16 = med(ours[("float32", t)]), med(ours[("bf16", t)])
    p32 = med(torch[("float32", t)])
    p16 = torch.get(("bf16", t))
    print(f"| {t} | {o32 / 1e3:.2f} | {o16 / 1e3:.2f} | **{o32 / o16:.2f}x** | {step_gflop / o16 * 1e3 / peak[('fma', t)]:.0%} | "
          f"{p32 / 1e3:.2f} | {f'{med(p16) / 1e3:.2f}' if p16 else '-'} | **{p32 / o16:.2f}x** | {p32 / o32:.2f}x |")
print("\nper round, ours float32 / bf16 s: " + "; ".join(
    f"{t} thread(s): " + ", ".join(f"{a / 1e3:.2f}/{b / 1e3:.2f}" for a, b in zip(ours[("float32", t)], ours[("bf16", t)]))
    for t in (1, 2)))

rows = [json.loads(line) for line in open(f"{tmp}/decode.jsonl")]
print(f"\nGPT-2 small, cached decoding from a 16-token prompt (decoding alone, medians of {rounds} rounds): "
      "the ceiling is peak/bandwidth over the bytes a token reads (float32 498 MB; bf16 half)\n")
print("| products | threads | ms/token | tokens/s | ceiling tokens/s | of the ceiling (bf16 target >= 70%) | bf16 / float32 speed |")
print("|---|---|---|---|---|---|---|")
ms = {}
for precision in ("float32", "bf16"):
    for t in (1, 2):
        mine = [r for r in rows if r["threads"] == t and r.get("precision", "float32") == precision]
        ms[(precision, t)] = med(r["decode_ms_per_token"] for r in mine)
        weight_bytes = mine[0]["weight_bytes"] / (2 if precision == "bf16" else 1)
        ceiling = peak[("bandwidth", t)] * 1e9 / weight_bytes
        speed = f"{ms[('float32', t)] / ms[(precision, t)]:.2f}x" if precision == "bf16" else ""
        print(f"| {precision} | {t} | {ms[(precision, t)]:.1f} | {1e3 / ms[(precision, t)]:.1f} | {ceiling:.1f} "
              f"({weight_bytes / 1e6:.0f} MB) | {1e3 / ms[(precision, t)] / ceiling:.0%} | {speed} |")
def rss(path):
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(path).read())[1]) / 1024
r32, r16 = rss(f"{tmp}/gpt2_step.time"), rss(f"{tmp}/gpt2_step_bf16.time")
print(f"\npeak resident memory of the training step's process (B 4, T 64, one thread): float32 {r32:,.0f} MiB, "
      f"bf16 {r16:,.0f} MiB ({r16 - r32:+,.0f} MiB; the weights' bfloat16 copies are 247 MB)")
PY

if [[ ${CURVES:-0} != 0 ]]; then
  data=${DATA:-$root/../shared/data/tinyshakespeare.txt}
  steps=${CURVE_STEPS:-300}
  echo "loss curves: $steps steps of a 6-layer, C 384, T 128, B 8 gpt2-kind model in each precision ..." >&2
  for precision in float32 bf16; do
    "$build/bench/bf16_curves" "$data" "$precision" "$steps" 25 8 > "$tmp/curve_$precision.csv" &
  done
  wait
  "$python" "$here/bf16_curves.py" "$tmp/curve_float32.csv" "$tmp/curve_bf16.csv" --out "${SVG:-bf16_loss.svg}" \
      --title "GPT-2-shaped, 6 layers, C 384, T 128, B 8, tiny Shakespeare: float32 vs bf16 products"
fi
