#include "autograd/kernels.h"

#include <algorithm>
#include <vector>

#include "autograd/check.h"
#include "autograd/threads.h"

namespace autograd {

namespace {
int thread_count = 1;
}  // namespace

void set_num_threads(int n) {
    check(n >= 1, "set_num_threads: need at least one thread, got {}", n);
    thread_count = n;
}
int num_threads() { return thread_count; }

}  // namespace autograd

namespace autograd::kernels {

void gemm_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
                float* C, bool accumulate) {
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; ++k) {
                const float a = trans_a ? A[k * M + i] : A[i * K + k];
                const float b = trans_b ? B[j * K + k] : B[k * N + j];
                acc += double(a) * double(b);
            }
            C[i * N + j] = static_cast<float>(accumulate ? C[i * N + j] + acc : acc);
        }
}

namespace {
// C (M, N) += A (M, K) @ B (K, N). Row of C times broadcast scalar: the inner j loop vectorizes.
void gemm_nn(int64_t M, int64_t N, int64_t K, const float* __restrict A, const float* __restrict B,
             float* __restrict C) {
#pragma omp parallel for num_threads(thread_count) if (thread_count > 1 && M * N * K > (1 << 16)) schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        float* __restrict c = C + i * N;
        for (int64_t k = 0; k < K; ++k) {
            const float a = A[i * K + k];
            const float* __restrict b = B + k * N;
            for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
        }
    }
}

// C (M, N) += A^T @ B with A stored (K, M).
void gemm_tn(int64_t M, int64_t N, int64_t K, const float* __restrict A, const float* __restrict B,
             float* __restrict C) {
    // Threads take blocks of C's rows; within a block k stays outermost so each B row is reused.
    constexpr int64_t kRows = 16;
#pragma omp parallel for num_threads(thread_count) if (thread_count > 1 && M * N * K > (1 << 16)) schedule(static)
    for (int64_t i0 = 0; i0 < M; i0 += kRows) {
        const int64_t i1 = std::min(M, i0 + kRows);
        for (int64_t k = 0; k < K; ++k) {
            const float* __restrict b = B + k * N;
            for (int64_t i = i0; i < i1; ++i) {
                const float a = A[k * M + i];
                float* __restrict c = C + i * N;
                for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
            }
        }
    }
}

// (rows, cols) -> (cols, rows)
std::vector<float> transposed(const float* X, int64_t rows, int64_t cols) {
    std::vector<float> t(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = X[r * cols + c];
    return t;
}
}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
          bool accumulate) {
    if (!accumulate) std::fill(C, C + M * N, 0.0f);
    if (M == 0 || N == 0 || K == 0) return;
    // B^T is made contiguous once (N*K floats) so every case runs a vectorizable row update.
    std::vector<float> b_copy;
    if (trans_b) {
        b_copy = transposed(B, N, K);
        B = b_copy.data();
    }
    if (trans_a) gemm_tn(M, N, K, A, B, C);
    else gemm_nn(M, N, K, A, B, C);
}

}  // namespace autograd::kernels
