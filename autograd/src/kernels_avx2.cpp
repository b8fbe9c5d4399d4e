// The gemm micro-kernel for AVX2 + FMA (compiled with -mavx2 -mfma; called only when the CPU has them).
// Register tile 6 x 16: 12 ymm accumulators, two ymm of B and one broadcast of A per k. The small-product
// path (gemm_small.h) uses vmaskmovps for the last, partial vector of a row.
#include <immintrin.h>

#include "gemm_bf16.h"
#include "gemm_blocked.h"
#include "gemm_small.h"
#include "kernels_isa.h"

namespace autograd::kernels::detail {
namespace {

// MR x 16 tile: A element (r, k) at a[r * rs + k * cs], B row k at b + k * ldb; C = acc or C += acc.
template <int64_t MR>
__attribute__((always_inline)) inline void tile_256(int64_t kb, const float* __restrict a, int64_t rs, int64_t cs,
                                                    const float* __restrict b, int64_t ldb, float* __restrict c,
                                                    int64_t ldc, bool overwrite) {
    __m256 lo[MR], hi[MR];
    for (int64_t r = 0; r < MR; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
    for (int64_t k = 0; k < kb; ++k) {
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        for (int64_t r = 0; r < MR; ++r) {
            const __m256 av = _mm256_broadcast_ss(a + r * rs);
            lo[r] = _mm256_fmadd_ps(av, b0, lo[r]);
            hi[r] = _mm256_fmadd_ps(av, b1, hi[r]);
        }
        a += cs;
        b += ldb;
    }
    for (int64_t r = 0; r < MR; ++r) {
        float* cr = c + r * ldc;
        if (overwrite) {
            _mm256_storeu_ps(cr, lo[r]);
            _mm256_storeu_ps(cr + 8, hi[r]);
        } else {
            _mm256_storeu_ps(cr, _mm256_add_ps(_mm256_loadu_ps(cr), lo[r]));
            _mm256_storeu_ps(cr + 8, _mm256_add_ps(_mm256_loadu_ps(cr + 8), hi[r]));
        }
    }
}

struct Avx2 {
    static constexpr int64_t MR = 6, NR = 16, KC = 256, NC = 1024;
    static constexpr bool kInPlace = true;
    // A element (r, k) at a[r * rs + k * cs] with cs == 1 (rows of A) or rs == 1 (packed, or A transposed);
    // B row k at b + k * ldb.
    static void tile(int64_t kb, const float* a, int64_t rs, int64_t cs, const float* b, int64_t ldb, float* c,
                     int64_t ldc, bool overwrite, int64_t) {
        if (cs == 1) tile_256<MR>(kb, a, rs, 1, b, ldb, c, ldc, overwrite);
        else tile_256<MR>(kb, a, 1, cs, b, ldb, c, ldc, overwrite);
    }
};

// 8 floats per vector, partial vectors through vmaskmovps (lane i is on when mask lane i is negative).
struct Vec256 {
    using reg = __m256;
    using mask = __m256i;
    static constexpr int64_t W = 8, kAccumulators = 12, kMaxVectors = 3, kMaxRows = 8;
    static constexpr bool kFreeMasks = false;
    static mask mask_first(int64_t n) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static reg zero() { return _mm256_setzero_ps(); }
    static reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    static reg load(const float* p) { return _mm256_loadu_ps(p); }
    static reg load(const float* p, mask m) { return _mm256_maskload_ps(p, m); }
    static void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
    static void store(float* p, reg v, mask m) { _mm256_maskstore_ps(p, m, v); }
    static reg fma(reg a, reg b, reg acc) { return _mm256_fmadd_ps(a, b, acc); }
    static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
};

// The bf16 gemm's arithmetic for AVX2: its pairs widened to floats (gemm_bf16.h WidenedPairs).
struct Widen256 {
    using reg = __m256;
    using words = __m256i;
    static constexpr int64_t W = 8;
    static reg zero() { return _mm256_setzero_ps(); }
    static reg load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
    static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
    static reg fma(reg a, reg b, reg acc) { return _mm256_fmadd_ps(a, b, acc); }
    static words load_words(const uint32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
    static float add_lanes(const reg* acc) {  // lanes 0..7 in acc[0], 8..15 in acc[1] (gemm_bf16.h add_lanes)
        const __m256 t = _mm256_add_ps(acc[0], acc[1]);                                 // l + (l + 8)
        __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));  // + 4
        u = _mm_add_ps(u, _mm_movehl_ps(u, u));                                         // + 2
        u = _mm_add_ss(u, _mm_shuffle_ps(u, u, 1));                                     // + 1
        return _mm_cvtss_f32(u);
    }
    static words load_halves(const uint16_t* p) {
        return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static words broadcast_word(uint32_t w) { return _mm256_set1_epi32(static_cast<int>(w)); }
    static reg as_floats(words w) { return _mm256_castsi256_ps(w); }
    static reg even(words w) { return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)); }
    static reg odd(words w) {
        return _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
    }
};
using Avx2Bf16Widened = Bf16Tiles<WidenedPairs<Widen256>, 4, 2>;

}  // namespace

int64_t gemm_workspace_avx2(int threads) { return workspace_floats<Avx2>(threads); }
void gemm_avx2(const GemmArgs& g) { gemm_blocked<Avx2, Vec256>(g); }
void gemm_small_avx2(const GemmArgs& g) { gemm_small<Vec256>(g, Avx2::KC); }
void dot_rows_avx2(const GemmArgs& g, int64_t begin, int64_t end) { dot_rows_range<Vec256>(g, begin, end); }
int64_t gemm_bf16_workspace_avx2(int threads, int64_t K, int64_t N) {
    return bf16_workspace_words<Avx2Bf16Widened>(threads, K, N);
}
void gemm_bf16_avx2(const Bf16Args& g) { gemm_bf16_product<Avx2Bf16Widened>(g); }

}  // namespace autograd::kernels::detail
