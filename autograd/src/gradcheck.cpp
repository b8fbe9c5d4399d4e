#include "autograd/gradcheck.h"

#include <cmath>
#include <utility>

#include "autograd/op.h"
#include "autograd/random.h"

namespace autograd {

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
    // The inputs themselves are perturbed, so f may also reach them another way (a module's
    // parameters through its forward). Their gradients are set aside and restored at the end.
    const std::vector<Tensor>& xs = inputs;
    std::vector<std::shared_ptr<Buffer>> saved_grads;
    for (const Tensor& x : xs) saved_grads.push_back(std::exchange(x.impl()->grad, nullptr));
    struct Restore {
        const std::vector<Tensor>& xs;
        std::vector<std::shared_ptr<Buffer>>& grads;
        ~Restore() {
            for (size_t i = 0; i < xs.size(); ++i) xs[i].impl()->grad = std::move(grads[i]);
        }
    } restore{xs, saved_grads};

    Tensor y = f(xs);
    check(y.requires_grad(), "gradcheck: the output does not depend on any input that requires a gradient");
    Generator gen(options.seed);
    const Tensor upstream = randn(y.shape(), gen);
    y.backward(upstream);

    // <upstream, f(xs)> in double, the scalar whose derivative both sides compute
    const auto contracted = [&] {
        NoGradGuard no_grad;
        const Tensor out = f(xs);
        double total = 0.0;
        for (int64_t i = 0; i < out.numel(); ++i) total += double(out.data()[i]) * upstream.data()[i];
        return total;
    };

    GradcheckResult result;
    double worst_excess = -1.0;
    for (size_t n = 0; n < xs.size(); ++n) {
        if (!xs[n].requires_grad()) continue;
        const Tensor analytic = xs[n].grad().defined() ? xs[n].grad().clone() : Tensor();
        auto values = xs[n].data();
        for (int64_t e = 0; e < xs[n].numel(); ++e) {
            const float saved = values[e];
            values[e] = static_cast<float>(saved + options.eps);
            const double plus = contracted();
            values[e] = static_cast<float>(saved - options.eps);
            const double minus = contracted();
            values[e] = saved;
            // divide by the step actually taken after rounding to float
            const double step =
                double(static_cast<float>(saved + options.eps)) - static_cast<float>(saved - options.eps);
            const double numeric = (plus - minus) / step;
            const double a = analytic.defined() ? analytic.data()[e] : 0.0;
            const double err = std::abs(a - numeric);
            const double excess = err - (options.atol + options.rtol * std::abs(numeric));
            ++result.checked;
            if (std::isnan(a) || std::isnan(numeric) || excess > worst_excess) {
                worst_excess = std::isnan(a) || std::isnan(numeric) ? INFINITY : excess;
                result.input = n;
                result.element = e;
                result.analytic = a;
                result.numeric = numeric;
                result.abs_error = err;
            }
        }
    }
    result.ok = result.checked > 0 && worst_excess <= 0.0;
    result.message = result.checked == 0
                         ? "gradcheck: no input requires a gradient"
                         : fmt::format(
                               "gradcheck {}: worst at input {} element {}: analytic {:.6g}, numeric {:.6g}, "
                               "abs error {:.3g} (tolerance {:.3g} + {:.3g} * |numeric|), {} elements checked",
                               result.ok ? "passed" : "FAILED", result.input, result.element, result.analytic,
                               result.numeric, result.abs_error, options.atol, options.rtol, result.checked);
    return result;
}

}  // namespace autograd
