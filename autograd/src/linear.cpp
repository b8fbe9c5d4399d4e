// linear: x @ weight + bias in one op (see ops.h). The forward and the backward do exactly what matmul
// followed by a broadcast add do, in the same order, so the results are the composition's bits.
#include "autograd/kernels.h"
#include "autograd/tensor.h"

namespace autograd {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, SourceLocation where) {
    const Shape& xs = x.shape();
    check(xs.size() >= 1 && weight.dim() == 2 && xs.back() == weight.size(0),
          "linear: input {} and weight {} cannot be multiplied (need (..., K) and (K, N))", shape_str(xs),
          shape_str(weight.shape()));
    const int64_t K = weight.size(0), N = weight.size(1);
    check(bias.shape() == Shape{N}, "linear: bias {} must be ({}) for weight {}", shape_str(bias.shape()), N,
          shape_str(weight.shape()));
    Shape out_shape = xs;  // (..., N)
    out_shape.back() = N;
    const int64_t R = numel_of(out_shape) / std::max<int64_t>(N, 1);  // rows: all leading dims

    Buffer out(static_cast<size_t>(R * N));  // (R, N)
    kernels::gemm(false, false, R, N, K, x.data().data(), weight.data().data(), out.data(), false);
    const float* b = bias.data().data();
    parallel_for(R, rows_per_thread(N), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            for (int64_t n = 0; n < N; ++n) out[r * N + n] += b[n];
    });
    return make_result("linear", std::move(out_shape), std::move(out), {x, weight, bias}, [R, N, K](const GradContext& g) {
        const float *xv = g.inputs[0].data().data(), *w = g.inputs[1].data().data(), *dy = g.dout.data();
        // dx (R, K) += dy (R, N) @ W^T;  dW (K, N) += x^T @ dy;  dbias (N) += dy summed over rows, in row order
        if (g.needs(0)) {
            const auto dx = g.grad_target(0);
            kernels::gemm(false, true, R, K, N, dy, w, dx.values.data(), !dx.fresh);
        }
        if (g.needs(1)) kernels::gemm(true, false, K, N, R, xv, dy, g.grad(1).data(), true);
        if (g.needs(2)) {
            float* db = g.grad(2).data();
            for (int64_t r = 0; r < R; ++r)
                for (int64_t n = 0; n < N; ++n) db[n] += dy[r * N + n];
        }
    }, where);
}

}  // namespace autograd
