#include "nn/module.h"

namespace nn {

Tensor Module::register_parameter(std::string name, Tensor value, bool decay) {
    autograd::check(value.defined(), "register_parameter: '{}' is undefined", name);
    for (const Parameter& p : params_)
        autograd::check(p.name != name, "register_parameter: '{}' is registered twice", name);
    value.requires_grad_(true).set_name(name);
    params_.push_back({std::move(name), value, decay});
    return value;
}

autograd::Generator& Module::register_generator(std::string name, autograd::Generator& gen) {
    for (const auto& [registered, _] : generators_)
        autograd::check(registered != name, "register_generator: '{}' is registered twice", name);
    generators_.emplace_back(std::move(name), &gen);
    return gen;
}

std::vector<std::pair<std::string, autograd::Generator*>> Module::named_generators() {
    std::vector<std::pair<std::string, autograd::Generator*>> out = generators_;
    for (const auto& [name, child] : children_)
        for (auto& [sub, gen] : child->named_generators()) out.emplace_back(name + "." + sub, gen);
    return out;
}

std::vector<std::pair<std::string, const autograd::Generator*>> Module::named_generators() const {
    std::vector<std::pair<std::string, const autograd::Generator*>> out;
    for (auto& [name, gen] : const_cast<Module*>(this)->named_generators()) out.emplace_back(std::move(name), gen);
    return out;
}

void Module::collect(const std::string& prefix, std::vector<const Parameter*>& out,
                     std::vector<std::string>& names) const {
    for (const Parameter& p : params_) {
        out.push_back(&p);
        names.push_back(prefix + p.name);
    }
    for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out, names);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
    std::vector<const Parameter*> params;
    std::vector<std::string> names;
    collect("", params, names);
    std::vector<std::pair<std::string, Tensor>> out;
    for (size_t i = 0; i < params.size(); ++i) out.emplace_back(names[i], params[i]->value);
    return out;
}

void Module::adopt(std::string name, Module& child) {
    for (auto& [sub, value] : child.named_parameters()) value.set_name(name + "." + sub);  // a handle: names the parameter
    children_.emplace_back(std::move(name), &child);
}

std::vector<std::string> Module::decayed_parameter_names() const {
    std::vector<const Parameter*> params;
    std::vector<std::string> names, decayed;
    collect("", params, names);
    for (size_t i = 0; i < params.size(); ++i)
        if (params[i]->decay) decayed.push_back(names[i]);
    return decayed;
}

std::vector<Tensor> Module::parameters() const {
    std::vector<Tensor> out;
    for (auto& [_, p] : named_parameters()) out.push_back(p);
    return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
    std::vector<std::pair<std::string, const Module*>> out = {{"", this}};
    for (const auto& [name, child] : children_)
        for (auto& [sub, module] : child->named_modules()) out.emplace_back(sub.empty() ? name : name + "." + sub, module);
    return out;
}

int64_t Module::parameter_count() const {
    int64_t n = 0;
    for (const Tensor& p : parameters()) n += p.numel();
    return n;
}

void Module::zero_grad() {
    for (Tensor& p : parameters()) p.zero_grad();
}

HookHandle Module::register_forward_hook(std::function<void(const Module&, const Tensor& output)> hook) {
    autograd::check(static_cast<bool>(hook), "register_forward_hook: empty hook");
    return forward_hooks_.add(std::move(hook));
}

bool Module::has_forward_hooks() const { return !forward_hooks_.empty(); }

Tensor Module::output(Tensor out) const {
    if (!forward_hooks_.empty()) forward_hooks_.run(*this, out);
    return out;
}

void Module::train(bool on) {
    training_ = on;
    for (auto& [_, child] : children_) child->train(on);
}

}  // namespace nn
