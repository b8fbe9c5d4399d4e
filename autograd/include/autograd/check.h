// check(): the one way tinygpt reports bad input. It throws std::invalid_argument with a message
// formatted by fmt, and, unlike assert, stays active in Release builds.
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "autograd/shape.h"

namespace autograd {

// A shape as text, "(2, 3, 4)" or "()" for a scalar, formatted only when printed: every op passes
// shape_str(...) to check(), and a check that passes must cost nothing. It views the shape, so use it
// within the expression that made it, or keep std::string(shape_str(s)).
struct ShapeText {
    std::span<const int64_t> dims;
    std::string str() const { return fmt::format("({})", fmt::join(dims, ", ")); }
    operator std::string() const { return str(); }  // NOLINT(google-explicit-constructor): reads as a string
    friend bool operator==(const ShapeText& a, std::string_view b) { return a.str() == b; }
    friend std::ostream& operator<<(std::ostream& os, const ShapeText& t) { return os << t.str(); }
};
inline ShapeText shape_str(const Shape& shape) { return {shape}; }

template <typename... Args>
void check(bool ok, fmt::format_string<Args...> message, Args&&... args) {
    if (!ok) throw std::invalid_argument(fmt::format(message, std::forward<Args>(args)...));
}

}  // namespace autograd

template <>
struct fmt::formatter<autograd::ShapeText> : fmt::formatter<std::string_view> {
    auto format(const autograd::ShapeText& t, fmt::format_context& ctx) const {
        return fmt::formatter<std::string_view>::format(t.str(), ctx);
    }
};
