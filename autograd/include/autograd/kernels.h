// Raw float kernels under the ops. Each fast kernel has a naive reference beside it, and the tests
// check one against the other.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace autograd::kernels {

// C (M, N) = op(A) @ op(B), or C += ... when accumulate. All row-major and contiguous:
// A is (M, K), or (K, M) when trans_a;  B is (K, N), or (N, K) when trans_b.
// Runs the best implementation this CPU supports (chosen once, at first call) on num_threads()
// threads. Results are bit-identical for any thread count with the same implementation.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
          float* C, bool accumulate);

// The implementations of gemm: one cache-blocked, packed design with a register-tile micro-kernel per
// instruction set. portable is plain C++ (any CPU); avx2 needs AVX2 + FMA; avx512 needs AVX-512F.
enum class Isa { portable, avx2, avx512 };
std::string_view isa_name(Isa isa);       // "portable", "avx2", "avx512"
std::vector<Isa> available_isas();        // those this CPU runs, portable first, best last
Isa gemm_isa();                           // the one gemm uses: the best available
// gemm with a given implementation, for tests and benchmarks; throws if this CPU cannot run it.
void gemm_with(Isa isa, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
               const float* B, float* C, bool accumulate);
// The reference: three loops, double accumulation.
void gemm_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                const float* B, float* C, bool accumulate);

}  // namespace autograd::kernels
