// Elementwise ops: binary with broadcasting, unary through one helper, dropout, and the operators.
#include <cmath>

#include "autograd/kernels.h"
#include "autograd/op.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/threads.h"
#include "broadcast.h"
#include "fast_math.h"
#include "vector_loops.h"

namespace autograd {

using detail::Broadcast;
using detail::broadcast;
using Writes = detail::Broadcast::Writes;

// --- binary ----------------------------------------------------------------------------------------

namespace {
// Operand kOperand's share of a broadcast binary op's backward: its gradient at each output element i
// (operand positions ia, ib) gets local(i, ia, ib) added, or written where the gradient is fresh: nothing
// has reached it yet and it is not stretched, so the walk writes each of its values exactly once.
template <size_t kOperand, typename Local>
void operand_backward(const GradContext& g, const Broadcast& bc, Local local) {
    if (!g.needs(kOperand)) return;
    const auto grad = g.inputs[kOperand].numel() == numel_of(bc.out) ? g.grad_target(kOperand)
                                                                     : GradContext::Target{g.grad(kOperand), false};
    bc.for_each_writing(kOperand == 0 ? Writes::a : Writes::b, [&](int64_t i, int64_t ia, int64_t ib) {
        const int64_t at = kOperand == 0 ? ia : ib;
        const float v = local(i, ia, ib);
        grad.values[at] = grad.fresh ? v : grad.values[at] + v;
    });
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, SourceLocation where) {
    Broadcast bc = broadcast(a.shape(), b.shape(), "add");
    const float *x = a.data().data(), *y = b.data().data();
    Buffer out(numel_of(bc.out));
    bc.for_each_writing(Writes::result, [&](int64_t i, int64_t ia, int64_t ib) { out[i] = x[ia] + y[ib]; });
    Shape shape = bc.out;
    return make_result(
        "add", std::move(shape), std::move(out), {a, b},
        [bc = std::move(bc)](const GradContext& g) {
            operand_backward<0>(g, bc, [&](int64_t i, int64_t, int64_t) { return g.dout[i]; });
            operand_backward<1>(g, bc, [&](int64_t i, int64_t, int64_t) { return g.dout[i]; });
        },
        where);
}

Tensor sub(const Tensor& a, const Tensor& b, SourceLocation where) {
    Broadcast bc = broadcast(a.shape(), b.shape(), "sub");
    const float *x = a.data().data(), *y = b.data().data();
    Buffer out(numel_of(bc.out));
    bc.for_each_writing(Writes::result, [&](int64_t i, int64_t ia, int64_t ib) { out[i] = x[ia] - y[ib]; });
    Shape shape = bc.out;
    return make_result(
        "sub", std::move(shape), std::move(out), {a, b},
        [bc = std::move(bc)](const GradContext& g) {
            operand_backward<0>(g, bc, [&](int64_t i, int64_t, int64_t) { return g.dout[i]; });
            operand_backward<1>(g, bc, [&](int64_t i, int64_t, int64_t) { return -g.dout[i]; });
        },
        where);
}

Tensor mul(const Tensor& a, const Tensor& b, SourceLocation where) {
    Broadcast bc = broadcast(a.shape(), b.shape(), "mul");
    const float *x = a.data().data(), *y = b.data().data();
    Buffer out(numel_of(bc.out));
    bc.for_each_writing(Writes::result, [&](int64_t i, int64_t ia, int64_t ib) { out[i] = x[ia] * y[ib]; });
    Shape shape = bc.out;
    return make_result(
        "mul", std::move(shape), std::move(out), {a, b},
        [bc = std::move(bc)](const GradContext& g) {
            const float *av = g.inputs[0].data().data(), *bv = g.inputs[1].data().data();
            operand_backward<0>(g, bc, [&](int64_t i, int64_t, int64_t ib) { return g.dout[i] * bv[ib]; });
            operand_backward<1>(g, bc, [&](int64_t i, int64_t ia, int64_t) { return g.dout[i] * av[ia]; });
        },
        where);
}

Tensor div(const Tensor& a, const Tensor& b, SourceLocation where) {
    Broadcast bc = broadcast(a.shape(), b.shape(), "div");
    const float *x = a.data().data(), *y = b.data().data();
    Buffer out(numel_of(bc.out));
    bc.for_each_writing(Writes::result, [&](int64_t i, int64_t ia, int64_t ib) { out[i] = x[ia] / y[ib]; });
    Shape shape = bc.out;
    return make_result(
        "div", std::move(shape), std::move(out), {a, b},
        [bc = std::move(bc)](const GradContext& g) {
            const float* bv = g.inputs[1].data().data();
            // d(a/b)/da = 1/b;  d(a/b)/db = -(a/b)/b = -out/b
            operand_backward<0>(g, bc, [&](int64_t i, int64_t, int64_t ib) { return g.dout[i] / bv[ib]; });
            operand_backward<1>(g, bc,
                                [&](int64_t i, int64_t, int64_t ib) { return -(g.dout[i] * g.out[i] / bv[ib]); });
        },
        where);
}

// --- unary -----------------------------------------------------------------------------------------

namespace {
// y = f(x) elementwise; the backward multiplies dout by local(x, y) = dy/dx.
template <typename F, typename Local>
Tensor unary(const char* op, const Tensor& x, F f, Local local, SourceLocation where) {
    Buffer out(x.numel());
    const float* in = x.data().data();
    parallel_for(x.numel(), kMinElementsPerThread, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = f(in[i]);
    });
    return make_result(
        op, x.shape(), std::move(out), {x},
        [local](const GradContext& g) {
            const float* xv = g.inputs[0].data().data();
            const auto gx = g.grad_target(0);
            parallel_for(static_cast<int64_t>(g.out.size()), kMinElementsPerThread, [&](int64_t begin, int64_t end) {
                detail::write_or_add(gx.fresh, begin, end, gx.values.data(),
                                     [&](int64_t i) { return g.dout[i] * local(xv[i], g.out[i]); });
            });
        },
        where);
}
}  // namespace

Tensor neg(const Tensor& x, SourceLocation where) {
    return unary(
        "neg", x, [](float v) { return -v; }, [](float, float) { return -1.0f; }, where);
}

Tensor scale(const Tensor& x, float factor, SourceLocation where) {
    return unary(
        "scale", x, [factor](float v) { return v * factor; }, [factor](float, float) { return factor; }, where);
}

Tensor exp(const Tensor& x, SourceLocation where) {
    return unary(
        "exp", x, [](float v) { return std::exp(v); }, [](float, float y) { return y; }, where);
}

Tensor log(const Tensor& x, SourceLocation where) {
    return unary(
        "log", x, [](float v) { return std::log(v); }, [](float v, float) { return 1.0f / v; }, where);
}

Tensor sqrt(const Tensor& x, SourceLocation where) {
    return unary(
        "sqrt", x, [](float v) { return std::sqrt(v); }, [](float, float y) { return 0.5f / y; }, where);
}

Tensor pow(const Tensor& x, float exponent, SourceLocation where) {
    return unary(
        "pow", x, [exponent](float v) { return std::pow(v, exponent); },
        [exponent](float v, float) { return exponent * std::pow(v, exponent - 1.0f); }, where);
}

Tensor tanh(const Tensor& x, SourceLocation where) {
    return unary(
        "tanh", x, [](float v) { return std::tanh(v); }, [](float, float y) { return 1.0f - y * y; }, where);
}

Tensor relu(const Tensor& x, SourceLocation where) {
    return unary(
        "relu", x, [](float v) { return v > 0.0f ? v : 0.0f; }, [](float v, float) { return v > 0.0f ? 1.0f : 0.0f; },
        where);
}

Tensor gelu(const Tensor& x, SourceLocation where) {
    Buffer out(x.numel());
    const float* in = x.data().data();
    // gelu(x) = x * Phi(x);  d/dx = Phi(x) + x * phi(x) (vector_loops_impl.h). nn's FeedForward uses
    // linear_gelu, which keeps the slope instead.
    const auto gelu_forward = detail::vector_loops().gelu_forward;
    parallel_for(x.numel(), kMinElementsPerThread,
                 [&](int64_t begin, int64_t end) { gelu_forward(in, out.data(), begin, end); });
    return make_result(
        "gelu", x.shape(), std::move(out), {x},
        [](const GradContext& g) {
            const float* xv = g.inputs[0].data().data();
            const auto gx = g.grad_target(0);
            const auto gelu_backward = detail::vector_loops().gelu_backward;
            parallel_for(static_cast<int64_t>(g.out.size()), kMinElementsPerThread, [&](int64_t begin, int64_t end) {
                gelu_backward(xv, g.dout.data(), gx.values.data(), begin, end, gx.fresh);
            });
        },
        where);
}

Tensor gelu_tanh(const Tensor& x, SourceLocation where) {
    Buffer out(x.numel());
    const float* in = x.data().data();
    // x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3), which is GPT-2's 0.5 x (1 + tanh(u)) (fast_math.h)
    const auto forward = detail::vector_loops().gelu_tanh_forward;
    parallel_for(x.numel(), kMinElementsPerThread,
                 [&](int64_t begin, int64_t end) { forward(in, out.data(), begin, end); });
    return make_result(
        "gelu_tanh", x.shape(), std::move(out), {x},
        [](const GradContext& g) {
            const float* xv = g.inputs[0].data().data();
            const auto gx = g.grad_target(0);
            const auto backward = detail::vector_loops().gelu_tanh_backward;
            parallel_for(static_cast<int64_t>(g.out.size()), kMinElementsPerThread, [&](int64_t begin, int64_t end) {
                backward(xv, g.dout.data(), gx.values.data(), begin, end, gx.fresh);
            });
        },
        where);
}

Tensor silu(const Tensor& x, SourceLocation where) {
    Buffer out(x.numel());
    const float* in = x.data().data();
    // x * sigmoid(x);  d/dx = s (1 + x (1 - s)), s = sigmoid(x) recomputed in backward (fast_math.h)
    const auto forward = detail::vector_loops().silu_forward;
    parallel_for(x.numel(), kMinElementsPerThread,
                 [&](int64_t begin, int64_t end) { forward(in, out.data(), begin, end); });
    return make_result(
        "silu", x.shape(), std::move(out), {x},
        [](const GradContext& g) {
            const float* xv = g.inputs[0].data().data();
            const auto gx = g.grad_target(0);
            const auto backward = detail::vector_loops().silu_backward;
            parallel_for(static_cast<int64_t>(g.out.size()), kMinElementsPerThread, [&](int64_t begin, int64_t end) {
                backward(xv, g.dout.data(), gx.values.data(), begin, end, gx.fresh);
            });
        },
        where);
}

// --- dropout ---------------------------------------------------------------------------------------

Tensor dropout(const Tensor& x, float p, bool training, Generator& gen, SourceLocation where) {
    check(p >= 0.0f && p < 1.0f, "dropout: probability {} must be in [0, 1)", p);
    if (!training || p == 0.0f) return x;
    const float keep_scale = 1.0f / (1.0f - p);
    Buffer mask(x.numel());  // 0 or 1/(1-p) per element
    for (float& m : mask) m = gen.uniform() < p ? 0.0f : keep_scale;
    Buffer out(mask.size());
    const auto in = x.data();
    for (size_t i = 0; i < out.size(); ++i) out[i] = in[i] * mask[i];
    return make_result(
        "dropout", x.shape(), std::move(out), {x},
        [mask = std::move(mask)](const GradContext& g) {
            auto gx = g.grad(0);
            for (size_t i = 0; i < gx.size(); ++i) gx[i] += g.dout[i] * mask[i];
        },
        where);
}

// --- operators -------------------------------------------------------------------------------------

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, float b) { return add(a, scalar(b)); }
Tensor operator+(float a, const Tensor& b) { return add(scalar(a), b); }
Tensor operator-(const Tensor& a, float b) { return sub(a, scalar(b)); }
Tensor operator-(float a, const Tensor& b) { return sub(scalar(a), b); }
Tensor operator*(const Tensor& a, float b) { return scale(a, b); }
Tensor operator*(float a, const Tensor& b) { return scale(b, a); }
Tensor operator/(const Tensor& a, float b) { return div(a, scalar(b)); }
Tensor operator/(float a, const Tensor& b) { return div(scalar(a), b); }

}  // namespace autograd
