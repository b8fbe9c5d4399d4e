// Anomaly mode: the switch, and the forward and backward checks that name the op, its shapes and the
// place it was called from.
#include "anomaly.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "autograd/anomaly.h"
#include "autograd/op.h"

namespace autograd {

namespace detail {

std::atomic<bool> anomaly_on{false};

namespace {
thread_local bool infinity_intended = false;

// The first non-finite element, or -1.
int64_t first_non_finite(std::span<const float> values) {
    for (size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i])) return static_cast<int64_t>(i);
    return -1;
}

bool has_nan(std::span<const float> values) {
    for (float v : values)
        if (std::isnan(v)) return true;
    return false;
}

bool has_inf(std::span<const float> values) {
    for (float v : values)
        if (std::isinf(v)) return true;
    return false;
}

const char* kind_of(float v) { return std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf"; }

std::string input_shapes(std::span<const Tensor> inputs) {
    if (inputs.empty()) return "no inputs";
    std::string s = inputs.size() == 1 ? "input " : "inputs ";
    for (size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + shape_str(inputs[i].shape()).str();
    return s;
}

std::string location(const char* op, const std::source_location& where) {
    return fmt::format("{} was called at {}:{} in function '{}'", op, where.file_name(), where.line(),
                       where.function_name());
}
}  // namespace

void check_forward(const char* op, const Shape& shape, std::span<const float> values, std::span<const Tensor> inputs,
                   const std::source_location& where) {
    const int64_t bad = first_non_finite(values);
    if (bad < 0) return;
    const bool nan = has_nan(values);
    if (!nan) {  // only infinities: fine when they came in through an input or were asked for
        if (infinity_intended) return;
        for (const Tensor& t : inputs)
            if (has_inf(t.data())) return;
    }
    // Report the first element of the kind that made this an anomaly.
    int64_t at = bad;
    if (nan)
        while (!std::isnan(values[static_cast<size_t>(at)])) ++at;
    std::string note;
    for (size_t i = 0; i < inputs.size(); ++i)
        if (nan && has_nan(inputs[i].data())) note += fmt::format(" (input {} already held NaN)", i);
    throw std::runtime_error(
        fmt::format("anomaly: the forward of '{}' produced {} (element {} of its output {}); {}{}; {}", op,
                    kind_of(values[static_cast<size_t>(at)]), at, shape_str(shape), input_shapes(inputs), note,
                    location(op, where)));
}

void check_backward(const Node& node, const TensorImpl& output) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
        const TensorImpl& in = *node.inputs[i].impl();
        if (!in.requires_grad || !in.grad) continue;
        const int64_t bad = first_non_finite(*in.grad);
        if (bad < 0) continue;
        const bool dout_bad = output.grad && first_non_finite(*output.grad) >= 0;
        throw std::runtime_error(fmt::format(
            "anomaly: the backward of '{}' produced {} (element {} of the gradient of input {}, shape {}); output {}, "
            "{}{}; "
            "{}",
            node.op, kind_of((*in.grad)[static_cast<size_t>(bad)]), bad, i, shape_str(in.shape),
            shape_str(output.shape), input_shapes(node.inputs),
            dout_bad ? " (the gradient flowing into it was already non-finite)" : "", location(node.op, node.where)));
    }
}

IntendedInfinity::IntendedInfinity(bool on) : previous_(infinity_intended) {
    infinity_intended = infinity_intended || on;
}
IntendedInfinity::~IntendedInfinity() { infinity_intended = previous_; }

}  // namespace detail

void set_anomaly_mode(bool on) { detail::anomaly_on.store(on, std::memory_order_relaxed); }
bool anomaly_mode() { return detail::anomaly_on.load(std::memory_order_relaxed); }

}  // namespace autograd
