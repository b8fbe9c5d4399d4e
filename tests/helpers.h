// Small helpers shared by the Catch2 tests: random inputs that keep gradient checks meaningful,
// closeness checks, and REQUIRE_GRADCHECK, which prints gradcheck's description of the worst element.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <autograd/op.h>
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

// Runs autograd::gradcheck(f, inputs[, options]) and requires it to pass; on failure the message
// naming the worst element is printed. It also checks f(x) + 2 f(x), where every op runs twice on the
// same inputs: a backward that assigns (=) instead of accumulating (+=) fails there.
#define REQUIRE_GRADCHECK(...)                                                          \
    do {                                                                                \
        const auto gradcheck_results_ = ::test::gradcheck_once_and_reused(__VA_ARGS__); \
        INFO("gradcheck: " << gradcheck_results_.first.message);                        \
        INFO("gradcheck of f(x) + 2 f(x): " << gradcheck_results_.second.message);      \
        CHECK(gradcheck_results_.first.checked > 0);                                    \
        REQUIRE(gradcheck_results_.first.ok);                                           \
        REQUIRE(gradcheck_results_.second.ok);                                          \
    } while (false)

namespace test {

using autograd::Generator;
using autograd::Shape;
using autograd::Tensor;
using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;

inline std::pair<autograd::GradcheckResult, autograd::GradcheckResult> gradcheck_once_and_reused(
    const Fn& f, const Inputs& inputs, const autograd::GradcheckOptions& options = {}) {
    const Fn reused = [&f](const Inputs& in) { return f(in) + autograd::scale(f(in), 2.0f); };
    return {autograd::gradcheck(f, inputs, options), autograd::gradcheck(reused, inputs, options)};
}

// Uniform values in [low, high), requiring a gradient.
inline Tensor uniform_param(const Shape& shape, Generator& gen, float low = -1.0f, float high = 1.0f) {
    Tensor t = autograd::rand(shape, gen, low, high);
    t.requires_grad_();
    return t;
}

// Magnitudes in [low, high) with a random sign: keeps inputs away from kinks (relu) and poles (div).
inline Tensor away_from_zero(const Shape& shape, Generator& gen, float low = 0.3f, float high = 1.5f) {
    Tensor t = autograd::rand(shape, gen, low, high);
    for (float& v : t.data())
        if (gen.uniform() < 0.5f) v = -v;
    t.requires_grad_();
    return t;
}

// Values 0.1 apart in a random order (no near-ties, so max() is differentiable at these points).
inline Tensor distinct_param(const Shape& shape, Generator& gen) {
    const int64_t n = autograd::numel_of(shape);
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    for (int64_t i = n - 1; i > 0; --i)  // Fisher-Yates with the library's generator
        std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(gen.randint(i + 1))]);
    std::vector<float> values(static_cast<size_t>(n));
    for (size_t i = 0; i < values.size(); ++i) values[i] = 0.1f * static_cast<float>(order[i] - n / 2);
    Tensor t = autograd::tensor(std::move(values), shape);
    t.requires_grad_();
    return t;
}

// Largest |a - b|; infinity if the sizes differ or any value is not finite.
inline double max_abs_diff(std::span<const float> a, const std::vector<double>& b) {
    if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double d = std::abs(static_cast<double>(a[i]) - b[i]);
        if (!std::isfinite(d)) return std::numeric_limits<double>::infinity();
        worst = std::max(worst, d);
    }
    return worst;
}
inline double max_abs_diff(const Tensor& t, const std::vector<double>& expected) {
    return max_abs_diff(std::span<const float>(t.data()), expected);
}
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
    const std::vector<float> bv = b.to_vector();
    return max_abs_diff(std::span<const float>(a.data()), std::vector<double>(bv.begin(), bv.end()));
}

inline bool all_finite(const Tensor& t) {
    return std::all_of(t.data().begin(), t.data().end(), [](float v) { return std::isfinite(v); });
}

inline std::string values_str(const Tensor& t) { return fmt::format("{}", t.to_vector()); }

}  // namespace test
