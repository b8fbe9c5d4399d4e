// tinygpt autograd: a float32 tensor that remembers how it was made, so gradients can flow back.
//
//     #include <autograd/tensor.h>
//     using namespace autograd;
//
//     Generator gen(42);
//     Tensor x = randn({4, 3}, gen);                         // (N, C) inputs
//     Tensor w = randn({3, 2}, gen).requires_grad_();        // (C, K) a parameter
//     Tensor loss = cross_entropy(matmul(x, w), {0, 1, 1, 0});
//     loss.backward();                                       // w.grad() now holds dloss/dw, shape (3, 2)
//     fmt::print("loss {:.4f}\ngrad\n{:.3f}\n", loss.item(), w.grad());
//
// (examples/quickstart.cpp is this example, built and run by the tests.)
//
// Semantics, stated once:
// - A Tensor is a handle. Copying a Tensor shares its storage, its gradient and its graph node;
//   clone() copies the data into a new leaf; detach() shares the values without the graph. Every tensor
//   is contiguous and row-major: reshape shares storage, while transpose, slice and the other shape ops
//   copy, so contiguous() is the identity.
// - Each op (ops.h) computes its result and, when grad mode is on and an input requires a gradient,
//   attaches a Node holding its inputs and a backward function defined beside the forward.
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
// - Memory: values live in a Buffer (below); freed buffers, tensor records and graph nodes go to a
//   per-thread cache by size, reused by the next step (up to 256 MiB per thread;
//   release_cached_buffers() empties it). Debug builds fill every new buffer with NaN.
// - Threads (threads.h): set_num_threads(n) splits the kernels; a step gives the same bits on any count.
// - Inspecting: to_dot() draws the graph (graph.h), register_hook() sees or edits a gradient during
//   backward, anomaly mode (anomaly.h) names the op that made a NaN, gradcheck() (gradcheck.h) compares
//   a backward with finite differences. A drawn graph: docs/gallery.md.
//
// Your own op is one function: compute the values, then make_result(name, shape, values, inputs,
// backward). The backward receives the output, its gradient and the inputs (GradContext, below) and
// accumulates into grad(i), zero-filled the first time; one that writes every value of an input's
// gradient may ask grad_target(i) instead and write with = when it is fresh (the library's ops do):
//
//     Tensor square(const Tensor& x) {
//         Buffer out(x.numel());  // unset: every value is written below (a std::vector<float> works too)
//         for (size_t i = 0; i < out.size(); ++i) out[i] = x.data()[i] * x.data()[i];
//         return make_result("square", x.shape(), std::move(out), {x}, [](const GradContext& g) {
//             const auto in = g.inputs[0].data();
//             auto dx = g.grad(0);
//             for (size_t i = 0; i < dx.size(); ++i) dx[i] += 2 * in[i] * g.dout[i];
//         });
//     }
#pragma once

#include <cstddef>
#include <type_traits>
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

class Tensor;
struct TensorImpl;

namespace detail {
// Tensor storage comes from here: a per-thread cache of freed blocks by size, because a training step
// allocates the same sizes step after step (no page faults, no trips to malloc for big blocks). Blocks
// are 64-byte aligned. Debug builds fill every new block with NaN, so an op that reads a value it never
// wrote shows up in the tests.
void* buffer_allocate(size_t bytes);
void buffer_release(void* block, size_t bytes) noexcept;

template <typename T>
struct BufferAllocator {
    using value_type = T;
    BufferAllocator() = default;
    template <typename U>
    BufferAllocator(const BufferAllocator<U>&) {}  // NOLINT(google-explicit-constructor): rebinding
    T* allocate(size_t n) { return static_cast<T*>(buffer_allocate(n * sizeof(T))); }
    void deallocate(T* p, size_t n) noexcept { buffer_release(p, n * sizeof(T)); }
    // Buffer(n) leaves the values unset (they are about to be written): no memset per op.
    template <typename U>
    void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
    friend bool operator==(const BufferAllocator&, const BufferAllocator&) { return true; }
};
}  // namespace detail

namespace detail {
// make_shared from the same cache (tensor records, graph nodes, buffer handles are made per op).
template <typename T, typename... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
    return std::allocate_shared<T>(BufferAllocator<T>(), std::forward<Args>(args)...);
}
}  // namespace detail

// A tensor's values (and its gradient's): contiguous float32, row-major. `Buffer b(n)` is n values
// left unset, for an op to overwrite; `Buffer b(n, 0.0f)` is n zeros.
using Buffer = std::vector<float, detail::BufferAllocator<float>>;

// The buffers cached for reuse on this thread go back to the system (after a large model, say).
void release_cached_buffers();

// What a backward function is handed: the op's output, the gradient flowing into it, and its inputs.
// A backward reads `out` and `dout`, and accumulates into `grad(i)` for each input with needs(i).
struct GradContext {
    std::span<const float> out;   // the op's result values
    std::span<const float> dout;  // dLoss/d(result), same layout as out
    std::span<const Tensor> inputs;
    bool needs(size_t i) const;      // does input i want a gradient?
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
// An op's backward: any callable taking the GradContext (a lambda, a std::function). Closures of up to
// 64 bytes, all the library's own among them, are stored inside it, so recording an op allocates no
// memory for its backward (std::function allocates above 16 bytes). Move-only.
class BackwardFn {
public:
    BackwardFn() = default;
    BackwardFn(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): as std::function
    template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, BackwardFn> &&
                                                      std::is_invocable_v<std::decay_t<F>&, const GradContext&>>>
    BackwardFn(F&& f) {  // NOLINT(google-explicit-constructor): a lambda converts, as to std::function
        using Fn = std::decay_t<F>;
        if constexpr (sizeof(Fn) <= kInline && alignof(Fn) <= alignof(std::max_align_t) &&
                      std::is_nothrow_move_constructible_v<Fn>) {
            ::new (static_cast<void*>(storage_)) Fn(std::forward<F>(f));
            ops_ = &inline_ops<Fn>;
        } else {
            *reinterpret_cast<Fn**>(storage_) = new Fn(std::forward<F>(f));
            ops_ = &heap_ops<Fn>;
        }
    }
    BackwardFn(BackwardFn&& other) noexcept { take(other); }
    BackwardFn& operator=(BackwardFn&& other) noexcept {
        if (this != &other) {
            reset();
            take(other);
        }
        return *this;
    }
    BackwardFn& operator=(std::nullptr_t) noexcept {
        reset();
        return *this;
    }
    ~BackwardFn() { reset(); }
    explicit operator bool() const { return ops_ != nullptr; }
    void operator()(const GradContext& g) const { ops_->call(const_cast<unsigned char*>(storage_), g); }

private:
    static constexpr size_t kInline = 64;
    struct Ops {
        void (*call)(void* storage, const GradContext& g);
        void (*move)(void* from, void* to) noexcept;  // into uninitialized storage; `from` is destroyed
        void (*destroy)(void* storage) noexcept;
    };
    template <typename Fn>
    static constexpr Ops inline_ops = {
        [](void* s, const GradContext& g) { (*static_cast<Fn*>(s))(g); },
        [](void* from, void* to) noexcept {
            ::new (to) Fn(std::move(*static_cast<Fn*>(from)));
            static_cast<Fn*>(from)->~Fn();
        },
        [](void* s) noexcept { static_cast<Fn*>(s)->~Fn(); }};
    template <typename Fn>
    static constexpr Ops heap_ops = {
        [](void* s, const GradContext& g) { (**static_cast<Fn**>(s))(g); },
        [](void* from, void* to) noexcept { *static_cast<Fn**>(to) = *static_cast<Fn**>(from); },
        [](void* s) noexcept { delete *static_cast<Fn**>(s); }};

    void take(BackwardFn& other) noexcept {
        if (!other.ops_) return;
        other.ops_->move(other.storage_, storage_);
        ops_ = other.ops_;
        other.ops_ = nullptr;
    }
    void reset() noexcept {
        if (ops_) ops_->destroy(storage_);
        ops_ = nullptr;
    }

    alignas(std::max_align_t) unsigned char storage_[kInline];
    const Ops* ops_ = nullptr;
};

// The op that produced a tensor. It owns its inputs (never its output: no shared_ptr cycles).
struct Node {
    const char* op;
    std::vector<Tensor> inputs;
    BackwardFn backward;
    std::source_location where;  // where the op was called (anomaly messages)
    bool released = false;  // saved inputs and closure freed after backward
    ~Node();                // iterative teardown, so dropping a 100,000-op chain cannot overflow the stack
};

struct TensorImpl {
    Shape shape;
    std::shared_ptr<Buffer> data;  // shared by reshape() and detach() results
    std::shared_ptr<Buffer> grad;  // allocated on the first accumulation
    std::shared_ptr<Node> grad_fn;             // null for leaves
    bool requires_grad = false;
    std::string name;                          // optional label (parameter names), for inspection
    HookList<const Tensor&> hooks;             // gradient hooks (register_hook)
    uint64_t visit_mark = 0;                   // the last backward pass that reached it (engine use)
};

class Tensor {
public:
    Tensor() = default;  // an undefined tensor; defined() is false
    explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

    // --- shape and values -------------------------------------------------------------------
    bool defined() const { return impl_ != nullptr; }
    const Shape& shape() const;
    int64_t dim() const { return static_cast<int64_t>(shape().size()); }
    int64_t size(int64_t dim) const;  // negative dims count from the end
    int64_t numel() const;
    std::span<float> data() const;  // the values, row-major; writable (handle semantics)
    float item() const;             // the value of a one-element tensor
    float at(std::initializer_list<int64_t> index) const;  // element access, bounds-checked
    float& at(std::initializer_list<int64_t> index);
    std::vector<float> to_vector() const { return {data().begin(), data().end()}; }

    // --- autograd ------------------------------------------------------------------------------
    bool requires_grad() const;
    Tensor& requires_grad_(bool on = true);  // only on leaves
    bool is_leaf() const;
    Tensor grad() const;  // shares the gradient storage; undefined until a gradient arrives
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

    const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

private:
    TensorImpl& checked_impl() const;
    std::shared_ptr<TensorImpl> impl_;
};

// --- creation (all leaves with requires_grad false) ------------------------------------------
Tensor zeros(const Shape& shape);
Tensor ones(const Shape& shape);
Tensor full(const Shape& shape, float value);
Tensor scalar(float value);  // shape ()
Tensor tensor(const std::vector<float>& values, const Shape& shape);  // values row-major; counts must match
Tensor tensor(const std::vector<float>& values);                       // 1-D
Tensor arange(float start, float end, float step = 1.0f);       // [start, end)
Tensor arange(int64_t n);                                       // 0, 1, ..., n-1
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

// --- writing an op ----------------------------------------------------------------------------
// Wraps a forward result; attaches a Node with `backward` when grad mode is on and any input
// requires a gradient. Every op in ops.h is written with this, and so can a user's own op. `where`
// is the op's call site, kept in the Node for anomaly messages: an op passes its own `where`
// parameter on (see ops.h); left out, it is the line that calls make_result. In anomaly mode the
// values are checked here.
Tensor make_result(const char* op, Shape shape, Buffer values, std::vector<Tensor> inputs,
                   BackwardFn backward, std::source_location where = std::source_location::current());
// The same from a std::vector (copied once).
Tensor make_result(const char* op, Shape shape, const std::vector<float>& values, std::vector<Tensor> inputs,
                   BackwardFn backward, std::source_location where = std::source_location::current());
// The same over existing storage (reshape shares its input's values instead of copying them).
Tensor make_result(const char* op, Shape shape, std::shared_ptr<Buffer> storage,
                   std::vector<Tensor> inputs, BackwardFn backward,
                   std::source_location where = std::source_location::current());

// The element count of a shape; std::invalid_argument naming the shape when it (or its byte size)
// overflows 64 bits.
int64_t numel_of(const Shape& shape);
// Normalize a possibly negative dim for a tensor of rank `rank`; throws naming `op` if out of range.
int64_t normalize_dim(int64_t dim, int64_t rank, const char* op);

}  // namespace autograd

#include "autograd/ops.h"     // IWYU pragma: export
#include "autograd/anomaly.h"  // IWYU pragma: export
#include "autograd/graph.h"    // IWYU pragma: export
#include "autograd/random.h"  // IWYU pragma: export
#include "autograd/threads.h"  // IWYU pragma: export
#include "autograd/format.h"  // IWYU pragma: export
