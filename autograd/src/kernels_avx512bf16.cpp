// The bf16 gemm's arithmetic for AVX512_BF16 (compiled with -mavx512f -mavx512bf16; called only when the
// CPU has both): vdpbf16ps, which sums 32 products where a float32 FMA sums 16. Tiles of 12 x 32: 24 zmm
// accumulators, per pair of k two zmm of B's pairs and one broadcast pair of A per row.
#include <immintrin.h>

// (gcc 12's self-initialized "undefined" vectors: as in kernels_avx512.cpp)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "gemm_bf16.h"
#include "kernels_isa.h"

namespace autograd::kernels::detail {
namespace {

// The 16 lanes added: l + (l + 8), then + 4, + 2, + 1 (gemm_bf16.h add_lanes).
inline float add_lanes_512(__m512 t) {
    t = _mm512_add_ps(t, _mm512_shuffle_f32x4(t, t, 0xee));  // lanes 0..7 += 8..15
    t = _mm512_add_ps(t, _mm512_shuffle_f32x4(t, t, 0x01));  // 0..3 += 4..7
    t = _mm512_add_ps(t, _mm512_permute_ps(t, 0x0e));        // 0, 1 += 2, 3
    t = _mm512_add_ps(t, _mm512_permute_ps(t, 0x01));        // 0 += 1
    return _mm512_cvtss_f32(t);
}

struct Dot512 {
    using Layout = Words;
    using reg = __m512;
    using Pairs = __m512i;  // (32 bfloat16, as integers: clang 16 crashes converting them to __m512bh)
    static constexpr int64_t W = 16, kPairsInFlight = 16;  // (gemm_bf16.h bf16_few_rows)
    static reg zero() { return _mm512_setzero_ps(); }
    static reg load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
    static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
    static Pairs pairs(const uint32_t* words) { return _mm512_loadu_si512(words); }
    static Pairs pairs(uint32_t word) { return _mm512_set1_epi32(static_cast<int>(word)); }
    static reg dot(reg acc, Pairs a, Pairs b) {
#if defined(__clang__)
        // (clang 16 segfaults at -O1 and above on any integer vector converted to __m512bh for the intrinsic)
        __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
        return acc;
#else
        return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
#endif
    }
    template <int64_t P>
    static Pairs panel_pairs(const uint32_t* at) {
        return pairs(at);
    }
    template <int64_t P>
    static Pairs panel_pair(const uint32_t* at) {
        return pairs(*at);
    }
    static float add_lanes(const reg* acc) { return add_lanes_512(acc[0]); }
    static Pairs pairs_of_rows(const uint16_t* even, const uint16_t* odd) {
        const __m512i low = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(even)));
        const __m512i high = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(odd)));
        return _mm512_or_si512(low, _mm512_slli_epi32(high, 16));
    }
};
using Avx512Bf16 = Bf16Tiles<Dot512, 12, 2>;

}  // namespace

int64_t gemm_bf16_workspace_avx512bf16(int threads, int64_t K, int64_t N) {
    return bf16_workspace_words<Avx512Bf16>(threads, K, N);
}
void gemm_bf16_avx512bf16(const Bf16Args& g) { gemm_bf16_product<Avx512Bf16>(g); }

}  // namespace autograd::kernels::detail
