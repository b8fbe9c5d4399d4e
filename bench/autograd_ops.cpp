// bench_autograd's ops: softmax over attention scores, the matmul op with its backward, and the graph's
// bookkeeping per op (chains of one-element ops).
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

#include <autograd/autograd.h>

#include "autograd_parts.h"

namespace bench_autograd {

using namespace autograd;

// --- 2. softmax over attention scores (B, T, T) --------------------------------------------------------

void BM_softmax_forward(benchmark::State& state) {
    const int64_t B = state.range(0), T = state.range(1);
    Generator gen(3);
    const Tensor x = randn({B, T, T}, gen);  // scores (B, T, T), no gradient: the forward alone
    for (auto _ : state) {
        Tensor y = softmax(x, -1);
        benchmark::DoNotOptimize(y.data().data());
    }
    state.SetItemsProcessed(state.iterations() * B * T * T);  // elements
}

void BM_softmax_forward_backward(benchmark::State& state) {
    const int64_t B = state.range(0), T = state.range(1);
    Generator gen(3);
    Tensor x = randn({B, T, T}, gen).requires_grad_();  // scores (B, T, T)
    const Tensor dy = randn({B, T, T}, gen);            // upstream gradient (B, T, T)
    for (auto _ : state) {
        Tensor y = softmax(x, -1);
        y.backward(dy);
        benchmark::DoNotOptimize(x.grad().data().data());
    }
    state.SetItemsProcessed(state.iterations() * B * T * T);
}

// --- 3. the matmul op with its backward ----------------------------------------------------------------

// x (B, T, C) @ w (C, H) -> (B, T, H): the linear layer, forward alone or with its backward.
void BM_matmul_op(benchmark::State& state, bool backward) {
    const int64_t B = state.range(0), T = state.range(1), C = state.range(2), H = state.range(3);
    Generator gen(5);
    Tensor x = randn({B, T, C}, gen).requires_grad_();
    Tensor w = randn({C, H}, gen, 0.0f, 0.1f).requires_grad_();
    const Tensor dy = randn({B, T, H}, gen);
    for (auto _ : state) {
        Tensor y = matmul(x, w);
        if (backward) y.backward(dy);
        benchmark::DoNotOptimize(y.data().data());
    }
    set_gflops(state, (backward ? 3.0 : 1.0) * 2.0 * double(B * T) * double(C) * double(H));
}

// a (B, M, K) @ b (B, K, N) -> (B, M, N) with its backward: the batched path (small products per batch),
// as attention's q @ k^T (M = N = T, K = head width) and weights @ v (M = K = T, N = head width).
void BM_matmul_op_batched(benchmark::State& state) {
    const int64_t B = state.range(0), M = state.range(1), K = state.range(2), N = state.range(3);
    Generator gen(6);
    Tensor a = randn({B, M, K}, gen).requires_grad_();
    Tensor b = randn({B, K, N}, gen).requires_grad_();
    const Tensor dy = randn({B, M, N}, gen);
    for (auto _ : state) {
        Tensor c = matmul(a, b);
        c.backward(dy);
        benchmark::DoNotOptimize(c.data().data());
    }
    set_gflops(state, 3.0 * 2.0 * double(B) * double(M) * double(N) * double(K));
}

// --- 4. bookkeeping: a long chain of one-element ops --------------------------------------------------

// The time per op here is nearly all graph cost: a result tensor, a Node with its closure inline, the
// topological sort and the release. Each iteration builds the chain, backpropagates and frees it.
void set_per_op(benchmark::State& state, int64_t ops) {
    state.SetItemsProcessed(state.iterations() * ops);  // items_per_second = ops/s
    // rate inverted = seconds per op; the console prints it with an SI prefix, e.g. "41.2ns"
    state.counters["per_op"] = benchmark::Counter(
        static_cast<double>(ops), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// A chain of state.range(0) one-element ops from x0, x = step(x); with kBackward it is backpropagated
// (`watched` is the leaf whose gradient is kept alive), otherwise only built and dropped.
template <bool kBackward, typename Step>
void chain(benchmark::State& state, const Tensor& x0, const Tensor& watched, Step step) {
    const int64_t ops = state.range(0);
    for (auto _ : state) {
        Tensor x = x0;
        for (int64_t i = 0; i < ops; ++i) x = step(x);
        if constexpr (kBackward) {
            x.backward();
            benchmark::DoNotOptimize(watched.grad().data().data());
        } else {
            benchmark::DoNotOptimize(x.data().data());
        }
    }
    set_per_op(state, ops);
}

const auto scale = [](const Tensor& x) { return x * 1.0001f; };  // a unary op

void BM_chain_scale(benchmark::State& state) {
    const Tensor x0 = scalar(1.0f).requires_grad_();
    chain<true>(state, x0, x0, scale);
}

void BM_chain_add(benchmark::State& state) {
    const Tensor x0 = scalar(1.0f).requires_grad_();
    const Tensor c = scalar(0.001f).requires_grad_();                    // reused by every op: its gradient accumulates
    chain<true>(state, x0, c, [&c](const Tensor& x) { return x + c; });  // add: a binary op through the broadcast path
}

// The forward alone, graph recorded and then dropped (no backward): the cost of building the graph.
void BM_chain_scale_forward(benchmark::State& state) {
    const Tensor x0 = scalar(1.0f).requires_grad_();
    chain<false>(state, x0, x0, scale);
}

// The forward under NoGradGuard: no graph, so what is left is the op's own work and allocation.
void BM_chain_scale_no_grad(benchmark::State& state) {
    const Tensor x0 = scalar(1.0f).requires_grad_();
    NoGradGuard no_grad;
    chain<false>(state, x0, x0, scale);
}

void register_op_benchmarks() {
    // softmax: (B, T, T) scores
    for (auto* b : {benchmark::RegisterBenchmark("softmax/fwd", BM_softmax_forward),
                    benchmark::RegisterBenchmark("softmax/fwd_bwd", BM_softmax_forward_backward)})
        b->ArgNames({"B", "T"})->Args({32, 8})->Args({16, 32})->Args({12, 64})->Unit(benchmark::kMicrosecond);

    // matmul op: (B, T, C) @ (C, H)
    for (bool backward : {false, true}) {
        benchmark::RegisterBenchmark(backward ? "matmul_op/fwd_bwd" : "matmul_op/fwd", BM_matmul_op, backward)
            ->ArgNames({"B", "T", "C", "H"})
            ->Args({8, 32, 32, 32})
            ->Args({8, 32, 32, 65})
            ->Args({12, 64, 128, 128})
            ->Args({12, 64, 128, 512})
            ->Unit(benchmark::kMicrosecond);
    }
    // attention per head, (B, M, K) @ (B, K, N): q @ k^T is (B, T, H) @ (B, H, T), weights @ v is
    // (B, T, T) @ (B, T, H); the tutorial (B 32, T 8, H 32), small (16, 32, 16) and baby (12, 64, 32) models
    auto* batched = benchmark::RegisterBenchmark("matmul_op/batched_fwd_bwd", BM_matmul_op_batched)
                        ->ArgNames({"B", "M", "K", "N"})
                        ->Unit(benchmark::kMicrosecond);
    for (auto [B, T, H] : {std::array<int64_t, 3>{32, 8, 32}, {16, 32, 16}, {12, 64, 32}})
        batched->Args({B, T, H, T})->Args({B, T, T, H});

    // bookkeeping: 1000 one-element ops
    benchmark::RegisterBenchmark("chain/scale_fwd_bwd", BM_chain_scale)
        ->Arg(1000)
        ->ArgName("ops")
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("chain/add_fwd_bwd", BM_chain_add)
        ->Arg(1000)
        ->ArgName("ops")
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("chain/scale_fwd", BM_chain_scale_forward)
        ->Arg(1000)
        ->ArgName("ops")
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("chain/scale_no_grad", BM_chain_scale_no_grad)
        ->Arg(1000)
        ->ArgName("ops")
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace bench_autograd
