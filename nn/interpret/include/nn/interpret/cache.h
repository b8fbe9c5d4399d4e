// Activations by name, and the gradient a number computed from the logits sends to each: the reading
// half of asking a model why (docs/interpret.md). Every model kind, a kind of your own included: what is
// read is the model's hook points (nn/module.h), named as TransformerLens names them.
//
//     nn::ActivationCache cache = nn::run_with_cache(model, ids, "blocks.*.attn.hook_pattern,logits");
//     cache["blocks.1.attn.hook_pattern"];        // (1, n_head, T, T)
//
// `names`: one or more globs separated by commas ('*' any run of characters, as Module::add_hook); each
// must match a hook point, else std::invalid_argument listing the model's. The model runs as it is (call
// model.eval() first: dropout would change what is cached).
//
// Shape legend: B batch, T time, V vocab.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nn/models.h>

namespace nn {

// Tensors by hook name, in the order their points fired.
class ActivationCache {
public:
    // the value of hook point `name`; std::invalid_argument naming the cached names when absent
    const Tensor& operator[](std::string_view name) const;
    bool contains(std::string_view name) const;
    std::vector<std::string> names() const;
    const std::vector<std::pair<std::string, Tensor>>& entries() const { return entries_; }
    size_t size() const { return entries_.size(); }
    void set(std::string name, Tensor value);  // adds, or replaces the value of that name

private:
    std::vector<std::pair<std::string, Tensor>> entries_;
};

// Adds `hook` to every hook point matching one of `names`' comma-separated globs; one handle removes it
// from all of them. std::invalid_argument naming a glob that matches nothing.
HookHandle add_hooks(Module& model, std::string_view names,
                     const std::function<void(Tensor& value, const std::string& name)>& hook);

// Removes a hook at the end of a scope, however the scope ends.
struct ScopedHook {
    HookHandle handle;
    ~ScopedHook() { handle.remove(); }
};

// One forward of ids (B, T) without a graph; a copy of every matching hook point's value (B leading, as
// TransformerLens's), "logits" (B, T, V) among them when it matches.
ActivationCache run_with_cache(LanguageModel& model, std::span<const int64_t> ids, int64_t B, int64_t T,
                               std::string_view names = "*");
// ids: one sequence (1, T)
ActivationCache run_with_cache(LanguageModel& model, std::span<const int64_t> ids, std::string_view names = "*");

// One forward with a graph and one backward of metric(logits) (a tensor of one element): the matching
// points' values, and the gradient of the metric at each (zeros where it does not depend on the point).
// The parameters are held frozen for it: none gets a gradient, and the backward computes only what
// reaches the points.
struct GradientCache {
    ActivationCache values, gradients;
    double metric = 0;
};
GradientCache run_with_gradients(LanguageModel& model, std::span<const int64_t> ids, int64_t B, int64_t T,
                                 std::string_view names, const std::function<Tensor(const Tensor& logits)>& metric);
// The same around any computation: `metric` runs `model`'s modules as it likes (piece by piece through
// nn::Transformer, reading out one position) and returns the one number; `model`'s points are hooked.
GradientCache run_with_gradients(Module& model, std::string_view names, const std::function<Tensor()>& metric);

// Sets requires_grad false on every parameter of a module that has it, for a scope, and back after.
class FrozenParameters {
public:
    explicit FrozenParameters(Module& module);
    ~FrozenParameters();
    FrozenParameters(const FrozenParameters&) = delete;
    FrozenParameters& operator=(const FrozenParameters&) = delete;

private:
    std::vector<Tensor> frozen_;
};

}  // namespace nn
