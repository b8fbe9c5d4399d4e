// check(): the one way tinygpt reports bad input. It throws std::invalid_argument with a message
// formatted by fmt, and, unlike assert, stays active in Release builds.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace autograd {

using Shape = std::vector<int64_t>;

// "(2, 3, 4)"; "()" for a scalar. Used in every shape error message.
inline std::string shape_str(const Shape& shape) { return fmt::format("({})", fmt::join(shape, ", ")); }

template <typename... Args>
void check(bool ok, fmt::format_string<Args...> message, Args&&... args) {
    if (!ok) throw std::invalid_argument(fmt::format(message, std::forward<Args>(args)...));
}

}  // namespace autograd
