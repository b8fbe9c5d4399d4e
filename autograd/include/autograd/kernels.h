// Raw float kernels under the ops. Each fast kernel has a naive reference beside it, and the tests
// check one against the other.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace autograd::kernels {

// C (M, N) = op(A) @ op(B), or C += ... when accumulate. All row-major and contiguous:
// A is (M, K), or (K, M) when trans_a;  B is (K, N), or (N, K) when trans_b.
// Runs the active_isa() implementation on up to num_threads() threads (small products on one).
// Results are bit-identical for any thread count with the same implementation.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
          bool accumulate);

// Many products of one shape: C_i = op(A_i) @ op(B_i) (or C_i += ...) for each batch i, where
// A_i = A + a_index[i] * M * K, B_i = B + b_index[i] * K * N, C_i = C + c_index[i] * M * N; an empty
// index list means matrix i. Batches with the same c_index add into their C matrix in increasing i.
// With num_threads() > 1, batches are split across threads (all batches of one C matrix on one thread),
// so results are bit-identical for any thread count.
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, int64_t batches, const float* A,
                  std::span<const int64_t> a_index, const float* B, std::span<const int64_t> b_index, float* C,
                  std::span<const int64_t> c_index, bool accumulate);

// The instruction sets the kernels are built for: portable is plain C++ (any CPU); avx2 needs AVX2 +
// FMA; avx512 needs AVX-512F. Every kernel (gemm, softmax rows, the elementwise and row loops of gelu,
// layer_norm, linear_gelu, AdamW) has one implementation per instruction set, each in its own translation
// unit compiled with that set's flags (autograd/src/*_avx2.cpp, *_avx512.cpp), and they all follow one
// choice, made at run time from what the CPU reports: the best it runs, or the environment variable
// TINYGPT_ISA=portable|avx2|avx512 when set (refused, naming what the CPU runs, when it cannot run it).
// On one instruction set, results are bit-identical for any thread count. Across them, only the gemm
// sums (different tiles and K blocks) and the AVX-512 softmax rows' exp (fused multiply-adds) differ:
// within float rounding; the other loops give the same bits on every set.
enum class Isa { portable, avx2, avx512 };
std::string_view isa_name(Isa isa);  // "portable", "avx2", "avx512"
std::vector<Isa> available_isas();   // those this CPU runs, portable first, best last
Isa active_isa();                    // the one every kernel uses now (TINYGPT_ISA, or the best)
void set_isa(Isa isa);               // use another from now on; throws if this CPU cannot run it
// Each instruction set's gemm has two paths with identical results: small products run unpacked with the
// C tile in registers (gemm_small.h), the rest cache-blocked and packed (gemm_blocked.h); automatic picks
// by size. The small path runs on the calling thread, but for a product of a few rows asked of it by name
// (GemmPath::small) that reads a large B: its K blocks (one row) or its columns are then split across
// the threads. Automatic sends a product of a few rows (up to 8: a sampled token's) to the small path, or,
// with B transposed, to dot products of A's rows with B's read in place (its own sums: within float
// rounding of the two paths).
enum class GemmPath { automatic, small, blocked };
inline constexpr int64_t kFewRows = 8;  // the "few rows" above: a sampled token's products
// gemm with a given implementation (and path), for tests and benchmarks; throws if this CPU cannot run it.
void gemm_with(Isa isa, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
               float* C, bool accumulate, GemmPath path = GemmPath::automatic);
// The reference: three loops, double accumulation.
void gemm_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
                bool accumulate);

}  // namespace autograd::kernels
