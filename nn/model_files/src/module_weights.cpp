// A module's parameters to and from safetensors files, checked: every name, shape and value (finite)
// before anything is copied.
#include "nn/model_files/safetensors.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nn/files/file_names.h>

#include "safetensors_format.h"

namespace nn {

using autograd::shape_str;
using autograd::Tensor;
using detail::path_str;
using detail::quoted_name;

void check_finite(const NamedTensors& tensors, const std::string& where) {
    for (const auto& [name, t] : tensors) {
        const auto values = t.data();
        for (size_t i = 0; i < values.size(); ++i)
            if (!std::isfinite(values[i]))
                throw std::runtime_error(
                    fmt::format("{}: tensor {} holds {} at index {} (shape {}): refusing to load "
                                "a non-finite weight",
                                where, quoted_name(name), values[i], i, shape_str(t.shape())));
    }
}

void save_module(const std::filesystem::path& path, const Module& module,
                 const std::map<std::string, std::string>& metadata) {
    save_safetensors(path, module.named_parameters(), metadata);
}

void load_module(const std::filesystem::path& path, Module& module) {
    const Safetensors file = load_safetensors(path);
    check_finite(file.tensors, printable_name(path.string()));
    try {
        load_parameters(module, file.tensors);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(fmt::format("{}: {}", path_str(path), e.what()));
    }
}

void load_parameters(Module& module, const NamedTensors& tensors) {
    const NamedTensors params = module.named_parameters();

    std::map<std::string_view, const Tensor*> given;
    for (const auto& [name, t] : tensors) given.emplace(name, &t);
    std::vector<std::string> missing, mismatched, extra;
    std::set<std::string_view> wanted;
    for (const auto& [name, p] : params) {
        wanted.insert(name);
        const auto it = given.find(name);
        if (it == given.end()) missing.push_back(fmt::format("{} {}", name, shape_str(p.shape())));
        else if (it->second->shape() != p.shape())
            mismatched.push_back(fmt::format("{} is {} in the file, {} in the module", name,
                                             shape_str(it->second->shape()), shape_str(p.shape())));
    }
    for (const auto& [name, t] : tensors)
        if (!wanted.contains(name)) extra.push_back(fmt::format("{} {}", quoted_name(name), shape_str(t.shape())));

    if (!missing.empty() || !mismatched.empty() || !extra.empty()) {
        const auto list = [](const std::vector<std::string>& items, const char* what) -> std::string {
            if (items.empty()) return {};
            constexpr size_t kMaxListed = 10;
            std::string s = fmt::format("; {} {}: ", items.size(), what);
            for (size_t i = 0; i < items.size() && i < kMaxListed; ++i) s += (i ? ", " : "") + items[i];
            if (items.size() > kMaxListed) s += fmt::format(", and {} more", items.size() - kMaxListed);
            return s;
        };
        throw std::invalid_argument(fmt::format(
            "the tensors do not fit the module (nothing was loaded){}{}{}", list(missing, "missing from the file"),
            list(extra, "in the file but not in the module"), list(mismatched, "of a different shape")));
    }
    for (const auto& [name, p] : params) {
        const auto src = given.at(name)->data();
        if (src.data() != p.data().data()) std::copy(src.begin(), src.end(), p.data().begin());  // (read in place)
    }
}

}  // namespace nn
