// The softmax rows (and causal_attention's exp row) of vector_loops.h's AVX-512 table (compiled with
// -mavx512f -mfma; called only when the CPU has it): 16 values per vector, the last vector of a row
// through a lane mask. The steps are the portable row's (vector_loops_impl.h, fast_math.h) in the same
// order: the max over order-preserving integer keys, and sum_in_double's reduction (8 double lanes over
// whole blocks of 8, combined pairwise, then the rest added in order). Only exp differs, by its fused
// multiply-adds.
#include <immintrin.h>

// gcc 12's avx512fintrin.h starts shifts, extracts and conversions from a self-initialized "undefined"
// vector, which -Wuninitialized reports at each use; the vectors are fully written.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "fast_math.h"
#include "vector_loops.h"

namespace autograd::detail {
namespace {

constexpr int64_t W = 16;  // floats per vector

__mmask16 first_lanes(int64_t n) { return n >= W ? __mmask16(0xffff) : static_cast<__mmask16>((1u << n) - 1); }

// exp on 16 lanes: fast_exp's range reduction and polynomial, with fused multiply-adds (17 operations
// instead of 36) and vscalefps for the 2^n, which rounds into subnormals and overflows to inf by itself.
// NaN stays NaN; -inf and x < -104 give 0.
__m512 exp16(__m512 x) {
    const __m512 kMax = _mm512_set1_ps(88.72283905206835f), kMin = _mm512_set1_ps(-104.0f);
    const __mmask16 above = _mm512_cmp_ps_mask(x, kMax, _CMP_GT_OQ);
    const __m512 xc = _mm512_min_ps(kMax, _mm512_max_ps(kMin, x));  // NaN in the second operand passes
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 r =
        _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc));
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    constexpr float kCoefficients[] = {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                                       5.0000001201e-1f};  // (an array: an initializer_list is library code)
    for (const float c : kCoefficients) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
    p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    return _mm512_mask_blend_ps(above, _mm512_scalef_ps(p, n), _mm512_set1_ps(__builtin_inff()));
}

// ordered_bits on 16 lanes.
__m512i ordered_keys(__m512 v) {
    const __m512i bits = _mm512_castps_si512(v);
    return _mm512_xor_si512(bits, _mm512_and_si512(_mm512_srai_epi32(bits, 31), _mm512_set1_epi32(0x7fffffff)));
}

// sum_in_double over a row whose values arrive 16 at a time: add(v, at) takes the floats at [at, at + 16)
// (those past the row's end are ignored), total() gives the sum.
class RowSum {
public:
    explicit RowSum(int64_t n) : n_(n) {}
    void add(__m512d lo, __m512d hi, int64_t at) {  // values at..at+7 and at+8..at+15, as doubles
        const int64_t rest = n_ - at;
        if (rest >= 8) lanes_ = _mm512_add_pd(lanes_, lo);
        if (rest >= 16) lanes_ = _mm512_add_pd(lanes_, hi);
        if (rest < 16) _mm512_storeu_pd(tail_, rest >= 8 ? hi : lo);  // the last rest % 8, added in order
    }
    double total() const {
        double sum = 0.0;
        if (n_ >= 8) {
            const __m256d half = _mm256_add_pd(_mm512_castpd512_pd256(lanes_), _mm512_extractf64x4_pd(lanes_, 1));
            const __m128d quarter = _mm_add_pd(_mm256_castpd256_pd128(half), _mm256_extractf128_pd(half, 1));
            sum = _mm_cvtsd_f64(quarter) + _mm_cvtsd_f64(_mm_unpackhi_pd(quarter, quarter));
        }
        for (int64_t k = 0; k < n_ % 8; ++k) sum += tail_[k];
        return sum;
    }

private:
    int64_t n_;
    __m512d lanes_ = _mm512_setzero_pd();
    alignas(64) double tail_[8] = {};
};

__m512d low_as_double(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
__m512d high_as_double(__m512 v) {
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

}  // namespace

RowStats softmax_row_avx512(const float* x, float factor, int64_t n, float* y) {
    const __m512 f = _mm512_set1_ps(factor);
    __m512i best = _mm512_set1_epi32(ordered_bits(-__builtin_inff()));
    for (int64_t k = 0; k < n; k += W) {
        const __mmask16 m = first_lanes(n - k);
        best = _mm512_mask_max_epi32(best, m, best, ordered_keys(_mm512_mul_ps(f, _mm512_maskz_loadu_ps(m, x + k))));
    }
    const float max = from_ordered_bits(_mm512_reduce_max_epi32(best));
    if (max == -__builtin_inff()) {
        for (int64_t k = 0; k < n; ++k) y[k] = 0.0f;  // (no std::fill_n: see vector_loops_impl.h)
        return RowStats{max, 0.0};
    }
    const __m512 shift = _mm512_set1_ps(max);
    RowSum sum(n);
    __m512 e = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; k += W) {
        const __mmask16 m = first_lanes(n - k);
        e = exp16(_mm512_sub_ps(_mm512_mul_ps(f, _mm512_maskz_loadu_ps(m, x + k)), shift));
        sum.add(low_as_double(e), high_as_double(e), k);
        if (n > W) _mm512_mask_storeu_ps(y + k, m, e);
    }
    const double sum_exp = sum.total();
    const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum_exp));
    if (n <= W) {  // one vector: still in a register
        _mm512_mask_storeu_ps(y, first_lanes(n), _mm512_mul_ps(e, inv));
    } else {
        for (int64_t k = 0; k < n; k += W) {
            const __mmask16 m = first_lanes(n - k);
            _mm512_mask_storeu_ps(y + k, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + k), inv));
        }
    }
    return RowStats{max, sum_exp};
}

void softmax_backward_row_avx512(const float* y, const float* dy, float factor, int64_t n, float* dx, bool overwrite) {
    RowSum sum(n);
    for (int64_t k = 0; k < n; k += W) {
        const __mmask16 m = first_lanes(n - k);
        const __m512 yv = _mm512_maskz_loadu_ps(m, y + k), dyv = _mm512_maskz_loadu_ps(m, dy + k);
        sum.add(_mm512_mul_pd(low_as_double(dyv), low_as_double(yv)),
                _mm512_mul_pd(high_as_double(dyv), high_as_double(yv)), k);
    }
    const __m512 d = _mm512_set1_ps(static_cast<float>(sum.total())), f = _mm512_set1_ps(factor);
    for (int64_t k = 0; k < n; k += W) {
        const __mmask16 m = first_lanes(n - k);
        const __m512 yv = _mm512_maskz_loadu_ps(m, y + k), dyv = _mm512_maskz_loadu_ps(m, dy + k);
        __m512 v = _mm512_mul_ps(f, _mm512_mul_ps(yv, _mm512_sub_ps(dyv, d)));
        if (!overwrite) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, dx + k), v);
        _mm512_mask_storeu_ps(dx + k, m, v);
    }
}

void exp_shifted_row_avx512(const float* s, float factor, float shift, int64_t n, float* p) {
    const __m512 f = _mm512_set1_ps(factor), c = _mm512_set1_ps(shift);
    for (int64_t k = 0; k < n; k += W) {
        const __mmask16 m = first_lanes(n - k);
        _mm512_mask_storeu_ps(p + k, m, exp16(_mm512_sub_ps(_mm512_mul_ps(f, _mm512_maskz_loadu_ps(m, s + k)), c)));
    }
}

}  // namespace autograd::detail
