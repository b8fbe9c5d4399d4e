// Reductions: sum, mean (composed from sum and scale), max, argmax.
#include <limits>

#include "autograd/op.h"
#include "autograd/ops.h"
#include "axis.h"

namespace autograd {

using detail::Axis;
using detail::axis_of;

namespace {
Shape reduced_shape(Shape shape, int64_t dim, bool keepdim) {
    if (keepdim) shape[dim] = 1;
    else shape.erase(shape.begin() + dim);
    return shape;
}
}  // namespace

Tensor sum(const Tensor& x, SourceLocation where) {
    double total = 0.0;  // double: a float running sum loses digits over millions of elements
    for (float v : x.data()) total += v;
    return make_result(
        "sum", {}, Buffer{static_cast<float>(total)}, {x},
        [](const GradContext& g) {
            auto gx = g.grad(0);
            for (float& v : gx) v += g.dout[0];
        },
        where);
}

Tensor sum(const Tensor& x, int64_t dim, bool keepdim, SourceLocation where) {
    dim = detail::dim_of(x.shape(), dim, "sum");
    const Axis ax = axis_of(x.shape(), dim);
    const float* src = x.data().data();
    Buffer out(ax.outer * ax.inner, 0.0f);
    for (int64_t o = 0; o < ax.outer; ++o)
        for (int64_t k = 0; k < ax.n; ++k)
            for (int64_t i = 0; i < ax.inner; ++i) out[o * ax.inner + i] += src[ax.at(o, k, i)];
    return make_result(
        "sum", reduced_shape(x.shape(), dim, keepdim), std::move(out), {x},
        [ax](const GradContext& g) {
            auto gx = g.grad(0);
            for (int64_t o = 0; o < ax.outer; ++o)
                for (int64_t k = 0; k < ax.n; ++k)
                    for (int64_t i = 0; i < ax.inner; ++i) gx[ax.at(o, k, i)] += g.dout[o * ax.inner + i];
        },
        where);
}

Tensor mean(const Tensor& x, SourceLocation where) {
    check(x.numel() > 0, "mean: empty tensor of shape {}", shape_str(x.shape()));
    return scale(sum(x, where), 1.0f / static_cast<float>(x.numel()), where);
}

Tensor mean(const Tensor& x, int64_t dim, bool keepdim, SourceLocation where) {
    const int64_t n = x.shape()[detail::dim_of(x.shape(), dim, "mean")];
    check(n > 0, "mean: dim {} of shape {} is empty", dim, shape_str(x.shape()));
    return scale(sum(x, dim, keepdim, where), 1.0f / static_cast<float>(n), where);
}

std::vector<int64_t> argmax(const Tensor& x, int64_t dim) {
    dim = detail::dim_of(x.shape(), dim, "argmax");
    const Axis ax = axis_of(x.shape(), dim);
    check(ax.n > 0, "argmax: dim {} of shape {} is empty", dim, shape_str(x.shape()));
    const float* src = x.data().data();
    std::vector<int64_t> best(ax.outer * ax.inner, 0);
    for (int64_t o = 0; o < ax.outer; ++o)
        for (int64_t i = 0; i < ax.inner; ++i) {
            int64_t& b = best[o * ax.inner + i];
            for (int64_t k = 1; k < ax.n; ++k)
                if (src[ax.at(o, k, i)] > src[ax.at(o, b, i)]) b = k;  // strict: ties go to the first
        }
    return best;
}

Tensor max(const Tensor& x, int64_t dim, bool keepdim, SourceLocation where) {
    dim = detail::dim_of(x.shape(), dim, "max");
    const Axis ax = axis_of(x.shape(), dim);
    check(ax.n > 0, "max: dim {} of shape {} is empty", dim, shape_str(x.shape()));
    std::vector<int64_t> best = argmax(x, dim);  // per output element, the index of its maximum
    Buffer out(best.size());
    const float* src = x.data().data();
    for (int64_t o = 0; o < ax.outer; ++o)
        for (int64_t i = 0; i < ax.inner; ++i) out[o * ax.inner + i] = src[ax.at(o, best[o * ax.inner + i], i)];
    return make_result(
        "max", reduced_shape(x.shape(), dim, keepdim), std::move(out), {x},
        [ax, best = std::move(best)](const GradContext& g) {
            auto gx = g.grad(0);
            for (int64_t o = 0; o < ax.outer; ++o)
                for (int64_t i = 0; i < ax.inner; ++i) {
                    const int64_t r = o * ax.inner + i;
                    gx[ax.at(o, best[r], i)] += g.dout[r];
                }
        },
        where);
}

}  // namespace autograd
