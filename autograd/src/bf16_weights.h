// The ops' side of Bf16WeightScope (precision.h; private to autograd/src).
#pragma once

#include <cstdint>

#include "autograd/kernels.h"
#include "autograd/tensor.h"

namespace autograd::detail {

// A weight's bf16 copy (to_bf16 of each value, same layout) for a bf16 product: made on its first use
// inside the outermost live Bf16WeightScope and kept until that closes. Null when the precision is
// float32, no scope is alive, or `weight` is not a leaf (a computed tensor is not a weight): the product
// then rounds the values itself, to the same bits.
const uint16_t* bf16_weight_copy(const Tensor& weight);

// A weight as an operand of kernels::gemm_in_precision: its values, and its bf16 copy where there is one.
inline kernels::Bf16Operand weight_operand(const Tensor& weight) {
    return {weight.data().data(), bf16_weight_copy(weight)};
}

}  // namespace autograd::detail
