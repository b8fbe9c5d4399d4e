// fmt support: fmt::format("{:.3f}", t) prints a tensor with that float format. Small tensors print
// whole; a tensor over 1000 elements shows the first and last 3 entries of each dim around "...".
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace autograd {
class Tensor;
// element_format is a fmt replacement field for one float, such as "{:.4f}".
std::string format_tensor(const Tensor& t, std::string_view element_format);
}  // namespace autograd

template <>
struct fmt::formatter<autograd::Tensor> {
    std::string element_format = "{:.4f}";

    constexpr auto parse(fmt::format_parse_context& ctx) {
        auto it = ctx.begin();
        auto end = it;
        while (end != ctx.end() && *end != '}') ++end;
        if (end != it) element_format = "{:" + std::string(it, end) + "}";
        return end;
    }
    template <typename FormatContext>
    auto format(const autograd::Tensor& t, FormatContext& ctx) const {
        const std::string text = autograd::format_tensor(t, element_format);
        return std::copy(text.begin(), text.end(), ctx.out());
    }
};
