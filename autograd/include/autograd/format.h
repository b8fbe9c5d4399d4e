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
    // "{:" + the spec + "}", in a fixed array rather than a std::string: fmt checks format strings at
    // compile time, and clang cannot build a std::string of libstdc++ 12 in a constant expression.
    char element_format[64] = "{:.4f}";
    size_t element_format_size = 6;

    constexpr auto parse(fmt::format_parse_context& ctx) {
        auto it = ctx.begin();
        auto end = it;
        while (end != ctx.end() && *end != '}') ++end;
        if (end == it) return end;
        const auto spec_size = static_cast<size_t>(end - it);
        if (spec_size + 3 > sizeof element_format) throw fmt::format_error("tensor format spec too long");
        element_format_size = 0;
        element_format[element_format_size++] = '{';
        element_format[element_format_size++] = ':';
        for (; it != end; ++it) element_format[element_format_size++] = *it;
        element_format[element_format_size++] = '}';
        return end;
    }
    template <typename FormatContext>
    auto format(const autograd::Tensor& t, FormatContext& ctx) const {
        const std::string text = autograd::format_tensor(t, std::string_view(element_format, element_format_size));
        return std::copy(text.begin(), text.end(), ctx.out());
    }
};
