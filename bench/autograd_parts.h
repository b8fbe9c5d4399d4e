// What the parts of bench_autograd share: random values, the GFLOP/s counter, and each part's entry points.
// The parts: autograd_peaks.cpp (the machine's FMA peak and memory bandwidth), autograd_gemm.cpp (the gemm
// kernels, ours and other libraries', checked and then timed), autograd_ops.cpp (softmax, the matmul op, the
// graph's per-op bookkeeping); bench_autograd.cpp runs the checks and then the benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <autograd/kernels.h>
#include <autograd/random.h>

namespace bench_autograd {

inline std::vector<float> uniform_values(int64_t n, autograd::Generator& gen) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = gen.uniform(-1.0f, 1.0f);
    return v;
}

// GFLOP per iteration, reported as a rate: the console prints GFLOP/s as "GFLOP=<value>/s".
inline void set_gflops(benchmark::State& state, double flops_per_iteration) {
    state.counters["GFLOP"] =
        benchmark::Counter(flops_per_iteration * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// autograd_peaks.cpp: peak/fma and peak/bandwidth, on x86-64 CPUs that run more than the portable kernels.
void register_peak_benchmarks();

// autograd_gemm.cpp. check_gemm compares the gemm of `isa` with gemm_naive on every case, layout and
// accumulate mode: the number of mismatching cases (each printed to stderr), the worst difference as a
// share of the tolerance in worst_ratio. setup_peers readies the other libraries built in and says which;
// check_peers compares them as check_gemm does.
int check_gemm(autograd::kernels::Isa isa, double& worst_ratio);
std::string setup_peers();
int check_peers();
void register_step_benchmarks();  // first: a step shape's gemm benchmarks carry its calls per step
void register_kernel_benchmarks();

// autograd_ops.cpp: softmax, the matmul op, chains of one-element ops.
void register_op_benchmarks();

}  // namespace bench_autograd
