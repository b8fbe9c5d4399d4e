// The cache-blocked gemm driver shared by every instruction set (private to autograd/src).
//
// BLIS-style, for row-major C (M, N) = op(A) (M, K) @ op(B) (K, N):
//
// each thread takes a block of C (a range of MR-row panels, or of NR-column panels) and, within it:
//   for n0 in its columns by Kn::NC:             B block (KC, NC) lives in L2
//     for k0 in K by Kn::KC:
//       pack B (k0.., n0..) into NR-wide micro-panels [k][NR], zero-padded   (its own copy)
//       for each MR-row panel of A in its block:                             A micro-panel lives in L1
//         pack it [k][MR] (or read it in place when A is row-major and the panel is full)
//         for each B micro-panel: the MR x NR register tile, k = k0 .. k0 + KC in order
//   (a last panel of at most 4 columns, when A is transposed: column_strip_trans_a instead)
//
// Every transpose case is handled by the packing (no transposed copy of a whole operand); where a panel
// would be used only a few times, it is read in place instead of packed (see gemm_blocked_block), and
// the micro-kernel takes its strides. Each element of C is finished by one thread: its value is the
// KC-blocked sum "C = tile(k-block 0); C += tile(block 1) ..." (or "C += tile" per block when
// accumulating), with k in increasing order inside a block. Neither the split nor edge padding changes
// that sequence, so results are bit-identical for any thread count.
//
// This header is included by one translation unit per instruction set, each compiled with its own
// flags. Every function here has internal linkage (an anonymous namespace; the kernel types Kn and V
// each of those files defines are in one too), and nothing here calls into the standard library: the
// linker can never substitute one unit's AVX-512 copy for another's portable one.
#pragma once

#include <cstdint>

#include <omp.h>

namespace autograd::kernels::detail {

struct GemmArgs {
    bool trans_a, trans_b;
    int64_t M, N, K;
    const float* A;
    const float* B;
    float* C;
    bool accumulate;
    float* work;  // at least workspace_floats<Kn>(threads), 64-byte aligned
    int threads;
};

namespace {

// Each thread packs into its own B block and A panel.
template <class Kn>
constexpr int64_t workspace_floats(int threads) {
    return int64_t(threads) * (Kn::KC * Kn::NC + Kn::KC * Kn::MR);
}

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

// A micro-panel dst[k][P] (kb rows of P floats) of a strided matrix, zero-padded from column n on; both
// operands are packed by these two, with the roles of rows and columns as their storage has them.
// Rows k of the panel are n contiguous floats at src + k * stride (B as (K, N), A stored (K, M)).
template <int64_t P>
inline void pack_rows(const float* __restrict src, int64_t stride, int64_t kb, int64_t n, float* __restrict dst) {
    for (int64_t k = 0; k < kb; ++k) {
        float* __restrict d = dst + k * P;
        const float* __restrict s = src + k * stride;
        if (n == P)
            for (int64_t j = 0; j < P; ++j) d[j] = s[j];
        else {
            for (int64_t j = 0; j < n; ++j) d[j] = s[j];
            for (int64_t j = n; j < P; ++j) d[j] = 0.0f;
        }
    }
}
// Columns j of the panel are kb contiguous floats at src + j * stride (B stored (N, K), A as (M, K)).
template <int64_t P>
inline void pack_columns(const float* __restrict src, int64_t stride, int64_t kb, int64_t n, float* __restrict dst) {
    for (int64_t j = 0; j < n; ++j) {
        const float* __restrict s = src + j * stride;
        for (int64_t k = 0; k < kb; ++k) dst[k * P + j] = s[k];
    }
    for (int64_t j = n; j < P; ++j)
        for (int64_t k = 0; k < kb; ++k) dst[k * P + j] = 0.0f;
}

// B rows k0 .. k0+kb, columns j0 .. j0+nb (nb <= NR) as one micro-panel dst[k][NR], zero-padded.
// (The packers stay out of line: inlined into gemm_blocked_block, they made its tile loop 6% slower.)
template <class Kn>
__attribute__((noinline)) void pack_b_panel(const GemmArgs& g, int64_t k0, int64_t kb, int64_t j0, int64_t nb,
                                            float* __restrict dst) {
    if (g.trans_b) pack_columns<Kn::NR>(g.B + j0 * g.K + k0, g.K, kb, nb, dst);  // B stored (N, K)
    else pack_rows<Kn::NR>(g.B + k0 * g.N + j0, g.N, kb, nb, dst);               // B (K, N)
}

// op(A) rows i0 .. i0+mb (mb <= MR), k0 .. k0+kb, as dst[k][MR], zero-padded.
template <class Kn>
__attribute__((noinline)) void pack_a_panel(const GemmArgs& g, int64_t i0, int64_t mb, int64_t k0, int64_t kb,
                                            float* __restrict dst) {
    if (g.trans_a) pack_rows<Kn::MR>(g.A + k0 * g.M + i0, g.M, kb, mb, dst);  // A stored (K, M)
    else pack_columns<Kn::MR>(g.A + i0 * g.K + k0, g.K, kb, mb, dst);         // A (M, K)
}

// A few last columns of C (at most kStripColumns) when A is transposed, so that the rows of op(A) at
// one k are contiguous: each column with its rows in the lanes of vectors, one FMA per vector and k,
// where a tile half NR wide spends MR FMAs per k on each column, and all but one of them on padding
// (the lm_head's 65th column). V is the instruction set's vector (see
// gemm_small.h). Every element is still acc = fma(a, b, acc) over the k of each KC block in order from
// zero, then C = acc or C += acc, as in the tiles: the same bits.
inline constexpr int64_t kStripColumns = 4;

// (Out of line, so that it does not change how the tile loop below is compiled.)
template <class V>
__attribute__((noinline)) void column_strip_trans_a(const GemmArgs& g, int64_t KC, int64_t i_begin, int64_t i_end,
                                                    int64_t j_begin, int64_t j_end) {
    constexpr int64_t R = 4, W = V::W;  // rows R * W at a time: R independent chains of FMAs
    for (int64_t j = j_begin; j < j_end; ++j)
        for (int64_t i0 = i_begin; i0 < i_end; i0 += R * W) {
            const int64_t rows = min_i64(R * W, i_end - i0);
            typename V::mask lanes[R];
            for (int64_t v = 0; v < R; ++v) {
                const int64_t n = rows - v * W;
                lanes[v] = V::mask_first(n < 0 ? 0 : n > W ? W : n);
            }
            for (int64_t k0 = 0; k0 < g.K; k0 += KC) {
                const int64_t k_end = min_i64(g.K, k0 + KC);
                typename V::reg acc[R];
#pragma GCC unroll 4
                for (int64_t v = 0; v < R; ++v) acc[v] = V::zero();
                for (int64_t k = k0; k < k_end; ++k) {
                    const typename V::reg b = V::broadcast(g.trans_b ? g.B + j * g.K + k : g.B + k * g.N + j);
                    const float* a = g.A + k * g.M + i0;  // op(A) rows i0.. at this k
#pragma GCC unroll 4
                    for (int64_t v = 0; v < R; ++v) acc[v] = V::fma(V::load(a + v * W, lanes[v]), b, acc[v]);
                }
                alignas(64) float sums[R * W];
#pragma GCC unroll 4
                for (int64_t v = 0; v < R; ++v) V::store(sums + v * W, acc[v]);
                const bool overwrite = k0 == 0 && !g.accumulate;
                for (int64_t r = 0; r < rows; ++r) {
                    float& c = g.C[(i0 + r) * g.N + j];
                    c = overwrite ? sums[r] : c + sums[r];
                }
            }
        }
}

// One thread's block of C: the MR-row panels [p_begin, p_end) by the columns [j_begin, j_end) (j_begin a
// multiple of NR). The thread packs its own B and A panels into work and shares nothing with the others:
// no barrier, no OpenMP construct, so gemm also works when called from inside somebody else's parallel
// region.
template <class Kn, class V>
void gemm_blocked_block(const GemmArgs& g, float* work, int64_t p_begin, int64_t p_end, int64_t j_begin,
                        int64_t j_end) {
    constexpr int64_t MR = Kn::MR, NR = Kn::NR, KC = Kn::KC, NC = Kn::NC;
    float* const bpack = work;
    float* const apack = work + KC * NC;
    alignas(64) float tile[MR * NR];

    // Packing pays when a panel is reused; with few row panels, full NR-wide panels of a row-major B are
    // read in place, as is a B exactly NR wide (packing would copy it unchanged), and with few column
    // panels so are MR-row panels of a transposed A, unless its rows are 2 KiB or more apart: those fall
    // into a few L1 sets and evict each other. Row-major A is always read in place (MR rows, each contiguous in k).
    // Same operations either way.
    const bool b_in_place = Kn::kInPlace && !g.trans_b && (p_end - p_begin <= 4 || g.N == NR);

    for (int64_t n0 = j_begin; n0 < j_end; n0 += NC) {
        const int64_t nc = min_i64(NC, j_end - n0);
        // the tiles take the panels but a last one of at most kStripColumns when A is transposed
        const int64_t last = nc - (nc - 1) / NR * NR;
        static_assert(kStripColumns < NR, "a strip is never a whole panel");
        const bool strip = g.trans_a && last <= kStripColumns;
        const int64_t panels = (nc + NR - 1) / NR - (strip ? 1 : 0);
        const bool a_in_place = Kn::kInPlace && (!g.trans_a || (panels <= 4 && g.M < 512));
        for (int64_t k0 = 0; k0 < g.K; k0 += KC) {
            const int64_t kb = min_i64(KC, g.K - k0);
            const bool overwrite = k0 == 0 && !g.accumulate;
            for (int64_t p = 0; p < panels; ++p) {
                const int64_t nb = min_i64(NR, nc - p * NR);
                if (!(b_in_place && nb == NR)) pack_b_panel<Kn>(g, k0, kb, n0 + p * NR, nb, bpack + p * kb * NR);
            }
            for (int64_t ip = p_begin; ip < p_end; ++ip) {
                const int64_t i0 = ip * MR, mb = min_i64(MR, g.M - i0);
                // A element (r, k) of this panel at a[r * rs + k * cs]
                const float* a = apack;
                int64_t rs = 1, cs = MR;
                if (a_in_place && mb == MR) {
                    if (g.trans_a) a = g.A + k0 * g.M + i0, rs = 1, cs = g.M;
                    else a = g.A + i0 * g.K + k0, rs = g.K, cs = 1;
                } else {
                    pack_a_panel<Kn>(g, i0, mb, k0, kb, apack);
                }
                for (int64_t p = 0; p < panels; ++p) {
                    const int64_t j0 = n0 + p * NR, nb = min_i64(NR, nc - p * NR);
                    const bool b_direct = b_in_place && nb == NR;
                    const float* b = b_direct ? g.B + k0 * g.N + j0 : bpack + p * kb * NR;
                    const int64_t ldb = b_direct ? g.N : NR;
                    float* c = g.C + i0 * g.N + j0;
                    if (mb == MR && nb == NR) {
                        Kn::tile(kb, a, rs, cs, b, ldb, c, g.N, overwrite, NR);
                    } else {  // edge tile: the same arithmetic through a full-size buffer
                        if (!overwrite)
                            for (int64_t r = 0; r < mb; ++r)
                                for (int64_t j = 0; j < nb; ++j) tile[r * NR + j] = c[r * g.N + j];
                        // (a kernel may compute only the first NR/2 columns when nb <= NR/2: the same
                        // operations on each of them)
                        Kn::tile(kb, a, rs, cs, b, ldb, tile, NR, overwrite, nb);
                        for (int64_t r = 0; r < mb; ++r)
                            for (int64_t j = 0; j < nb; ++j) c[r * g.N + j] = tile[r * NR + j];
                    }
                }
            }
        }
        if (strip) column_strip_trans_a<V>(g, KC, p_begin * MR, min_i64(p_end * MR, g.M), n0 + panels * NR, n0 + nc);
    }
}

// C = op(A) @ op(B) (+ C when accumulating) for M, N, K >= 1, on up to g.threads threads. Each thread
// computes a block of whole tiles and packs what it needs itself. (Threads that shared one packed B
// waited for each other at every K block and pulled the other core's half of it through the caches:
// two threads were slower than one on the weight gradients of a narrow layer.) Each thread reads whole
// the operand the split does not cut, so the split cuts the larger side: the rows when M >= N (each
// thread packs all of B), else the columns (each reads all of A).
template <class Kn, class V>
void gemm_blocked(const GemmArgs& g) {
    const int64_t row_panels = (g.M + Kn::MR - 1) / Kn::MR, col_panels = (g.N + Kn::NR - 1) / Kn::NR;
    const bool by_rows = g.M >= g.N || col_panels < 2;
    const int threads = int(min_i64(g.threads, by_rows ? row_panels : col_panels));
    if (threads <= 1) {
        gemm_blocked_block<Kn, V>(g, g.work, 0, row_panels, 0, g.N);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
        float* const work = g.work + t * workspace_floats<Kn>(1);
        if (by_rows) {
            gemm_blocked_block<Kn, V>(g, work, row_panels * t / n, row_panels * (t + 1) / n, 0, g.N);
        } else {
            const int64_t j_begin = col_panels * t / n * Kn::NR;
            const int64_t j_end = min_i64(g.N, col_panels * (t + 1) / n * Kn::NR);
            gemm_blocked_block<Kn, V>(g, work, 0, row_panels, j_begin, j_end);
        }
    }
}

}  // namespace
}  // namespace autograd::kernels::detail
