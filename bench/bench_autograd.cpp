// Benchmarks for the autograd library: the raw gemm kernels, softmax, the matmul op with its backward,
// and the per-op bookkeeping cost of the graph.
//
// Before anything is timed, main() checks kernels::gemm against kernels::gemm_naive on a few shapes in
// all four transpose layouts and exits non-zero if they disagree: a fast wrong kernel is not worth timing.
//
// Shape legend (as in ops.h): B batch, T time, C channels, H output width; R = B*T rows.
// A gemm name reads gemm/<kernel>/<layout>/<M>x<N>x<K> for C (M, N) = op(A) (M, K) @ op(B) (K, N), with
// <kernel> naive, each implementation this CPU runs (portable, avx2, avx512), and openblas if built with it;
// layout NN is the forward x @ w, NT is the backward dx = dy @ w^T, TN is the backward dw = x^T @ dy.
// At every shape of a training step (step_gemms) also the other libraries built in (bench/CMakeLists.txt):
// openblas, blis, libxsmm, onednn, each on one thread and checked against gemm_naive before any timing
// like ours; bench/gemm_peers.sh tabulates them.
//
// Counters: GFLOP is a rate, so the console shows "GFLOP=3.2/s" for 3.2 GFLOP/s. The chain benchmarks
// show the time per op as "per_op=280ns" (in JSON: seconds) and items_per_second as ops/s; softmax's
// items are score elements.
//
// peak/fma/threads:N is the machine's FP32 FMA peak on N threads (chains of vector FMAs, nothing else):
// what the gemm GFLOP/s and the training steps' are a share of. peak/bandwidth/threads:N is the rate at
// which N threads read memory: what sampling from a large model is a share of.
//
//     build-bench/bench/bench_autograd                          # everything (535 benchmarks with all four
//                                                                 # libraries), about 5 minutes
//     build-bench/bench/bench_autograd --benchmark_filter=gemm  # one group
//
// The parts, one file each: autograd_peaks.cpp, autograd_gemm.cpp, autograd_ops.cpp (autograd_parts.h).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>

#include <fmt/core.h>

#include <autograd/kernels.h>

#include "autograd_parts.h"

using namespace autograd;
using namespace bench_autograd;

int main(int argc, char** argv) {
    double worst_ratio = 0.0;
    for (kernels::Isa isa : kernels::available_isas()) {
        double isa_worst = 0.0;
        if (const int failures = check_gemm(isa, isa_worst); failures != 0) {
            fmt::print(stderr,
                       "bench_autograd: the {} gemm disagrees with kernels::gemm_naive in {} case(s); "
                       "not timing a wrong kernel.\n",
                       kernels::isa_name(isa), failures);
            return 1;
        }
        fmt::print(stderr,
                   "gemm check ({}): matches naive on all shapes, layouts and accumulate modes "
                   "(worst difference {:.3f}x the tolerance)\n",
                   kernels::isa_name(isa), isa_worst);
        worst_ratio = std::max(worst_ratio, isa_worst);
    }
    const std::string about_peers = setup_peers();
    if (const int failures = check_peers(); failures != 0) {
        fmt::print(stderr,
                   "bench_autograd: {} case(s) of the other libraries' gemm disagree with kernels::gemm_naive "
                   "(a wrong transpose?); not timing them.\n",
                   failures);
        return 1;
    }

    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::AddCustomContext("gemm_check", fmt::format("passed, worst {:.3f}x tolerance", worst_ratio));
    benchmark::AddCustomContext("gemm_peers", about_peers);
    register_peak_benchmarks();
    register_step_benchmarks();  // first: a step shape's gemm benchmarks carry its calls per step
    register_kernel_benchmarks();
    register_op_benchmarks();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
