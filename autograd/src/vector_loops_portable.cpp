// vector_loops.h's loops for any CPU (baseline flags: SSE2 on x86-64).
#include "vector_loops_impl.h"

namespace autograd::detail {
const VectorLoops vector_loops_portable = loops_with(softmax_row, softmax_backward_row);
}  // namespace autograd::detail
