// vector_loops.h's loops for AVX2 (compiled with -mavx2 -mfma; used only when the CPU has them).
#include "vector_loops_impl.h"

namespace autograd::detail {
const VectorLoops vector_loops_avx2 = loops_with(softmax_row, softmax_backward_row);
}  // namespace autograd::detail
