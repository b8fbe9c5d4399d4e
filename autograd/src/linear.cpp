// linear: x @ weight + bias in one op; linear_gelu and linear_gelu_tanh: an activation of that; and
// matmul_transposed: x @ weight^T without the transposed copy (see ops.h). The forwards and
// backwards do exactly what matmul, the broadcast add and gelu do, in the same order, so the results are
// the compositions' bits.
#include <algorithm>

#include "autograd/kernels.h"
#include "autograd/op.h"
#include "autograd/ops.h"
#include "autograd/threads.h"
#include "bf16_weights.h"
#include "vector_loops.h"

namespace autograd {

namespace {
// x: (..., K)  weight: (K, N)  bias: (N). Checks them; returns the result's shape (..., N).
Shape linear_shape(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
    const Shape& xs = x.shape();
    check(xs.size() >= 1 && weight.dim() == 2 && xs.back() == weight.size(0),
          "{}: input {} and weight {} cannot be multiplied (need (..., K) and (K, N))", op, shape_str(xs),
          shape_str(weight.shape()));
    check(bias.shape() == Shape{weight.size(1)}, "{}: bias {} must be ({}) for weight {}", op, shape_str(bias.shape()),
          weight.size(1), shape_str(weight.shape()));
    Shape out = xs;
    out.back() = weight.size(1);
    return out;
}

// out (R, N) = x (R, K) @ weight (K, N) + bias, the bias added row by row after the product (as add does).
Buffer linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t R) {
    const int64_t K = weight.size(0), N = weight.size(1);
    Buffer out(static_cast<size_t>(R * N));
    kernels::gemm_in_precision(false, false, R, N, K, {x.data().data()}, detail::weight_operand(weight), out.data(),
                               false);
    const float* b = bias.data().data();
    parallel_for(R, rows_per_thread(N), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            for (int64_t n = 0; n < N; ++n) out[r * N + n] += b[n];
    });
    return out;
}

// Given dy (R, N), the gradient of x @ weight + bias: dx (R, K) += dy @ W^T;  dW (K, N) += x^T @ dy;
// dbias (N) += dy summed over rows, in row order.
void linear_backward(const GradContext& g, const float* dy, int64_t R, int64_t N, int64_t K) {
    if (g.needs(0)) {
        const auto dx = g.grad_target(0);
        kernels::gemm_in_precision(false, true, R, K, N, {dy}, detail::weight_operand(g.inputs[1]), dx.values.data(),
                                   !dx.fresh);
    }
    if (g.needs(1))
        kernels::gemm_in_precision(true, false, K, N, R, {g.inputs[0].data().data()}, {dy}, g.grad(1).data(), true);
    if (g.needs(2)) {
        float* db = g.grad(2).data();
        for (int64_t r = 0; r < R; ++r)
            for (int64_t n = 0; n < N; ++n) db[n] += dy[r * N + n];
    }
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, SourceLocation where) {
    Shape out_shape = linear_shape("linear", x, weight, bias);  // (..., N)
    const int64_t K = weight.size(0), N = weight.size(1);
    const int64_t R = numel_of(out_shape) / std::max<int64_t>(N, 1);  // rows: all leading dims
    return make_result(
        "linear", std::move(out_shape), linear_forward(x, weight, bias, R), {x, weight, bias},
        [R, N, K](const GradContext& g) { linear_backward(g, g.dout.data(), R, N, K); }, where);
}

namespace {
// An activation of linear's result (R, N), in place through `in_place` (a VectorLoops gelu_*_in_place), as one op
// named `op` with linear's inputs: the backward multiplies by the slope the forward kept.
Tensor linear_activation(const char* op, void (*in_place)(float*, float*, int64_t, int64_t), const Tensor& x,
                         const Tensor& weight, const Tensor& bias, SourceLocation where) {
    Shape out_shape = linear_shape(op, x, weight, bias);  // (..., N)
    const int64_t K = weight.size(0), N = weight.size(1);
    const int64_t R = numel_of(out_shape) / std::max<int64_t>(N, 1);
    Buffer out = linear_forward(x, weight, bias, R);  // the pre-activation, then the activation of it in place
    const bool record = is_grad_enabled() && (x.requires_grad() || weight.requires_grad() || bias.requires_grad());
    Buffer slope(record ? out.size()
                        : 0);  // the activation's slope at pre (R, N): the backward needs neither pre nor an erf
    float* const slope_out = record ? slope.data() : nullptr;
    parallel_for(R * N, kMinElementsPerThread,
                 [&](int64_t begin, int64_t end) { in_place(out.data(), slope_out, begin, end); });
    return make_result(
        op, std::move(out_shape), std::move(out), {x, weight, bias},
        [R, N, K, slope = std::move(slope)](const GradContext& g) {
            Buffer dpre(slope.size());  // dLoss/d(pre) (R, N): the activation's backward, then linear's
            const auto times_slope = detail::vector_loops().times_slope;
            parallel_for(R * N, kMinElementsPerThread, [&](int64_t begin, int64_t end) {
                times_slope(g.dout.data(), slope.data(), dpre.data(), begin, end);
            });
            linear_backward(g, dpre.data(), R, N, K);
        },
        where);
}
}  // namespace

Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias, SourceLocation where) {
    return linear_activation("linear_gelu", detail::vector_loops().gelu_in_place, x, weight, bias, where);
}

Tensor linear_gelu_tanh(const Tensor& x, const Tensor& weight, const Tensor& bias, SourceLocation where) {
    return linear_activation("linear_gelu_tanh", detail::vector_loops().gelu_tanh_in_place, x, weight, bias, where);
}

Tensor matmul_transposed(const Tensor& x, const Tensor& weight, SourceLocation where) {
    const Shape& xs = x.shape();
    check(xs.size() >= 1 && weight.dim() == 2 && xs.back() == weight.size(1),
          "matmul_transposed: input {} and weight {} cannot be multiplied (need (..., K) and (N, K))", shape_str(xs),
          shape_str(weight.shape()));
    const int64_t N = weight.size(0), K = weight.size(1);
    Shape out_shape = xs;
    out_shape.back() = N;
    const int64_t R = numel_of(out_shape) / std::max<int64_t>(N, 1);  // rows: all leading dims
    Buffer out(static_cast<size_t>(R * N));
    kernels::gemm_in_precision(false, true, R, N, K, {x.data().data()}, detail::weight_operand(weight), out.data(),
                               false);  // (R, K) @ (N, K)^T
    return make_result(
        "matmul_transposed", std::move(out_shape), std::move(out), {x, weight},
        [R, N, K](const GradContext& g) {
            // dx (R, K) += dy (R, N) @ weight (N, K);  dweight (N, K) += dy^T (N, R) @ x (R, K)
            if (g.needs(0)) {
                const auto dx = g.grad_target(0);
                kernels::gemm_in_precision(false, false, R, K, N, {g.dout.data()}, detail::weight_operand(g.inputs[1]),
                                           dx.values.data(), !dx.fresh);
            }
            if (g.needs(1))
                kernels::gemm_in_precision(true, false, N, K, R, {g.dout.data()}, {g.inputs[0].data().data()},
                                           g.grad(1).data(), true);
        },
        where);
}

}  // namespace autograd
