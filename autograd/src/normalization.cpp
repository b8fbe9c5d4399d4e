// layer_norm: the fused op behind nn::LayerNorm. The composition it replaces (mean, sub, mul, mean,
// add, sqrt, div, mul, add) makes nine full-size tensors and nine backward passes; this makes one of
// each and keeps only a mean and a 1/std per row for the backward.
// The row loops themselves are in vector_loops_impl.h, compiled per instruction set.
// rms_norm: the same for Llama's RMSNorm (x / sqrt(mean(x^2) + eps) * weight), whose composition (mul,
// mean, add, sqrt, div, mul) would make six full-size tensors; this keeps one 1/rms per row. Its loops
// are plain C++ here: a row is one pass for the sum of squares and one for the result.
#include <cmath>

#include "autograd/op.h"
#include "autograd/ops.h"
#include "autograd/threads.h"
#include "fast_math.h"
#include "vector_loops.h"

namespace autograd {

Tensor layer_norm(const Tensor& x, const Tensor& gain, const Tensor& bias, float eps, SourceLocation where) {
    check(x.dim() >= 1 && x.size(-1) > 0, "layer_norm: input needs a non-empty last dim, got shape {}",
          shape_str(x.shape()));
    const int64_t C = x.size(-1), rows = x.numel() / C;
    check(gain.shape() == Shape{C} && bias.shape() == Shape{C},
          "layer_norm: gain {} and bias {} must both be ({}) for an input of shape {}", shape_str(gain.shape()),
          shape_str(bias.shape()), C, shape_str(x.shape()));
    check(eps > 0.0f, "layer_norm: eps {} must be positive (input of shape {})", eps, shape_str(x.shape()));

    // x: (..., C)  gain, bias: (C)  ->  (..., C);  per row: mean, rstd = 1 / sqrt(biased variance + eps)
    const float *src = x.data().data(), *w = gain.data().data(), *b = bias.data().data();
    Buffer out(x.numel());          // (..., C)
    Buffer mean(rows), rstd(rows);  // (rows): what the backward needs besides x (pooled)
    const auto normalize_rows = detail::vector_loops().normalize_rows;
    parallel_for(rows, rows_per_thread(C), [&](int64_t begin, int64_t end) {
        normalize_rows(src, w, b, C, eps, begin, end, out.data(), mean.data(), rstd.data());
    });
    return make_result(
        "layer_norm", x.shape(), std::move(out), {x, gain, bias},
        [C, rows, mean = std::move(mean), rstd = std::move(rstd)](const GradContext& g) {
            // dgain = sum over rows of dy * xhat;  dbias = sum of dy;  dx: input_gradient_rows
            const float *xs = g.inputs[0].data().data(), *gain_v = g.inputs[1].data().data();
            const GradContext::Target gx = g.needs(0) ? g.grad_target(0) : GradContext::Target{{}, false};
            const std::span<float> gw = g.needs(1) ? g.grad(1) : std::span<float>();
            const std::span<float> gb = g.needs(2) ? g.grad(2) : std::span<float>();
            // gain and bias sum over rows: one thread, rows in order; dx is per row: split across threads
            for (int64_t r = 0; r < rows && !(gw.empty() && gb.empty()); ++r) {
                const float *row = xs + r * C, *dy = g.dout.data() + r * C;
                const float m = mean[r], s = rstd[r];
                if (!gw.empty())
                    for (int64_t c = 0; c < C; ++c) gw[c] += dy[c] * ((row[c] - m) * s);
                if (!gb.empty())
                    for (int64_t c = 0; c < C; ++c) gb[c] += dy[c];
            }
            if (gx.values.empty()) return;
            const auto input_gradient_rows = detail::vector_loops().input_gradient_rows;
            parallel_for(rows, rows_per_thread(C), [&](int64_t begin, int64_t end) {
                input_gradient_rows(xs, g.dout.data(), gain_v, mean.data(), rstd.data(), C, begin, end,
                                    gx.values.data(), gx.fresh);
            });
        },
        where);
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps, SourceLocation where) {
    check(x.dim() >= 1 && x.size(-1) > 0, "rms_norm: input needs a non-empty last dim, got shape {}",
          shape_str(x.shape()));
    const int64_t C = x.size(-1), rows = x.numel() / C;
    check(weight.shape() == Shape{C}, "rms_norm: weight {} must be ({}) for an input of shape {}",
          shape_str(weight.shape()), C, shape_str(x.shape()));
    check(eps > 0.0f, "rms_norm: eps {} must be positive (input of shape {})", eps, shape_str(x.shape()));

    // x: (..., C)  weight: (C)  ->  (..., C);  per row: rstd = 1 / sqrt(mean(x^2) + eps), y = x * rstd * weight
    const float *src = x.data().data(), *w = weight.data().data();
    Buffer out(x.numel());  // (..., C)
    Buffer rstd(rows);      // (rows): what the backward needs besides x
    parallel_for(rows, rows_per_thread(C), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = src + r * C;
            float squares = 0.0f;
            for (int64_t c = 0; c < C; ++c) squares += row[c] * row[c];
            const float s = 1.0f / std::sqrt(squares / static_cast<float>(C) + eps);
            rstd[r] = s;
            for (int64_t c = 0; c < C; ++c) out[r * C + c] = row[c] * s * w[c];
        }
    });
    return make_result(
        "rms_norm", x.shape(), std::move(out), {x, weight},
        [C, rows, rstd = std::move(rstd)](const GradContext& g) {
            // dweight = sum over rows of dy * x * rstd;
            // dx_j = rstd * dy_j * w_j - x_j * rstd^3 / C * sum_c dy_c * w_c * x_c   (d rstd / d x_j = -rstd^3 x_j / C)
            const float *xs = g.inputs[0].data().data(), *weights = g.inputs[1].data().data();
            if (g.needs(1)) {  // sums over rows: one thread, rows in order
                const std::span<float> gw = g.grad(1);
                for (int64_t r = 0; r < rows; ++r) {
                    const float *row = xs + r * C, *dy = g.dout.data() + r * C;
                    for (int64_t c = 0; c < C; ++c) gw[c] += dy[c] * (row[c] * rstd[r]);
                }
            }
            if (!g.needs(0)) return;
            const GradContext::Target gx = g.grad_target(0);
            parallel_for(rows, rows_per_thread(C), [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                    const float *row = xs + r * C, *dy = g.dout.data() + r * C;
                    const float s = rstd[r];
                    float dot = 0.0f;
                    for (int64_t c = 0; c < C; ++c) dot += dy[c] * weights[c] * row[c];
                    const float pull = s * s * s * dot / static_cast<float>(C);
                    detail::write_or_add(gx.fresh, 0, C, gx.values.data() + r * C,
                                         [&](int64_t c) { return s * dy[c] * weights[c] - row[c] * pull; });
                }
            });
        },
        where);
}

}  // namespace autograd
