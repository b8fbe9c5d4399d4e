// The autograd engine: golden values, accumulation, graph release and memory, grad mode, long chains,
// and numerics (extreme logits, fully masked rows).
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include <autograd/op.h>

#include "helpers.h"

using namespace autograd;
using test::all_finite;
using test::Inputs;
using test::max_abs_diff;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
}

TEST_CASE("micrograd's README expression: g = 24.7041, dg/da = 138.8338, dg/db = 645.5773", "[autograd]") {
    Tensor a = scalar(-4.0f).requires_grad_();
    Tensor b = scalar(2.0f).requires_grad_();
    Tensor c = a + b;
    Tensor d = a * b + pow(b, 3.0f);
    c = c + (c + 1.0f);                // c += c + 1
    c = c + (1.0f + c + (-a));         // c += 1 + c + (-a)
    d = d + (d * 2.0f + relu(b + a));  // d += d * 2 + (b + a).relu()
    d = d + (3.0f * d + relu(b - a));  // d += 3 * d + (b - a).relu()
    const Tensor e = c - d;
    const Tensor f = pow(e, 2.0f);
    Tensor g = f / 2.0f;
    g = g + 10.0f / f;  // g += 10.0 / f
    REQUIRE(g.shape().empty());
    g.backward();
    REQUIRE(g.item() == Approx(24.7041).epsilon(1e-5));
    REQUIRE(a.grad().item() == Approx(138.8338).epsilon(1e-5));
    REQUIRE(b.grad().item() == Approx(645.5773).epsilon(1e-5));
}

TEST_CASE("a tensor used twice gets the sum of both gradients", "[autograd]") {
    const Tensor v = tensor({1, 2, 3}).requires_grad_();
    sum(v + v).backward();
    REQUIRE(v.grad().to_vector() == std::vector<float>{2, 2, 2});

    const Tensor w = tensor({1, 2, 3}).requires_grad_();
    sum(w * w).backward();
    REQUIRE(w.grad().to_vector() == std::vector<float>{2, 4, 6});

    // matmul writes its first operand's gradient into a fresh buffer, then must add the second's onto
    // it: d/dm sum(m @ m) = ones @ m^T + m^T @ ones = rows (3, 7) + columns (4, 6). 2-D and batched.
    for (const Shape& shape : {Shape{2, 2}, Shape{1, 2, 2}}) {
        const Tensor m = tensor({1, 2, 3, 4}, shape).requires_grad_();
        sum(matmul(m, m)).backward();
        REQUIRE(m.grad().to_vector() == std::vector<float>{7, 11, 9, 13});
    }

    // a diamond: a = 2x, b = 3a, c = a + b -> dc/dx = 2 + 6 = 8, only right in topological order
    const Tensor x = scalar(1.5f).requires_grad_();
    const Tensor a = x * 2.0f;
    const Tensor b = a * 3.0f;
    Tensor c = a + b;
    for (int i = 0; i < 3; ++i) c = c + a;  // and a few more uses of a: + 3 * 2
    c.backward();
    REQUIRE(x.grad().item() == 14.0f);
}

TEST_CASE("gradients accumulate across backward calls until zero_grad", "[autograd]") {
    const Tensor v = tensor({1, 2, 3}).requires_grad_();
    REQUIRE_FALSE(v.grad().defined());

    SECTION("retaining the graph") {
        Tensor y = sum(v * 3.0f);
        y.backward(true);
        REQUIRE(v.grad().to_vector() == std::vector<float>{3, 3, 3});
        y.backward();
        REQUIRE(v.grad().to_vector() == std::vector<float>{6, 6, 6});
    }
    SECTION("rebuilding the graph") {
        sum(v * 3.0f).backward();
        sum(v * 3.0f).backward();
        REQUIRE(v.grad().to_vector() == std::vector<float>{6, 6, 6});
    }
    Tensor vv = v;
    vv.zero_grad();
    REQUIRE_FALSE(v.grad().defined());
    sum(v * 3.0f).backward();
    REQUIRE(v.grad().to_vector() == std::vector<float>{3, 3, 3});
}

TEST_CASE("a second backward through a released graph throws, unless retain_graph", "[autograd]") {
    const Tensor x = tensor({1, 2}).requires_grad_();
    Tensor y = sum(x * x);
    y.backward();
    REQUIRE_THROWS_AS(y.backward(), std::invalid_argument);
    REQUIRE(x.grad().to_vector() == std::vector<float>{2, 4});  // the failed call added nothing

    Tensor z = sum(x * x);
    Tensor xx = x;
    xx.zero_grad();
    z.backward(true);
    REQUIRE_NOTHROW(z.backward(true));
    REQUIRE_NOTHROW(z.backward());
    REQUIRE(x.grad().to_vector() == std::vector<float>{6, 12});
    REQUIRE_THROWS_AS(z.backward(), std::invalid_argument);

    // a later graph that reuses a released intermediate also fails clearly
    const Tensor h = x * 2.0f;
    sum(h).backward();
    Tensor k = sum(h * 3.0f);
    REQUIRE_THROWS_AS(k.backward(), std::invalid_argument);
}

TEST_CASE("backward needs a one-element output or an explicit gradient", "[autograd]") {
    const Tensor x = tensor({1, 2, 3}).requires_grad_();
    Tensor y = x * 2.0f;
    REQUIRE_THROWS_AS(y.backward(), std::invalid_argument);

    y.backward(tensor({1, 10, 100}));
    REQUIRE(x.grad().to_vector() == std::vector<float>{2, 20, 200});

    // one element of any rank is fine
    const Tensor w = tensor({3.0f}, {1, 1}).requires_grad_();
    (w * w).backward();
    REQUIRE(w.grad().item() == 6.0f);

    // explicit gradient on a scalar output
    const Tensor s = scalar(2.0f).requires_grad_();
    (s * s).backward(scalar(0.5f));
    REQUIRE(s.grad().item() == 2.0f);
}

TEST_CASE("NoGradGuard records no graph and restores the mode", "[autograd]") {
    const Tensor x = tensor({1, 2}).requires_grad_();
    REQUIRE(is_grad_enabled());
    {
        NoGradGuard guard;
        REQUIRE_FALSE(is_grad_enabled());
        const Tensor y = x * 2.0f + x;
        REQUIRE_FALSE(y.requires_grad());
        REQUIRE(y.is_leaf());
        REQUIRE(y.impl()->grad_fn == nullptr);
        REQUIRE(y.to_vector() == std::vector<float>{3, 6});
        {
            NoGradGuard inner;
            REQUIRE_FALSE(is_grad_enabled());
        }
        REQUIRE_FALSE(is_grad_enabled());  // the inner guard restored "off", not "on"
        REQUIRE_FALSE(matmul(x.reshape({1, 2}), x.reshape({2, 1})).requires_grad());
    }
    REQUIRE(is_grad_enabled());
    const Tensor z = x * 2.0f;
    REQUIRE(z.requires_grad());
    REQUIRE_FALSE(z.is_leaf());
    REQUIRE(std::string(z.op()) != "leaf");
}

TEST_CASE("detach stops gradients", "[autograd]") {
    const Tensor x = tensor({1, 2, 3}).requires_grad_();
    sum(x.detach() * x).backward();  // d/dx (c * x) with c = x held constant
    REQUIRE(x.grad().to_vector() == std::vector<float>{1, 2, 3});

    const Tensor y = tensor({2.0f}).requires_grad_();
    const Tensor stopped = (y * 3.0f).detach();
    REQUIRE_FALSE(stopped.requires_grad());
    sum(stopped * y).backward();
    REQUIRE(y.grad().item() == 6.0f);
}

TEST_CASE("requires_grad_ only on leaves, and ops on no-grad inputs record nothing", "[autograd]") {
    const Tensor x = tensor({1, 2}).requires_grad_();
    Tensor y = x * 2.0f;
    REQUIRE_THROWS_AS(y.requires_grad_(), std::invalid_argument);
    Tensor leaf = tensor({1.0f});
    REQUIRE_FALSE(leaf.requires_grad());
    leaf.requires_grad_();
    REQUIRE(leaf.requires_grad());
    leaf.requires_grad_(false);
    REQUIRE_FALSE(leaf.requires_grad());

    const Tensor c = tensor({1, 2}) * 3.0f;
    REQUIRE_FALSE(c.requires_grad());
    REQUIRE(c.is_leaf());
    const Tensor mixed = c * x;
    REQUIRE(mixed.requires_grad());
    sum(mixed).backward();
    REQUIRE(x.grad().to_vector() == std::vector<float>{3, 6});
    REQUIRE_FALSE(c.grad().defined());
}

TEST_CASE("a non-leaf's grad() holds the latest backward's gradient, leaves accumulate", "[autograd]") {
    const Tensor x = tensor({1, 2}).requires_grad_();
    const Tensor h = x * 3.0f;
    Tensor loss = sum(h * 2.0f);
    loss.backward(true);
    REQUIRE(h.grad().to_vector() == std::vector<float>{2, 2});
    REQUIRE(x.grad().to_vector() == std::vector<float>{6, 6});
    loss.backward();
    REQUIRE(h.grad().to_vector() == std::vector<float>{2, 2});  // not 4
    REQUIRE(x.grad().to_vector() == std::vector<float>{12, 12});
}

TEST_CASE("a chain of 100,000 ops neither overflows backward nor teardown", "[autograd]") {
    constexpr int n = 100000;
    SECTION("add chain, backward") {
        const Tensor x = scalar(1.0f).requires_grad_();
        Tensor y = x;
        for (int i = 0; i < n; ++i) y = y + 1.0f;
        REQUIRE(y.item() == 100001.0f);
        y.backward();
        REQUIRE(x.grad().item() == 1.0f);
    }
    SECTION("mul chain, backward") {
        const Tensor x = tensor({1.0f, 2.0f}).requires_grad_();
        Tensor y = x;
        for (int i = 0; i < n; ++i) y = y * 1.0001f;
        sum(y).backward();
        const double expected = std::pow(double(1.0001f), n);  // about 22015
        REQUIRE(x.grad().at({0}) == Approx(expected).epsilon(1e-2));
        REQUIRE(x.grad().at({1}) == Approx(expected).epsilon(1e-2));
    }
    SECTION("dropped without backward") {
        const Tensor x = scalar(0.5f).requires_grad_();
        {
            Tensor y = x;
            for (int i = 0; i < n; ++i) y = y + 1.0f;
        }
        REQUIRE(x.impl().use_count() == 1);
    }
    SECTION("dropped after a retained backward") {
        const Tensor x = scalar(0.5f).requires_grad_();
        {
            Tensor y = x;
            for (int i = 0; i < n; ++i) y = tanh(y) + x;
            y.backward(true);
        }
        REQUIRE(x.impl().use_count() == 1);
        REQUIRE(std::isfinite(x.grad().item()));
    }
}

TEST_CASE("after backward the graph is freed: no shared_ptr cycles", "[autograd]") {
    const Tensor x = tensor({0.5f, -1.0f, 0.25f}).requires_grad_();
    std::weak_ptr<TensorImpl> hidden;
    std::vector<std::weak_ptr<TensorImpl>> root_inputs;
    std::weak_ptr<Node> root_node;
    Tensor loss;
    {
        const Tensor h = autograd::tanh(x * 2.0f);
        const Tensor h2 = autograd::exp(h) * h;
        loss = sum(h2 * h2);
        hidden = h.impl();
        root_node = loss.impl()->grad_fn;
        for (const Tensor& in : loss.impl()->grad_fn->inputs) root_inputs.push_back(in.impl());
    }
    REQUIRE_FALSE(root_inputs.empty());
    REQUIRE_FALSE(hidden.expired());  // the graph holds the intermediate until backward
    loss.backward();
    REQUIRE(hidden.expired());
    for (const auto& w : root_inputs) REQUIRE(w.expired());

    // the leaf keeps its gradient: d/dx sum((e^h h)^2), h = tanh(2x)
    std::vector<double> expected;
    for (float xv : x.data()) {
        const double h = std::tanh(2.0 * xv), h2 = std::exp(h) * h;
        expected.push_back(2.0 * h2 * (std::exp(h) * h + std::exp(h)) * 2.0 * (1.0 - h * h));
    }
    REQUIRE(max_abs_diff(x.grad(), expected) < 1e-5);

    loss = Tensor();
    REQUIRE(root_node.expired());
    REQUIRE(x.impl().use_count() == 1);  // nothing else holds the leaf
}

TEST_CASE("graphs dropped without backward, or after a retained one, are freed", "[autograd]") {
    const Tensor x = tensor({0.5f, -1.0f}).requires_grad_();
    for (bool run_backward : {false, true}) {
        INFO("retained backward: " << run_backward);
        std::weak_ptr<TensorImpl> mid;
        std::weak_ptr<Node> node;
        {
            const Tensor h = softmax(matmul(x.reshape({1, 2}), x.reshape({2, 1}) * 2.0f), -1);
            Tensor loss = sum(relu(h) + h * h);
            mid = h.impl();
            node = loss.impl()->grad_fn;
            if (run_backward) loss.backward(true);
            REQUIRE_FALSE(mid.expired());
        }
        REQUIRE(mid.expired());
        REQUIRE(node.expired());
        REQUIRE(x.impl().use_count() == 1);
    }
}

// --- numerics -------------------------------------------------------------------------------------

TEST_CASE("softmax and log_softmax of (1000, 0) are finite", "[numerics]") {
    REQUIRE(max_abs_diff(softmax(tensor({1000, 0}), 0), {1.0, 0.0}) < 1e-7);
    REQUIRE(max_abs_diff(softmax(tensor({-1000, 0}), 0), {0.0, 1.0}) < 1e-7);
    REQUIRE(max_abs_diff(softmax(tensor({1000, 1000}), 0), {0.5, 0.5}) < 1e-7);
    REQUIRE(max_abs_diff(log_softmax(tensor({1000, 0}), 0), {0.0, -1000.0}) < 1e-4);
    REQUIRE(max_abs_diff(log_softmax(tensor({1000, 1000}), 0), {-std::log(2.0), -std::log(2.0)}) < 1e-6);

    const Tensor x = tensor({1000, 0, -1000, 500}, {2, 2}).requires_grad_();
    Generator gen(1);
    const Tensor w = randn({2, 2}, gen);
    sum(softmax(x, -1) * w + log_softmax(x, -1) * w).backward();
    REQUIRE(all_finite(x.grad()));
}

TEST_CASE("cross_entropy of extreme logits is finite and correct", "[numerics]") {
    const Tensor logits = tensor({1e4f, -1e4f, 1e4f, -1e4f}, {2, 2}).requires_grad_();
    Tensor loss = cross_entropy(logits, std::vector<int64_t>{0, 1});  // losses 0 and 2e4
    REQUIRE(loss.item() == Approx(1e4).epsilon(1e-6));
    loss.backward();
    REQUIRE(all_finite(logits.grad()));
    // (softmax - onehot) / N: row 0 is exact (0), row 1 pushes down the wrong class
    REQUIRE(max_abs_diff(logits.grad(), {0.0, 0.0, 0.5, -0.5}) < 1e-6);

    const Tensor huge = tensor({1e30f, -1e30f, 0.0f, 1e30f, 3.0f, -1e30f}, {2, 3}).requires_grad_();
    Tensor l2 = cross_entropy(huge, std::vector<int64_t>{1, 1});  // 2e30 and 1e30 - 3
    REQUIRE(std::isfinite(l2.item()));
    REQUIRE(l2.item() == Approx(1.5e30).epsilon(1e-5));
    l2.backward();
    REQUIRE(all_finite(huge.grad()));
    REQUIRE(max_abs_diff(huge.grad(), {0.5, -0.5, 0.0, 0.5, -0.5, 0.0}) < 1e-6);

    const Tensor sure = tensor({50.0f, -50.0f}, {1, 2});
    REQUIRE(cross_entropy(sure, std::vector<int64_t>{0}).item() == Approx(0.0).margin(1e-6));
}

TEST_CASE("a fully masked row: zeros forward and no NaN in any gradient", "[numerics]") {
    Generator gen(2);
    SECTION("masked_fill with an all-ones mask on one row, then softmax") {
        const Tensor x = randn({2, 3}, gen).requires_grad_();
        const Tensor mask = tensor({1, 1, 1, 0, 1, 0}, {2, 3});
        const Tensor p = softmax(masked_fill(x, mask, -kInf), -1);
        REQUIRE(p.at({0, 0}) == 0.0f);
        REQUIRE(p.at({0, 1}) == 0.0f);
        REQUIRE(p.at({0, 2}) == 0.0f);
        REQUIRE(p.at({1, 0}) == Approx(1.0 / (1.0 + std::exp(double(x.at({1, 2}) - x.at({1, 0}))))));
        REQUIRE(p.at({1, 1}) == 0.0f);
        const Tensor w = randn({2, 3}, gen);
        sum(p * w).backward();
        REQUIRE(all_finite(x.grad()));
        REQUIRE(x.grad().at({0, 0}) == 0.0f);
        REQUIRE(x.grad().at({1, 1}) == 0.0f);
    }
    SECTION("everything masked, through an attention-like product") {
        const Tensor scores = randn({2, 3, 3}, gen).requires_grad_();
        const Tensor v = randn({2, 3, 4}, gen).requires_grad_();
        const Tensor p = softmax(masked_fill(scores, ones({3, 3}), -kInf), -1);
        for (float e : p.data()) REQUIRE(e == 0.0f);
        const Tensor out = matmul(p, v);
        const Tensor w = randn({2, 3, 4}, gen);
        sum(out * w).backward();
        REQUIRE(all_finite(scores.grad()));
        REQUIRE(all_finite(v.grad()));
        for (float e : v.grad().data()) REQUIRE(e == 0.0f);
    }
    SECTION("a row of -inf given directly") {
        const Tensor x = full({2, 3}, -kInf).requires_grad_();
        const Tensor p = softmax(x, 1);
        for (float e : p.data()) REQUIRE(e == 0.0f);
        sum(p * randn({2, 3}, gen)).backward();
        REQUIRE(all_finite(x.grad()));
        for (float e : x.grad().data()) REQUIRE(e == 0.0f);
    }
    SECTION("log_softmax of a fully masked row is -inf and passes no gradient") {
        const Tensor x = randn({2, 3}, gen).requires_grad_();
        const Tensor mask = tensor({0, 0, 0, 1, 1, 1}, {2, 3});
        const Tensor l = log_softmax(masked_fill(x, mask, -kInf), -1);
        for (int64_t j = 0; j < 3; ++j) {
            REQUIRE(std::isfinite(l.at({0, j})));
            REQUIRE(l.at({1, j}) == -kInf);
        }
        // only the unmasked row is used downstream (masked rows are dropped, as a loss would)
        sum(l.slice(0, 0, 1) * randn({1, 3}, gen)).backward();
        REQUIRE(all_finite(x.grad()));
    }
    SECTION("causal mask then softmax: every row keeps at least one position") {
        const Tensor x = randn({2, 4, 4}, gen).requires_grad_();
        const Tensor p = softmax(causal_mask(x), -1);
        REQUIRE(all_finite(p));
        for (int64_t b = 0; b < 2; ++b)
            for (int64_t i = 0; i < 4; ++i) {
                double s = 0.0;
                for (int64_t j = 0; j < 4; ++j) {
                    s += p.at({b, i, j});
                    if (j > i) REQUIRE(p.at({b, i, j}) == 0.0f);
                }
                REQUIRE(s == Approx(1.0).epsilon(1e-6));
            }
    }
}

// A training step frees and asks again for the same blocks every step. The cache must keep them all, even
// past its 256 MiB floor (GPT-2 small's step frees 1.5 GB), or each step refaults them from the system.
TEST_CASE("freed buffers stay cached up to the most bytes ever in use at once, past 256 MiB", "[memory]") {
    release_cached_buffers();
    REQUIRE(cached_buffer_bytes() == 0);
    constexpr int64_t kBlock = int64_t(80) << 18;  // 80 MiB of floats
    constexpr size_t kBytes = size_t(4) * kBlock * sizeof(float);
    const auto working_set = [] {
        std::vector<Tensor> set;
        for (int i = 0; i < 4; ++i) set.push_back(full({kBlock}, float(i)));
        return set;
    };
    working_set();  // the first step: 320 MiB in use at once, then freed
    CHECK(cached_buffer_bytes() >= kBytes);
    {
        const std::vector<Tensor> again = working_set();  // the next step takes them back from the cache
        CHECK(cached_buffer_bytes() < kBytes / 4);
        CHECK(again[3].data()[kBlock - 1] == 3.0f);
    }
    release_cached_buffers();
    CHECK(cached_buffer_bytes() == 0);
}
