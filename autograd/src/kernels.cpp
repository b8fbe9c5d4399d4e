#include "autograd/kernels.h"

#include <algorithm>
#include <vector>

#include "autograd/check.h"
#include "autograd/threads.h"
#include "gemm_blocked.h"
#include "kernels_isa.h"

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

namespace detail {
namespace {

// The portable micro-kernel: a 4 x 8 tile in GCC/Clang vector-extension registers of 4 floats, which the
// compiler maps to whatever the baseline target has (SSE2 on x86-64, NEON on arm64).
struct Portable {
    static constexpr int64_t MR = 4, NR = 8, KC = 256, NC = 1024;
    static constexpr bool kInPlace = false;  // A and B always packed: a[k][MR], b[k][NR]
    typedef float v4 __attribute__((vector_size(16)));
    static void tile(int64_t kb, const float* __restrict a, int64_t, int64_t, const float* __restrict b, int64_t,
                     float* __restrict c, int64_t ldc, bool overwrite, int64_t) {
        v4 acc[MR][2] = {};
        for (int64_t k = 0; k < kb; ++k) {
            v4 b0, b1;
            __builtin_memcpy(&b0, b + k * NR, sizeof b0);
            __builtin_memcpy(&b1, b + k * NR + 4, sizeof b1);
            for (int64_t r = 0; r < MR; ++r) {
                const float av = a[k * MR + r];
                acc[r][0] += av * b0;
                acc[r][1] += av * b1;
            }
        }
        for (int64_t r = 0; r < MR; ++r)
            for (int64_t j = 0; j < NR; ++j) {
                const float v = acc[r][j / 4][j % 4];
                c[r * ldc + j] = overwrite ? v : c[r * ldc + j] + v;
            }
    }
};

bool cpu_has(Isa isa) {
#if defined(TINYGPT_X86_KERNELS)
    switch (isa) {
    case Isa::portable: return true;
    case Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512: return __builtin_cpu_supports("avx512f");
    }
    return false;
#else
    return isa == Isa::portable;
#endif
}

// Packing buffers, reused across calls on the calling thread, 64-byte aligned.
float* workspace(int64_t floats) {
    thread_local std::vector<float> buffer;
    const size_t need = static_cast<size_t>(floats) + 16;
    if (buffer.size() < need) buffer.assign(need, 0.0f);
    const auto address = reinterpret_cast<uintptr_t>(buffer.data());
    return buffer.data() + ((64 - address % 64) % 64) / sizeof(float);
}

}  // namespace
}  // namespace detail

std::string_view isa_name(Isa isa) {
    switch (isa) {
    case Isa::portable: return "portable";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    }
    return "unknown";
}

std::vector<Isa> available_isas() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512})
        if (detail::cpu_has(isa)) out.push_back(isa);
    return out;
}

Isa gemm_isa() {
    static const Isa best = available_isas().back();
    return best;
}

void gemm_with(Isa isa, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
               float* C, bool accumulate) {
    check(detail::cpu_has(isa), "gemm_with: this CPU cannot run the {} kernel", isa_name(isa));
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (!accumulate) std::fill(C, C + M * N, 0.0f);
        return;
    }
    // Threads only where each gets real work; the split never changes the result.
    const int threads = M * N * K >= (int64_t(1) << 18) ? thread_count : 1;
    detail::GemmArgs g{trans_a, trans_b, M, N, K, A, B, C, accumulate, nullptr, threads};
    switch (isa) {
#if defined(TINYGPT_X86_KERNELS)
    case Isa::avx512:
        g.work = detail::workspace(detail::gemm_workspace_avx512(threads));
        detail::gemm_avx512(g);
        return;
    case Isa::avx2:
        g.work = detail::workspace(detail::gemm_workspace_avx2(threads));
        detail::gemm_avx2(g);
        return;
#else
    case Isa::avx512:
    case Isa::avx2:
#endif
    case Isa::portable:
        g.work = detail::workspace(detail::workspace_floats<detail::Portable>(threads));
        detail::gemm_blocked<detail::Portable>(g);
        return;
    }
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
          bool accumulate) {
    gemm_with(gemm_isa(), trans_a, trans_b, M, N, K, A, B, C, accumulate);
}

}  // namespace autograd::kernels
