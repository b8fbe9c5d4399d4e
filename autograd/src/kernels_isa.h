// Entry points of the per-instruction-set gemm files (private to autograd/src). Each is compiled with
// its own target flags and must only be called when __builtin_cpu_supports says the CPU has them.
#pragma once

#include <cstdint>

namespace autograd::kernels {
enum class Isa;
}

namespace autograd::kernels::detail {

struct GemmArgs;
struct Bf16Args;

bool cpu_has(Isa isa);  // whether this CPU runs the instruction set (kernels.cpp)

// A gemm, float32 or bf16, is worth splitting across threads from about this many multiply-adds: the
// parallel region's fork and join cost microseconds (bench/README.md, "The kernels' thresholds").
inline constexpr int64_t kThreadWork = int64_t(1) << 21;

int64_t gemm_workspace_avx2(int threads);  // floats of workspace gemm_avx2 needs
void gemm_avx2(const GemmArgs& g);
int64_t gemm_workspace_avx512(int threads);
void gemm_avx512(const GemmArgs& g);
// The small-product path (gemm_small.h), one thread; workspace small_workspace_floats(g).
void gemm_small_avx2(const GemmArgs& g);
void gemm_small_avx512(const GemmArgs& g);
// A few rows against B transposed, as dot products of rows (gemm_small.h dot_rows_range), columns [begin, end).
void dot_rows_avx2(const GemmArgs& g, int64_t begin, int64_t end);
void dot_rows_avx512(const GemmArgs& g, int64_t begin, int64_t end);

// The bf16 gemm (gemm_bf16.h) per instruction set: float32 tiles that round as vdpbf16ps (avx2,
// avx512), and vdpbf16ps itself (avx512bf16: AVX-512F + AVX512_BF16); workspace in 32-bit words, for a product (K, N).
int64_t gemm_bf16_workspace_avx2(int threads, int64_t K, int64_t N);
void gemm_bf16_avx2(const Bf16Args& g);
int64_t gemm_bf16_workspace_avx512(int threads, int64_t K, int64_t N);
void gemm_bf16_avx512(const Bf16Args& g);
int64_t gemm_bf16_workspace_avx512bf16(int threads, int64_t K, int64_t N);
void gemm_bf16_avx512bf16(const Bf16Args& g);

}  // namespace autograd::kernels::detail
