// exp and erf for float32 loops, written so gcc vectorizes them at -O2/-O3: straight-line arithmetic,
// bit casts and selects, no libm call and no branch. The ops' hot loops (gelu, softmax, cross_entropy,
// causal_softmax) call these instead of std::exp/std::erf, which are scalar calls gcc cannot vectorize.
//
// Accuracy (tests/test_fused.cpp sweeps them densely against std::exp/std::erf):
//   fast_exp: relative error < 1e-7 (about 1 ulp) where the result is a normal float; 0 for x < -104
//             (results there are below the smallest subnormal anyway); exp(-inf) = 0, exp(+inf) and
//             exp(x > 88.72) = +inf, exp(NaN) = NaN.
//   fast_erf: absolute error < 1e-7 everywhere (erf(+-inf) = +-1), NaN stays NaN.
//
// Included by the per-instruction-set units (vector_loops_impl.h, softmax_avx512.cpp) as well as by
// baseline ones, so everything here has internal linkage (an anonymous namespace) and calls no function
// of the standard library (bit casts and infinity are compiler builtins): each unit keeps its own copy,
// compiled with its own flags.
#pragma once

#include <cstdint>

namespace autograd::detail {
namespace {

template <class To, class From>
inline To bit_cast(From from) {
    return __builtin_bit_cast(To, from);
}
constexpr float kInfinity = __builtin_inff();

// cond ? a : b on the bits. Written as ?: (or std::clamp), gcc 12 keeps a branch whose comparison
// it may not hoist (a float comparison can trap on NaN), and then does not vectorize the loop.
inline float select(bool cond, float a, float b) {
    const uint32_t m = -static_cast<uint32_t>(cond);
    return bit_cast<float>((bit_cast<uint32_t>(a) & m) | (bit_cast<uint32_t>(b) & ~m));
}
// NaN needs no test anywhere below: every comparison with it is false, so it passes through clamp()
// and the arithmetic and comes out NaN.
inline float clamp(float x, float lo, float hi) { return select(x < lo, lo, select(x > hi, hi, x)); }

// Cephes expf: exp(x) = 2^n * exp(r), n = round(x / ln 2), |r| <= ln(2) / 2, with exp(r) a degree-7
// polynomial. ln 2 is split in two (Cody-Waite) so r = x - n ln 2 is exact to float precision.
inline float fast_exp(float x) {
    constexpr float kMax = 88.72283905206835f;  // ln(FLT_MAX): above, the result is inf
    constexpr float kMin = -104.0f;             // below, exp(x) < 2^-150 rounds to 0
    constexpr float kLog2e = 1.44269504088896341f;
    constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
    constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
    const float xc = clamp(x, kMin, kMax);
    const float shifted = xc * kLog2e + kRound;
    const float n = shifted - kRound;  // round-to-nearest of x / ln 2, as a float
    const int32_t ni = bit_cast<int32_t>(shifted) - bit_cast<int32_t>(kRound);  // the same, as an int
    const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    // 2^n in two halves, each a normal float: n reaches 128 near kMax and -150 near kMin, beyond the
    // exponent field of one float, while the product rounds correctly into inf or subnormals.
    const int32_t n1 = ni >> 1, n2 = ni - n1;
    const float y = p * bit_cast<float>((n1 + 127) << 23) * bit_cast<float>((n2 + 127) << 23);
    return select(x < kMin, 0.0f, select(x > kMax, kInfinity, y));
}

// erf as x * P(x^2) / Q(x^2) on [-4, 4] (the rational minimax fit Eigen and XLA use); outside it
// erf rounds to +-1 in float32. Evaluated in double: in float the rounding of P and Q reaches 4.5e-7
// near |x| = 3, in double the error is the fit's own (< 1e-7), and the loop still vectorizes.
inline float fast_erf(float x) {
    const double xc = clamp(x, -4.0f, 4.0f);
    const double x2 = xc * xc;
    double p = -2.72614225801306e-10;
    p = p * x2 + 2.77068142495902e-08;
    p = p * x2 - 2.10102402082508e-06;
    p = p * x2 - 5.69250639462346e-05;
    p = p * x2 - 7.34990630326855e-04;
    p = p * x2 - 2.95459980854025e-03;
    p = p * x2 - 1.60960333262415e-02;
    double q = -1.45660718464996e-05;
    q = q * x2 - 2.13374055278905e-04;
    q = q * x2 - 1.68282697438203e-03;
    q = q * x2 - 7.37332916720468e-03;
    q = q * x2 - 1.42647390514189e-02;
    return static_cast<float>(xc * p / q);
}

// dst[k] = value(k) (overwrite: a fresh gradient, GradContext::grad_target) or dst[k] += value(k), for k in
// [begin, end). Two loops: with the test inside one, gcc does not vectorize it.
template <typename Value>
inline void write_or_add(bool overwrite, int64_t begin, int64_t end, float* dst, Value value) {
    if (overwrite)
        for (int64_t k = begin; k < end; ++k) dst[k] = value(k);
    else
        for (int64_t k = begin; k < end; ++k) dst[k] += value(k);
}

// GELU's pieces: Phi(x) = (1 + erf(x / sqrt 2)) / 2, so gelu(x) = x * Phi(x), and its slope
// d/dx x Phi(x) = Phi(x) + x phi(x), given Phi(x). One spelling, for gelu and linear_gelu alike.
inline float normal_cdf(float x) { return 0.5f * (1.0f + fast_erf(x * 0.70710678118654752f)); }
inline float gelu_slope(float x, float cdf) { return cdf + x * 0.39894228040143268f * fast_exp(-0.5f * x * x); }

// GPT-2's GELU, the tanh approximation: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). As
// 0.5 (1 + tanh(u)) = sigmoid(2u) = s, it is x * s with no tanh call, and its slope is
// s + x s (1 - s) 2 du/dx (since 1 - tanh(u)^2 = 4 s (1 - s)). For large |x| exp(-2u) is 0 or inf, so
// s is 1 or 0 (no NaN). tests/test_fused.cpp checks both against std::tanh's formula.
inline float gelu_tanh_sigmoid(float x) {
    constexpr float kSqrt2OverPi = 0.79788456080286536f;
    const float u = kSqrt2OverPi * (x + 0.044715f * x * x * x);
    return 1.0f / (1.0f + fast_exp(-2.0f * u));
}
inline float gelu_tanh_slope(float x, float s) {
    constexpr float kSqrt2OverPi = 0.79788456080286536f;
    return s + x * s * (1.0f - s) * 2.0f * kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * x * x);
}

// SiLU, x * sigmoid(x) (Llama's gated MLP), and its slope s (1 + x (1 - s)) given s = sigmoid(x). Far
// left fast_exp(-x) is inf and s is 0: no NaN.
inline float sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }
inline float silu_slope(float x, float s) { return s * (1.0f + x * (1.0f - s)); }

// Reductions over a row, written as independent lanes combined in a fixed order at the end. A single
// running sum or max is a chain of dependent adds (4 cycles each) that gcc may not reorder, so it stays
// scalar; lanes vectorize, and their fixed order keeps the result the same on every run and thread count.
// The lanes are combined pairwise and the elements after the last full block added in order after them;
// a row shorter than the lanes (attention's first positions) skips them. `value(k)` gives element k.
template <typename Value>
inline double sum_in_double(int64_t n, Value value) {
    constexpr int64_t kLanes = 8;
    double total = 0.0;
    int64_t k = 0;
    if (n >= kLanes) {
        double lanes[kLanes] = {};
        for (; k + kLanes <= n; k += kLanes)
            for (int64_t j = 0; j < kLanes; ++j) lanes[j] += static_cast<double>(value(k + j));
#pragma GCC unroll 4
        for (int64_t width = kLanes / 2; width >= 1; width /= 2)
#pragma GCC unroll 8
            for (int64_t j = 0; j < width; ++j) lanes[j] += lanes[j + width];
        total = lanes[0];
    }
    for (; k < n; ++k) total += static_cast<double>(value(k));
    return total;
}

// A float's bits as an int that orders like the float (-0 just below +0, NaN above +inf): an integer
// max vectorizes, while a float max written as a ?: or std::max stays scalar (maxss's NaN rule). The
// mapping is its own inverse.
inline int32_t ordered_bits(float v) {
    const auto bits = bit_cast<int32_t>(v);
    return bits ^ ((bits >> 31) & 0x7fffffff);
}
inline float from_ordered_bits(int32_t key) { return bit_cast<float>(key ^ ((key >> 31) & 0x7fffffff)); }

template <typename Value>
inline float max_of(int64_t n, Value value) {
    constexpr int64_t kLanes = 16;
    const auto keep_larger = [](int32_t& best, int32_t v) { best = best < v ? v : best; };
    int32_t best = ordered_bits(-kInfinity);
    int64_t k = 0;
    if (n >= kLanes) {
        int32_t lanes[kLanes];
        for (int32_t& lane : lanes) lane = best;
        for (; k + kLanes <= n; k += kLanes)
            for (int64_t j = 0; j < kLanes; ++j) keep_larger(lanes[j], ordered_bits(value(k + j)));
#pragma GCC unroll 4
        for (int64_t width = kLanes / 2; width >= 1; width /= 2)
#pragma GCC unroll 8
            for (int64_t j = 0; j < width; ++j) keep_larger(lanes[j], lanes[j + width]);
        best = lanes[0];
    }
    for (; k < n; ++k) keep_larger(best, ordered_bits(value(k)));  // the rest, and short rows: a 1-cycle chain
    return from_ordered_bits(best);
}

}  // namespace
}  // namespace autograd::detail
