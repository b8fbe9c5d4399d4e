// For people writing ops: what an op needs beyond the Tensor handle. An op is one function that
// computes its values into a Buffer and hands them to make_result with its inputs and a backward;
// the backward gets a GradContext (the output, its gradient dout and the inputs) and accumulates (+=)
// into grad(i), zero-filled the first time; one that writes every value of an input's gradient may ask
// grad_target(i) instead and write with = when it is fresh (the library's ops do):
//
//     #include <autograd/op.h>
//     using namespace autograd;
//
//     Tensor square(const Tensor& x) {  // x: any shape -> same shape
//         Buffer out(x.numel());  // unset: every value is written below (a std::vector<float> works too)
//         for (size_t i = 0; i < out.size(); ++i) out[i] = x.data()[i] * x.data()[i];
//         return make_result("square", x.shape(), std::move(out), {x}, [](const GradContext& g) {
//             const auto in = g.inputs[0].data();
//             auto dx = g.grad(0);
//             for (size_t i = 0; i < dx.size(); ++i) dx[i] += 2 * in[i] * g.dout[i];
//         });
//     }
//
// Every op in ops.h is written this way (autograd/src/). Users of ops need only <autograd/autograd.h>.
// This header also brings the graph itself (Node, TensorImpl: autograd/detail/node.h), for ops and
// tests that look behind a handle through Tensor::impl().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <source_location>
#include <span>
#include <vector>

#include "autograd/detail/buffer.h"  // IWYU pragma: export
#include "autograd/detail/node.h"    // IWYU pragma: export
#include "autograd/tensor.h"         // IWYU pragma: export

namespace autograd {

// --- the backward's view ---------------------------------------------------------------------
// What a backward function is handed: the op's output, the gradient flowing into it, and its inputs.
// A backward reads `out` and `dout`, and accumulates into `grad(i)` for each input with needs(i).
struct GradContext {
    std::span<const float> out;   // the op's result values
    std::span<const float> dout;  // dLoss/d(result), same layout as out
    std::span<const Tensor> inputs;
    bool needs(size_t i) const;             // does input i want a gradient?
    std::span<float> grad(size_t i) const;  // dLoss/d(input i), zero-filled on first use; use +=
    // dLoss/d(input i) for a backward that writes every element of it: when no gradient has reached
    // the input yet, a new buffer with its values unset and fresh = true (write with =, and skip the
    // zero fill grad() would do); otherwise the gradient so far and fresh = false (add with +=).
    struct Target {
        std::span<float> values;
        bool fresh;
    };
    Target grad_target(size_t i) const;
};

// --- making a result -------------------------------------------------------------------------
// Wraps a forward result; attaches a Node with `backward` when grad mode is on and any input
// requires a gradient. Every op in ops.h is written with this, and so can a user's own op. `where`
// is the op's call site, kept in the Node for anomaly messages: an op passes its own `where`
// parameter on (see ops.h); left out, it is the line that calls make_result. In anomaly mode the
// values are checked here.
Tensor make_result(const char* op, Shape shape, Buffer values, NodeInputs inputs, BackwardFn backward,
                   std::source_location where = std::source_location::current());
// The same from a std::vector (copied once).
Tensor make_result(const char* op, Shape shape, const std::vector<float>& values, NodeInputs inputs,
                   BackwardFn backward, std::source_location where = std::source_location::current());
// The same over existing storage (reshape shares its input's values instead of copying them).
Tensor make_result(const char* op, Shape shape, std::shared_ptr<Buffer> storage, NodeInputs inputs, BackwardFn backward,
                   std::source_location where = std::source_location::current());

// --- shapes ----------------------------------------------------------------------------------
// The element count of a shape; std::invalid_argument naming the shape when it (or its byte size)
// overflows 64 bits.
int64_t numel_of(const Shape& shape);
// Normalize a possibly negative dim for a tensor of rank `rank`; throws naming `op` if out of range.
int64_t normalize_dim(int64_t dim, int64_t rank, const char* op);

}  // namespace autograd
