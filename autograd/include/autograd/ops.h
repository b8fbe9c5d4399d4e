// The ops. Each is one function in autograd/src/ that computes its result and attaches its backward
// beside it. Composite ops (mean, sub-expressions, causal_mask, split) are built from the others.
// Fused ops (linear, linear_gelu, linear_gelu_tanh, matmul_transposed, layer_norm, rms_norm, rotary, silu,
// causal_softmax, causal_attention_weights, causal_attention)
// do in one op what the models run thousands of times a step; each is tested equal to its composition
// (values, and gradients under a random upstream gradient; linear and linear_gelu bit for bit) and passes
// gradcheck.
// The tutorial's nn::Head keeps the composition by default (HeadOptions::record_scores).
//
// Shape legend: B batch, T time, C channels, H head width, V vocab, N rows, "..." any leading dims.
// Broadcasting follows NumPy: shapes align from the right; a dim of 1 (or a missing one) stretches.
// Gradients of broadcast inputs are summed back to the input's shape.
//
// Call site: every op that makes a graph node ends in `std::source_location where = ...current()`.
// Leave it out: it records the line that calls the op, which anomaly mode (anomaly.h) names when the
// op's forward or backward makes a NaN. Composite ops hand their own `where` to the ops they are made
// of, so `mean(x)` reports your line, not reduce.cpp. A function of your own built from ops can do the
// same: take a `where` parameter and pass it on. The one gap: operators (a + b, x * 2.0f, -x) cannot
// take an extra parameter, so they record the operator's own location in elementwise.cpp; write
// add(a, b), scale(x, 2.0f), neg(x) where the line matters.
#pragma once

#include <cstdint>
#include <source_location>
#include <span>
#include <vector>

#include "autograd/check.h"

namespace autograd {

class Tensor;
class Generator;
using SourceLocation = std::source_location;

// --- elementwise, broadcasting --------------------------------------------------------------
// a: (...)  b: broadcastable  ->  broadcast shape
Tensor add(const Tensor& a, const Tensor& b, SourceLocation where = SourceLocation::current());
Tensor sub(const Tensor& a, const Tensor& b, SourceLocation where = SourceLocation::current());
Tensor mul(const Tensor& a, const Tensor& b, SourceLocation where = SourceLocation::current());
Tensor div(const Tensor& a, const Tensor& b, SourceLocation where = SourceLocation::current());
Tensor neg(const Tensor& x, SourceLocation where = SourceLocation::current());
// x * factor, factor a constant
Tensor scale(const Tensor& x, float factor, SourceLocation where = SourceLocation::current());

// --- elementwise, unary (x: any shape -> same shape) -----------------------------------------
Tensor exp(const Tensor& x, SourceLocation where = SourceLocation::current());
Tensor log(const Tensor& x, SourceLocation where = SourceLocation::current());
Tensor sqrt(const Tensor& x, SourceLocation where = SourceLocation::current());
Tensor pow(const Tensor& x, float exponent, SourceLocation where = SourceLocation::current());
Tensor tanh(const Tensor& x, SourceLocation where = SourceLocation::current());
Tensor relu(const Tensor& x, SourceLocation where = SourceLocation::current());
// exact: x * Phi(x), with the erf (as torch.nn.GELU())
Tensor gelu(const Tensor& x, SourceLocation where = SourceLocation::current());
// GPT-2's tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as
// torch.nn.GELU(approximate="tanh"); within 1e-3 of the exact one
Tensor gelu_tanh(const Tensor& x, SourceLocation where = SourceLocation::current());
// x * sigmoid(x), as torch.nn.SiLU (Llama's gated MLP): one op, equal to x / (1 + exp(-x)) composed
Tensor silu(const Tensor& x, SourceLocation where = SourceLocation::current());

// --- matrix product ----------------------------------------------------------------------------
// a: (..., M, K)  b: (..., K, N)  ->  (broadcast(...), M, N). Leading dims broadcast, so both
// (B, T, C) @ (C, H) and (B, T, H) @ (B, H, T) work. Both operands need rank >= 2.
Tensor matmul(const Tensor& a, const Tensor& b, SourceLocation where = SourceLocation::current());
// x: (..., K)  weight: (K, N)  bias: (N)  ->  (..., N): matmul(x, weight) + bias as one op, so the
// product is not stored a second time before the bias is added (nn::Linear). Same values and gradients
// as the composition, bit for bit.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
              SourceLocation where = SourceLocation::current());
// gelu(linear(x, weight, bias)) as one op (nn::FeedForward's first layer): the pre-activation is not
// kept; the forward keeps gelu's slope instead, so the backward evaluates no erf. Same values and
// gradients as the composition, bit for bit.
Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   SourceLocation where = SourceLocation::current());
// gelu_tanh(linear(x, weight, bias)) as one op, as linear_gelu (the gpt2 kind's MLP).
Tensor linear_gelu_tanh(const Tensor& x, const Tensor& weight, const Tensor& bias,
                        SourceLocation where = SourceLocation::current());
// x: (..., K)  weight: (N, K)  ->  (..., N): matmul(x, transpose(weight, 0, 1)) as one gemm that reads
// weight in place (no transposed copy): the gpt2 kind's output layer tied to its (V, C) token table.
// Equal to the composition up to float rounding.
Tensor matmul_transposed(const Tensor& x, const Tensor& weight, SourceLocation where = SourceLocation::current());

// --- shape ---------------------------------------------------------------------------------------
// same numel; one dim may be -1
Tensor reshape(const Tensor& x, Shape shape, SourceLocation where = SourceLocation::current());
// swaps two dims (copies)
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, SourceLocation where = SourceLocation::current());
// [start, end) along dim
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end,
             SourceLocation where = SourceLocation::current());
// x: (N, ...) -> (rows, ...): its first rows along dim 0 as a view of x's own storage, not a copy (the
// filled rows of a cache of keys and values, read in place as they grow). No graph: x must not require a
// gradient. Writes to x's storage show through it.
Tensor leading_rows(const Tensor& x, int64_t rows);
// all shapes equal except dim
Tensor concat(const std::vector<Tensor>& xs, int64_t dim, SourceLocation where = SourceLocation::current());
// chunks of `size` (the last may be shorter), or of the given sizes
std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim, SourceLocation where = SourceLocation::current());
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim,
                          SourceLocation where = SourceLocation::current());

// --- reductions ------------------------------------------------------------------------------------
Tensor sum(const Tensor& x, SourceLocation where = SourceLocation::current());  // -> ()
Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false, SourceLocation where = SourceLocation::current());
Tensor mean(const Tensor& x, SourceLocation where = SourceLocation::current());  // -> ()
Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false, SourceLocation where = SourceLocation::current());
// gradient to the first maximum
Tensor max(const Tensor& x, int64_t dim, bool keepdim = false, SourceLocation where = SourceLocation::current());
std::vector<int64_t> argmax(const Tensor& x, int64_t dim);  // no gradient (no node); row-major over the rest

// --- masking and attention pieces ----------------------------------------------------------------
// mask: broadcastable to x; where mask != 0 the result is `value` and no gradient flows to x.
Tensor masked_fill(const Tensor& x, const Tensor& mask, float value, SourceLocation where = SourceLocation::current());
Tensor upper_triangle_mask(int64_t T);  // (T, T): 1 strictly above the diagonal, else 0 (a constant leaf)
// (Tq, Tk), Tq <= Tk: the queries are the last Tq of Tk positions, 1 where j > Tk - Tq + i
Tensor upper_triangle_mask(int64_t Tq, int64_t Tk);
// x: (..., T, T) -> same, with -inf strictly above the diagonal (position i cannot see j > i); or
// (..., Tq, Tk) with Tq <= Tk, the queries the last Tq positions (after a cache's keys).
Tensor causal_mask(const Tensor& x, SourceLocation where = SourceLocation::current());

// softmax along dim, numerically stable (the row max is subtracted). A row that is entirely -inf
// (fully masked) gives all zeros and passes no gradient: defined, and never NaN.
Tensor softmax(const Tensor& x, int64_t dim, SourceLocation where = SourceLocation::current());
// scores: (..., T, T) -> same: softmax(causal_mask(scale(scores, factor)), -1) in one op, one pass and
// one (..., T, T) result (attention's hot path). Position i weighs j <= i; above the diagonal the
// result is 0 and passes no gradient; a row whose visible scores are all -inf is all zeros, as in softmax.
Tensor causal_softmax(const Tensor& scores, float factor, SourceLocation where = SourceLocation::current());
// q, k: (B, T, H) -> (B, T, T): causal_softmax(matmul(q, k.transpose(1, 2)), factor), the attention
// weights, in one op: k is read in place (no transposed copy) and the scores are never stored. Equal
// to the composition up to float rounding (the products are summed in another order). k may hold more
// positions than q, (B, Tk, H) with Tk >= T: the queries are then the last T of them (query i sees keys
// j <= Tk - T + i), as when the keys before come from a cache; -> (B, T, Tk).
Tensor causal_attention_weights(const Tensor& q, const Tensor& k, float factor,
                                SourceLocation where = SourceLocation::current());
// q, k, v: (B, T, H) -> (B, T, H): matmul(causal_attention_weights(q, k, factor), v), the causal
// attention of one head, in one op that never holds the (B, T, T) weights: it works a block of 64
// queries against 64 keys at a time with an online softmax (FlashAttention), skips the blocks above the
// diagonal, and keeps for backward only its output and a log-sum-exp per row (B, T), recomputing the
// weights block by block there. Equal to the composition up to float rounding. As
// causal_attention_weights, k and v may hold Tk >= T positions, the queries being the last T of them.
Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, float factor,
                        SourceLocation where = SourceLocation::current());
// log_softmax along dim. A fully masked row gives -inf everywhere and passes no gradient.
Tensor log_softmax(const Tensor& x, int64_t dim, SourceLocation where = SourceLocation::current());
// logits: (..., V)  targets: one class index per row (numel / V of them)  ->  () mean loss
Tensor cross_entropy(const Tensor& logits, std::span<const int64_t> targets,
                     SourceLocation where = SourceLocation::current());
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets,
                     SourceLocation where = SourceLocation::current());

// --- lookup and noise ------------------------------------------------------------------------------
// weight: (V, C)  ids: indices in [0, V), laid out as ids_shape  ->  (ids_shape..., C).
// The gradient is scatter-added, so repeated ids accumulate.
Tensor embedding(const Tensor& weight, std::span<const int64_t> ids, const Shape& ids_shape,
                 SourceLocation where = SourceLocation::current());
// Zeroes each element with probability p and scales the survivors by 1/(1-p); identity when
// training is false or p == 0.
Tensor dropout(const Tensor& x, float p, bool training, Generator& gen,
               SourceLocation where = SourceLocation::current());

// --- operators -----------------------------------------------------------------------------------
// They record their own location in elementwise.cpp, not yours (see "Call site" above).
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

// --- normalization ---------------------------------------------------------------------------------
// x: (..., C)  gain, bias: (C)  ->  (..., C): each row of C normalized to mean 0 and variance 1 (the
// biased variance, eps inside the square root, as torch.nn.LayerNorm), then * gain + bias. One op with
// its own backward; it equals the composition (x - mean) / sqrt(var + eps) * gain + bias.
Tensor layer_norm(const Tensor& x, const Tensor& gain, const Tensor& bias, float eps,
                  SourceLocation where = SourceLocation::current());
// x: (..., C)  weight: (C)  ->  (..., C): each row divided by its root mean square, then * weight:
// x / sqrt(mean(x^2) + eps) * weight, as Llama's RMSNorm (no centering, no bias). One op with its own
// backward, keeping one 1/rms per row; it equals that composition.
Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps, SourceLocation where = SourceLocation::current());

// --- rotary position embeddings (RoPE) --------------------------------------------------------------
// Each head's H features form H/2 pairs; pair i at position p is rotated by the angle p * theta^(-2i/H),
// so that q . k depends on the two positions' difference only. The two layouts say which features pair up:
enum class RotaryLayout {
    interleaved,  // (2i, 2i + 1): Meta's original and llama2.c's run.c
    halves,       // (i, i + H/2): Hugging Face's rotate_half
};
// x: (B, T, n, H), n heads of even width H, the T positions start_position .. start_position + T - 1
// -> the same shape, each pair rotated: (a, b) -> (a cos - b sin, a sin + b cos). The angles are
// computed in float as run.c and Hugging Face compute them. The backward rotates the gradient back.
Tensor rotary(const Tensor& x, int64_t start_position, float theta, RotaryLayout layout,
              SourceLocation where = SourceLocation::current());
// weight: (..., n_head * H), a q or k projection's output features (columns of an (in, out) weight, or
// a bias) -> the same shape, each head's features reordered from `from`'s pairs to `to`'s: what Hugging
// Face's convert_llama_weights_to_hf.py `permute` does (interleaved -> halves). Rotary in layout `to`
// of x @ rotary_permute(W) is rotary in layout `from` of x @ W with each head's features so reordered,
// so every q . k, and the attention, is the same. A reshape, transpose and reshape: it has a gradient.
Tensor rotary_permute(const Tensor& weight, int64_t n_head, RotaryLayout from, RotaryLayout to,
                      SourceLocation where = SourceLocation::current());

}  // namespace autograd
