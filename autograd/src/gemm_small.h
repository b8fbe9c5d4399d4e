// The small-product gemm shared by every instruction set (private to autograd/src): no packing and no
// cache blocking, for products whose operands sit in L1 anyway (attention per head and per batch, the
// tutorial model's Linears), where gemm_blocked's fixed costs (packing, a 12x32 tile padded to N = 8)
// are most of the time.
//
// For row-major C (M, N) = op(A) (M, K) @ op(B) (K, N), with V a SIMD vector of V::W floats:
//
//   for each tile of up to MR rows of C:
//     for each block of up to NV vectors of columns of C (the last vector masked to N, so N = 8 or 65
//     costs 8 or 65 columns, not a multiple of 32):
//       for k0 in K by KC:                      (KC of the ISA's gemm_blocked kernel)
//         acc[MR][NV] = 0;  for k = k0 .. k0+kb in order: acc[r][v] = fma(A(i, k), B(k, v), acc[r][v])
//         C tile = acc (first block, not accumulating) or C tile = C tile + acc
//
// A is read in place: A(i, k) is a broadcast, from a row of A or, transposed, a column. B rows are
// streamed, so a transposed B is first copied into g.work as row-major (K, N).
//
// Each element of C is therefore the same sequence of operations as in gemm_blocked with the same KC
// (blocked sums "C = block 0; C += block 1 ...", k increasing inside a block, one FMA per k): the two
// paths give identical bits, whichever the size threshold picks, for any row split or thread count.
//
// As gemm_blocked.h: included by one translation unit per instruction set, every function in an
// anonymous namespace (internal linkage, no cross-ISA substitution by the linker), and nothing here
// calls into the standard library.
//
// V provides: reg, mask (a lane mask type), W, zero(), broadcast(const float*), mask_first(n) (the
// first n <= W lanes), load(p) and load(p, mask), store(p, reg) and store(p, reg, mask), fma(a, b, acc)
// = a * b + acc (as the blocked kernel computes it), add(a, b); kAccumulators, the registers a tile may
// use for sums, kMaxVectors (<= 4), the widest column block, kMaxRows, the tallest tile, and
// kFreeMasks, whether a masked load costs the same as a plain one.
#pragma once

#include <cstdint>

#include "gemm_blocked.h"

namespace autograd::kernels::detail {
namespace {

// One MR x (NV vectors) tile over kb values of k: A(r, k) at a[r * rs + k * cs], with (rs, cs) = (1, lda)
// when kTransA and (lda, 1) otherwise; B row k at b + k * ldb. With kMaskLast the last vector is masked
// by last.
template <class V, bool kTransA, int64_t MR, int64_t NV, bool kMaskLast>
void small_tile(int64_t kb, const float* __restrict a, int64_t lda, const float* __restrict b, int64_t ldb,
                float* __restrict c, int64_t ldc, bool overwrite, typename V::mask last) {
    const int64_t rs = kTransA ? 1 : lda, cs = kTransA ? lda : 1;
    // (the unroll pragmas make every acc index a constant, so the sums stay in registers)
    typename V::reg acc[MR][NV];
#pragma GCC unroll 32
    for (int64_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int64_t v = 0; v < NV; ++v) acc[r][v] = V::zero();
    // rows of A from bases three rows apart, as in the AVX-512 blocked tile: row r at
    // base[r / 3][(r % 3) * rs], one index register for rows read in place instead of one per row
    constexpr int64_t kBases = (MR + 2) / 3;
    const float* base[kBases];
#pragma GCC unroll 4
    for (int64_t g = 0; g < kBases; ++g) base[g] = a + 3 * g * rs;
    for (int64_t k = 0; k < kb; ++k) {
        typename V::reg bv[NV];
#pragma GCC unroll 4
        for (int64_t v = 0; v < NV; ++v)
            bv[v] = kMaskLast && v == NV - 1 ? V::load(b + v * V::W, last) : V::load(b + v * V::W);
#pragma GCC unroll 32
        for (int64_t r = 0; r < MR; ++r) {
            const typename V::reg av = V::broadcast(base[r / 3] + (r % 3) * rs);
#pragma GCC unroll 4
            for (int64_t v = 0; v < NV; ++v) acc[r][v] = V::fma(av, bv[v], acc[r][v]);
        }
#pragma GCC unroll 4
        for (int64_t g = 0; g < kBases; ++g) base[g] += cs;
        b += ldb;
    }
#pragma GCC unroll 32
    for (int64_t r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int64_t v = 0; v < NV; ++v) {
            float* cv = c + r * ldc + v * V::W;
            if (kMaskLast && v == NV - 1)
                V::store(cv, overwrite ? acc[r][v] : V::add(V::load(cv, last), acc[r][v]), last);
            else V::store(cv, overwrite ? acc[r][v] : V::add(V::load(cv), acc[r][v]));
        }
}

// The tile for mb <= MR rows: one instantiation per row count, so edge rows cost only themselves.
template <class V, bool kTransA, int64_t MR, int64_t NV, bool kMaskLast>
inline void small_tile_rows(int64_t mb, int64_t kb, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                            int64_t ldc, bool overwrite, typename V::mask last) {
    if constexpr (MR > 1)
        if (mb < MR)
            return small_tile_rows<V, kTransA, MR - 1, NV, kMaskLast>(mb, kb, a, lda, b, ldb, c, ldc, overwrite, last);
    small_tile<V, kTransA, MR, NV, kMaskLast>(kb, a, lda, b, ldb, c, ldc, overwrite, last);
}

// Rows of C as tiles of the most rows V::kAccumulators registers hold at this width (at most V::kMaxRows).
template <class V, bool kTransA, int64_t NV, bool kMaskLast>
void small_column_block(const GemmArgs& g, const float* b, int64_t ldb, int64_t j0, int64_t KC) {
    constexpr int64_t MR = V::kAccumulators / NV < V::kMaxRows ? V::kAccumulators / NV : V::kMaxRows;
    const int64_t nb = min_i64(NV * V::W, g.N - j0);
    const typename V::mask last = V::mask_first(nb - (NV - 1) * V::W);
    const int64_t lda = kTransA ? g.M : g.K;
    for (int64_t i0 = 0; i0 < g.M; i0 += MR) {
        const int64_t mb = min_i64(MR, g.M - i0);
        for (int64_t k0 = 0; k0 < g.K; k0 += KC) {
            const float* a = kTransA ? g.A + k0 * g.M + i0 : g.A + i0 * g.K + k0;
            const bool overwrite = k0 == 0 && !g.accumulate;
            small_tile_rows<V, kTransA, MR, NV, kMaskLast>(mb, min_i64(KC, g.K - k0), a, lda, b + k0 * ldb + j0, ldb,
                                                           g.C + i0 * g.N + j0, g.N, overwrite, last);
        }
    }
}

// A column block of NV vectors; a full last vector skips its mask where masks cost (vmaskmovps).
template <class V, bool kTransA, int64_t NV>
void small_columns(const GemmArgs& g, const float* b, int64_t ldb, int64_t j0, int64_t KC) {
    if constexpr (!V::kFreeMasks)
        if (g.N - j0 >= NV * V::W) return small_column_block<V, kTransA, NV, false>(g, b, ldb, j0, KC);
    small_column_block<V, kTransA, NV, true>(g, b, ldb, j0, KC);
}

// C's columns [j_begin, j_end), with j_begin a multiple of the widest column block (and j_end too, or N).
template <class V, bool kTransA>
void gemm_small_columns(const GemmArgs& g, const float* b, int64_t ldb, int64_t KC, int64_t j_begin, int64_t j_end) {
    constexpr int64_t NV = V::kMaxVectors, block = NV * V::W;
    static_assert(NV >= 1 && NV <= 4);
    for (int64_t j0 = j_begin; j0 < j_end; j0 += block) {
        if constexpr (kTransA)
            if (g.N - j0 <= kStripColumns) return column_strip_trans_a<V>(g, KC, 0, g.M, j0, g.N);  // gemm_blocked.h
        const int64_t vectors = (min_i64(block, g.N - j0) + V::W - 1) / V::W;
        switch (vectors) {  // the last block may be narrower
            case 1:
                small_columns<V, kTransA, 1>(g, b, ldb, j0, KC);
                break;
            case 2:
                if constexpr (NV >= 2) small_columns<V, kTransA, 2>(g, b, ldb, j0, KC);
                break;
            case 3:
                if constexpr (NV >= 3) small_columns<V, kTransA, 3>(g, b, ldb, j0, KC);
                break;
            default:
                if constexpr (NV >= 4) small_columns<V, kTransA, 4>(g, b, ldb, j0, KC);
                break;
        }
    }
}

// One KC block of one row's sums: sums (nb) = a (kb) @ B (kb, nb), B's rows ldb apart. B is read row after
// row, four rows at once: the column tiles above walk down B's columns, four cache lines of each row at a
// time, which the prefetchers follow less well than rows read whole. (In GPT-2 small's cached token, the
// tiles took 2.5x the time of the tied output's row-by-row dot products for 2.2x their bytes; read by
// rows, 1.95x: perf, one thread.) Each sum is the tiles' own: acc = fma(a(k), B(k, j), acc), k in order.
template <class V>
void one_row_block(const float* a, const float* b, int64_t ldb, int64_t kb, int64_t nb, float* __restrict sums) {
    using reg = typename V::reg;
    const int64_t full = nb / V::W * V::W;
    const typename V::mask last = V::mask_first(nb - full);
    // sums[j] = fma(a(k), B(k, j), sums[j]) for each given row k, in order (the vector at j, masked when
    // kMasked)
    auto add_rows = [&]<int kRows, bool kMasked>(int64_t k, int64_t j) {
        reg s = kMasked ? V::load(sums + j, last) : V::load(sums + j);
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
            const float* row = b + (k + r) * ldb + j;
            s = V::fma(V::broadcast(a + k + r), kMasked ? V::load(row, last) : V::load(row), s);
        }
        if constexpr (kMasked) V::store(sums + j, s, last);
        else V::store(sums + j, s);
    };
    for (int64_t j = 0; j < nb; ++j) sums[j] = 0.0f;
    int64_t k = 0;
    for (; k + 4 <= kb; k += 4) {
        for (int64_t j = 0; j < full; j += V::W) add_rows.template operator()<4, false>(k, j);
        if (full < nb) add_rows.template operator()<4, true>(k, full);
    }
    for (; k < kb; ++k) {
        for (int64_t j = 0; j < full; j += V::W) add_rows.template operator()<1, false>(k, j);
        if (full < nb) add_rows.template operator()<1, true>(k, full);
    }
}

// c (n) = sums (first block, not accumulating) or c + sums: a KC block's sums into C, as the tiles do
inline void add_block(float* __restrict c, const float* __restrict sums, int64_t n, bool overwrite) {
    if (overwrite)
        for (int64_t j = 0; j < n; ++j) c[j] = sums[j];
    else
        for (int64_t j = 0; j < n; ++j) c[j] = c[j] + sums[j];
}

// One row of C, columns [j_begin, j_end): C (1, N) = a (1, K) @ B (K, N), neither transposed (a token's
// product when sampling, where reading B from memory is all the time), on the calling thread, a chunk of
// columns at a time, each chunk's block sums waiting in L1.
template <class V>
void one_row_columns(const GemmArgs& g, int64_t KC, int64_t j_begin, int64_t j_end) {
    constexpr int64_t kChunk = 1024;  // columns a pass over the rows covers (4 KB of sums)
    float sums[kChunk];
    for (int64_t j0 = j_begin; j0 < j_end; j0 += kChunk) {
        const int64_t nb = min_i64(kChunk, j_end - j0);
        for (int64_t k0 = 0; k0 < g.K; k0 += KC) {
            one_row_block<V>(g.A + k0, g.B + k0 * g.N + j0, g.N, min_i64(KC, g.K - k0), nb, sums);
            add_block(g.C + j0, sums, nb, k0 == 0 && !g.accumulate);
        }
    }
}

// The same row on `threads` threads, each a range of whole KC blocks, so each reads its own contiguous
// rows of B as the bandwidth benchmark does (split by columns, two threads read half of every row and
// decoded GPT-2 small at 2/3 of peak/bandwidth). Every block's sums wait in `partial` (K/KC rows of N
// floats); then each thread adds its columns' blocks into C in block order: the same sums as one thread.
// (`threads` is read by OpenMP's pragma alone: unread in the WebAssembly build, which has no OpenMP)
template <class V>
void one_row_split_k(const GemmArgs& g, int64_t KC, [[maybe_unused]] int threads, float* partial) {
    const int64_t k_blocks = (g.K + KC - 1) / KC;
#pragma omp parallel num_threads(threads)
    {
        const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
        for (int64_t blk = k_blocks * t / n; blk < k_blocks * (t + 1) / n; ++blk)
            one_row_block<V>(g.A + blk * KC, g.B + blk * KC * g.N, g.N, min_i64(KC, g.K - blk * KC), g.N,
                             partial + blk * g.N);
#pragma omp barrier
        const int64_t j_begin = g.N * t / n, j_end = g.N * (t + 1) / n;
        for (int64_t blk = 0; blk < k_blocks; ++blk)
            add_block(g.C + j_begin, partial + blk * g.N + j_begin, j_end - j_begin, blk == 0 && !g.accumulate);
    }
}

// The least KC of any instruction set (the K-split's workspace is sized before the kernel is chosen)
constexpr int64_t kLeastKC = 256;

// Whether a one-row product on g.threads threads splits K (and needs its workspace)
inline bool splits_k(const GemmArgs& g) {
    return g.M == 1 && !g.trans_a && !g.trans_b && g.threads > 1 && g.K >= 2 * kLeastKC;
}

// Floats of g.work gemm_small needs: room for a transposed B, or the K-split's block sums.
inline int64_t small_workspace_floats(const GemmArgs& g) {
    if (splits_k(g)) return (g.K + kLeastKC - 1) / kLeastKC * g.N;
    return g.trans_b ? g.K * g.N : 0;
}

// C = op(A) @ op(B) (+ C when accumulating) for M, N, K >= 1; KC as the ISA's gemm_blocked kernel, for
// identical results. On g.threads threads when neither operand is transposed: a product of one or a few
// rows (a token's, when sampling) reads all of B once, and two cores stream it faster than one. One row
// splits K by whole KC blocks (one_row_split_k; columns when K has a single block), a few rows split the
// column blocks. Every element of C is the same sums whichever thread computes it, so the bits do not
// depend on the count.
template <class V>
void gemm_small(const GemmArgs& g, int64_t KC) {
    constexpr int64_t block = V::kMaxVectors * V::W;
    const int64_t blocks = (g.N + block - 1) / block;
    if (splits_k(g) && (g.K + KC - 1) / KC >= 2)
        return one_row_split_k<V>(g, KC, int(min_i64(g.threads, (g.K + KC - 1) / KC)), g.work);
    const int threads = g.trans_a || g.trans_b ? 1 : int(min_i64(g.threads, blocks));
    if (threads > 1) {
#pragma omp parallel num_threads(threads)
        {
            const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
            const int64_t j_begin = blocks * t / n * block, j_end = min_i64(g.N, blocks * (t + 1) / n * block);
            if (g.M == 1) one_row_columns<V>(g, KC, j_begin, j_end);
            else gemm_small_columns<V, false>(g, g.B, g.N, KC, j_begin, j_end);
        }
        return;
    }
    if (g.M == 1 && !g.trans_a && !g.trans_b) return one_row_columns<V>(g, KC, 0, g.N);
    const float* b = g.B;
    if (g.trans_b) {  // B stored (N, K): copy it to row-major (K, N), so rows stream as vectors
        float* __restrict t = g.work;
        int64_t copied = 0;  // rows of t the vector type's own transpose wrote, where it has one
        if constexpr (requires { V::copy_transposed(g.B, g.N, g.K, t); }) copied = V::copy_transposed(g.B, g.N, g.K, t);
        // (row by row of t: the tile then reads row 0 first, whose stores are the oldest; written column
        // by column, each vector load of a row waited on scalar stores still in flight, 3.5x slower)
        for (int64_t k = copied; k < g.K; ++k)
            for (int64_t j = 0; j < g.N; ++j) t[k * g.N + j] = g.B[j * g.K + k];
        b = t;
    }
    if (g.trans_a) gemm_small_columns<V, true>(g, b, g.N, KC, 0, g.N);
    else gemm_small_columns<V, false>(g, b, g.N, KC, 0, g.N);
}

// C (M, N) (+)= A (M, K) @ B (N, K)^T for the columns [n_begin, n_end), M a few rows (a sampled token's
// tied logits, its scores against cached keys): every C(i, n) the dot product of A's row i with B's row n,
// both read in place. B's rows go eight at a time (GPT-2's 154 MB token table, one thread, AVX-512:
// 23.4-24.9 GB/s a row at a time, 23.5-26.2 four at a time, 25.9-27.3 eight: bench/README.md). Each
// sum is its own sequence: W lane sums acc = fma(a(k), b(k), acc) over k in order (the last vector
// masked), then the lanes added in order; the same bits whichever group, range or thread holds row n.
template <class V>
void dot_rows_range(const GemmArgs& g, int64_t n_begin, int64_t n_end) {
    constexpr int64_t kRows = 8;
    const int64_t K = g.K, full = K / V::W * V::W;
    const typename V::mask last = V::mask_first(K - full);
    const auto finish = [&](typename V::reg acc, int64_t i, int64_t n) {
        float lanes[V::W];
        V::store(lanes, acc);
        float total = 0.0f;
        for (int64_t l = 0; l < V::W; ++l) total += lanes[l];
        float& c = g.C[i * g.N + n];
        c = g.accumulate ? c + total : total;
    };
    int64_t n = n_begin;
    for (; n + kRows <= n_end; n += kRows)
        for (int64_t i = 0; i < g.M; ++i) {
            const float* __restrict a = g.A + i * K;
            const float* __restrict b = g.B + n * K;
            const bool prefetch = i == 0 && n + 3 * kRows <= n_end;  // (the first row of A brings B in)
            typename V::reg acc[kRows];
#pragma GCC unroll 16
            for (int64_t r = 0; r < kRows; ++r) acc[r] = V::zero();
            int64_t k = 0;
            for (; k < full; k += V::W) {
                const typename V::reg av = V::load(a + k);
#pragma GCC unroll 16
                for (int64_t r = 0; r < kRows; ++r) {
                    // two groups ahead, a cache line at a time: eight streams are more than the hardware's
                    // prefetchers follow (stories15M's tied output, one thread: 416 -> 498 tokens/s)
                    if (prefetch && k % 16 == 0) __builtin_prefetch(b + (2 * kRows + r) * K + k);
                    acc[r] = V::fma(av, V::load(b + r * K + k), acc[r]);
                }
            }
            if (k < K) {
                const typename V::reg av = V::load(a + k, last);
#pragma GCC unroll 16
                for (int64_t r = 0; r < kRows; ++r) acc[r] = V::fma(av, V::load(b + r * K + k, last), acc[r]);
            }
#pragma GCC unroll 16
            for (int64_t r = 0; r < kRows; ++r) finish(acc[r], i, n + r);
        }
    for (; n < n_end; ++n)  // the last rows, one at a time: the same operations per row
        for (int64_t i = 0; i < g.M; ++i) {
            const float* __restrict a = g.A + i * K;
            const float* __restrict b = g.B + n * K;
            typename V::reg acc = V::zero();
            int64_t k = 0;
            for (; k < full; k += V::W) acc = V::fma(V::load(a + k), V::load(b + k), acc);
            if (k < K) acc = V::fma(V::load(a + k, last), V::load(b + k, last), acc);
            finish(acc, i, n);
        }
}

}  // namespace
}  // namespace autograd::kernels::detail
