// nn::Module: a module is its parameters plus forward(). Each parameter is registered once, by name;
// that one list drives the optimizer, checkpoints and gradient reports.
//
//     struct TwoLayer : nn::Module {
//         nn::Linear first{{.in = 8, .out = 16}}, second{{.in = 16, .out = 4}};
//         TwoLayer() { register_module("first", first); register_module("second", second); }
//         Tensor forward(const Tensor& x) { return output(second.forward(relu(first.forward(x)))); }
//     };
//     TwoLayer m;  m.named_parameters();  // first.weight, first.bias, second.weight, second.bias
//
// A module that draws random numbers while it runs (dropout) registers its generator too, by name, so
// that a checkpoint saves and restores it (named_generators(): "blocks.0.dropout"), whatever the model.
//
// Modules hold registered children by address, so a Module can be neither copied nor moved: keep
// modules as members, or in std::unique_ptr when their number is chosen at run time.
//
// Forward hooks see every module's output: each module's forward returns through output(), which
// runs them. A module of your own does the same: `return output(y);`.
//
//     HookHandle h = model.blocks[0]->attention.register_forward_hook(
//         [](const nn::Module&, const Tensor& out) { fmt::print("{}\n", autograd::shape_str(out.shape())); });
//     h.remove();
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <autograd/random.h>
#include <autograd/tensor.h>

namespace nn {

using autograd::HookHandle;
using autograd::Shape;
using autograd::Tensor;

class Module {
public:
    Module() = default;
    virtual ~Module() = default;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    // Parameters of this module and its children, depth first in registration order, named
    // "child.grandchild.param" relative to this module. Pure: it names no tensor (see below).
    // parameters(), zero_grad() and the others go through it too.
    std::vector<std::pair<std::string, Tensor>> named_parameters() const;
    std::vector<Tensor> parameters() const;
    // Names of the parameters that take weight decay: matrices that multiply (Linear weights) by
    // default; biases, norm gains and embedding tables are registered without it.
    std::vector<std::string> decayed_parameter_names() const;
    int64_t parameter_count() const;  // number of scalars
    // This module ("") and every module inside it, depth first, by dotted name ("blocks.0.attention").
    std::vector<std::pair<std::string, const Module*>> named_modules() const;
    void zero_grad();
    // Generators of this module and its children, depth first in registration order, by dotted name
    // as parameters are: what a checkpoint must save for the run to resume exactly.
    std::vector<std::pair<std::string, autograd::Generator*>> named_generators();
    std::vector<std::pair<std::string, const autograd::Generator*>> named_generators() const;

    void train(bool on = true);  // also sets every child
    void eval() { train(false); }
    bool is_training() const { return training_; }

    // Calls hook(*this, output) each time this module's forward returns, after the output is made and
    // before the caller sees it; hooks run in registration order. The output is the tensor the
    // forward returns (in the graph, so a hook may register_hook() on it to see its gradient later).
    // remove() on the handle unregisters it, also from inside the hook.
    HookHandle register_forward_hook(std::function<void(const Module&, const Tensor& output)> hook);
    bool has_forward_hooks() const;

protected:
    // Every forward returns through this: it runs the forward hooks on `out` and returns it.
    Tensor output(Tensor out) const;
    // Marks the tensor as requiring a gradient, names it `name`, and returns it (assign it to a member).
    // `decay`: whether optimizers apply weight decay to it.
    Tensor register_parameter(std::string name, Tensor value, bool decay = false);
    // Registers a generator this module draws from while it runs (held by address: a member), under
    // `name`, distinct among this module's generators; returns it.
    autograd::Generator& register_generator(std::string name, autograd::Generator& gen);
    // Adds a finished child. Tensor names: each registration prefixes the child's parameter names with
    // "name.", so a parameter's name() is its full dotted name in the outermost module it is registered
    // into ("blocks.0.attention.heads.0.query.weight" in a GPT), for graphs (to_dot), anomaly messages
    // and reports. Children are registered after they are built, so the names are final once the
    // outermost module's constructor returns; nothing renames them later.
    template <typename M>
    M& register_module(std::string name, M& child) {
        adopt(std::move(name), child);
        return child;
    }

private:
    void adopt(std::string name, Module& child);
    struct Parameter {
        std::string name;
        Tensor value;
        bool decay;
    };
    void collect(const std::string& prefix, std::vector<const Parameter*>& out,
                 std::vector<std::string>& names) const;
    std::vector<Parameter> params_;
    std::vector<std::pair<std::string, autograd::Generator*>> generators_;
    std::vector<std::pair<std::string, Module*>> children_;
    mutable autograd::HookList<const Module&, const Tensor&> forward_hooks_;
    bool training_ = true;
};

}  // namespace nn
