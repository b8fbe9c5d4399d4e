// The bf16 gemm driver shared by every bf16 kernel (private to autograd/src; kernels.h "bfloat16
// products" says what each element of C is).
//
// For row-major C (M, N) = op(A) (M, K) @ op(B) (K, N), each thread takes a block of C (rows or columns,
// as gemm_blocked.h) and, within it (gemm_bf16_block):
//   for k0 in K by kBf16BlockK:
//     for each group of up to kBf16RowPanels MR-row panels: pack them, pair by pair of k: the 32 bits of
//       row i at pair p are bf16 A(i, 2p) in the low half, A(i, 2p + 1) in the high (vdpbf16ps' layout,
//       Words), or the two widened to floats (Widened, for the kernels of float32 arithmetic)
//       for n0 in its columns by Kn::NC:
//         pack B (k0.., n0..) the same way into NR-wide panels, zero-padded
//         for each row panel of the group: the MR x NR tiles
// Rounding happens in the packing (to_bf16 of each float, or an operand's bf16 copy read as it is), so
// the tiles only multiply. Each tile sums pairs p in increasing order from zero within a block and
// stores C = acc or C += acc: neither the split nor the padding changes an element's sequence, and every
// kernel's tile computes that sequence (acc + odd product, then + even product, each rounded) with
// denormals flushed as vdpbf16ps does (the MXCSR's FTZ and DAZ for the float32 tiles, set per thread
// for the product's duration).
//
// A product of at most kBf16FewRows rows (a decoded token's) streams B instead: B (K, N) two rows (one
// pair) at a time, the same sums as the tiles' (bf16_few_rows); B transposed as dot products of rows,
// with their own sums in 16 lanes (bf16_dot_rows).
//
// As gemm_blocked.h: included by one translation unit per kernel, everything in an anonymous namespace,
// nothing from the standard library.
#pragma once

#include <cstdint>

#include <omp.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace autograd::kernels::detail {

struct Bf16Args {
    bool trans_a, trans_b;
    int64_t M, N, K;
    const float* A;
    const uint16_t* A16;  // A's values rounded (same layout), or null: then A's are rounded in the packing
    const float* B;
    const uint16_t* B16;
    float* C;
    bool accumulate;
    uint32_t* work;  // at least bf16_workspace_words<Kn>(threads, K, N), 64-byte aligned
    int threads;
};

inline constexpr int64_t kBf16PairsPerBlock = 256;  // kBf16BlockK / 2

namespace {

// A thread packs the A panels of up to this many row panels at once (at MR 12 and a whole K block, 384
// rows in 384 KiB, beside B's block of 512 KiB in a 1 MiB L2), and reads them for every B block.
inline constexpr int64_t kBf16RowPanels = 32;

inline int64_t bf16_min(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t bf16_max(int64_t a, int64_t b) { return a > b ? a : b; }

inline int64_t bf16_dot_words(int64_t K);

inline int64_t bf16_few_rows_words(int64_t N);

// 32-bit words of workspace per thread for a product (K, N), times threads: the most any path needs.
template <class Kn>
int64_t bf16_workspace_words(int threads, int64_t K, int64_t N) {
    const int64_t blocked = kBf16PairsPerBlock * Kn::Layout::kWords * (Kn::NC + kBf16RowPanels * Kn::MR);
    const int64_t most = bf16_max(blocked, bf16_max(bf16_dot_words(K), bf16_few_rows_words(N)));
    return int64_t(threads) * most;
}

// An operand's values as bf16 bits: floats rounded, or its copy's bits as they are.
inline uint32_t bf16_bits(float x) {
    uint32_t u;
    __builtin_memcpy(&u, &x, sizeof u);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded;  // (a select: the loops vectorize)
}
inline uint32_t bf16_bits(uint16_t bits) { return bits; }

// How a packed panel P lines wide holds pair p of line j, given as the word element (2p, j) |
// element (2p + 1, j) << 16: Words, that word at [p][j] (vdpbf16ps' pair); Widened, two floats, the odd
// element widened at [2p][j] and the even at [2p + 1][j], so that the tiles of float32 arithmetic only
// multiply (widening in the tile cost them half their speed).
struct Words {
    static constexpr int64_t kWords = 1;  // 32-bit words a pair takes per line
    template <int64_t P>
    static void put(uint32_t* dst, int64_t p, int64_t j, uint32_t word) {
        dst[p * P + j] = word;
    }
};
struct Widened {
    static constexpr int64_t kWords = 2;
    template <int64_t P>
    static void put(uint32_t* dst, int64_t p, int64_t j, uint32_t word) {
        dst[2 * p * P + j] = word & 0xffff0000u;
        dst[(2 * p + 1) * P + j] = word << 16;
    }
};

// The pairs of k in [k_begin, k_end) of n lines of an operand (its rows or columns as op() has them) as
// a panel P lines wide in Layout, zero-padded: element (k, j) is src[base + k * k_stride + j * j_stride],
// zero from k_end on. One of the strides is 1; the loops run along it.
template <int64_t P, class Layout, class Source>
__attribute__((noinline)) void pack_pairs(const Source* __restrict src, int64_t base, int64_t k_stride,
                                          int64_t j_stride, int64_t k_begin, int64_t k_end, int64_t n,
                                          uint32_t* __restrict dst) {
    const int64_t pairs = (k_end - k_begin + 1) / 2, whole = (k_end - k_begin) / 2;
    src += base + k_begin * k_stride;
    if (k_stride == 1) {  // each line's k contiguous (A's rows, B stored (N, K)): a pair is two neighbours
        for (int64_t j = 0; j < n; ++j) {
            const Source* __restrict line = src + j * j_stride;
            for (int64_t p = 0; p < whole; ++p)
                Layout::template put<P>(dst, p, j, bf16_bits(line[2 * p]) | bf16_bits(line[2 * p + 1]) << 16);
            if (whole < pairs) Layout::template put<P>(dst, whole, j, bf16_bits(line[2 * whole]));
        }
    } else {  // k rows of n contiguous values (B (K, N), A stored (K, M)): a pair is two rows
        for (int64_t p = 0; p < pairs; ++p) {
            const Source* __restrict even = src + 2 * p * k_stride;
            if (p < whole)
                for (int64_t j = 0; j < n; ++j)
                    Layout::template put<P>(dst, p, j, bf16_bits(even[j]) | bf16_bits(even[j + k_stride]) << 16);
            else
                for (int64_t j = 0; j < n; ++j) Layout::template put<P>(dst, p, j, bf16_bits(even[j]));
        }
    }
    for (int64_t p = 0; p < pairs; ++p)
        for (int64_t j = n; j < P; ++j) Layout::template put<P>(dst, p, j, 0);
}

// The pairs of an operand stored (rows, cols), with its copy or its floats, as a panel P wide in Layout:
// lines j0 .. j0+n, k in [k0, k_end); `k_along_rows`: k indexes the stored rows (lines are columns),
// else the columns.
template <int64_t P, class Layout>
void pack_operand(const float* values, const uint16_t* bf16, int64_t cols, bool k_along_rows, int64_t j0, int64_t n,
                  int64_t k0, int64_t k_end, uint32_t* dst) {
    const int64_t base = k_along_rows ? j0 : j0 * cols, k_stride = k_along_rows ? cols : 1;
    const int64_t j_stride = k_along_rows ? 1 : cols;
    if (bf16) pack_pairs<P, Layout>(bf16, base, k_stride, j_stride, k0, k_end, n, dst);
    else pack_pairs<P, Layout>(values, base, k_stride, j_stride, k0, k_end, n, dst);
}

// B's columns j0 .. j0+nb as a panel NR wide (B stored (N, K) when transposed, else (K, N)).
template <class Kn>
void pack_b_pairs(const Bf16Args& g, int64_t k0, int64_t k_end, int64_t j0, int64_t nb, uint32_t* dst) {
    pack_operand<Kn::NR, typename Kn::Layout>(g.B, g.B16, g.trans_b ? g.K : g.N, !g.trans_b, j0, nb, k0, k_end, dst);
}

// op(A)'s rows i0 .. i0+mb as a panel MR wide (A stored (K, M) when transposed, else (M, K)).
template <class Kn>
void pack_a_pairs(const Bf16Args& g, int64_t i0, int64_t mb, int64_t k0, int64_t k_end, uint32_t* dst) {
    pack_operand<Kn::MR, typename Kn::Layout>(g.A, g.A16, g.trans_a ? g.M : g.K, g.trans_a, i0, mb, k0, k_end, dst);
}

// The tiles, over a kernel's arithmetic E, which provides: reg (W floats), zero(), load(const float*),
// store(float*, reg), add(a, b); Pairs, W pairs of bfloat16 as the kernel multiplies them, loaded by
// pairs(const uint32_t* words) (W words) or broadcast by pairs(uint32_t word); and dot(acc, a, b): per
// lane acc + a.odd * b.odd, then + a.even * b.even, each product added exactly and the sum rounded
// (vdpbf16ps, or fused multiply-adds).
//   tile: MR x NR of C from a panel of A's MR rows and one of B's NR columns, packed in E::Layout, read
//   by E::panel_pairs<P>(at) (W lines' pair from a panel P wide) and E::panel_pair<P>(at) (one line's,
//   broadcast).
// (E also gives pairs_of_rows(even, odd), W pairs from two rows of W bfloat16 each, and kPairsInFlight,
// how many bf16_few_rows loads at once;
// and add_lanes(acc), the kBf16Lanes sums of kBf16Lanes / W registers added (l + 8, + 4, + 2, + 1: lane
// l of the first register is lane l, of the second l + W, ...) in registers, for bf16_dot_rows.)
template <class E, int64_t kMR, int64_t kNV>
struct Bf16Tiles {
    using Arithmetic = E;
    using Layout = typename E::Layout;
    static constexpr int64_t MR = kMR, NR = kNV * E::W, NC = 512;
    static void tile(int64_t pairs, const uint32_t* __restrict a, const uint32_t* __restrict b, float* __restrict c,
                     int64_t ldc, bool overwrite) {
        typename E::reg acc[MR][kNV];
        for (int64_t r = 0; r < MR; ++r)
            for (int64_t v = 0; v < kNV; ++v) acc[r][v] = E::zero();
        for (int64_t p = 0; p < pairs; ++p) {
            typename E::Pairs bv[kNV];
            for (int64_t v = 0; v < kNV; ++v) bv[v] = E::template panel_pairs<NR>(b + v * E::W);
            for (int64_t r = 0; r < MR; ++r) {
                const typename E::Pairs av = E::template panel_pair<MR>(a + r);
                for (int64_t v = 0; v < kNV; ++v) acc[r][v] = E::dot(acc[r][v], av, bv[v]);
            }
            a += Layout::kWords * MR;
            b += Layout::kWords * NR;
        }
        for (int64_t r = 0; r < MR; ++r)
            for (int64_t v = 0; v < kNV; ++v) store_sum(c + r * ldc + v * E::W, acc[r][v], overwrite);
    }

private:
    static void store_sum(float* c, typename E::reg acc, bool overwrite) {
        E::store(c, overwrite ? acc : E::add(E::load(c), acc));
    }
};

// The pairs widened to floats, for kernels without bfloat16 arithmetic: a bfloat16 is a float's upper
// half. Its panels are Widened: the tile reads floats. V provides reg, words (W 32-bit lanes), W, zero,
// load, store, add, fma(a, b, acc) (a * b + acc with one rounding, as vdpbf16ps adds each product:
// exactly, even one past float32's range), load_words(const uint32_t*), load_halves(const uint16_t*) (W
// values, each zero-extended into its lane), broadcast_word(uint32_t), as_floats(words) (the same bits),
// even(words) (each lane shifted up by 16), odd(words) (its upper half) and add_lanes.
template <class V>
struct WidenedPairs : V {
    using Layout = Widened;
    struct Pairs {
        typename V::reg even, odd;
    };
    template <int64_t P>
    static Pairs panel_pairs(const uint32_t* at) {
        return {V::as_floats(V::load_words(at + P)), V::as_floats(V::load_words(at))};
    }
    template <int64_t P>
    static Pairs panel_pair(const uint32_t* at) {
        return {V::as_floats(V::broadcast_word(at[P])), V::as_floats(V::broadcast_word(at[0]))};
    }
    static Pairs pairs(const uint32_t* words) { return widen(V::load_words(words)); }
    static Pairs pairs(uint32_t word) { return widen(V::broadcast_word(word)); }
    static Pairs pairs_of_rows(const uint16_t* even, const uint16_t* odd) {
        return {V::even(V::load_halves(even)), V::even(V::load_halves(odd))};
    }
    static constexpr int64_t kPairsInFlight = 4;  // (bf16_few_rows; two registers a pair)
    static typename V::reg dot(typename V::reg acc, Pairs a, Pairs b) {
        return V::fma(a.even, b.even, V::fma(a.odd, b.odd, acc));
    }

private:
    static Pairs widen(typename V::words w) { return {V::even(w), V::odd(w)}; }
};

// vdpbf16ps' denormal handling (inputs and results flushed to zero) for the float32 tiles: the MXCSR's
// DAZ and FTZ bits while alive, on this thread. (Not on other architectures: there only the portable
// kernel exists, and denormals keep their values.)
class FlushDenormals {
public:
#if defined(__SSE__)
    FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
    ~FlushDenormals() { _mm_setcsr(saved_); }

private:
    unsigned saved_;
#endif
};

// One thread's block of C: row panels [p_begin, p_end) by columns [j_begin, j_end). Per K block, the A
// panels of up to kBf16RowPanels row panels are packed once and read against each B block in turn.
template <class Kn>
void gemm_bf16_block(const Bf16Args& g, uint32_t* work, int64_t p_begin, int64_t p_end, int64_t j_begin,
                     int64_t j_end) {
    constexpr int64_t MR = Kn::MR, NR = Kn::NR, NC = Kn::NC, KB = 2 * kBf16PairsPerBlock;
    constexpr int64_t X = Kn::Layout::kWords;     // words a pair takes per line of a panel
    [[maybe_unused]] const FlushDenormals flush;  // (empty where there is no MXCSR)
    uint32_t* const bpack = work;
    uint32_t* const apack = work + kBf16PairsPerBlock * X * NC;
    alignas(64) float tile[MR * NR];
    for (int64_t k0 = 0; k0 < g.K; k0 += KB) {
        const int64_t k_end = bf16_min(g.K, k0 + KB), pairs = (k_end - k0 + 1) / 2;
        const bool overwrite = k0 == 0 && !g.accumulate;
        for (int64_t q0 = p_begin; q0 < p_end; q0 += kBf16RowPanels) {
            const int64_t q_end = bf16_min(p_end, q0 + kBf16RowPanels);
            for (int64_t ip = q0; ip < q_end; ++ip)
                pack_a_pairs<Kn>(g, ip * MR, bf16_min(MR, g.M - ip * MR), k0, k_end,
                                 apack + (ip - q0) * pairs * X * MR);
            for (int64_t n0 = j_begin; n0 < j_end; n0 += NC) {
                const int64_t nc = bf16_min(NC, j_end - n0), panels = (nc + NR - 1) / NR;
                for (int64_t p = 0; p < panels; ++p)
                    pack_b_pairs<Kn>(g, k0, k_end, n0 + p * NR, bf16_min(NR, nc - p * NR), bpack + p * pairs * X * NR);
                for (int64_t ip = q0; ip < q_end; ++ip) {
                    const int64_t i0 = ip * MR, mb = bf16_min(MR, g.M - i0);
                    const uint32_t* a = apack + (ip - q0) * pairs * X * MR;
                    for (int64_t p = 0; p < panels; ++p) {
                        const int64_t j0 = n0 + p * NR, nb = bf16_min(NR, nc - p * NR);
                        const uint32_t* b = bpack + p * pairs * X * NR;
                        float* c = g.C + i0 * g.N + j0;
                        if (mb == MR && nb == NR) {
                            Kn::tile(pairs, a, b, c, g.N, overwrite);
                            continue;
                        }
                        // an edge tile: the same arithmetic through a full-size buffer
                        if (!overwrite)
                            for (int64_t r = 0; r < mb; ++r)
                                for (int64_t j = 0; j < nb; ++j) tile[r * NR + j] = c[r * g.N + j];
                        Kn::tile(pairs, a, b, tile, NR, overwrite);
                        for (int64_t r = 0; r < mb; ++r)
                            for (int64_t j = 0; j < nb; ++j) c[r * g.N + j] = tile[r * NR + j];
                    }
                }
            }
        }
    }
}

// A product of at most this many rows (a decoded token's) runs row by row (gemm_bf16_few_rows_block):
// the blocked tiles would pad its rows to MR.
inline constexpr int64_t kBf16FewRows = 8;

// The words a thread's few-row product with B (K, N) needs (bf16_few_rows): the sums of M rows of its
// columns, two rows of B staged, and A's pairs of one block.
inline int64_t bf16_few_rows_words(int64_t N) {
    const int64_t width = N + 16;  // (columns padded to whole vectors)
    return kBf16FewRows * width + width + kBf16FewRows * kBf16PairsPerBlock;
}

// One thread's columns [j_begin, j_end) of a product of at most kBf16FewRows rows with B (K, N), B
// streamed two whole rows (one pair) at a time: sequential reads, where packing panels of 32 columns
// walks down 512 rows 64 bytes each (a page apart at GPT-2's widths, which no prefetcher follows), and a
// token's product reads B once. B's bf16 copy is read in place (the last columns short of a vector
// staged, zero-padded); floats are rounded into the staged rows first. The sums of each row of C, one K
// block at a time, in `sums`: every element the same sequence as in the blocked path, the same bits.
template <class E>
void bf16_few_rows(const Bf16Args& g, uint32_t* work, int64_t j_begin, int64_t j_end) {
    constexpr int64_t W = E::W, KB = 2 * kBf16PairsPerBlock, kPairsInFlight = E::kPairsInFlight;
    [[maybe_unused]] const FlushDenormals flush;  // (empty where there is no MXCSR)
    const int64_t n = j_end - j_begin, whole = n / W * W, width = (n + W - 1) / W * W;
    float* const sums = reinterpret_cast<float*>(work);                                 // [M][width]
    uint16_t* const staged = reinterpret_cast<uint16_t*>(sums + kBf16FewRows * width);  // [2][width]
    uint32_t* const a_pairs = work + kBf16FewRows * width + width;                      // [M][pairs]
    // B's value (k, column j of this thread's) as bf16 bits
    const auto b_at = [&](int64_t k, int64_t j) -> uint16_t {
        const int64_t at = k * g.N + j_begin + j;
        return g.B16 ? g.B16[at] : static_cast<uint16_t>(bf16_bits(g.B[at]));
    };
    for (int64_t k0 = 0; k0 < g.K; k0 += KB) {
        const int64_t k_end = bf16_min(g.K, k0 + KB), pairs = (k_end - k0 + 1) / 2;
        for (int64_t i = 0; i < g.M; ++i)
            pack_operand<1, Words>(g.A, g.A16, g.trans_a ? g.M : g.K, g.trans_a, i, 1, k0, k_end, a_pairs + i * pairs);
        for (int64_t e = 0; e < g.M * width; ++e) sums[e] = 0.0f;
        // E::kPairsInFlight pairs at a time where the copy is read in place and the columns are whole
        // vectors, each sum loaded and stored once for them all: with vdpbf16ps (16 pairs) GPT-2 small's
        // token streamed its products' weights at 23 GB/s on one Zen 5 core, against 9 a pair at a time, 15
        // four at a time, 10 for 32 (their registers spilled).
        int64_t p = 0;
        if (g.B16 && whole == n)
            for (; p + kPairsInFlight <= pairs && k0 + 2 * (p + kPairsInFlight) <= k_end; p += kPairsInFlight) {
                const uint16_t* row = g.B16 + (k0 + 2 * p) * g.N + j_begin;
                for (int64_t v = 0; v < width; v += W) {
                    typename E::Pairs b[kPairsInFlight];
                    for (int64_t q = 0; q < kPairsInFlight; ++q)
                        b[q] = E::pairs_of_rows(row + 2 * q * g.N + v, row + (2 * q + 1) * g.N + v);
                    for (int64_t i = 0; i < g.M; ++i) {
                        float* s = sums + i * width + v;
                        typename E::reg acc = E::load(s);
                        for (int64_t q = 0; q < kPairsInFlight; ++q)
                            acc = E::dot(acc, E::pairs(a_pairs[i * pairs + p + q]), b[q]);
                        E::store(s, acc);
                    }
                }
            }
        for (; p < pairs; ++p) {
            const int64_t k = k0 + 2 * p;
            const bool has_odd = k + 1 < k_end, in_place = g.B16 && has_odd;
            // staged: the columns from `from` on (all, or those short of a vector), zero-padded
            const int64_t from = in_place ? whole : 0;
            for (int64_t j = from; j < width; ++j) {
                staged[j] = j < n ? b_at(k, j) : uint16_t{0};
                staged[width + j] = j < n && has_odd ? b_at(k + 1, j) : uint16_t{0};
            }
            const uint16_t* even = in_place ? g.B16 + k * g.N + j_begin : staged;
            const uint16_t* odd = in_place ? even + g.N : staged + width;
            for (int64_t v = 0; v < width; v += W) {
                const bool from_stage = v >= from;
                const typename E::Pairs b =
                    E::pairs_of_rows(from_stage ? staged + v : even + v, from_stage ? staged + width + v : odd + v);
                for (int64_t i = 0; i < g.M; ++i) {
                    float* s = sums + i * width + v;
                    E::store(s, E::dot(E::load(s), E::pairs(a_pairs[i * pairs + p]), b));
                }
            }
        }
        const bool overwrite = k0 == 0 && !g.accumulate;
        for (int64_t i = 0; i < g.M; ++i) {
            float* c = g.C + i * g.N + j_begin;
            const float* s = sums + i * width;
            for (int64_t j = 0; j < n; ++j) c[j] = overwrite ? s[j] : c[j] + s[j];
        }
    }
}

// A product of at most kBf16FewRows rows with B transposed (B stored (N, K): the tied output's token
// table, a token's logits) as dot products of A's rows with B's, read in place: no transposed copy of B
// for one row's sake. Its own sums (kernels.h): per K block, 16 lanes, lane l summing the pairs
// p = l, l + 16, ... of the block (as every bf16 sum: + odd product, then + even), the lanes then added
// (l + 8, then + 4, + 2, + 1: E::add_lanes), and C = that or C += that. Rows of B are bf16 (B16), or
// rounded first into a row of the workspace. One row of B at a time, a single stream: GPT-2 small's token
// table streamed at 23.7 GB/s on one Zen 5 core, against 19 eight rows at a time and 15.4 two.
inline constexpr int64_t kBf16Lanes = 16;

// K rounded up to whole lane groups (2 * kBf16Lanes values), and the words a thread's dot rows need:
// A's rows and, unless B's rows are bf16 of such a length, one row of B, rounded and zero-padded.
inline int64_t bf16_dot_padded(int64_t K) { return (K + 2 * kBf16Lanes - 1) / (2 * kBf16Lanes) * (2 * kBf16Lanes); }
inline int64_t bf16_dot_words(int64_t K) { return (kBf16FewRows + 1) * bf16_dot_padded(K) / 2; }

// The value at `index` as bf16 bits, or 0 past `end` (the padding).
template <class Source>
inline uint16_t bf16_or_zero(const Source* src, int64_t index, int64_t end) {
    return index < end ? static_cast<uint16_t>(bf16_bits(src[index])) : uint16_t{0};
}

// One thread's rows [j_begin, j_end) of B (the columns of C). E is the kernel's arithmetic (Bf16Tiles').
template <class E>
void bf16_dot_rows(const Bf16Args& g, uint32_t* work, int64_t j_begin, int64_t j_end) {
    constexpr int64_t V = kBf16Lanes / E::W, KB = 2 * kBf16PairsPerBlock;
    [[maybe_unused]] const FlushDenormals flush;  // (empty where there is no MXCSR)
    const int64_t padded = bf16_dot_padded(g.K);
    uint16_t* const a_rows = reinterpret_cast<uint16_t*>(work);  // [M][padded]
    uint16_t* const b_row = a_rows + kBf16FewRows * padded;      // [padded]
    for (int64_t i = 0; i < g.M; ++i)
        for (int64_t k = 0; k < padded; ++k) {
            const int64_t at = g.trans_a ? k * g.M + i : i * g.K + k;
            a_rows[i * padded + k] = k < g.K ? (g.A16 ? g.A16[at] : static_cast<uint16_t>(bf16_bits(g.A[at]))) : 0;
        }
    const bool in_place = g.B16 && padded == g.K;
    for (int64_t j = j_begin; j < j_end; ++j) {
        const uint16_t* b = b_row;
        if (in_place) b = g.B16 + j * g.K;
        else if (g.B16)
            for (int64_t k = 0; k < padded; ++k) b_row[k] = bf16_or_zero(g.B16 + j * g.K, k, g.K);
        else
            for (int64_t k = 0; k < padded; ++k) b_row[k] = bf16_or_zero(g.B + j * g.K, k, g.K);
        for (int64_t k0 = 0; k0 < g.K; k0 += KB) {
            const int64_t k_end = bf16_min(padded, k0 + KB);
            const bool overwrite = k0 == 0 && !g.accumulate;
            for (int64_t i = 0; i < g.M; ++i) {
                typename E::reg acc[V];
                for (int64_t v = 0; v < V; ++v) acc[v] = E::zero();
                const uint16_t* a = a_rows + i * padded;
                for (int64_t k = k0; k < k_end; k += 2 * kBf16Lanes)
                    for (int64_t v = 0; v < V; ++v)
                        acc[v] = E::dot(acc[v], E::pairs(reinterpret_cast<const uint32_t*>(a + k) + v * E::W),
                                        E::pairs(reinterpret_cast<const uint32_t*>(b + k) + v * E::W));
                const float sum = E::add_lanes(acc);
                float& c = g.C[i * g.N + j];
                c = overwrite ? sum : c + sum;
            }
        }
    }
}

// C = op(A) @ op(B) (+ C) for M, N, K >= 1 on up to g.threads threads, split as gemm_blocked splits; a
// product of a few rows is split by columns (each thread streams its share of B).
template <class Kn>
void gemm_bf16_product(const Bf16Args& g) {
    if (g.M <= kBf16FewRows && g.trans_b) {
        const int threads = int(bf16_min(g.threads, g.N));
        if (threads <= 1) return bf16_dot_rows<typename Kn::Arithmetic>(g, g.work, 0, g.N);
#pragma omp parallel num_threads(threads)
        {
            const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
            bf16_dot_rows<typename Kn::Arithmetic>(g, g.work + t * bf16_workspace_words<Kn>(1, g.K, g.N), g.N * t / n,
                                                   g.N * (t + 1) / n);
        }
        return;
    }
    if (g.M <= kBf16FewRows) {  // columns split in whole vectors of 16
        const int64_t vectors = (g.N + 15) / 16;
        const int threads = int(bf16_min(g.threads, vectors));
        if (threads <= 1) return bf16_few_rows<typename Kn::Arithmetic>(g, g.work, 0, g.N);
#pragma omp parallel num_threads(threads)
        {
            const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
            bf16_few_rows<typename Kn::Arithmetic>(g, g.work + t * bf16_workspace_words<Kn>(1, g.K, g.N),
                                                   vectors * t / n * 16, bf16_min(g.N, vectors * (t + 1) / n * 16));
        }
        return;
    }
    const int64_t row_panels = (g.M + Kn::MR - 1) / Kn::MR, col_panels = (g.N + Kn::NR - 1) / Kn::NR;
    const bool by_rows = g.M >= g.N || col_panels < 2;
    const int threads = int(bf16_min(g.threads, by_rows ? row_panels : col_panels));
    if (threads <= 1) {
        gemm_bf16_block<Kn>(g, g.work, 0, row_panels, 0, g.N);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
        uint32_t* const work = g.work + t * bf16_workspace_words<Kn>(1, g.K, g.N);
        if (by_rows) {
            gemm_bf16_block<Kn>(g, work, row_panels * t / n, row_panels * (t + 1) / n, 0, g.N);
        } else {
            const int64_t j_begin = col_panels * t / n * Kn::NR;
            const int64_t j_end = bf16_min(g.N, col_panels * (t + 1) / n * Kn::NR);
            gemm_bf16_block<Kn>(g, work, 0, row_panels, j_begin, j_end);
        }
    }
}

}  // namespace
}  // namespace autograd::kernels::detail
