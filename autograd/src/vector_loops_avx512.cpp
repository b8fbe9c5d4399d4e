// vector_loops.h's loops for AVX-512 (compiled with -mavx512f -mfma; used only when the CPU has it), with
// the hand-written softmax rows of softmax_avx512.cpp.
#include "vector_loops_impl.h"

namespace autograd::detail {
const VectorLoops vector_loops_avx512 =
    loops_with(softmax_row_avx512, softmax_backward_row_avx512, exp_shifted_row_avx512);
}  // namespace autograd::detail
