// One full training step (forward, cross_entropy, backward, clip 1.0, AdamW) of the four models of the
// speed issues, on 1 and 2 threads: the tutorial model, the 4-layer n_embd-64 GPT, nanoGPT's baby GPT and
// nanoGPT's shakespeare_char model (bench/train_step.h holds the configurations). bench/compare.sh runs this beside
// bench/pytorch_reference.py and prints the ratios.
//
// Each benchmark is train_step/<config>/threads:<n>. Counters:
//   items_per_second  tokens/s (B * T tokens a step)
//   GFLOP             achieved GFLOP/s, shown as "GFLOP=12.3/s": 6 * Linear weights * tokens plus
//                     12 * layers * head width * T * tokens for attention (train_step.h, step_flops)
//   median_ms         the median of the individual step times of the final run (what compare.sh reads;
//                     PyTorch's side reports its median the same way)
//   step_gflop, step_tokens  the work of one step (compare.sh divides them by median_ms)
//   loss              the loss of the first step of that run (the same fixed batch and seed every time)
//
// The model restarts from the seed's weights every kStepsPerRun steps (untimed; train_step.h says why).
//
// Before timing, main() runs a few steps of each configuration and exits non-zero unless the loss is
// finite and falls on the fixed batch: a broken step is not worth timing. --check_only stops there.
//
// scaling/baby/B:../T:../C:.. times the baby GPT's step with batch, window or width changed (one thread),
// scaling/nano/T:.. nanoGPT's shakespeare_char model with the window from 64 to 1,024 (bench/compare.sh's
// window table, beside PyTorch's step time and both sides' peak memory).
// head/<composed|fused|flash>/H:../T:../B:.. times one attention head's forward and backward (BM_head).
// gpt2_step/gpt2 and gpt2_step/gpt2-T1024: GPT-2 small (124M, V 50,257) at B 4, T 64 (llm.c's CPU demo)
// and at B 1, T 1024, five steps each (not in check_steps: a step takes seconds).
// gpt2_step_bf16/gpt2/kernel:<k> and gpt2_step_bf16/gpt2-T1024/kernel:<k>: the same GPT-2 steps with bf16
// products (issue 44; train_step.h: a Bf16WeightScope around forward and backward), <k> the bf16 kernel
// that ran (autograd::bf16_kernel_in_use(): avx512_bf16, avx512, avx2 or portable). bench/bf16.sh runs them
// beside the float32 ones and PyTorch's autocast.
// llama_step/smollm: a SmolLM-135M-shaped Llama (30 layers, C 576, 9 heads, 3 KV heads, F 1,536,
// V 49,152, tied) at B 4, T 64, five steps each on 1 and 2 threads (issue 42; pytorch_reference.py
// --configs smollm is PyTorch's side, bench/llama_step.sh runs both).
//
//     build/bench/bench_train_step --benchmark_filter=train_step     # the eight, about 30 s
//     build/bench/bench_train_step --benchmark_filter=scaling/baby   # the scaling table, about 30 s
//     build/bench/bench_train_step --benchmark_filter=scaling/nano   # the window table, about 1 minute
//     build/bench/bench_train_step --benchmark_filter=head           # the head, about 30 s
//     build/bench/bench_train_step --benchmark_filter=gpt2_step      # GPT-2 small, T 64 and 1024, 1-2 min
//     build/bench/bench_train_step --benchmark_filter=gpt2_step_bf16/gpt2/   # GPT-2 small in bf16, B 4, T 64
//     build/bench/bench_train_step --benchmark_filter=llama_step     # SmolLM-135M-shaped, about 30 s
//     build/bench/bench_train_step --benchmark_filter=baby --benchmark_format=json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <autograd/precision.h>
#include <autograd/threads.h>
#include <nn/attention.h>

#include "train_step.h"

namespace {

void BM_train_step(benchmark::State& state, const bench::StepConfig* config, autograd::Precision precision) {
    const int threads = static_cast<int>(state.range(0));
    autograd::set_num_threads(threads);
    bench::TrainStep step(*config, bench::kSeed, precision);
    for (int i = 0; i < 2; ++i) step.step();  // warm up: allocator, optimizer state, caches
    step.restart();                           // the timed run starts from the seed's weights

    std::vector<double> seconds;
    double first_loss = 0;
    for (auto _ : state) {
        if (!seconds.empty() && seconds.size() % bench::kStepsPerRun == 0) {  // back to the seed's weights
            state.PauseTiming();
            step.restart();
            state.ResumeTiming();
        }
        const auto start = std::chrono::steady_clock::now();
        const double loss = step.step();
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        if (seconds.size() == 1) first_loss = loss;
    }
    autograd::set_num_threads(1);

    std::nth_element(seconds.begin(), seconds.begin() + static_cast<std::ptrdiff_t>(seconds.size() / 2), seconds.end());
    const double tokens = static_cast<double>(config->batch * config->model.block);
    state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(tokens));
    state.counters["GFLOP"] = benchmark::Counter(bench::step_flops(*config, *step.model) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
    state.counters["median_ms"] = seconds[seconds.size() / 2] * 1e3;
    state.counters["step_gflop"] = bench::step_flops(*config, *step.model) * 1e-9;
    state.counters["step_tokens"] = tokens;
    state.counters["loss"] = first_loss;
}

// One attention head (nn::Head: x -> q, k, v; weights = softmax(mask(q k^T / sqrt(H))); weights @ v),
// forward and backward under a random upstream gradient, one thread. Composed: the tutorial's op-by-op
// graph (record_scores, what the lab and the study run); fused: causal_attention_weights, then
// weights @ v; flash: the whole head after q, k, v as causal_attention, which keeps no (B, T, T)
// weights (what the models run from HeadOptions::kFlashFrom positions on). x is (B, T, C) with C = 128,
// B = 12 (the baby GPT's batch) unless given. Counter kept_KB: what the attention keeps for backward
// beyond q, k, v and the head's output: the (B, T, T) weights (composed: also the scores), or flash's
// log-sum-exp per row (B, T).
enum class HeadPath { composed, fused, flash };
void BM_head(benchmark::State& state, HeadPath path) {
    const int64_t H = state.range(0), T = state.range(1), B = state.range(2) > 0 ? state.range(2) : 12, C = 128;
    autograd::Generator gen(7);
    nn::Head head({.n_embd = C,
                   .head_size = H,
                   .record_scores = path == HeadPath::composed,
                   .flash_from = path == HeadPath::flash ? 1 : std::numeric_limits<int64_t>::max()},
                  gen);
    autograd::Tensor x = autograd::randn({B, T, C}, gen).requires_grad_();  // (B, T, C)
    const autograd::Tensor dy = autograd::randn({B, T, H}, gen);            // upstream gradient (B, T, H)
    for (auto _ : state) {
        head.zero_grad();
        x.zero_grad();
        head.forward(x).backward(dy);
        benchmark::DoNotOptimize(x.grad().data().data());
    }
    // forward: three (B*T, C) @ (C, H) products, q k^T and weights @ v (B T^2 H each); backward twice that
    const double flops = 3.0 * (3.0 * 2.0 * double(B * T * C * H) + 2.0 * 2.0 * double(B * T * T * H));
    state.counters["GFLOP"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    const double weights_bytes = 4.0 * double(B * T * T);
    state.counters["kept_KB"] = (path == HeadPath::flash      ? 4.0 * double(B * T)
                                 : path == HeadPath::composed ? 2.0 * weights_bytes
                                                              : weights_bytes) /
                                1024.0;
    state.SetItemsProcessed(state.iterations() * B * T);  // tokens
}

// A few steps of each configuration on one thread: the loss must be finite and fall on the fixed batch.
bool check_steps() {
    bool ok = true;
    for (const auto& config : bench::step_configs()) {
        bench::TrainStep step(config);
        const double first = step.step();
        double last = first;
        for (int i = 0; i < 4; ++i) last = step.step();
        const bool good = std::isfinite(first) && std::isfinite(last) && last < first;
        fmt::print(stderr, "{} step check {}: loss {:.4f} -> {:.4f} after 5 steps\n", good ? "ok" : "FAILED",
                   config.name, first, last);
        ok = ok && good;
        // the same steps with bf16 products: falling too, and within llm.c's bf16 tolerance of float32's
        // loss on the first step (the weights are the same then; only the products' rounding differs)
        bench::TrainStep bf16(config, bench::kSeed, autograd::Precision::bf16);
        const double bf16_first = bf16.step();
        double bf16_last = bf16_first;
        for (int i = 0; i < 4; ++i) bf16_last = bf16.step();
        const bool bf16_good =
            std::isfinite(bf16_last) && bf16_last < bf16_first && std::abs(bf16_first - first) <= 0.05;
        fmt::print(stderr,
                   "{} bf16 step check {} ({}): loss {:.4f} -> {:.4f} after 5 steps, first |bf16 - float32| {:.2g}\n",
                   bf16_good ? "ok" : "FAILED", config.name, autograd::bf16_kernel_in_use(), bf16_first, bf16_last,
                   std::abs(bf16_first - first));
        ok = ok && bf16_good;
    }
    return ok;
}

}  // namespace

int main(int argc, char** argv) {
    bool check_only = false;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--check_only") == 0) {
            check_only = true;
            for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
            --argc;
            break;
        }
    if (!check_steps()) return 1;
    if (check_only) return 0;

    for (const auto& config : bench::step_configs())
        benchmark::RegisterBenchmark(fmt::format("train_step/{}", config.name).c_str(), BM_train_step, &config,
                                     autograd::Precision::float32)
            ->ArgName("threads")
            ->Arg(1)
            ->Arg(2)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    // GPT-2 small: five timed steps (a step takes seconds), one and two threads
    // ... and the Llama family's SmolLM-shaped step
    const auto register_step = [](const std::string& name, const bench::StepConfig& config,
                                  autograd::Precision precision) {
        benchmark::RegisterBenchmark(name.c_str(), BM_train_step, &config, precision)
            ->ArgName("threads")
            ->Arg(1)
            ->Arg(2)
            ->Iterations(5)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    };
    using Configs = std::span<const bench::StepConfig>;
    for (const auto& [prefix, configs] : {std::pair{"gpt2_step", Configs(bench::gpt2_configs())},
                                          std::pair{"llama_step", Configs(bench::llama_configs())}})
        for (const auto& config : configs)
            register_step(fmt::format("{}/{}", prefix, config.name), config, autograd::Precision::float32);
    // GPT-2 small with bf16 products, its kernel in the name (what a reader of the JSON needs to know)
    for (const auto& config : bench::gpt2_configs())
        register_step(fmt::format("gpt2_step_bf16/{}/kernel:{}", config.name, autograd::bf16_kernel_in_use()), config,
                      autograd::Precision::bf16);
    // How the baby GPT's step time scales, one thread: batch B, window T (= block) and width C = n_embd
    // (4 heads, so the head width grows with C), each varied alone around B 12, T 64, C 128.
    static std::deque<std::string> names;
    static std::deque<bench::StepConfig> scaled;
    const auto add_scaled = [&](const bench::StepConfig& base, int64_t B, int64_t T, int64_t C) {
        bench::StepConfig c = base;
        c.batch = B;
        c.model.block = T;
        c.model.n_embd = C;
        names.push_back(base.name == "nano" ? fmt::format("scaling/nano/T:{}", T)
                                            : fmt::format("scaling/{}/B:{}/T:{}/C:{}", base.name, B, T, C));
        c.name = names.back();
        scaled.push_back(c);
        benchmark::RegisterBenchmark(names.back().c_str(), BM_train_step, &scaled.back(), autograd::Precision::float32)
            ->ArgName("threads")
            ->Arg(1)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    };
    const bench::StepConfig& baby = bench::step_configs()[2];
    for (int64_t B : {6, 12, 24, 48}) add_scaled(baby, B, 64, 128);
    for (int64_t T : {32, 128, 256}) add_scaled(baby, 12, T, 128);
    for (int64_t C : {64, 256, 512}) add_scaled(baby, 12, 64, C);
    // nanoGPT's shakespeare_char model (B 4, C 384) with its window T from 64 to 1,024: attention's share
    // of the work grows with T (its T x T grids), the rest stays per token.
    const bench::StepConfig& nano = bench::step_configs()[3];
    for (int64_t T : {64, 128, 256, 512, 1024}) add_scaled(nano, 4, T, 384);
    // The attention head alone: width H at window 64, then window T at width 32 (B 12); then the baby
    // GPT's head (H 32, B 12) and nanoGPT's shakespeare_char head (H 64, B 4) at T 64, 256 and 1024.
    for (const auto& [name, path] : {std::pair{"head/composed", HeadPath::composed},
                                     {"head/fused", HeadPath::fused},
                                     {"head/flash", HeadPath::flash}}) {
        auto* b = benchmark::RegisterBenchmark(name, BM_head, path);
        b->ArgNames({"H", "T", "B"})->Unit(benchmark::kMicrosecond);
        for (int64_t H : {16, 32, 64, 128}) b->Args({H, 64, 12});
        for (int64_t T : {8, 32, 128, 256}) b->Args({32, T, 12});
        for (int64_t T : {64, 256, 1024}) b->Args({64, T, 4});
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
