// The bf16 gemm's arithmetic for AVX512_BF16 (compiled with -mavx512f -mavx512bf16; called only when the
// CPU has both): vdpbf16ps, which sums 32 products where a float32 FMA sums 16. Tiles of 12 x 32: 24 zmm
// accumulators, per pair of k two zmm of B's pairs and one broadcast pair of A per row.
#include <immintrin.h>

#include "gemm_bf16.h"
#include "kernels_isa.h"

namespace autograd::kernels::detail {
namespace {

struct Dot512 {
    using reg = __m512;
    using Pairs = __m512bh;
    static constexpr int64_t W = 16;
    static reg zero() { return _mm512_setzero_ps(); }
    static reg load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
    static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
    static Pairs pairs(const uint32_t* words) { return (__m512bh)_mm512_loadu_si512(words); }
    static Pairs pairs(uint32_t word) { return (__m512bh)_mm512_set1_epi32(static_cast<int>(word)); }
    static reg dot(reg acc, Pairs a, Pairs b) { return _mm512_dpbf16_ps(acc, a, b); }
};
using Avx512Bf16 = Bf16Tiles<Dot512, 12, 2>;

}  // namespace

int64_t gemm_bf16_workspace_avx512bf16(int threads) { return bf16_workspace_words<Avx512Bf16>(threads); }
void gemm_bf16_avx512bf16(const Bf16Args& g) { gemm_bf16_product<Avx512Bf16>(g); }

}  // namespace autograd::kernels::detail
