// One row of softmax and of its backward, the loops under softmax, cross_entropy, causal_softmax and
// causal_attention_weights (softmax.cpp). Two implementations: the portable one, which the compiler
// vectorizes per instruction set (TINYGPT_VECTOR_CLONES), and an AVX-512 one (softmax_avx512.cpp) that
// takes a row's last values through a lane mask where the portable loops run them scalar, and computes
// exp with fused multiply-adds. One row on one core (ns): n = 4: 31 -> 13, n = 16: 27 -> 14, n = 65
// (cross_entropy's classes): 66 -> 45, n = 256: 183 -> 132. Their exps differ in the last bit; their
// backward rows give the same bits. softmax_row / softmax_backward_row use the AVX-512 one when the
// CPU has it, so results are the same for any thread count on one machine.
#pragma once

#include <cstdint>
#include <limits>

namespace autograd::detail {

// A row's largest value (after the factor) and the sum of exp(factor * x - max) in double; max is -inf
// and sum_exp 0 for a fully masked row (every entry -inf).
struct RowStats {
    float max = -std::numeric_limits<float>::infinity();
    double sum_exp = 0.0;
};

// y (n) = softmax(factor * x (n)), each exp computed once, straight into y; a row that is all -inf gives
// zeros. y may be x (but rows done in place one after the other stall on the stores: see
// causal_attention_weights). Returns the row's stats (for a log-sum-exp).
RowStats softmax_row(const float* x, float factor, int64_t n, float* y);
// dx (n) = factor * y * (dy - sum(dy * y)), or dx += that unless overwrite: softmax's backward on one row
// of weights y (n) and upstream gradient dy (n), times the scale before the softmax.
void softmax_backward_row(const float* y, const float* dy, float factor, int64_t n, float* dx, bool overwrite);

// The two implementations, for the tests. The AVX-512 ones only where kernels::available_isas() lists
// avx512 (they exist in x86-64 builds only).
RowStats softmax_row_portable(const float* x, float factor, int64_t n, float* y);
void softmax_backward_row_portable(const float* y, const float* dy, float factor, int64_t n, float* dx,
                                   bool overwrite);
RowStats softmax_row_avx512(const float* x, float factor, int64_t n, float* y);
void softmax_backward_row_avx512(const float* y, const float* dy, float factor, int64_t n, float* dx,
                                 bool overwrite);

}  // namespace autograd::detail
