// Entry points of the per-instruction-set gemm files (private to autograd/src). Each is compiled with
// its own target flags and must only be called when __builtin_cpu_supports says the CPU has them.
#pragma once

#include <cstdint>

namespace autograd::kernels::detail {

struct GemmArgs;

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

}  // namespace autograd::kernels::detail
