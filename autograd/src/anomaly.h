// Anomaly mode inside the library: the switch, read with one relaxed load on every op, and the checks
// that run only when it is on.
#pragma once

#include <atomic>
#include <source_location>
#include <span>

#include "autograd/detail/node.h"

namespace autograd::detail {

extern std::atomic<bool> anomaly_on;
inline bool anomaly_checks() { return anomaly_on.load(std::memory_order_relaxed); }

// Throws std::runtime_error if an op's forward result holds NaN, or an infinity that no input (nor
// an IntendedInfinity scope) explains.
void check_forward(const char* op, const Shape& shape, std::span<const float> values, std::span<const Tensor> inputs,
                   const std::source_location& where);
// Throws std::runtime_error if the gradient of any input of `node` holds NaN or an infinity, right
// after node's backward ran. `output` is the tensor node made (for its shape and gradient).
void check_backward(const Node& node, const TensorImpl& output);

// While alive on this thread, infinities in forward results are intended (masked_fill's fill value).
class IntendedInfinity {
public:
    explicit IntendedInfinity(bool on);
    ~IntendedInfinity();
    IntendedInfinity(const IntendedInfinity&) = delete;
    IntendedInfinity& operator=(const IntendedInfinity&) = delete;

private:
    bool previous_;
};

}  // namespace autograd::detail
