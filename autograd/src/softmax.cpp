// softmax, log_softmax, cross_entropy, causal_softmax and causal_attention_weights: numerically stable (the row max is
// subtracted first). exp is fast_exp (fast_math.h), so the row loops vectorize; contiguous rows go through
// the active instruction set's softmax rows (vector_loops.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/kernels.h"
#include "autograd/op.h"
#include "autograd/ops.h"
#include "autograd/threads.h"
#include "axis.h"
#include "fast_math.h"
#include "vector_loops.h"

namespace autograd {

using detail::Axis;
using detail::axis_of;
using detail::fast_exp;
using detail::max_of;
using detail::RowStats;
using detail::sum_in_double;

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Visits each row along the axis as (index of element k) -> flat offset.
template <typename F>
void for_each_row(const Axis& ax, F&& f) {
    for (int64_t o = 0; o < ax.outer; ++o)
        for (int64_t i = 0; i < ax.inner; ++i) f([&ax, o, i](int64_t k) { return ax.at(o, k, i); });
}

// The largest value of a row, and the row's log-sum-exp after subtracting it; -inf for a fully
// masked row (every entry -inf).
template <typename At>
RowStats row_stats(const float* src, int64_t n, At at) {
    const float max = max_of(n, [&](int64_t k) { return src[at(k)]; });
    if (max == kNegInf) return RowStats{max, 0.0};
    return RowStats{max, sum_in_double(n, [&](int64_t k) { return fast_exp(src[at(k)] - max); })};
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, SourceLocation where) {
    dim = detail::dim_of(x.shape(), dim, "softmax");
    const Axis ax = axis_of(x.shape(), dim);
    const float* src = x.data().data();
    Buffer out(x.numel());
    const int64_t n = ax.n, rows = ax.outer;
    const auto softmax_row = detail::vector_loops().softmax_row;
    if (ax.inner == 1 && n > 0) {  // rows are contiguous (softmax over the last dim): the same arithmetic, vectorized
        parallel_for(rows, rows_per_thread(n), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) softmax_row(src + r * n, 1.0f, n, out.data() + r * n);
        });
    } else {
        for_each_row(ax, [&](auto at) {
            const RowStats row = row_stats(src, ax.n, at);
            if (row.max == kNegInf) {  // fully masked row: defined as all zeros
                for (int64_t k = 0; k < ax.n; ++k) out[at(k)] = 0.0f;
                return;
            }
            const auto inv = static_cast<float>(1.0 / row.sum_exp);
            for (int64_t k = 0; k < ax.n; ++k) out[at(k)] = fast_exp(src[at(k)] - row.max) * inv;
        });
    }
    return make_result(
        "softmax", x.shape(), std::move(out), {x},
        [ax, n, rows](const GradContext& g) {
            // dx = y * (dy - sum(dy * y)); a fully masked row has y = 0 and so passes nothing
            if (ax.inner == 1 && n > 0) {
                const auto gx = g.grad_target(0);
                const auto backward_row = detail::vector_loops().softmax_backward_row;
                parallel_for(rows, rows_per_thread(n), [&](int64_t begin, int64_t end) {
                    for (int64_t r = begin; r < end; ++r)
                        backward_row(g.out.data() + r * n, g.dout.data() + r * n, 1.0f, n, gx.values.data() + r * n,
                                     gx.fresh);
                });
                return;
            }
            auto gx = g.grad(0);
            for_each_row(ax, [&](auto at) {
                const auto dot = static_cast<float>(
                    sum_in_double(ax.n, [&](int64_t k) { return double(g.dout[at(k)]) * g.out[at(k)]; }));
                for (int64_t k = 0; k < ax.n; ++k) gx[at(k)] += g.out[at(k)] * (g.dout[at(k)] - dot);
            });
        },
        where);
}

Tensor log_softmax(const Tensor& x, int64_t dim, SourceLocation where) {
    dim = detail::dim_of(x.shape(), dim, "log_softmax");
    const Axis ax = axis_of(x.shape(), dim);
    const float* src = x.data().data();
    Buffer out(x.numel());
    for_each_row(ax, [&](auto at) {
        const RowStats row = row_stats(src, ax.n, at);
        // a fully masked row is the log of zero shares: -inf everywhere. Subtract the max first: it is
        // exact near the max, where adding log(sum) to a large max would round.
        const auto log_sum = static_cast<float>(std::log(row.sum_exp));
        for (int64_t k = 0; k < ax.n; ++k) out[at(k)] = row.max == kNegInf ? kNegInf : (src[at(k)] - row.max) - log_sum;
    });
    return make_result(
        "log_softmax", x.shape(), std::move(out), {x},
        [ax](const GradContext& g) {
            // dx = dy - softmax * sum(dy); softmax = exp(out), which is 0 on a fully masked row
            auto gx = g.grad(0);
            for_each_row(ax, [&](auto at) {
                bool all_masked = true;
                for (int64_t k = 0; k < ax.n; ++k) all_masked = all_masked && g.out[at(k)] == kNegInf;
                if (all_masked) return;
                const double total = sum_in_double(ax.n, [&](int64_t k) { return g.dout[at(k)]; });
                for (int64_t k = 0; k < ax.n; ++k)
                    gx[at(k)] += g.dout[at(k)] - fast_exp(g.out[at(k)]) * static_cast<float>(total);
            });
        },
        where);
}

Tensor cross_entropy(const Tensor& logits, std::span<const int64_t> targets, SourceLocation where) {
    check(logits.dim() >= 1, "cross_entropy: logits need a class dim, got shape {}", shape_str(logits.shape()));
    const int64_t V = logits.shape().back();
    const int64_t N = V > 0 ? logits.numel() / V : 0;
    check(N > 0, "cross_entropy: logits of shape {} hold no rows", shape_str(logits.shape()));
    check(static_cast<int64_t>(targets.size()) == N, "cross_entropy: {} targets for logits of shape {} ({} rows)",
          targets.size(), shape_str(logits.shape()), N);
    for (size_t r = 0; r < targets.size(); ++r)
        check(targets[r] >= 0 && targets[r] < V, "cross_entropy: target {} at row {} is outside [0, {}) for logits {}",
              targets[r], r, V, shape_str(logits.shape()));

    // loss = mean over rows of (logsumexp(row) - row[target]); keep each row's softmax for backward
    const float* src = logits.data().data();
    Buffer probs(logits.numel());
    std::vector<double> row_loss(static_cast<size_t>(N));  // summed in order below: same bits for any thread count
    const auto softmax_row = detail::vector_loops().softmax_row;
    parallel_for(N, rows_per_thread(V), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = src + r * V;
            const RowStats stats = softmax_row(row, 1.0f, V, probs.data() + r * V);
            row_loss[r] = std::log(stats.sum_exp) + stats.max - row[targets[r]];
        }
    });
    double loss = 0.0;
    for (const double l : row_loss) loss += l;
    std::vector<int64_t> target_copy(targets.begin(), targets.end());
    return make_result(
        "cross_entropy", {}, Buffer{static_cast<float>(loss / static_cast<double>(N))}, {logits},
        [probs = std::move(probs), targets = std::move(target_copy), N, V](const GradContext& g) {
            // d loss / d logits = (softmax - onehot(target)) / N
            const auto target = g.grad_target(0);
            float* const gx = target.values.data();
            const float s = g.dout[0] / static_cast<float>(N);
            parallel_for(N, rows_per_thread(V), [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                    detail::write_or_add(target.fresh, r * V, (r + 1) * V, gx, [&](int64_t k) { return s * probs[k]; });
                    gx[r * V + targets[r]] -= s;
                }
            });
        },
        where);
}

Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets, SourceLocation where) {
    return cross_entropy(logits, std::span<const int64_t>(targets), where);
}

Tensor causal_softmax(const Tensor& scores, float factor, SourceLocation where) {
    const Shape& s = scores.shape();
    check(s.size() >= 2 && s[s.size() - 1] == s[s.size() - 2], "causal_softmax: needs (..., T, T) scores, got shape {}",
          shape_str(s));
    const int64_t T = s.back(), rows = T > 0 ? scores.numel() / T : 0;  // rows of T, row r is position r % T
    const float* src = scores.data().data();
    Buffer out(scores.numel());  // (..., T, T)
    const auto softmax_row = detail::vector_loops().softmax_row;
    parallel_for(rows, rows_per_thread(T, kMinExpsPerThread), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const int64_t visible = r % T + 1;  // position i sees 0..i
            float* y = out.data() + r * T;
            softmax_row(src + r * T, factor, visible, y);
            std::fill(y + visible, y + T, 0.0f);  // what softmax makes of the -inf above the diagonal
        }
    });
    return make_result(
        "causal_softmax", s, std::move(out), {scores},
        [T, rows, factor](const GradContext& g) {
            // On the visible part dx = factor * y * (dy - sum(dy * y)) (softmax's backward, then scale's);
            // above the diagonal nothing, as masked_fill passes nothing there.
            auto gx = g.grad(0);
            const auto backward_row = detail::vector_loops().softmax_backward_row;
            parallel_for(rows, rows_per_thread(T), [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r)
                    backward_row(g.out.data() + r * T, g.dout.data() + r * T, factor, r % T + 1, gx.data() + r * T,
                                 false);
            });
        },
        where);
}

Tensor causal_attention_weights(const Tensor& q, const Tensor& k, float factor, SourceLocation where) {
    check(q.dim() == 3 && k.dim() == 3 && q.size(0) == k.size(0) && q.size(2) == k.size(2) && q.size(1) > 0 &&
              q.size(1) <= k.size(1),
          "causal_attention_weights: q {} and k {} must be (B, Tq, H) and (B, Tk, H) with 0 < Tq <= Tk",
          shape_str(q.shape()), shape_str(k.shape()));
    // the queries are the last Tq of the Tk positions: query i sees keys j <= shift + i
    const int64_t B = q.size(0), Tq = q.size(1), Tk = k.size(1), H = q.size(2), shift = Tk - Tq;
    // scores_b (Tq, Tk) = q_b (Tq, H) @ k_b^T for each b, then their softmax into out. Not in place: a
    // row's vector store, masked to the row, still overlaps the next row's load for the CPU, which then
    // waits for the store (3x slower in place on rows of 8).
    Buffer scores(static_cast<size_t>(B * Tq * Tk)), out(static_cast<size_t>(B * Tq * Tk));  // (B, Tq, Tk) each
    const float *qv = q.data().data(), *kv = k.data().data();
    kernels::gemm_batched(false, true, Tq, Tk, H, B, qv, {}, kv, {}, scores.data(), {}, false);
    const auto softmax_row = detail::vector_loops().softmax_row;
    parallel_for(B * Tq, rows_per_thread(Tk, kMinExpsPerThread), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const int64_t visible = shift + r % Tq + 1;
            float* y = out.data() + r * Tk;
            softmax_row(scores.data() + r * Tk, factor, visible, y);
            std::fill(y + visible, y + Tk, 0.0f);
        }
    });
    return make_result(
        "causal_attention_weights", {B, Tq, Tk}, std::move(out), {q, k},
        [B, Tq, Tk, H, shift, factor](const GradContext& g) {
            // dscores = factor * y * (dy - sum(dy * y)) on the visible part (causal_softmax's backward), then
            // dq_b (Tq, H) += dscores_b @ k_b;  dk_b (Tk, H) += dscores_b^T @ q_b
            Buffer dscores(static_cast<size_t>(B * Tq * Tk));
            const auto backward_row = detail::vector_loops().softmax_backward_row;
            parallel_for(B * Tq, rows_per_thread(Tk), [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                    const int64_t visible = shift + r % Tq + 1;
                    float* ds = dscores.data() + r * Tk;
                    backward_row(g.out.data() + r * Tk, g.dout.data() + r * Tk, factor, visible, ds, true);
                    std::fill(ds + visible, ds + Tk, 0.0f);
                }
            });
            const float *q_in = g.inputs[0].data().data(), *k_in = g.inputs[1].data().data();
            if (g.needs(0)) {
                const auto dq = g.grad_target(0);
                kernels::gemm_batched(false, false, Tq, H, Tk, B, dscores.data(), {}, k_in, {}, dq.values.data(), {},
                                      !dq.fresh);
            }
            if (g.needs(1)) {
                const auto dk = g.grad_target(1);
                kernels::gemm_batched(true, false, Tk, H, Tq, B, dscores.data(), {}, q_in, {}, dk.values.data(), {},
                                      !dk.fresh);
            }
        },
        where);
}

}  // namespace autograd
