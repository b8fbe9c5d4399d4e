#include "nn/module.h"

namespace nn {

Tensor Module::register_parameter(std::string name, Tensor value) {
    autograd::check(value.defined(), "register_parameter: '{}' is undefined", name);
    for (const auto& [existing, _] : params_)
        autograd::check(existing != name, "register_parameter: '{}' is registered twice", name);
    value.requires_grad_(true).set_name(name);
    params_.emplace_back(std::move(name), value);
    return value;
}

void Module::collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
    for (const auto& [name, p] : params_) out.emplace_back(prefix + name, p);
    for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
    std::vector<std::pair<std::string, Tensor>> out;
    collect("", out);
    return out;
}

std::vector<Tensor> Module::parameters() const {
    std::vector<Tensor> out;
    for (auto& [_, p] : named_parameters()) out.push_back(p);
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

void Module::train(bool on) {
    training_ = on;
    for (auto& [_, child] : children_) child->train(on);
}

}  // namespace nn
