// The gemm micro-kernel for AVX2 + FMA (compiled with -mavx2 -mfma; called only when the CPU has them).
// Register tile 6 x 16: 12 ymm accumulators, two ymm of B and one broadcast of A per k.
#include <immintrin.h>

#include "gemm_blocked.h"
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

}  // namespace

int64_t gemm_workspace_avx2(int threads) { return workspace_floats<Avx2>(threads); }
void gemm_avx2(const GemmArgs& g) { gemm_blocked<Avx2>(g); }

}  // namespace autograd::kernels::detail
