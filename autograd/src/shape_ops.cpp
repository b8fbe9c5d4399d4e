// Shape ops: reshape, transpose, slice, concat, split; and masking (masked_fill, causal_mask).
#include <cmath>
#include <limits>

#include "anomaly.h"
#include "autograd/op.h"
#include "autograd/ops.h"
#include "autograd/threads.h"
#include "axis.h"
#include "broadcast.h"
#include "fast_math.h"

namespace autograd {

using detail::Axis;
using detail::axis_of;

Tensor reshape(const Tensor& x, Shape shape, SourceLocation where) {
    int64_t known = 1, infer_at = -1;
    for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == -1) {
            check(infer_at < 0, "reshape: more than one -1 in target shape {} for a tensor of shape {}",
                  shape_str(shape), shape_str(x.shape()));
            infer_at = static_cast<int64_t>(d);
        } else {
            check(shape[d] >= 0, "reshape: bad dimension {} in target shape {} for a tensor of shape {}", shape[d],
                  shape_str(shape), shape_str(x.shape()));
            check(!__builtin_mul_overflow(known, shape[d], &known),
                  "reshape: the element count of target shape {} overflows (a tensor of shape {})", shape_str(shape),
                  shape_str(x.shape()));
        }
    }
    if (infer_at >= 0) {
        check(known > 0 && x.numel() % known == 0, "reshape: cannot reshape {} into {}", shape_str(x.shape()),
              shape_str(shape));
        shape[infer_at] = x.numel() / known;
    }
    check(numel_of(shape) == x.numel(), "reshape: cannot reshape {} ({} elements) into {} ({} elements)",
          shape_str(x.shape()), x.numel(), shape_str(shape), numel_of(shape));
    // The result shares x's storage: same values, same order, only the shape differs.
    return make_result(
        "reshape", std::move(shape), x.impl()->data, {x},
        [](const GradContext& g) {
            auto gx = g.grad(0);
            for (size_t i = 0; i < gx.size(); ++i) gx[i] += g.dout[i];
        },
        where);
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, SourceLocation where) {
    const Shape& in = x.shape();
    const auto rank = static_cast<int64_t>(in.size());
    dim0 = detail::dim_of(in, dim0, "transpose");
    dim1 = detail::dim_of(in, dim1, "transpose");
    // Walk the result in order; `a_stride` says how far each result dim steps in x.
    detail::Broadcast walk;
    walk.out = in;
    std::swap(walk.out[dim0], walk.out[dim1]);
    std::vector<int64_t> in_stride(rank, 1);
    for (int64_t d = rank - 1; d > 0; --d) in_stride[d - 1] = in_stride[d] * in[d];
    walk.a_stride = in_stride;
    std::swap(walk.a_stride[dim0], walk.a_stride[dim1]);
    walk.b_stride.assign(rank, 0);
    if (rank == 0 || dim0 == dim1) walk.kind = detail::Broadcast::Kind::same;

    const float* src = x.data().data();
    Buffer out(x.numel());
    walk.for_each([&](int64_t i, int64_t ix, int64_t) { out[i] = src[ix]; });
    Shape out_shape = walk.out;
    return make_result(
        "transpose", std::move(out_shape), std::move(out), {x},
        [walk](const GradContext& g) {
            auto gx = g.grad(0);
            walk.for_each([&](int64_t i, int64_t ix, int64_t) { gx[ix] += g.dout[i]; });
        },
        where);
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, SourceLocation where) {
    dim = detail::dim_of(x.shape(), dim, "slice");
    const int64_t n = x.shape()[dim];
    check(0 <= start && start <= end && end <= n, "slice: range [{}, {}) is outside dim {} of shape {}", start, end,
          dim, shape_str(x.shape()));
    const Axis ax = axis_of(x.shape(), dim);
    const Axis out_ax{ax.outer, end - start, ax.inner};
    Shape out_shape = x.shape();
    out_shape[dim] = end - start;
    Buffer out(numel_of(out_shape));
    const float* src = x.data().data();
    for (int64_t o = 0; o < ax.outer; ++o)
        std::copy_n(src + ax.at(o, start, 0), out_ax.n * ax.inner, out.data() + out_ax.at(o, 0, 0));
    return make_result(
        "slice", std::move(out_shape), std::move(out), {x},
        [ax, out_ax, start](const GradContext& g) {
            auto gx = g.grad(0);
            for (int64_t o = 0; o < ax.outer; ++o)
                for (int64_t j = 0; j < out_ax.n * ax.inner; ++j)
                    gx[ax.at(o, start, 0) + j] += g.dout[out_ax.at(o, 0, 0) + j];
        },
        where);
}

Tensor concat(const std::vector<Tensor>& xs, int64_t dim, SourceLocation where) {
    check(!xs.empty(), "concat: no tensors given");
    const Shape& first = xs[0].shape();
    dim = detail::dim_of(first, dim, "concat");
    Shape out_shape = first;
    out_shape[dim] = 0;
    for (const Tensor& x : xs) {
        Shape s = x.shape();
        check(s.size() == first.size(), "concat: tensors of shapes {} and {} differ in rank", shape_str(first),
              shape_str(s));
        out_shape[dim] += s[dim];
        s[dim] = first[dim];
        check(s == first, "concat: shapes {} and {} differ outside dim {}", shape_str(first), shape_str(x.shape()),
              dim);
    }
    const Axis out_ax = axis_of(out_shape, dim);
    Buffer out(numel_of(out_shape));
    int64_t offset = 0;  // where each input starts along dim
    for (const Tensor& x : xs) {
        const Axis ax = axis_of(x.shape(), dim);
        const int64_t run = ax.n * ax.inner;  // contiguous floats of x per outer index
        parallel_for(ax.outer, rows_per_thread(run), [&](int64_t begin, int64_t end) {
            for (int64_t o = begin; o < end; ++o)
                std::copy_n(x.data().data() + ax.at(o, 0, 0), run, out.data() + out_ax.at(o, offset, 0));
        });
        offset += ax.n;
    }
    // (the inputs go into the graph only when it records: more than three of them would take an
    // allocation, which a forward without a graph, as cached decoding, never makes)
    const bool records =
        is_grad_enabled() && std::any_of(xs.begin(), xs.end(), [](const Tensor& x) { return x.requires_grad(); });
    return make_result(
        "concat", std::move(out_shape), std::move(out), records ? NodeInputs(xs) : NodeInputs(),
        [out_ax, dim](const GradContext& g) {
            int64_t start = 0;  // where input k starts along dim
            for (size_t k = 0; k < g.inputs.size(); start += g.inputs[k].shape()[dim], ++k) {
                if (!g.needs(k)) continue;
                const Axis ax = axis_of(g.inputs[k].shape(), dim);
                const int64_t run = ax.n * ax.inner;
                const auto gx = g.grad_target(k);  // each value written once: fresh ones with =
                parallel_for(ax.outer, rows_per_thread(run), [&](int64_t begin, int64_t end) {
                    for (int64_t o = begin; o < end; ++o)
                        detail::write_or_add(gx.fresh, 0, run, gx.values.data() + ax.at(o, 0, 0),
                                             [&](int64_t j) { return g.dout[out_ax.at(o, start, 0) + j]; });
                });
            }
        },
        where);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim, SourceLocation where) {
    dim = detail::dim_of(x.shape(), dim, "split");
    int64_t total = 0;
    for (int64_t s : sizes) {
        check(s >= 0, "split: negative size {} for shape {}", s, shape_str(x.shape()));
        total += s;
    }
    check(total == x.shape()[dim], "split: sizes add up to {} but dim {} of shape {} is {}", total, dim,
          shape_str(x.shape()), x.shape()[dim]);
    std::vector<Tensor> parts;
    int64_t start = 0;
    for (int64_t s : sizes) {
        parts.push_back(slice(x, dim, start, start + s, where));
        start += s;
    }
    return parts;
}

std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim, SourceLocation where) {
    check(size > 0, "split: chunk size {} must be positive (shape {})", size, shape_str(x.shape()));
    dim = detail::dim_of(x.shape(), dim, "split");
    std::vector<int64_t> sizes;
    for (int64_t left = x.shape()[dim]; left > 0; left -= size) sizes.push_back(std::min(size, left));
    return split(x, sizes, dim, where);
}

// --- masking ---------------------------------------------------------------------------------------

Tensor masked_fill(const Tensor& x, const Tensor& mask, float value, SourceLocation where) {
    detail::Broadcast bc = detail::broadcast(x.shape(), mask.shape(), "masked_fill");
    check(bc.out == x.shape(), "masked_fill: mask of shape {} does not broadcast to the input's shape {}",
          shape_str(mask.shape()), shape_str(x.shape()));
    const float *src = x.data().data(), *m = mask.data().data();
    Buffer out(x.numel());
    bc.for_each([&](int64_t i, int64_t ix, int64_t im) { out[i] = m[im] != 0.0f ? value : src[ix]; });
    // Only x gets a gradient; the mask is a constant (its stored values are read at backward time).
    // An infinite fill value is intended: anomaly mode counts it as an input's infinity.
    const detail::IntendedInfinity intended(std::isinf(value));
    return make_result(
        "masked_fill", x.shape(), std::move(out), {x, mask.detach()},
        [bc = std::move(bc)](const GradContext& g) {
            const float* mv = g.inputs[1].data().data();
            auto gx = g.grad(0);
            bc.for_each([&](int64_t i, int64_t ix, int64_t im) { gx[ix] += mv[im] != 0.0f ? 0.0f : g.dout[i]; });
        },
        where);
}

Tensor upper_triangle_mask(int64_t T) { return upper_triangle_mask(T, T); }

Tensor upper_triangle_mask(int64_t Tq, int64_t Tk) {
    check(Tq >= 0 && Tq <= Tk, "upper_triangle_mask: {} queries and {} keys (needs 0 <= Tq <= Tk)", Tq, Tk);
    Tensor mask = zeros({Tq, Tk});
    for (int64_t i = 0; i < Tq; ++i)
        for (int64_t j = Tk - Tq + i + 1; j < Tk; ++j) mask.data()[i * Tk + j] = 1.0f;
    return mask;
}

Tensor causal_mask(const Tensor& x, SourceLocation where) {
    const Shape& s = x.shape();
    check(s.size() >= 2 && s[s.size() - 2] <= s[s.size() - 1],
          "causal_mask: needs (..., Tq, Tk) scores with Tq <= Tk, got shape {}", shape_str(s));
    return masked_fill(x, upper_triangle_mask(s[s.size() - 2], s.back()), -std::numeric_limits<float>::infinity(),
                       where);
}

Tensor leading_rows(const Tensor& x, int64_t rows) {
    check(x.dim() >= 1 && rows >= 0 && rows <= x.size(0), "leading_rows: {} rows of a tensor of shape {}", rows,
          shape_str(x.shape()));
    check(!x.requires_grad(), "leading_rows: the view has no backward, but the tensor of shape {} requires a gradient",
          shape_str(x.shape()));
    Shape shape = x.shape();
    shape[0] = rows;
    return make_result("leading_rows", std::move(shape), x.impl()->data, {}, nullptr);
}

}  // namespace autograd
