// nn::Module: a module is its parameters plus forward(). Each parameter is registered once, by name;
// that one list drives the optimizer, checkpoints and gradient reports.
//
//     struct TwoLayer : nn::Callable<TwoLayer> {
//         nn::Linear first{{.in = 8, .out = 16}}, second{{.in = 16, .out = 4}};
//         TwoLayer() { register_module("first", first); register_module("second", second); }
//         Tensor forward(const Tensor& x) { return second(relu(first(x))); }
//     };
//     TwoLayer m;  m.named_parameters();  // first.weight, first.bias, second.weight, second.bias
//     Tensor y = m(x);                    // forward(x), then m's forward hooks
//
// A module that draws random numbers while it runs (dropout) registers its generator too, by name, so
// that a checkpoint saves and restores it (named_generators(): "blocks.0.dropout"), whatever the model.
//
// Modules hold registered children by address, so a Module can be neither copied nor moved: keep
// modules as members, or in std::unique_ptr when their number is chosen at run time.
//
// Hooks, two kinds (docs/hooks.md):
// - Forward hooks see a module's output. A module is called as module(args...), the one path (as
//   PyTorch's Module.__call__): nn::Callable gives a module of yours that call, which runs forward and
//   then its hooks, so forward just returns its result. A LanguageModel is called as model(ids, B, T).
//
//     HookHandle h = model.blocks[0]->attention.register_forward_hook(
//         [](const nn::Module&, const Tensor& out) { fmt::print("{}\n", autograd::shape_str(out.shape())); });
//     h.remove();
//
// - Hook points are the activations worth reading inside a forward, named as TransformerLens names them
//   ("blocks.0.attn.hook_pattern", "ln_final.hook_normalized"): their own namespace, apart from the
//   parameters' names. A hook reads the value, or assigns another of the same shape, which then flows on
//   (patching, ablation); value.register_hook() sees its gradient in the backward to come.
//
//     HookHandle h = model.add_hook("blocks.*.attn.hook_z", [](Tensor& z, const std::string& name) {
//         z = autograd::zeros(z.shape());   // every head's output, every layer: ablated
//     });
//     model.hook_point_names();            // every hook point, depth first in registration order
//     h.remove();                          // from every point it was added to
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <autograd/random.h>
#include <autograd/tensor.h>

namespace nn {

using autograd::HookHandle;
using autograd::Shape;
using autograd::Tensor;

// A named activation inside a forward (TransformerLens's HookPoint): the forward passes the value through
// it, and its hooks may read or replace it. A module holds it as a member and registers it by name
// (Module::register_hook_point). With no hook registered it costs one test and hands the value back.
class HookPoint {
public:
    // value: the activation; assigning another tensor of the same shape replaces what flows on.
    using Hook = std::function<void(Tensor& value)>;
    HookHandle add_hook(Hook hook);
    // Whether a hook is registered: the forward then makes the value where a fused op would not.
    bool hooked() const { return hooks_.active(); }
    // value, after every hook ran on it
    Tensor operator()(Tensor value) {
        if (hooks_.active()) hooks_.run(value);
        return value;
    }

private:
    autograd::HookList<Tensor&> hooks_;
};

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

    // Calls hook(*this, output) each time this module is called (module(args...), see nn::Callable),
    // after forward returned and before the caller sees its output; hooks run in registration order. The
    // output is in the graph, so a hook may register_hook() on it to see its gradient later. remove() on
    // the handle unregisters it, also from inside the hook. Refused for a module that is not called
    // through that path (its hooks would never run).
    HookHandle register_forward_hook(std::function<void(const Module&, const Tensor& output)> hook);
    bool has_forward_hooks() const;
    // Whether calls to this module run its forward hooks: an nn::Callable, a LanguageModel.
    virtual bool runs_forward_hooks() const { return false; }

    // Hook points of this module and its children by full name, depth first in registration order
    // ("blocks.0.attn.hook_q"; a child's part of the name is the hook name it was registered with).
    std::vector<std::pair<std::string, HookPoint*>> named_hook_points();
    std::vector<std::string> hook_point_names() const;
    // Adds `hook` to every hook point whose full name matches `pattern`, where '*' stands for any run of
    // characters ("blocks.*.attn.hook_pattern", "*hook_resid_post", or one exact name); hook gets the
    // value and the point's name. The one handle removes it from all of them. A hook that changes the
    // value's shape is an error. std::invalid_argument when nothing matches, naming the hook points.
    HookHandle add_hook(std::string_view pattern, std::function<void(Tensor& value, const std::string& name)> hook);

protected:
    // Runs the forward hooks on what forward returned, and returns it (nn::Callable's call does this).
    Tensor run_forward_hooks(Tensor out) const;
    // Registers a hook point of this module (a member) under `name`, distinct among its hook points.
    HookPoint& register_hook_point(std::string name, HookPoint& point);
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
    // `hook_name`: the child's part of its hook points' names, when it differs from `name` (GPT-2's "h.0"
    // holds "blocks.0.hook_resid_pre", as TransformerLens names it).
    template <typename M>
    M& register_module(std::string name, M& child, std::string hook_name = "") {
        adopt(std::move(name), child, std::move(hook_name));
        return child;
    }

private:
    void adopt(std::string name, Module& child, std::string hook_name);
    struct Child {
        std::string name, hook_name;
        Module* module;
    };
    struct Parameter {
        std::string name;
        Tensor value;
        bool decay;
    };
    void collect(const std::string& prefix, std::vector<const Parameter*>& out, std::vector<std::string>& names) const;
    std::vector<Parameter> params_;
    std::vector<std::pair<std::string, autograd::Generator*>> generators_;
    std::vector<Child> children_;
    std::vector<std::pair<std::string, HookPoint*>> hook_points_;
    mutable autograd::HookList<const Module&, const Tensor&> forward_hooks_;
    bool training_ = true;
};

// The one path a module of yours is called through, as PyTorch's Module.__call__: derive from
// Callable<YourModule> (or Callable<YourModule, Base> for another module class, nn::InspectableHead) and
// write a forward that returns a Tensor; module(args...) runs forward(args...), then the forward hooks.
template <typename Self, typename Base = Module>
class Callable : public Base {
public:
    using Base::Base;
    template <typename... Args>
    Tensor operator()(Args&&... args) {
        return this->run_forward_hooks(static_cast<Self&>(*this).forward(std::forward<Args>(args)...));
    }
    template <typename... Args>
    Tensor operator()(Args&&... args) const {
        return this->run_forward_hooks(static_cast<const Self&>(*this).forward(std::forward<Args>(args)...));
    }
    bool runs_forward_hooks() const override { return true; }
};

}  // namespace nn
