// The Tensor handle, creation, and the reverse-mode engine (backward()).
#include "autograd/tensor.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "anomaly.h"
#include "autograd/op.h"
#include "autograd/ops.h"
#include "axis.h"

namespace autograd {

namespace {
thread_local bool grad_enabled = true;
thread_local bool shapes_only = false;
thread_local int64_t shapes_only_left = 0;  // tensors the innermost ShapesOnlyGuard may still make

// Under ShapesOnlyGuard: a record with the shape alone (numel 0, no storage).
std::shared_ptr<TensorImpl> shapes_only_impl(Shape shape) {
    if (shapes_only_left-- <= 0)
        throw std::length_error(
            "shapes only: more tensors than the ShapesOnlyGuard's limit (too large a structure to hold)");
    auto impl = detail::make_pooled<TensorImpl>();
    impl->shape = std::move(shape);
    return impl;
}

std::shared_ptr<TensorImpl> new_impl(Shape shape, Buffer values) {
    if (shapes_only) return shapes_only_impl(std::move(shape));
    auto impl = detail::make_pooled<TensorImpl>();
    impl->shape = std::move(shape);
    impl->numel = static_cast<int64_t>(values.size());
    impl->data = detail::make_pooled<Buffer>(std::move(values));
    return impl;
}

// A tensor's gradient as a tensor of its own: a new record sharing the gradient storage.
Tensor grad_view(const TensorImpl& impl) {
    auto g = detail::make_pooled<TensorImpl>();
    g->shape = impl.shape;
    g->numel = impl.numel;
    g->data = impl.grad;
    return Tensor(std::move(g));
}

void check_shape(const Shape& shape, const char* op) {
    for (int64_t d : shape) check(d >= 0, "{}: negative dimension in shape {}", op, shape_str(shape));
}
}  // namespace

int64_t numel_of(const Shape& shape) {
    // A count whose bytes do not fit an int64 is refused here, where every shape's size is taken: wrapped
    // around it read as 0 elements, and indexing such a tensor wrote out of bounds.
    constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / static_cast<int64_t>(sizeof(float));
    int64_t n = 1;
    for (int64_t d : shape)
        check(!__builtin_mul_overflow(n, d, &n) && n <= kMaxElements,
              "shape {}: its element count overflows (more than {} float32 values would not fit 64-bit sizes)",
              shape_str(shape), kMaxElements);
    return n;
}

int64_t normalize_dim(int64_t dim, int64_t rank, const char* op) {
    const int64_t d = dim < 0 ? dim + rank : dim;
    check(d >= 0 && d < rank, "{}: dim {} out of range for a tensor of rank {}", op, dim, rank);
    return d;
}

// --- GradContext --------------------------------------------------------------------------------

bool GradContext::needs(size_t i) const { return inputs[i].requires_grad(); }

std::span<float> GradContext::grad(size_t i) const {
    TensorImpl& impl = *inputs[i].impl();
    if (!impl.grad) impl.grad = detail::make_pooled<Buffer>(static_cast<size_t>(impl.numel), 0.0f);
    return *impl.grad;
}

GradContext::Target GradContext::grad_target(size_t i) const {
    TensorImpl& impl = *inputs[i].impl();
    if (impl.grad) return {*impl.grad, false};
    impl.grad = detail::make_pooled<Buffer>(static_cast<size_t>(impl.numel));
    return {*impl.grad, true};
}

// --- Node teardown ---------------------------------------------------------------------------------

Node::~Node() {
    // Dropping the last handle to a long chain would otherwise recurse once per op. Instead, steal the
    // inputs of every node we are about to destroy into a local stack and free them one at a time.
    // Most nodes free nothing further (their inputs are held elsewhere, or were released by backward()):
    // those need no stack.
    const auto frees_a_node = [](const Tensor& t) {
        const auto& impl = t.impl();
        return impl && impl.use_count() == 1 && impl->grad_fn && impl->grad_fn.use_count() == 1;
    };
    if (std::none_of(inputs.begin(), inputs.end(), frees_a_node)) return;
    std::vector<Tensor> pending(std::make_move_iterator(inputs.begin()), std::make_move_iterator(inputs.end()));
    inputs.clear();
    while (!pending.empty()) {
        Tensor t = std::move(pending.back());
        pending.pop_back();
        if (frees_a_node(t)) {
            auto& next = t.impl()->grad_fn->inputs;
            std::move(next.begin(), next.end(), std::back_inserter(pending));
            next.clear();
        }
    }
}

// --- Tensor ------------------------------------------------------------------------------------------

TensorImpl& Tensor::checked_impl() const {
    check(impl_ != nullptr, "tensor: use of an undefined tensor");
    return *impl_;
}

const Shape& Tensor::shape() const { return checked_impl().shape; }

int64_t Tensor::size(int64_t dim) const { return shape()[detail::dim_of(shape(), dim, "size")]; }

int64_t Tensor::numel() const { return checked_impl().numel; }

bool Tensor::has_values() const { return checked_impl().data != nullptr; }

std::span<float> Tensor::data() const {
    const TensorImpl& impl = checked_impl();
    if (!impl.data) [[unlikely]]
        check(false, "tensor of shape {} holds no values: it was made for its shape alone (ShapesOnlyGuard)",
              shape_str(impl.shape));
    return {impl.data->data(), static_cast<size_t>(impl.numel)};
}

float Tensor::item() const {
    data();  // (a shapes-only tensor is refused as such, not as empty)
    check(numel() == 1, "item: tensor of shape {} has {} elements, not 1", shape_str(shape()), numel());
    return data()[0];
}

namespace {
int64_t flat_index(const Shape& shape, std::initializer_list<int64_t> index) {
    check(index.size() == shape.size(), "at: {} indices for a tensor of shape {}", index.size(), shape_str(shape));
    int64_t flat = 0;
    size_t d = 0;
    for (int64_t i : index) {
        check(i >= 0 && i < shape[d], "at: index {} out of range for dim {} of shape {}", i, d, shape_str(shape));
        flat = flat * shape[d] + i;
        ++d;
    }
    return flat;
}
}  // namespace

float Tensor::at(std::initializer_list<int64_t> index) const { return data()[flat_index(shape(), index)]; }
float& Tensor::at(std::initializer_list<int64_t> index) { return data()[flat_index(shape(), index)]; }

bool Tensor::requires_grad() const { return checked_impl().requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
    check(is_leaf(), "requires_grad_: only leaf tensors can change requires_grad (this one was made by {})", op());
    impl_->requires_grad = on;
    return *this;
}

bool Tensor::is_leaf() const { return checked_impl().grad_fn == nullptr; }

Tensor Tensor::grad() const {
    const TensorImpl& impl = checked_impl();
    return impl.grad ? grad_view(impl) : Tensor();
}

void Tensor::zero_grad() const { checked_impl().grad.reset(); }

const char* Tensor::op() const {
    const TensorImpl& impl = checked_impl();
    return impl.grad_fn ? impl.grad_fn->op : "leaf";
}

const std::string& Tensor::name() const { return checked_impl().name; }

Tensor& Tensor::set_name(std::string name) {
    checked_impl().name = std::move(name);
    return *this;
}

Tensor Tensor::detach() const {
    auto impl = detail::make_pooled<TensorImpl>();
    impl->shape = shape();
    impl->numel = impl_->numel;
    impl->data = impl_->data;
    return Tensor(std::move(impl));
}

Tensor Tensor::clone() const { return Tensor(new_impl(shape(), Buffer(data().begin(), data().end()))); }

HookHandle Tensor::register_hook(std::function<void(const Tensor& grad)> hook) const {
    TensorImpl& impl = checked_impl();
    check(impl.requires_grad, "register_hook: the tensor does not require a gradient, so no gradient will reach it");
    check(static_cast<bool>(hook), "register_hook: empty hook");
    return impl.hooks.add(std::move(hook));
}

Tensor Tensor::reshape(Shape shape, std::source_location where) const {
    return autograd::reshape(*this, std::move(shape), where);
}
Tensor Tensor::transpose(int64_t dim0, int64_t dim1, std::source_location where) const {
    return autograd::transpose(*this, dim0, dim1, where);
}
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, std::source_location where) const {
    return autograd::slice(*this, dim, start, end, where);
}

// --- the engine --------------------------------------------------------------------------------------

void Tensor::backward(bool retain_graph) const {
    check(numel() == 1,
          "backward: called without a gradient on a tensor of shape {}; only one-element outputs have an "
          "implied gradient of 1, pass output_grad otherwise",
          shape_str(shape()));
    backward(ones(shape()), retain_graph);
}

namespace {
// One tensor of a backward pass, in its topological order: its record, and (once a consumer's node
// let go of it) the reference that keeps it alive until its own turn.
struct WalkEntry {
    TensorImpl* impl;
    Tensor keep;
};

// The pass of the backward() walking on this thread (0: none). A backward() called from a hook while
// it walks is nested: it marks tensors in their own field, so the outer pass's marks stay valid.
thread_local uint64_t walking_pass = 0;
// The outer pass's order and depth-first stack, kept between calls so that a training step does not
// grow new ones.
using WalkStack = std::vector<std::pair<const std::shared_ptr<TensorImpl>*, size_t>>;
thread_local std::vector<WalkEntry> walk_order;
thread_local WalkStack walk_stack;
}  // namespace

void Tensor::backward(const Tensor& output_grad, bool retain_graph) const {
    check(output_grad.shape() == shape(), "backward: output_grad has shape {} but the tensor has shape {}",
          shape_str(output_grad.shape()), shape_str(shape()));
    check(requires_grad(),
          "backward: the tensor does not require a gradient (no input requires one, or it "
          "was made under NoGradGuard)");

    // Topological order by iterative DFS (post-order): every tensor comes after all of its inputs. Each
    // pass stamps the tensors it has seen with its own number (cheaper than a set) and records where in
    // the order each one is.
    static std::atomic<uint64_t> passes{0};
    const uint64_t pass = ++passes;
    const bool nested = walking_pass != 0;
    uint64_t TensorImpl::*const mark = nested ? &TensorImpl::nested_visit_mark : &TensorImpl::visit_mark;
    struct Walking {  // the outer pass owns walking_pass and walk_order until it returns or throws
        bool outer;
        std::vector<WalkEntry>& order;
        ~Walking() {
            if (!outer) return;
            walking_pass = 0;
            order.clear();
            if (order.capacity() > (size_t(1) << 16)) order = {};  // a huge graph's order is not kept
        }
    };
    std::vector<WalkEntry> nested_order;
    std::vector<WalkEntry>& order = nested ? nested_order : walk_order;
    const Walking walking{!nested, order};
    if (!nested) walking_pass = pass;

    // (the tensor's handle inside its consumer's Node, next input to visit); the graph does not change
    // during the walk, so those handles stay put
    WalkStack nested_stack;
    WalkStack& stack = nested ? nested_stack : walk_stack;
    stack.clear();  // (left over when a released graph stopped the last walk)
    const auto visit = [&](const std::shared_ptr<TensorImpl>& impl) {
        (*impl).*mark = pass;
        stack.emplace_back(&impl, 0);
    };
    visit(impl_);
    while (!stack.empty()) {
        auto& [impl, next] = stack.back();
        TensorImpl& t = **impl;
        const Node* node = t.grad_fn.get();
        if (node)
            check(!node->released,
                  "backward: the graph through '{}' was already released by an earlier backward(); "
                  "call the first backward with retain_graph = true to backpropagate twice",
                  node->op);
        if (node && next < node->inputs.size()) {
            const auto& input = node->inputs[next++].impl();
            if (input->requires_grad && (*input).*mark != pass) visit(input);
        } else {
            // A non-leaf's gradient is this pass's alone: reset before accumulating (leaves keep accumulating).
            if (node) t.grad.reset();
            t.walk_slot = order.size();
            // A nested pass holds every tensor from the start: the outer pass may let go of any of them.
            order.push_back({&t, nested ? Tensor(*impl) : Tensor()});
            stack.pop_back();
        }
    }
    {
        auto& g = impl_->grad;
        if (!g) g = detail::make_pooled<Buffer>(static_cast<size_t>(impl_->numel), 0.0f);
        const auto seed = output_grad.data();
        for (size_t i = 0; i < g->size(); ++i) (*g)[i] += seed[i];
    }

    // In reverse topological order every consumer of a tensor comes before it, so when the walk
    // reaches a tensor its gradient for this pass is complete: its hooks run then. Once its op's backward
    // has run, nothing needs the op's saved inputs any more: without retain_graph they are released right
    // away, so activations and gradients are freed during the walk instead of all at its end. (Anomaly
    // mode releases only after a clean walk: a failing backward leaves the whole graph to draw.)
    // The graph keeps every tensor of the walk alive until a node is released; the first release of a
    // reference to a tensor still to come moves it into that tensor's entry (no reference counting), and
    // the entry lets go of it after its turn.
    const bool anomalies = detail::anomaly_checks();
    const bool release_now = !retain_graph && !anomalies;
    const auto release = [&](Node* node) {
        if (!nested)
            for (Tensor& input : node->inputs) {
                TensorImpl* in = input.impl().get();
                if (in && in->visit_mark == pass && !order[in->walk_slot].keep.defined())
                    order[in->walk_slot].keep = std::move(input);
            }
        node->inputs.clear();
        node->backward = nullptr;
        node->released = true;
    };
    // A nested pass leaves the nodes the outer pass has still to walk to it.
    const auto releasable = [&](const TensorImpl& impl) { return !nested || impl.visit_mark != walking_pass; };
    for (size_t k = order.size(); k-- > 0;) {
        TensorImpl& impl = *order[k].impl;
        Node* node = impl.grad_fn.get();
        if (impl.grad) {  // else nothing flowed here
            if (!impl.hooks.empty()) impl.hooks.run(grad_view(impl));
            if (node) {
                check(!node->released,
                      "backward: the graph through '{}' was released during this backward() "
                      "(by a backward() called from a hook)",
                      node->op);
                const GradContext ctx{*impl.data, *impl.grad, node->inputs};
                node->backward(ctx);
                if (anomalies) [[unlikely]]
                    detail::check_backward(*node, impl);
            }
        }
        if (release_now) {
            if (node && releasable(impl)) release(node);
            order[k].keep = Tensor();  // a tensor nobody else holds goes now, with its gradient
        }
    }
    if (anomalies && !retain_graph)
        for (const WalkEntry& entry : order)
            if (Node* node = entry.impl->grad_fn.get(); node && releasable(*entry.impl)) release(node);
}

// --- making results ----------------------------------------------------------------------------------

Tensor make_result(const char* op, Shape shape, Buffer values, NodeInputs inputs, BackwardFn backward,
                   std::source_location where) {
    check(numel_of(shape) == static_cast<int64_t>(values.size()), "{}: result shape {} does not hold {} values", op,
          shape_str(shape), values.size());
    return make_result(op, std::move(shape), detail::make_pooled<Buffer>(std::move(values)), std::move(inputs),
                       std::move(backward), where);
}

Tensor make_result(const char* op, Shape shape, const std::vector<float>& values, NodeInputs inputs,
                   BackwardFn backward, std::source_location where) {
    return make_result(op, std::move(shape), Buffer(values.begin(), values.end()), std::move(inputs),
                       std::move(backward), where);
}

Tensor make_result(const char* op, Shape shape, std::shared_ptr<Buffer> storage, NodeInputs inputs, BackwardFn backward,
                   std::source_location where) {
    check(storage != nullptr, "{}: an input holds no values: it was made for its shape alone (ShapesOnlyGuard)", op);
    const int64_t numel = numel_of(shape);
    check(numel <= static_cast<int64_t>(storage->size()), "{}: result shape {} holds more than the storage's {} values",
          op, shape_str(shape), storage->size());
    if (detail::anomaly_checks()) [[unlikely]]
        detail::check_forward(op, shape, std::span<const float>(storage->data(), static_cast<size_t>(numel)), inputs,
                              where);
    auto impl = detail::make_pooled<TensorImpl>();
    impl->shape = std::move(shape);
    impl->numel = numel;
    impl->data = std::move(storage);
    const bool track =
        grad_enabled && std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.requires_grad(); });
    if (track) {
        impl->requires_grad = true;
        impl->grad_fn = detail::make_pooled<Node>(op, std::move(inputs), std::move(backward), where);
    }
    return Tensor(std::move(impl));
}

// --- creation -----------------------------------------------------------------------------------------

Tensor full(const Shape& shape, float value) {
    check_shape(shape, "full");
    if (shapes_only) return Tensor(shapes_only_impl(shape));  // (its count may pass 64-bit sizes)
    return Tensor(new_impl(shape, Buffer(static_cast<size_t>(numel_of(shape)), value)));
}
Tensor zeros(const Shape& shape) { return full(shape, 0.0f); }
Tensor ones(const Shape& shape) { return full(shape, 1.0f); }
Tensor scalar(float value) { return full({}, value); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape()); }

Tensor tensor(const std::vector<float>& values, const Shape& shape) {
    check_shape(shape, "tensor");
    if (shapes_only) return Tensor(shapes_only_impl(shape));
    check(numel_of(shape) == static_cast<int64_t>(values.size()),
          "tensor: {} values do not fill shape {} ({} elements)", values.size(), shape_str(shape), numel_of(shape));
    return Tensor(new_impl(shape, Buffer(values.begin(), values.end())));
}

Tensor tensor(const std::vector<float>& values) {
    const auto n = static_cast<int64_t>(values.size());
    return tensor(values, {n});
}

Tensor arange(float start, float end, float step) {
    check(step != 0.0f && std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
          "arange: bad range start {} end {} step {}", start, end, step);
    const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((double(end) - start) / step)));
    Buffer values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(start + double(step) * static_cast<double>(i));
    return Tensor(new_impl({n}, std::move(values)));
}

Tensor arange(int64_t n) {
    check(n >= 0, "arange: negative length {}", n);
    return arange(0.0f, static_cast<float>(n));
}

// --- grad mode ----------------------------------------------------------------------------------------

bool is_grad_enabled() { return grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(grad_enabled) { grad_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_enabled = previous_; }

// --- shapes only ----------------------------------------------------------------------------------------

bool is_shapes_only() { return shapes_only; }
ShapesOnlyGuard::ShapesOnlyGuard(int64_t max_tensors) : previous_(shapes_only), previous_left_(shapes_only_left) {
    shapes_only = true;
    shapes_only_left = max_tensors;
}
ShapesOnlyGuard::~ShapesOnlyGuard() {
    shapes_only = previous_;
    shapes_only_left = previous_left_;
}

}  // namespace autograd
