// bench_autograd's peaks: the machine's FP32 FMA peak, what the gemm GFLOP/s and the training steps' are a
// share of, and its memory bandwidth, what sampling from a large model is a share of.
#include <cstdint>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include <autograd/kernels.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "autograd_parts.h"

namespace bench_autograd {

using namespace autograd;

// --- the machine's FP32 FMA peak: what "% of peak" is measured against ----------------------------------

#if defined(__x86_64__)
// 12 independent chains of vector FMAs (more than latency x throughput on current cores), nothing else;
// flops per call: iterations * 12 chains * lanes * 2. Returns a sum so the work is not optimized away.
__attribute__((target("avx512f"))) float fma_chains_avx512(int64_t iterations) {
    __m512 acc[12];
    const __m512 mul = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-6f);
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(float(i));
    for (int64_t it = 0; it < iterations; ++it)
#pragma GCC unroll 12
        for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], mul, add);
    for (int i = 1; i < 12; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    alignas(64) float lanes[16];  // (not _mm512_reduce_add_ps: gcc 12 warns inside it)
    _mm512_store_ps(lanes, acc[0]);
    return lanes[0] + lanes[15];
}
__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iterations) {
    __m256 acc[12];
    const __m256 mul = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-6f);
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(float(i));
    for (int64_t it = 0; it < iterations; ++it)
#pragma GCC unroll 12
        for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], mul, add);
    for (int i = 1; i < 12; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[0]);
    return lanes[0] + lanes[7];
}
#endif

// work(t) for t in [0, threads): t 0 on this thread (so that its CPU time is the work's too: bench/gemm_peers.sh
// reads it on one thread), the others each on a thread of its own, all joined before returning.
template <class Work>
void run_team(int threads, const Work& work) {
    std::vector<std::thread> team;
    for (int t = 1; t < threads; ++t) team.emplace_back(work, t);
    work(0);
    for (std::thread& member : team) member.join();
}

// peak/fma/<isa>/threads:N: every thread runs FMA chains with the widest vectors gemm uses; GFLOP/s of
// all threads together. The gemm tables quote their share of this.
void BM_fma_peak(benchmark::State& state) {
#if defined(__x86_64__)
    const int threads = static_cast<int>(state.range(0));
    const bool wide =
        kernels::available_isas().back() == kernels::Isa::avx512;  // the machine's, whatever TINYGPT_ISA says
    constexpr int64_t kIterations = 1 << 22;
    std::vector<float> sink(static_cast<size_t>(threads));
    auto chains = [&sink, wide](int t) {
        sink[t] = wide ? fma_chains_avx512(kIterations) : fma_chains_avx2(kIterations);
    };
    for (auto _ : state) {
        run_team(threads, chains);
        benchmark::DoNotOptimize(sink.data());
    }
    set_gflops(state, double(threads) * double(kIterations) * 12.0 * (wide ? 16.0 : 8.0) * 2.0);
#else
    state.SkipWithError("the FMA peak is measured on x86-64 only");
#endif
}

// --- the machine's memory bandwidth: what sampling with the cache is a share of -------------------------

#if defined(__x86_64__)
// Sums floats [begin, end) with eight independent AVX accumulators: loads, nothing else that could limit.
__attribute__((target("avx2"))) float sum_stream_avx2(const float* x, int64_t begin, int64_t end) {
    __m256 acc[8];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int64_t i = begin; i + 64 <= end; i += 64)
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) acc[j] = _mm256_add_ps(acc[j], _mm256_load_ps(x + i + 8 * j));
    for (int j = 1; j < 8; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[0]);
    return lanes[0] + lanes[7];
}
#endif

// peak/bandwidth/threads:N: N threads read 1 GiB (each its share, once per iteration), far past every
// cache, as sampling reads every weight once per token; counter GB_per_s (1e9 bytes a second). A
// sampler's ceiling is this divided by the bytes of its weights (bench/generate.sh).
void BM_bandwidth(benchmark::State& state) {
#if defined(__x86_64__)
    const int threads = static_cast<int>(state.range(0));
    constexpr int64_t kFloats = int64_t(1) << 28;  // 1 GiB
    std::unique_ptr<float[], void (*)(float*)> data(
        static_cast<float*>(std::aligned_alloc(64, kFloats * sizeof(float))), [](float* p) { std::free(p); });
    std::fill_n(data.get(), kFloats, 1.0f);  // touched, so no read meets an unmapped page
    std::vector<float> sink(static_cast<size_t>(threads));
    const auto read = [&](int t) {
        sink[t] = sum_stream_avx2(data.get(), kFloats * t / threads, kFloats * (t + 1) / threads);
    };
    for (auto _ : state) {
        run_team(threads, read);
        benchmark::DoNotOptimize(sink.data());
    }
    state.counters["GB_per_s"] =
        benchmark::Counter(double(kFloats) * sizeof(float) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
#else
    state.SkipWithError("the bandwidth is measured on x86-64 only");
#endif
}

void register_peak_benchmarks() {
    if (kernels::available_isas().back() != kernels::Isa::portable)
        benchmark::RegisterBenchmark("peak/fma", BM_fma_peak)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
    if (kernels::available_isas().back() != kernels::Isa::portable)
        benchmark::RegisterBenchmark("peak/bandwidth", BM_bandwidth)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
}

}  // namespace bench_autograd
