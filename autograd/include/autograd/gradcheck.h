// gradcheck: does an op's analytic gradient match central finite differences?
//
// The check contracts the output with a random upstream gradient g (a plain sum() would hide errors
// in ops whose rows sum to a constant, like softmax), so it compares d<g, f(x)>/dx both ways. The
// forward runs in float32, so the defaults are sized for it: eps 1e-3 makes truncation error
// ~1e-6 and rounding error ~1e-4 for moderate values, while a wrong backward is off by O(1).
// Module parameters are checked through the module, since the inputs themselves are perturbed:
//
//     nn::Head head({.n_embd = 4, .head_size = 3});
//     auto result = gradcheck([&](const std::vector<Tensor>& v) { return head.forward(v[0]); },
//                             {x, head.query.weight, head.key.weight, head.value.weight});
//     // result.ok; result.message: "gradcheck passed: worst at input 2 element 5: analytic ..., numeric ..."
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace autograd {

struct GradcheckOptions {
    double eps = 1e-3;   // central-difference step
    double atol = 2e-3;  // pass when |analytic - numeric| <= atol + rtol * |numeric|
    double rtol = 2e-2;
    uint64_t seed = 1234;  // for the upstream gradient
};

struct GradcheckResult {
    bool ok = true;
    // The worst element (largest excess over its tolerance).
    size_t input = 0;     // which input
    int64_t element = 0;  // flat index within it
    double analytic = 0.0;
    double numeric = 0.0;
    double abs_error = 0.0;
    int64_t checked = 0;  // elements compared
    std::string message;  // one line describing the worst element
};

// f maps the inputs to one output tensor. Inputs that do not require a gradient are not checked.
// The inputs themselves are perturbed (and restored), so f may reach them another way too, such as
// a module's parameters: gradcheck(f, {x, w}) with f = [&](auto& v) { return layer.forward(v[0]); }
// and w = layer.weight. Their gradients are set aside during the check and restored after it.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace autograd
