// The gemm micro-kernel for AVX-512 (compiled with -mavx512f -mfma; called only when the CPU has them).
// Register tile 12 x 32: 24 zmm accumulators, two zmm of B and one broadcast of A per k (16 columns, one
// zmm, for narrow edge tiles). The small-product path (gemm_small.h) uses masked zmm loads and stores.
#include <immintrin.h>

// gcc 12's avx512fintrin.h starts shifts from a self-initialized "undefined" vector, which
// -Wmaybe-uninitialized reports at each use (as in softmax_avx512.cpp); the vectors are fully written.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "gemm_bf16.h"
#include "gemm_blocked.h"
#include "gemm_small.h"
#include "kernels_isa.h"

namespace autograd::kernels::detail {
namespace {

// MR x 32 tile (x 16 with kHalf): A element (r, k) at a[r * rs + k * cs], B row k at b + k * ldb;
// C = acc or C += acc.
template <int64_t MR, bool kHalf = false>
__attribute__((always_inline)) inline void tile_512(int64_t kb, const float* __restrict a, int64_t rs, int64_t cs,
                                                    const float* __restrict b, int64_t ldb, float* __restrict c,
                                                    int64_t ldc, bool overwrite) {
    // Row r of A from one of MR/3 bases three rows apart, at base[r / 3][(r % 3) * rs]: x86 addresses
    // those as [base], [base + rs*4] and [base + rs*8] with rs in one register, where MR row pointers
    // into A read in place would not fit the general registers beside the loop's own (gcc spilled them
    // inside the loop: 7% of a 768x512x128 product).
    static_assert(MR % 3 == 0);
    const float* base[MR / 3];
    for (int64_t g = 0; g < MR / 3; ++g) base[g] = a + 3 * g * rs;
    __m512 lo[MR], hi[MR];
    for (int64_t r = 0; r < MR; ++r) lo[r] = hi[r] = _mm512_setzero_ps();
    for (int64_t k = 0; k < kb; ++k) {
        const __m512 b0 = _mm512_loadu_ps(b), b1 = kHalf ? b0 : _mm512_loadu_ps(b + 16);
        for (int64_t r = 0; r < MR; ++r) {
            const __m512 av = _mm512_set1_ps(base[r / 3][(r % 3) * rs]);
            lo[r] = _mm512_fmadd_ps(av, b0, lo[r]);
            if (!kHalf) hi[r] = _mm512_fmadd_ps(av, b1, hi[r]);
        }
        for (const float*& row : base) row += cs;
        b += ldb;
    }
    for (int64_t r = 0; r < MR; ++r) {
        float* cr = c + r * ldc;
        if (overwrite) {
            _mm512_storeu_ps(cr, lo[r]);
            if (!kHalf) _mm512_storeu_ps(cr + 16, hi[r]);
        } else {
            _mm512_storeu_ps(cr, _mm512_add_ps(_mm512_loadu_ps(cr), lo[r]));
            if (!kHalf) _mm512_storeu_ps(cr + 16, _mm512_add_ps(_mm512_loadu_ps(cr + 16), hi[r]));
        }
    }
}

struct Avx512 {
    static constexpr int64_t MR = 12, NR = 32, KC = 384, NC = 512;
    static constexpr bool kInPlace = true;
    // A element (r, k) at a[r * rs + k * cs] with cs == 1 (rows of A) or rs == 1 (packed, or A transposed);
    // B row k at b + k * ldb. Computes NR columns, or only NR/2 when nb <= NR/2 (the edge tiles).
    static void tile(int64_t kb, const float* a, int64_t rs, int64_t cs, const float* b, int64_t ldb, float* c,
                     int64_t ldc, bool overwrite, int64_t nb) {
        if (nb <= NR / 2) {
            if (cs == 1) tile_512<MR, true>(kb, a, rs, 1, b, ldb, c, ldc, overwrite);
            else tile_512<MR, true>(kb, a, 1, cs, b, ldb, c, ldc, overwrite);
        } else {
            if (cs == 1) tile_512<MR>(kb, a, rs, 1, b, ldb, c, ldc, overwrite);
            else tile_512<MR>(kb, a, 1, cs, b, ldb, c, ldc, overwrite);
        }
    }
};

// Vec512::copy_transposed's permute indices for step s (b = 8 >> s): the new lanes of the upper row i
// and of the lower row i + b of a pair, as indices into (upper, lower) (16 + l is lane l of the lower).
// A plain array, not std::array: no standard library code in a per-ISA unit (vector_loops_impl.h).
struct TransposeIndices {
    int32_t index[4][16];
};
constexpr TransposeIndices transpose_indices(bool upper) {
    TransposeIndices t{};
    auto& index = t.index;
    for (int step = 0; step < 4; ++step)
        for (int b = 8 >> step, l = 0; l < 16; ++l)
            index[step][l] = upper ? ((l & b) ? 16 + l - b : l) : ((l & b) ? 16 + l : l + b);
    return t;
}
alignas(64) constexpr auto kTransposeLow = transpose_indices(true);
alignas(64) constexpr auto kTransposeHigh = transpose_indices(false);

// 16 floats per vector, partial vectors through lane masks.
struct Vec512 {
    using reg = __m512;
    using mask = __mmask16;
    static constexpr int64_t W = 16, kAccumulators = 24, kMaxVectors = 4, kMaxRows = 8;
    static constexpr bool kFreeMasks = true;
    static mask mask_first(int64_t n) { return static_cast<mask>((1u << n) - 1); }
    static reg zero() { return _mm512_setzero_ps(); }
    static reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
    static reg load(const float* p) { return _mm512_loadu_ps(p); }
    static reg load(const float* p, mask m) { return _mm512_maskz_loadu_ps(m, p); }
    static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
    static void store(float* p, reg v, mask m) { _mm512_mask_storeu_ps(p, m, v); }
    static reg fma(reg a, reg b, reg acc) { return _mm512_fmadd_ps(a, b, acc); }
    static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }

    // Rows [0, k) of t (K, N) = B (N, K) transposed, both row-major; returns k, the rest is left to the
    // caller's element-by-element copy (N < 8, where that is as fast, and the last K % 8 rows when N = 8).
    // 16 x 16 blocks are transposed in registers, each in four steps that swap the off-diagonal b x b
    // blocks of every 2b x 2b block (b = 8, 4, 2, 1): 64 two-source permutes where the element-by-element
    // copy took 512 scalar loads and stores. Exactly 8 columns go as 8 x 8 blocks of 256-bit registers
    // (24 shuffles each).
    static int64_t copy_transposed(const float* B, int64_t N, int64_t K, float* t) {
        if (N < 8) return 0;
        if (N == 8) {
            int64_t k0 = 0;
            for (; k0 + 8 <= K; k0 += 8) transpose_8x8(B + k0, K, t + k0 * 8);
            return k0;
        }
        for (int64_t j0 = 0; j0 < N; j0 += W)
            for (int64_t k0 = 0; k0 < K; k0 += W) {
                const int64_t rows = min_i64(W, N - j0), cols = min_i64(W, K - k0);
                const mask in = mask_first(cols), out = mask_first(rows);
                __m512 r[16];
                for (int64_t i = 0; i < 16; ++i)
                    r[i] = i < rows ? _mm512_maskz_loadu_ps(in, B + (j0 + i) * K + k0) : _mm512_setzero_ps();
                for (int step = 0; step < 4; ++step) {
                    const int b = 8 >> step;
                    const __m512i lo = _mm512_load_si512(kTransposeLow.index[step]);
                    const __m512i hi = _mm512_load_si512(kTransposeHigh.index[step]);
                    for (int i = 0; i < 16; ++i)
                        if ((i & b) == 0) {
                            const __m512 top = r[i], bottom = r[i + b];
                            r[i] = _mm512_permutex2var_ps(top, lo, bottom);
                            r[i + b] = _mm512_permutex2var_ps(top, hi, bottom);
                        }
                }
                for (int64_t k = 0; k < cols; ++k) _mm512_mask_storeu_ps(t + (k0 + k) * N + j0, out, r[k]);
            }
        return K;
    }

private:
    // t (8, 8) with row stride 8 = the 8 x 8 block at b (row stride ldb), transposed.
    static void transpose_8x8(const float* b, int64_t ldb, float* t) {
        __m256 r[8], u[8];
        for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(b + i * ldb);
        for (int i = 0; i < 8; i += 2) {  // u[i] = r[i], r[i+1] interleaved: (a_i0 a_i+1,0 a_i1 a_i+1,1 | ..4, ..5)
            u[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
            u[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
        }
        for (int i = 0; i < 8; i += 4) {  // r[i + c] = rows i..i+3 of columns c and c + 4, c = 0..3
            r[i] = _mm256_shuffle_ps(u[i], u[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
            r[i + 1] = _mm256_shuffle_ps(u[i], u[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
            r[i + 2] = _mm256_shuffle_ps(u[i + 1], u[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
            r[i + 3] = _mm256_shuffle_ps(u[i + 1], u[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
        }
        for (int c = 0; c < 4; ++c) {  // column c from the low halves of rows 0..3 and 4..7, column c + 4 the high
            _mm256_storeu_ps(t + c * 8, _mm256_permute2f128_ps(r[c], r[c + 4], 0x20));
            _mm256_storeu_ps(t + (c + 4) * 8, _mm256_permute2f128_ps(r[c], r[c + 4], 0x31));
        }
    }
};

// The bf16 gemm's arithmetic without AVX512_BF16: its pairs widened to floats (gemm_bf16.h WidenedPairs).
struct Widen512 {
    using reg = __m512;
    using words = __m512i;
    static constexpr int64_t W = 16;
    static reg zero() { return _mm512_setzero_ps(); }
    static reg load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
    static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
    static reg fma(reg a, reg b, reg acc) { return _mm512_fmadd_ps(a, b, acc); }
    static words load_words(const uint32_t* p) { return _mm512_loadu_si512(p); }
    static float add_lanes(const reg* acc) {  // l + (l + 8), then + 4, + 2, + 1 (gemm_bf16.h add_lanes)
        reg t = _mm512_add_ps(acc[0], _mm512_shuffle_f32x4(acc[0], acc[0], 0xee));
        t = _mm512_add_ps(t, _mm512_shuffle_f32x4(t, t, 0x01));
        t = _mm512_add_ps(t, _mm512_permute_ps(t, 0x0e));
        t = _mm512_add_ps(t, _mm512_permute_ps(t, 0x01));
        return _mm512_cvtss_f32(t);
    }
    static words load_halves(const uint16_t* p) {
        return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static words broadcast_word(uint32_t w) { return _mm512_set1_epi32(static_cast<int>(w)); }
    static reg as_floats(words w) { return _mm512_castsi512_ps(w); }
    static reg even(words w) { return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)); }
    static reg odd(words w) {
        return _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
    }
};
using Avx512Bf16Widened = Bf16Tiles<WidenedPairs<Widen512>, 12, 2>;

}  // namespace

int64_t gemm_workspace_avx512(int threads) { return workspace_floats<Avx512>(threads); }
void gemm_avx512(const GemmArgs& g) { gemm_blocked<Avx512, Vec512>(g); }
void gemm_small_avx512(const GemmArgs& g) { gemm_small<Vec512>(g, Avx512::KC); }
void dot_rows_avx512(const GemmArgs& g, int64_t begin, int64_t end) { dot_rows_range<Vec512>(g, begin, end); }
int64_t gemm_bf16_workspace_avx512(int threads, int64_t K, int64_t N) {
    return bf16_workspace_words<Avx512Bf16Widened>(threads, K, N);
}
void gemm_bf16_avx512(const Bf16Args& g) { gemm_bf16_product<Avx512Bf16Widened>(g); }

}  // namespace autograd::kernels::detail
