// The elementwise and row loops under the ops (private to autograd/src), one table of them per
// instruction set. The loops' source is written once (vector_loops_impl.h) and compiled three times:
// vector_loops_portable.cpp with the baseline flags, vector_loops_avx2.cpp with -mavx2 -mfma and
// vector_loops_avx512.cpp with -mavx512f -mfma, where gcc and clang vectorize it as wide as each set
// allows. The AVX-512 table takes its softmax rows from softmax_avx512.cpp instead: a row's last values
// through a lane mask, and exp with fused multiply-adds (one row on one core, ns: n = 16: 27 -> 14,
// n = 65, cross_entropy's classes: 66 -> 45).
//
// Same bits on every set: no fused multiply-add except where a kernel asks for one (-ffp-contract=off),
// and every reduction in fixed lanes (fast_math.h), so a vectorized loop does what the scalar one does.
// The one exception is the AVX-512 rows' exp (softmax and exp_shifted), within about 1 ulp of fast_exp.
//
// Legend: n a row's length, C channels (a layer_norm row), [begin, end) a range of elements or rows.
#pragma once

#include <cstdint>

#include "autograd/detail/optimizer_kernels.h"
#include "autograd/kernels.h"

namespace autograd::detail {

// A row's largest value (after the factor) and the sum of exp(factor * x - max) in double; max is -inf
// and sum_exp 0 for a fully masked row (every entry -inf).
struct RowStats {
    float max = -__builtin_inff();
    double sum_exp = 0.0;
};

struct VectorLoops {
    // gelu: y = x * Phi(x) over [begin, end); its backward dx (+)= dy * gelu'(x) (= when overwrite).
    void (*gelu_forward)(const float* x, float* y, int64_t begin, int64_t end);
    void (*gelu_backward)(const float* x, const float* dy, float* dx, int64_t begin, int64_t end, bool overwrite);
    // linear_gelu: y = gelu(y) in place, and gelu'(pre) into slope unless it is null; dpre = dy * slope.
    void (*gelu_in_place)(float* y, float* slope, int64_t begin, int64_t end);
    void (*times_slope)(const float* dy, const float* slope, float* dpre, int64_t begin, int64_t end);
    // The same three for GPT-2's tanh approximation (gelu_tanh, linear_gelu_tanh).
    void (*gelu_tanh_forward)(const float* x, float* y, int64_t begin, int64_t end);
    void (*gelu_tanh_backward)(const float* x, const float* dy, float* dx, int64_t begin, int64_t end, bool overwrite);
    void (*gelu_tanh_in_place)(float* y, float* slope, int64_t begin, int64_t end);
    // silu: y = x * sigmoid(x); its backward dx (+)= dy * silu'(x), sigmoid recomputed (no buffer kept).
    void (*silu_forward)(const float* x, float* y, int64_t begin, int64_t end);
    void (*silu_backward)(const float* x, const float* dy, float* dx, int64_t begin, int64_t end, bool overwrite);
    // layer_norm over rows [begin, end) of x (rows, C): y = (x - mean) * rstd * gain + bias, keeping mean
    // and rstd per row; and its input gradient dx (+)= rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
    void (*normalize_rows)(const float* x, const float* gain, const float* bias, int64_t C, float eps, int64_t begin,
                           int64_t end, float* y, float* mean, float* rstd);
    void (*input_gradient_rows)(const float* x, const float* dy, const float* gain, const float* mean,
                                const float* rstd, int64_t C, int64_t begin, int64_t end, float* dx, bool overwrite);
    // y (n) = softmax(factor * x (n)), each exp computed once, straight into y; a row that is all -inf
    // gives zeros. y may be x (but rows done in place one after the other stall on the stores: see
    // causal_attention_weights). Returns the row's stats (for a log-sum-exp).
    RowStats (*softmax_row)(const float* x, float factor, int64_t n, float* y);
    // dx (n) = factor * y * (dy - sum(dy * y)), or dx += that unless overwrite: softmax's backward on one
    // row of weights y (n) and upstream gradient dy (n), times the scale before the softmax.
    void (*softmax_backward_row)(const float* y, const float* dy, float factor, int64_t n, float* dx, bool overwrite);
    // causal_attention's backward, per row of a block of recomputed weights: p (n) = exp(factor * s - shift)
    // (shift the row's log-sum-exp); and the scores' gradient in place, dp (n) = factor * p * (dp - d)
    // (d the row's sum of dout * out). The AVX-512 table's exp row is softmax_avx512.cpp's (its exp).
    void (*exp_shifted_row)(const float* s, float factor, float shift, int64_t n, float* p);
    void (*scores_gradient_row)(const float* p, float d, float factor, int64_t n, float* dp);
    // kernels::adamw_update and kernels::sum_of_squares.
    void (*adamw_update)(float* p, const float* g, float* m, float* v, int64_t begin, int64_t end,
                         const kernels::AdamWStep& step);
    double (*sum_of_squares)(const float* g, int64_t begin, int64_t end);
};

// The loops of kernels::active_isa(). An op takes the table once, before its parallel region.
const VectorLoops& vector_loops();
// The loops of one instruction set, for the tests; throws if this CPU cannot run it.
const VectorLoops& vector_loops(kernels::Isa isa);

// The tables themselves (vector_loops_<isa>.cpp; the AVX ones exist in x86-64 builds only). Only
// vector_loops(isa) should hand them out: it checks the CPU first.
extern const VectorLoops vector_loops_portable, vector_loops_avx2, vector_loops_avx512;

// softmax_avx512.cpp's rows, in the AVX-512 table.
RowStats softmax_row_avx512(const float* x, float factor, int64_t n, float* y);
void softmax_backward_row_avx512(const float* y, const float* dy, float factor, int64_t n, float* dx, bool overwrite);
void exp_shifted_row_avx512(const float* s, float factor, float shift, int64_t n, float* p);

}  // namespace autograd::detail
