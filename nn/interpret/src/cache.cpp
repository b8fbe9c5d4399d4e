#include "nn/interpret/cache.h"

#include <autograd/check.h>

#include <memory>

#include <fmt/ranges.h>

namespace nn {

using namespace autograd;

const Tensor& ActivationCache::operator[](std::string_view name) const {
    for (const auto& [cached, value] : entries_)
        if (cached == name) return value;
    check(false, "activation cache: no '{}'; cached: {}", name,
          entries_.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(names(), ", ")));
    return entries_.front().second;  // (not reached)
}

bool ActivationCache::contains(std::string_view name) const {
    for (const auto& [cached, _] : entries_)
        if (cached == name) return true;
    return false;
}

std::vector<std::string> ActivationCache::names() const {
    std::vector<std::string> out;
    for (const auto& [name, _] : entries_) out.push_back(name);
    return out;
}

void ActivationCache::set(std::string name, Tensor value) {
    for (auto& [cached, old] : entries_)
        if (cached == name) {
            old = std::move(value);
            return;
        }
    entries_.emplace_back(std::move(name), std::move(value));
}

HookHandle add_hooks(Module& model, std::string_view names,
                     const std::function<void(Tensor& value, const std::string& name)>& hook) {
    auto group = std::make_shared<autograd::detail::HookGroup>();
    size_t start = 0;
    while (start <= names.size()) {
        const size_t comma = std::min(names.find(',', start), names.size());
        std::string_view glob = names.substr(start, comma - start);
        while (!glob.empty() && glob.front() == ' ') glob.remove_prefix(1);
        while (!glob.empty() && glob.back() == ' ') glob.remove_suffix(1);
        if (!glob.empty()) {
            try {
                // each hook holds the group, so the handle stays active while any of them is registered
                group->members.push_back(
                    model.add_hook(glob, [group, hook](Tensor& value, const std::string& name) { hook(value, name); }));
            } catch (...) {
                group->remove();  // no hook left behind by the globs before
                throw;
            }
        }
        start = comma + 1;
    }
    check(!group->members.empty(), "hook names: '{}' names no glob", names);
    return HookHandle(std::weak_ptr<autograd::detail::HookState>(group));
}

ActivationCache run_with_cache(LanguageModel& model, std::span<const int64_t> ids, int64_t B, int64_t T,
                               std::string_view names) {
    ActivationCache cache;
    NoGradGuard no_grad;
    auto keep = [&cache](Tensor& value, const std::string& name) { cache.set(name, value.clone()); };
    ScopedHook scoped{add_hooks(model, names, keep)};
    model(ids, B, T);
    return cache;
}

ActivationCache run_with_cache(LanguageModel& model, std::span<const int64_t> ids, std::string_view names) {
    return run_with_cache(model, ids, 1, static_cast<int64_t>(ids.size()), names);
}

FrozenParameters::FrozenParameters(Module& module) {
    for (Tensor& p : module.parameters())
        if (p.requires_grad()) {
            p.requires_grad_(false);
            frozen_.push_back(p);
        }
}
FrozenParameters::~FrozenParameters() {
    for (Tensor& p : frozen_) p.requires_grad_(true);
}

GradientCache run_with_gradients(LanguageModel& model, std::span<const int64_t> ids, int64_t B, int64_t T,
                                 std::string_view names, const std::function<Tensor(const Tensor& logits)>& metric) {
    return run_with_gradients(model, names, [&] { return metric(model(ids, B, T)); });
}

GradientCache run_with_gradients(Module& model, std::string_view names, const std::function<Tensor()>& metric) {
    GradientCache out;
    FrozenParameters frozen(model);
    // A point that nothing before it makes require a gradient (the first one reached, with the parameters
    // frozen) becomes a leaf that does: the graph then starts there, and every point after it is reached.
    // Each point's gradient is copied when the backward reaches it.
    std::vector<std::pair<std::string, Tensor>> values;
    std::vector<std::shared_ptr<Tensor>> gradients;
    auto keep = [&](Tensor& value, const std::string& name) {
        if (!value.requires_grad()) value = value.detach().requires_grad_(true);
        values.emplace_back(name, value.detach().clone());
        gradients.push_back(std::make_shared<Tensor>());
        value.register_hook([slot = gradients.back()](const Tensor& g) { *slot = g.clone(); });
    };
    {
        ScopedHook scoped{add_hooks(model, names, keep)};
        const Tensor m = metric();
        check(m.numel() == 1, "run_with_gradients: the metric must be one number, got a tensor of shape {}",
              shape_str(m.shape()));
        out.metric = m.item();
        if (m.requires_grad()) m.backward();
    }
    for (size_t i = 0; i < values.size(); ++i) {
        const Tensor& g = *gradients[i];
        out.gradients.set(values[i].first, g.defined() ? g : zeros(values[i].second.shape()));
        out.values.set(std::move(values[i].first), std::move(values[i].second));
    }
    return out;
}

}  // namespace nn
