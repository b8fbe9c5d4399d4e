// Raw float kernels under the ops. Each fast kernel has a naive reference beside it, and the tests
// check one against the other.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

// Put on a function holding a hot elementwise or row loop: gcc/clang compile it once per instruction set
// (AVX-512, AVX2, baseline) and pick one when the program loads, so the loop is vectorized as wide as
// the CPU allows while the binary still runs on any x86-64 (the baseline alone means SSE2).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TINYGPT_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TINYGPT_VECTOR_CLONES
#endif

namespace autograd::kernels {

// C (M, N) = op(A) @ op(B), or C += ... when accumulate. All row-major and contiguous:
// A is (M, K), or (K, M) when trans_a;  B is (K, N), or (N, K) when trans_b.
// Runs the best implementation this CPU supports (chosen once, at first call) on up to num_threads()
// threads (small products on one). Results are bit-identical for any thread count with the same
// implementation.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
          float* C, bool accumulate);

// Many products of one shape: C_i = op(A_i) @ op(B_i) (or C_i += ...) for each batch i, where
// A_i = A + a_index[i] * M * K, B_i = B + b_index[i] * K * N, C_i = C + c_index[i] * M * N; an empty
// index list means matrix i. Batches with the same c_index add into their C matrix in increasing i.
// With num_threads() > 1, batches are split across threads (all batches of one C matrix on one thread),
// so results are bit-identical for any thread count.
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, int64_t batches, const float* A,
                  std::span<const int64_t> a_index, const float* B, std::span<const int64_t> b_index, float* C,
                  std::span<const int64_t> c_index, bool accumulate);

// The implementations of gemm, one per instruction set: portable is plain C++ (any CPU); avx2 needs
// AVX2 + FMA; avx512 needs AVX-512F. Each has two paths with identical results: small products run
// unpacked with the C tile in registers (gemm_small.h), the rest cache-blocked and packed
// (gemm_blocked.h); automatic picks by size. The small path runs on the calling thread alone.
enum class Isa { portable, avx2, avx512 };
enum class GemmPath { automatic, small, blocked };
std::string_view isa_name(Isa isa);       // "portable", "avx2", "avx512"
std::vector<Isa> available_isas();        // those this CPU runs, portable first, best last
Isa gemm_isa();                           // the one gemm uses: the best available
// gemm with a given implementation (and path), for tests and benchmarks; throws if this CPU cannot run it.
void gemm_with(Isa isa, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
               const float* B, float* C, bool accumulate, GemmPath path = GemmPath::automatic);
// The reference: three loops, double accumulation.
void gemm_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                const float* B, float* C, bool accumulate);

}  // namespace autograd::kernels
