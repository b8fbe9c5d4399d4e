#include "nn/module.h"

#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <autograd/format.h>

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
    for (const Child& child : children_)
        for (auto& [sub, gen] : child.module->named_generators()) out.emplace_back(child.name + "." + sub, gen);
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
    for (const Child& child : children_) child.module->collect(prefix + child.name + ".", out, names);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
    std::vector<const Parameter*> params;
    std::vector<std::string> names;
    collect("", params, names);
    std::vector<std::pair<std::string, Tensor>> out;
    for (size_t i = 0; i < params.size(); ++i) out.emplace_back(names[i], params[i]->value);
    return out;
}

void Module::adopt(std::string name, Module& child, std::string hook_name) {
    for (auto& [sub, value] : child.named_parameters())
        value.set_name(name + "." + sub);  // a handle: names the parameter
    if (hook_name.empty()) hook_name = name;
    children_.push_back({std::move(name), std::move(hook_name), &child});
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
    for (const Child& child : children_)
        for (auto& [sub, module] : child.module->named_modules())
            out.emplace_back(sub.empty() ? child.name : child.name + "." + sub, module);
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
    autograd::check(runs_forward_hooks(),
                    "register_forward_hook: this module is not called through the path that runs hooks, so they would "
                    "never fire: derive it from nn::Callable<YourModule> and call it as module(args...)");
    return forward_hooks_.add(std::move(hook));
}

bool Module::has_forward_hooks() const { return forward_hooks_.active(); }

Tensor Module::run_forward_hooks(Tensor out) const {
    if (!forward_hooks_.empty()) forward_hooks_.run(*this, out);
    return out;
}

HookHandle HookPoint::add_hook(Hook hook) {
    autograd::check(static_cast<bool>(hook), "HookPoint::add_hook: empty hook");
    return hooks_.add(std::move(hook));
}

HookPoint& Module::register_hook_point(std::string name, HookPoint& point) {
    for (const auto& [registered, _] : hook_points_)
        autograd::check(registered != name, "register_hook_point: '{}' is registered twice", name);
    hook_points_.emplace_back(std::move(name), &point);
    return point;
}

std::vector<std::pair<std::string, HookPoint*>> Module::named_hook_points() {
    std::vector<std::pair<std::string, HookPoint*>> out = hook_points_;
    for (const Child& child : children_)
        for (auto& [sub, point] : child.module->named_hook_points())
            out.emplace_back(child.hook_name + "." + sub, point);
    return out;
}

std::vector<std::string> Module::hook_point_names() const {
    std::vector<std::string> names;
    for (auto& [name, _] : const_cast<Module*>(this)->named_hook_points()) names.push_back(std::move(name));
    return names;
}

namespace {

// '*' matches any run of characters (dots too), every other character itself
bool glob_match(std::string_view pattern, std::string_view name) {
    if (pattern.empty()) return name.empty();
    if (pattern[0] == '*') {
        for (size_t skip = 0; skip <= name.size(); ++skip)
            if (glob_match(pattern.substr(1), name.substr(skip))) return true;
        return false;
    }
    return !name.empty() && pattern[0] == name[0] && glob_match(pattern.substr(1), name.substr(1));
}

}  // namespace

HookHandle Module::add_hook(std::string_view pattern,
                            std::function<void(Tensor& value, const std::string& name)> hook) {
    autograd::check(static_cast<bool>(hook), "add_hook: empty hook");
    auto group = std::make_shared<autograd::detail::HookGroup>();
    auto shared_hook = std::make_shared<std::function<void(Tensor&, const std::string&)>>(std::move(hook));
    std::vector<std::string> names;
    for (auto& [name, point] : named_hook_points()) {
        names.push_back(name);
        if (!glob_match(pattern, name)) continue;
        // each point's hook holds the group, so the handle stays active while any of them is registered
        // (a copy by init-capture: clang before 16, emscripten's too, cannot capture a structured binding)
        group->members.push_back(point->add_hook([group, shared_hook, point_name = name](Tensor& value) {
            const Shape shape = value.shape();
            (*shared_hook)(value, point_name);
            autograd::check(value.defined(), "hook on '{}': the hook left the value undefined", point_name);
            autograd::check(value.shape() == shape, "hook on '{}': the value was {}, the hook made it {}", point_name,
                            autograd::shape_str(shape), autograd::shape_str(value.shape()));
        }));
    }
    autograd::check(!group->members.empty(), "add_hook: no hook point matches '{}'; this module's hook points: {}",
                    pattern, names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
    return HookHandle(std::weak_ptr<autograd::detail::HookState>(group));
}

void Module::train(bool on) {
    training_ = on;
    for (Child& child : children_) child.module->train(on);
}

}  // namespace nn
