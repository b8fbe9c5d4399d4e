// Raw float kernels under the ops. Each fast kernel has a naive reference beside it, and the tests
// check one against the other.
#pragma once

#include <cstdint>

namespace autograd::kernels {

// C (M, N) = op(A) @ op(B), or C += ... when accumulate. All row-major and contiguous:
// A is (M, K), or (K, M) when trans_a;  B is (K, N), or (N, K) when trans_b.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
          float* C, bool accumulate);
// The reference: three loops, double accumulation.
void gemm_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                const float* B, float* C, bool accumulate);

}  // namespace autograd::kernels
