// tinygpt autograd: a float32 tensor that remembers how it was made, so gradients can flow back.
// This header is the Tensor handle and the ways to make one; <autograd/autograd.h> brings the whole
// library (ops, random tensors, printing, inspection) and opens with a worked example.
//
// Semantics, stated once:
// - A Tensor is a handle. Copying a Tensor shares its storage, its gradient and its graph node;
//   clone() copies the data into a new leaf; detach() shares the values without the graph. Every tensor
//   is contiguous and row-major: reshape shares storage, while transpose, slice and the other shape ops
//   copy, so contiguous() is the identity.
// - Each op (ops.h) computes its result and, when grad mode is on and an input requires a gradient,
//   attaches a Node holding its inputs and a backward function defined beside the forward (op.h is
//   for writing one).
// - backward() walks the graph in reverse topological order (an iterative depth-first search, so a chain
//   of 100,000 ops works, and so does dropping one without calling backward), accumulates (+=) into every
//   tensor's gradient, and releases the graph as it goes unless retain_graph is set: once an op's backward
//   has run, its saved inputs and closure are freed, so activations nobody holds go during the walk, not
//   at its end (anomaly mode releases only after a clean walk, so a failing graph can still be drawn).
//   A second backward through a released graph throws.
// - Leaves accumulate gradients across backward calls until zero_grad(); a non-leaf tensor's grad()
//   holds the gradient of the most recent backward through it (useful for inspection).
// - Bad shapes, dims and indices throw std::invalid_argument naming the op and the shapes, in Release
//   builds too: "matmul: shapes (2, 3) and (4, 5) cannot be multiplied (3 columns vs 4 rows)".
// - Numerics: softmax and log_softmax subtract the row max (softmax([1000, 0]) is [1, 0]); cross_entropy
//   goes through log-sum-exp, so extreme logits give finite losses; a fully masked (all -inf) row is
//   defined and passes no gradient (ops.h). log of a negative number is NaN, as in every library.
// - Memory: values live in a Buffer (autograd/detail/buffer.h); freed buffers, tensor records and graph nodes go to a
//   per-thread cache by size, reused by the next step (up to as many bytes as the thread ever had in use
//   at once, at least 256 MiB; release_cached_buffers() empties it). Debug builds fill every new buffer with NaN.
// - Shapes only: under a ShapesOnlyGuard the creation functions make tensors with a shape and no values
//   (PyTorch's meta device), so a module built under it tells its parameters' names and shapes however
//   large they are, allocating and drawing nothing. Reading such a tensor's values throws.
// - Threads (threads.h): set_num_threads(n) splits the kernels; a step gives the same bits on any count.
// - Inspecting: to_dot() draws the graph (graph.h), register_hook() sees or edits a gradient during
//   backward, anomaly mode (anomaly.h) names the op that made a NaN, gradcheck() (gradcheck.h) compares
//   a backward with finite differences. A drawn graph: docs/gallery.md.
//
// Your own op: <autograd/op.h> (make_result, GradContext, grad_target), with a worked example.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autograd/check.h"
#include "autograd/hooks.h"

namespace autograd {

struct TensorImpl;  // what a Tensor points at: its values, gradient and graph node (detail/node.h)

class Tensor {
public:
    Tensor() = default;  // an undefined tensor; defined() is false
    explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

    // --- shape and values -------------------------------------------------------------------
    bool defined() const { return impl_ != nullptr; }
    const Shape& shape() const;
    int64_t dim() const { return static_cast<int64_t>(shape().size()); }
    int64_t size(int64_t dim) const;  // negative dims count from the end
    int64_t numel() const;            // 0 for a shapes-only tensor (its shape says how many it would hold)
    bool has_values() const;          // false: made under ShapesOnlyGuard, for its shape alone
    std::span<float> data() const;    // the values, row-major; writable (handle semantics)
    float item() const;               // the value of a one-element tensor
    float at(std::initializer_list<int64_t> index) const;  // element access, bounds-checked
    float& at(std::initializer_list<int64_t> index);
    std::vector<float> to_vector() const { return {data().begin(), data().end()}; }

    // --- autograd ------------------------------------------------------------------------------
    bool requires_grad() const;
    Tensor& requires_grad_(bool on = true);  // only on leaves
    bool is_leaf() const;
    Tensor grad() const;     // shares the gradient storage; undefined until a gradient arrives
    void zero_grad() const;  // drops the gradient (it is re-created as zeros on the next backward)
    // Backpropagate from this tensor. With no argument it must have one element (seed gradient 1).
    void backward(bool retain_graph = false) const;
    void backward(const Tensor& output_grad, bool retain_graph = false) const;
    const char* op() const;  // name of the op that made it, "leaf" for leaves
    // Calls hook(grad) during each backward that reaches this tensor, once its gradient for that pass
    // is complete: for a leaf after every contribution of the pass (so grad includes what earlier
    // backward calls accumulated), for a non-leaf just before its op's backward runs. `grad` shares
    // the gradient storage: read it, or modify it in place and the change flows on (into the op's
    // backward, or stays in a leaf's grad()). Hooks run in registration order; the handle's remove()
    // unregisters one, also from inside a hook. The tensor must require a gradient. A hook that
    // captures its own tensor by value keeps it alive (a cycle through the tensor): capture by reference.
    HookHandle register_hook(std::function<void(const Tensor& grad)> hook) const;
    const std::string& name() const;
    Tensor& set_name(std::string name);

    Tensor detach() const;  // same storage, no graph, requires_grad false
    Tensor clone() const;   // copied storage, a new leaf
    // All tensors are contiguous; kept so code written against strided libraries reads the same.
    Tensor contiguous() const { return *this; }

    // The ops of the same names (ops.h), recording the caller's location like them.
    // one dim may be -1
    Tensor reshape(Shape shape, std::source_location where = std::source_location::current()) const;
    Tensor transpose(int64_t dim0, int64_t dim1, std::source_location where = std::source_location::current()) const;
    Tensor slice(int64_t dim, int64_t start, int64_t end,  // [start, end) along dim
                 std::source_location where = std::source_location::current()) const;

    // The record behind the handle; <autograd/op.h> defines it, for ops and tests that look inside.
    const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

private:
    TensorImpl& checked_impl() const;
    std::shared_ptr<TensorImpl> impl_;
};

// --- creation (all leaves with requires_grad false) ------------------------------------------
Tensor zeros(const Shape& shape);
Tensor ones(const Shape& shape);
Tensor full(const Shape& shape, float value);
Tensor scalar(float value);                                           // shape ()
Tensor tensor(const std::vector<float>& values, const Shape& shape);  // values row-major; counts must match
Tensor tensor(const std::vector<float>& values);                      // 1-D
Tensor arange(float start, float end, float step = 1.0f);             // [start, end)
Tensor arange(int64_t n);                                             // 0, 1, ..., n-1
Tensor zeros_like(const Tensor& t);

// --- grad mode --------------------------------------------------------------------------------
bool is_grad_enabled();
// While alive, ops record no graph (evaluation, optimizer updates). Restores the previous mode.
class NoGradGuard {
public:
    NoGradGuard();
    ~NoGradGuard();
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
};

// --- shapes only -----------------------------------------------------------------------------
// While alive, the creation functions on this thread (zeros, ones, full, scalar, tensor, arange, rand,
// randn, clone) make shapes-only tensors: a shape, no values, nothing drawn from a generator. Their
// element counts are not limited to 64-bit sizes. Reading their values (data(), item(), an op) is
// std::invalid_argument. More than `max_tensors` made under one guard is std::length_error, so that a
// structure too large to hold (millions of modules) is refused before it is built. Restores the
// previous mode.
class ShapesOnlyGuard {
public:
    explicit ShapesOnlyGuard(int64_t max_tensors = int64_t{1} << 18);
    ~ShapesOnlyGuard();
    ShapesOnlyGuard(const ShapesOnlyGuard&) = delete;
    ShapesOnlyGuard& operator=(const ShapesOnlyGuard&) = delete;

private:
    bool previous_;
    int64_t previous_left_;
};
bool is_shapes_only();

// --- memory ----------------------------------------------------------------------------------
// The buffers cached for reuse on this thread go back to the system (after a large model, say), and the
// cache's limit falls back to what is in use now.
void release_cached_buffers();
// The bytes this thread holds in its cache, freed and kept for reuse.
size_t cached_buffer_bytes();

}  // namespace autograd
