// Inside the library: the loops under nn/train's optimizer (AdamW's update, clip_grad_norm's sum of
// squares), which live in autograd because they are built once per instruction set with the other
// vector loops (autograd/src/vector_loops_impl.h) and follow kernels::active_isa(). Not for users: the
// optimizers in <nn/train/optim.h> are the interface. Defined in autograd/src/kernels.cpp.
#pragma once

#include <cstdint>

namespace autograd::kernels {

// AdamW's update of elements [begin, end) of one parameter p with gradient g and moments m, v, in
// PyTorch's order of operations (nn::AdamW fills the step's constants).
struct AdamWStep {
    float decay, beta1, beta2, one_minus_beta1, one_minus_beta2, step_size, bias_correction2_sqrt, eps;
};
void adamw_update(float* p, const float* g, float* m, float* v, int64_t begin, int64_t end, const AdamWStep& step);
// The sum of g[k]^2 over [begin, end) in double, in a fixed order (clip_grad_norm's partial sums).
double sum_of_squares(const float* g, int64_t begin, int64_t end);

}  // namespace autograd::kernels
