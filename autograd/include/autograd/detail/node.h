// Inside the library: the graph behind a tensor. A Tensor (tensor.h) is a handle to a TensorImpl; an
// op's result holds the Node that made it, and the Node holds the op's inputs and its backward. Not for
// users: op authors reach these through <autograd/op.h> (the engine in autograd/src/tensor.cpp walks
// them). The names stay in namespace autograd, as Tensor::impl() hands them out.
//
// GradContext is only named here (a backward takes one): op.h, which includes this, completes it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <source_location>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/check.h"
#include "autograd/detail/buffer.h"
#include "autograd/hooks.h"
#include "autograd/tensor.h"

namespace autograd {

struct GradContext;

// An op's inputs, as kept by its Node: up to three held inline, so recording an op allocates nothing
// for them (a std::vector would, once per op); more go to the heap. Made from a braced list ({a, b}, {})
// or a std::vector<Tensor>; reads like a std::vector (size, [], range-for), and std::span views it.
class NodeInputs {
public:
    NodeInputs() = default;
    // {x}, {a, b}, {a, b, c}, ...: each input is copied once, straight into place (a braced list would go
    // through an std::initializer_list, whose elements cannot be moved from: two copies each).
    template <typename... More>
    requires(std::is_convertible_v<const More&, const Tensor&>&&...)
        NodeInputs(const Tensor& first, const More&... more) {  // NOLINT(google-explicit-constructor): {a, b}
        Tensor* at = allocate(1 + sizeof...(More));
        *at++ = first;
        ((*at++ = more), ...);
    }
    NodeInputs(const std::vector<Tensor>& tensors) {  // NOLINT(google-explicit-constructor): as before
        std::copy(tensors.begin(), tensors.end(), allocate(tensors.size()));
    }
    NodeInputs(std::vector<Tensor>&& tensors) {  // NOLINT(google-explicit-constructor)
        std::move(tensors.begin(), tensors.end(), allocate(tensors.size()));
    }
    NodeInputs(NodeInputs&& other) noexcept { take(other); }
    NodeInputs& operator=(NodeInputs&& other) noexcept {
        if (this != &other) {
            clear();
            take(other);
        }
        return *this;
    }
    ~NodeInputs() = default;

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Tensor* data() { return heap_ ? heap_.get() : inline_; }
    const Tensor* data() const { return heap_ ? heap_.get() : inline_; }
    Tensor* begin() { return data(); }
    Tensor* end() { return data() + size_; }
    const Tensor* begin() const { return data(); }
    const Tensor* end() const { return data() + size_; }
    Tensor& operator[](size_t i) { return data()[i]; }
    const Tensor& operator[](size_t i) const { return data()[i]; }
    // Drops every input (the references go now, in order).
    void clear() noexcept {
        for (Tensor& t : *this) t = Tensor();
        heap_.reset();
        size_ = 0;
    }

private:
    static constexpr size_t kInline = 3;
    Tensor* allocate(size_t n) {
        if (n > kInline) heap_ = std::make_unique<Tensor[]>(n);
        size_ = n;
        return data();
    }
    void take(NodeInputs& other) noexcept {
        heap_ = std::move(other.heap_);
        if (!heap_) std::move(other.inline_, other.inline_ + other.size_, inline_);
        size_ = std::exchange(other.size_, 0);
    }

    Tensor inline_[kInline];
    std::unique_ptr<Tensor[]> heap_;  // more than kInline inputs
    size_t size_ = 0;
};

// An op's backward: any callable taking the GradContext (a lambda, a std::function). Closures of up to
// 112 bytes, all the library's own among them (a binary op keeps its Broadcast, 80 bytes; a batched
// matmul its plan, 104), are stored inside it, so recording an op allocates no
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
    static constexpr size_t kInline = 256;  // (a broadcast op's walk, three inline shapes, fits)
    struct Ops {
        void (*call)(void* storage, const GradContext& g);
        void (*move)(void* from, void* to) noexcept;  // into uninitialized storage; `from` is destroyed
        void (*destroy)(void* storage) noexcept;
    };
    template <typename Fn>
    static constexpr Ops inline_ops = {[](void* s, const GradContext& g) { (*static_cast<Fn*>(s))(g); },
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
    // (a constructor, not aggregate initialization, which would zero the whole node, closure storage
    // included, before setting every member anyway)
    Node(const char* op_name, NodeInputs&& op_inputs, BackwardFn&& op_backward, std::source_location called_at) noexcept
        : op(op_name), inputs(std::move(op_inputs)), backward(std::move(op_backward)), where(called_at) {}
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    const char* op;
    NodeInputs inputs;
    BackwardFn backward;
    std::source_location where;  // where the op was called (anomaly messages)
    bool released = false;       // saved inputs and closure freed after backward
    ~Node();                     // iterative teardown, so dropping a 100,000-op chain cannot overflow the stack
};

struct TensorImpl {
    TensorImpl() noexcept {
    }  // NOLINT(modernize-use-equals-default): "= default" would zero it all first in make_pooled
    Shape shape;
    int64_t numel = 0;              // the values: the first numel of data (all of it but in leading_rows' views)
    std::shared_ptr<Buffer> data;   // shared by reshape(), detach() and leading_rows() results
    std::shared_ptr<Buffer> grad;   // allocated on the first accumulation
    std::shared_ptr<Node> grad_fn;  // null for leaves
    bool requires_grad = false;
    std::string name;               // optional label (parameter names), for inspection
    HookList<const Tensor&> hooks;  // gradient hooks (register_hook)
    // engine use (tensor.cpp): the last backward() pass that reached it and its place in that pass's
    // order, and the mark of a backward() called from a hook while another one walks
    uint64_t visit_mark = 0;
    size_t walk_slot = 0;
    uint64_t nested_visit_mark = 0;
};

}  // namespace autograd
