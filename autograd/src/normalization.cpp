// layer_norm: the fused op behind nn::LayerNorm. The composition it replaces (mean, sub, mul, mean,
// add, sqrt, div, mul, add) makes nine full-size tensors and nine backward passes; this makes one of
// each and keeps only a mean and a 1/std per row for the backward.
// The row loops themselves are in vector_loops_impl.h, compiled per instruction set.
#include "autograd/op.h"
#include "autograd/ops.h"
#include "autograd/threads.h"
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
    Buffer out(x.numel());                        // (..., C)
    Buffer mean(rows), rstd(rows);                // (rows): what the backward needs besides x (pooled)
    const auto normalize_rows = detail::vector_loops().normalize_rows;
    parallel_for(rows, rows_per_thread(C), [&](int64_t begin, int64_t end) {
        normalize_rows(src, w, b, C, eps, begin, end, out.data(), mean.data(), rstd.data());
    });
    return make_result("layer_norm", x.shape(), std::move(out), {x, gain, bias},
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
            input_gradient_rows(xs, g.dout.data(), gain_v, mean.data(), rstd.data(), C, begin, end, gx.values.data(),
                                gx.fresh);
        });
    }, where);
}

}  // namespace autograd
