// The ops. Each is one function in autograd/src/ that computes its result and attaches its backward
// beside it. Composite ops (mean, sub-expressions, causal_mask, split) are built from the others.
//
// Shape legend: B batch, T time, C channels, H head width, V vocab, N rows, "..." any leading dims.
// Broadcasting follows NumPy: shapes align from the right; a dim of 1 (or a missing one) stretches.
// Gradients of broadcast inputs are summed back to the input's shape.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace autograd {

class Tensor;
class Generator;

// --- elementwise, broadcasting --------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);  // a: (...)  b: broadcastable  ->  broadcast shape
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& x);
Tensor scale(const Tensor& x, float factor);  // x * factor, factor a constant

// --- elementwise, unary (x: any shape -> same shape) -----------------------------------------
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor pow(const Tensor& x, float exponent);
Tensor tanh(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);  // exact: x * Phi(x), with the erf (as torch.nn.GELU())

// --- matrix product ----------------------------------------------------------------------------
// a: (..., M, K)  b: (..., K, N)  ->  (broadcast(...), M, N). Leading dims broadcast, so both
// (B, T, C) @ (C, H) and (B, T, H) @ (B, H, T) work. Both operands need rank >= 2.
Tensor matmul(const Tensor& a, const Tensor& b);

// --- shape ---------------------------------------------------------------------------------------
Tensor reshape(const Tensor& x, Shape shape);                     // same numel; one dim may be -1
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);    // swaps two dims (copies)
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end);  // [start, end) along dim
Tensor concat(const std::vector<Tensor>& xs, int64_t dim);        // all shapes equal except dim
std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim);  // chunks of `size` (last may be shorter)
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);

// --- reductions ------------------------------------------------------------------------------------
Tensor sum(const Tensor& x);                                          // -> ()
Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor mean(const Tensor& x);                                         // -> ()
Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor max(const Tensor& x, int64_t dim, bool keepdim = false);     // gradient to the first maximum
std::vector<int64_t> argmax(const Tensor& x, int64_t dim);           // no gradient; row-major over the rest

// --- masking and attention pieces ----------------------------------------------------------------
// mask: broadcastable to x; where mask != 0 the result is `value` and no gradient flows to x.
Tensor masked_fill(const Tensor& x, const Tensor& mask, float value);
Tensor upper_triangle_mask(int64_t T);  // (T, T): 1 strictly above the diagonal, else 0
// x: (..., T, T) -> same, with -inf strictly above the diagonal (position i cannot see j > i).
Tensor causal_mask(const Tensor& x);

// softmax along dim, numerically stable (the row max is subtracted). A row that is entirely -inf
// (fully masked) gives all zeros and passes no gradient: defined, and never NaN.
Tensor softmax(const Tensor& x, int64_t dim);
// log_softmax along dim. A fully masked row gives -inf everywhere and passes no gradient.
Tensor log_softmax(const Tensor& x, int64_t dim);
// logits: (..., V)  targets: one class index per row (numel / V of them)  ->  () mean loss
Tensor cross_entropy(const Tensor& logits, std::span<const int64_t> targets);
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets);

// --- lookup and noise ------------------------------------------------------------------------------
// weight: (V, C)  ids: indices in [0, V), laid out as ids_shape  ->  (ids_shape..., C).
// The gradient is scatter-added, so repeated ids accumulate.
Tensor embedding(const Tensor& weight, std::span<const int64_t> ids, const Shape& ids_shape);
// Zeroes each element with probability p and scales the survivors by 1/(1-p); identity when
// training is false or p == 0.
Tensor dropout(const Tensor& x, float p, bool training, Generator& gen);

// --- operators -----------------------------------------------------------------------------------
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, float b);
Tensor operator+(float a, const Tensor& b);
Tensor operator-(const Tensor& a, float b);
Tensor operator-(float a, const Tensor& b);
Tensor operator*(const Tensor& a, float b);
Tensor operator*(float a, const Tensor& b);
Tensor operator/(const Tensor& a, float b);
Tensor operator/(float a, const Tensor& b);

}  // namespace autograd
