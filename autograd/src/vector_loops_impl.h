// The source of the loops in vector_loops.h, included by one translation unit per instruction set
// (vector_loops_portable.cpp, _avx2.cpp, _avx512.cpp), each compiled with its own flags. Everything here,
// and in fast_math.h, has internal linkage (an anonymous namespace), and nothing here calls into the
// standard library (square roots are compiler builtins): each unit keeps its own copy of every function it uses, so the linker can never hand
// a baseline caller the copy compiled for AVX-512 (it keeps one copy of an inline function, any one).
// tests/isa_symbols checks that the per-ISA objects define no such shared symbol.
#pragma once

#include <cstdint>

#include "fast_math.h"
#include "vector_loops.h"

namespace autograd::detail {
namespace {

// gelu(x) = x * Phi(x);  d/dx = Phi(x) + x * phi(x) (fast_math.h: std::erf is a scalar libm call that
// keeps the loop from vectorizing). nn's FeedForward uses linear_gelu, which keeps the slope instead.
void gelu_forward(const float* x, float* y, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] * normal_cdf(x[i]);
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t begin, int64_t end, bool overwrite) {
    write_or_add(overwrite, begin, end, dx, [&](int64_t i) { return dy[i] * gelu_slope(x[i], normal_cdf(x[i])); });
}

// (two loops: with the test inside, gcc does not vectorize it)
void gelu_in_place(float* __restrict y, float* __restrict slope, int64_t begin, int64_t end) {
    if (slope == nullptr) {
        for (int64_t i = begin; i < end; ++i) y[i] = y[i] * normal_cdf(y[i]);
        return;
    }
    for (int64_t i = begin; i < end; ++i) {
        const float pre = y[i], cdf = normal_cdf(pre);
        slope[i] = gelu_slope(pre, cdf);
        y[i] = pre * cdf;
    }
}

// GPT-2's GELU (fast_math.h: x * sigmoid(2u), no tanh call), in the three shapes above.
void gelu_tanh_forward(const float* x, float* y, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] * gelu_tanh_sigmoid(x[i]);
}

void gelu_tanh_backward(const float* x, const float* dy, float* dx, int64_t begin, int64_t end, bool overwrite) {
    write_or_add(overwrite, begin, end, dx,
                 [&](int64_t i) { return dy[i] * gelu_tanh_slope(x[i], gelu_tanh_sigmoid(x[i])); });
}

// SiLU (fast_math.h), for silu.
void silu_forward(const float* x, float* y, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] * sigmoid(x[i]);
}

void silu_backward(const float* x, const float* dy, float* dx, int64_t begin, int64_t end, bool overwrite) {
    write_or_add(overwrite, begin, end, dx, [&](int64_t i) { return dy[i] * silu_slope(x[i], sigmoid(x[i])); });
}

void gelu_tanh_in_place(float* __restrict y, float* __restrict slope, int64_t begin, int64_t end) {
    if (slope == nullptr) {
        for (int64_t i = begin; i < end; ++i) y[i] = y[i] * gelu_tanh_sigmoid(y[i]);
        return;
    }
    for (int64_t i = begin; i < end; ++i) {
        const float pre = y[i], s = gelu_tanh_sigmoid(pre);
        slope[i] = gelu_tanh_slope(pre, s);
        y[i] = pre * s;
    }
}

void times_slope(const float* dy, const float* slope, float* dpre, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) dpre[i] = dy[i] * slope[i];
}

void normalize_rows(const float* x, const float* gain, const float* bias, int64_t C, float eps, int64_t begin,
                    int64_t end, float* y, float* mean, float* rstd) {
    for (int64_t r = begin; r < end; ++r) {
        const float* row = x + r * C;
        const auto m = static_cast<float>(sum_in_double(C, [&](int64_t c) { return row[c]; }) / static_cast<double>(C));
        // two passes: the one-pass E[x^2] - E[x]^2 cancels for large means
        const double squares = sum_in_double(C, [&](int64_t c) { return double(row[c] - m) * (row[c] - m); });
        const auto s = static_cast<float>(1.0 / __builtin_sqrt(squares / static_cast<double>(C) + eps));
        mean[r] = m;
        rstd[r] = s;
        for (int64_t c = 0; c < C; ++c) y[r * C + c] = (row[c] - m) * s * gain[c] + bias[c];
    }
}

// with xhat = (x - mean) * rstd and dxhat = dy * gain
void input_gradient_rows(const float* x, const float* dy, const float* gain, const float* mean, const float* rstd,
                         int64_t C, int64_t begin, int64_t end, float* dx, bool overwrite) {
    for (int64_t r = begin; r < end; ++r) {
        const float *row = x + r * C, *dyr = dy + r * C;
        const float m = mean[r], s = rstd[r];
        const double sum_dxhat = sum_in_double(C, [&](int64_t c) { return dyr[c] * gain[c]; });
        const double sum_dxhat_xhat =
            sum_in_double(C, [&](int64_t c) { return double(dyr[c] * gain[c]) * ((row[c] - m) * s); });
        const auto mean_dxhat = static_cast<float>(sum_dxhat / static_cast<double>(C));
        const auto mean_dxhat_xhat = static_cast<float>(sum_dxhat_xhat / static_cast<double>(C));
        write_or_add(overwrite, 0, C, dx + r * C, [&](int64_t c) {
            return s * (dyr[c] * gain[c] - mean_dxhat - (row[c] - m) * s * mean_dxhat_xhat);
        });
    }
}

// (the AVX-512 unit uses its own rows instead)
[[maybe_unused]] RowStats softmax_row(const float* x, float factor, int64_t n, float* y) {
    const float max = max_of(n, [&](int64_t k) { return factor * x[k]; });
    if (max == -kInfinity) {
        for (int64_t k = 0; k < n; ++k) y[k] = 0.0f;
        return RowStats{max, 0.0};
    }
    for (int64_t k = 0; k < n; ++k) y[k] = fast_exp(factor * x[k] - max);
    const double sum_exp = sum_in_double(n, [&](int64_t k) { return y[k]; });
    const auto inv = static_cast<float>(1.0 / sum_exp);
    for (int64_t k = 0; k < n; ++k) y[k] *= inv;
    return RowStats{max, sum_exp};
}

[[maybe_unused]] void softmax_backward_row(const float* y, const float* dy, float factor, int64_t n, float* dx,
                                           bool overwrite) {
    const auto d = static_cast<float>(sum_in_double(n, [&](int64_t k) { return double(dy[k]) * y[k]; }));
    write_or_add(overwrite, 0, n, dx, [&](int64_t k) { return factor * (y[k] * (dy[k] - d)); });
}

// (the AVX-512 unit uses its own exp row instead)
[[maybe_unused]] void exp_shifted_row(const float* __restrict s, float factor, float shift, int64_t n,
                                      float* __restrict p) {
    for (int64_t k = 0; k < n; ++k) p[k] = fast_exp(factor * s[k] - shift);
}

void scores_gradient_row(const float* __restrict p, float d, float factor, int64_t n, float* __restrict dp) {
    for (int64_t k = 0; k < n; ++k) dp[k] = factor * (p[k] * (dp[k] - d));
}

// PyTorch's order of operations
void adamw_update(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
                  int64_t begin, int64_t end, const kernels::AdamWStep& step) {
    const kernels::AdamWStep s = step;  // a local copy: the stores through p, m and v cannot change it
    for (int64_t k = begin; k < end; ++k) {
        p[k] *= s.decay;
        m[k] = s.beta1 * m[k] + s.one_minus_beta1 * g[k];
        v[k] = s.beta2 * v[k] + s.one_minus_beta2 * g[k] * g[k];
        p[k] -= s.step_size * m[k] / (__builtin_sqrtf(v[k]) / s.bias_correction2_sqrt + s.eps);
    }
}

// In 8 lanes added in a fixed order at the end: one running sum would be a chain of dependent adds that
// stays scalar.
double sum_of_squares(const float* g, int64_t begin, int64_t end) {
    constexpr int64_t kLanes = 8;
    double lanes[kLanes] = {};
    int64_t k = begin;
    for (; k + kLanes <= end; k += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] += static_cast<double>(g[k + j]) * static_cast<double>(g[k + j]);
    double total = 0.0;
    for (const double lane : lanes) total += lane;
    for (; k < end; ++k) total += static_cast<double>(g[k]) * static_cast<double>(g[k]);
    return total;
}

// This unit's table, with the softmax rows given (the AVX-512 unit brings its own, and its exp row).
constexpr VectorLoops loops_with(decltype(VectorLoops::softmax_row) row,
                                 decltype(VectorLoops::softmax_backward_row) backward_row,
                                 decltype(VectorLoops::exp_shifted_row) exp_row = exp_shifted_row) {
    return {
        gelu_forward,       gelu_backward, gelu_in_place,       times_slope,    gelu_tanh_forward,   gelu_tanh_backward,
        gelu_tanh_in_place, silu_forward,  silu_backward,       normalize_rows, input_gradient_rows, row,
        backward_row,       exp_row,       scores_gradient_row, adamw_update,   sum_of_squares};
}

}  // namespace
}  // namespace autograd::detail
