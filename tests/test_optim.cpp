// nn/optim.h: each optimizer step against the formulas computed here in double, skipped parameters,
// convergence, bit-exact resume through state()/load_state(), gradient clipping and the schedule.
#include <cmath>
#include <functional>
#include <memory>
#include <numbers>

#include <nn/layers.h>
#include <nn/train/optim.h>

#include "helpers.h"

using namespace autograd;

namespace {

// One Linear: lin.weight (3, 2) takes weight decay, lin.bias (2) does not.
struct Tiny : nn::Module {
    nn::Linear lin;
    explicit Tiny(Generator& gen) : lin({.in = 3, .out = 2}, gen) { register_module("lin", lin); }
};

// Two Linears, so a loss can leave one of them without a gradient.
struct Pair : nn::Module {
    nn::Linear used, other;
    explicit Pair(Generator& gen) : used({.in = 3, .out = 2}, gen), other({.in = 3, .out = 2}, gen) {
        register_module("used", used);
        register_module("other", other);
    }
};

// A random linear functional of the layer's output, so every gradient is a fresh random-ish value.
Tensor random_loss(const nn::Linear& layer, Generator& gen) {
    const Tensor x = randn({4, 3}, gen), r = randn({4, 2}, gen);
    return sum(mul(layer.forward(x), r));
}

std::vector<double> as_double(const Tensor& t) {
    const auto d = t.data();
    return {d.begin(), d.end()};
}

bool same_state(const nn::NamedTensors& a, const nn::NamedTensors& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].first != b[i].first || a[i].second.to_vector() != b[i].second.to_vector()) return false;
    return true;
}

// Sets each gradient to the given values by backpropagating sum(p * values).
void set_grads(const std::vector<Tensor>& params, const std::vector<std::vector<float>>& values) {
    Tensor loss = scalar(0.0f);
    for (size_t i = 0; i < params.size(); ++i) loss = loss + sum(mul(params[i], tensor(values[i], params[i].shape())));
    loss.backward();
}

}  // namespace

TEST_CASE("SGD steps match the formulas computed by hand, with and without momentum and decay", "[optim]") {
    for (const nn::SGDOptions o : {nn::SGDOptions{.lr = 0.1f}, nn::SGDOptions{.lr = 0.1f, .momentum = 0.9f},
                                   nn::SGDOptions{.lr = 0.05f, .momentum = 0.8f, .weight_decay = 0.3f}}) {
        INFO("momentum " << o.momentum << ", weight_decay " << o.weight_decay);
        Generator gen(11);
        Tiny m(gen);
        nn::SGD opt(m, o);
        const std::vector<Tensor> params = {m.lin.weight, m.lin.bias};
        const std::vector<double> wd = {o.weight_decay, 0.0};  // the bias takes no decay
        std::vector<std::vector<double>> buf(2);
        for (int step = 0; step < 4; ++step) {
            opt.zero_grad();
            random_loss(m.lin, gen).backward();
            std::vector<std::vector<double>> expected(2);
            for (size_t i = 0; i < 2; ++i) {
                const std::vector<double> p = as_double(params[i]), g = as_double(params[i].grad());
                if (step == 0) buf[i].assign(p.size(), 0.0);
                for (size_t k = 0; k < p.size(); ++k) {
                    double d = g[k] + wd[i] * p[k];
                    if (o.momentum != 0.0f) {
                        buf[i][k] = step == 0 ? d : double(o.momentum) * buf[i][k] + d;
                        d = buf[i][k];
                    }
                    expected[i].push_back(p[k] - double(o.lr) * d);
                }
            }
            opt.step();
            INFO("step " << step);
            CHECK(test::max_abs_diff(m.lin.weight, expected[0]) < 1e-6);
            CHECK(test::max_abs_diff(m.lin.bias, expected[1]) < 1e-6);
        }
        CHECK(opt.steps() == 4);
        CHECK(opt.state().empty() == (o.momentum == 0.0f));
    }
}

TEST_CASE("AdamW steps match the formulas computed by hand, decay on the weight and not the bias", "[optim]") {
    Generator gen(12);
    Tiny m(gen);
    const nn::AdamWOptions o{.lr = 0.01f, .beta1 = 0.8f, .beta2 = 0.95f, .eps = 1e-6f, .weight_decay = 0.5f};
    nn::AdamW opt(m, o);
    const std::vector<Tensor> params = {m.lin.weight, m.lin.bias};
    const std::vector<double> wd = {o.weight_decay, 0.0};
    const double lr = o.lr, b1 = o.beta1, b2 = o.beta2, eps = o.eps;
    std::vector<std::vector<double>> mom(2), vel(2);
    for (int t = 1; t <= 5; ++t) {
        opt.zero_grad();
        random_loss(m.lin, gen).backward();
        std::vector<std::vector<double>> expected(2);
        for (size_t i = 0; i < 2; ++i) {
            std::vector<double> p = as_double(params[i]);
            const std::vector<double> g = as_double(params[i].grad());
            if (t == 1) mom[i].assign(p.size(), 0.0), vel[i].assign(p.size(), 0.0);
            for (size_t k = 0; k < p.size(); ++k) {
                p[k] *= 1.0 - lr * wd[i];
                mom[i][k] = b1 * mom[i][k] + (1.0 - b1) * g[k];
                vel[i][k] = b2 * vel[i][k] + (1.0 - b2) * g[k] * g[k];
                const double m_hat = mom[i][k] / (1.0 - std::pow(b1, t));
                const double v_hat = vel[i][k] / (1.0 - std::pow(b2, t));
                p[k] -= lr * m_hat / (std::sqrt(v_hat) + eps);
            }
            expected[i] = p;
        }
        opt.step();
        INFO("step " << t);
        CHECK(test::max_abs_diff(m.lin.weight, expected[0]) < 1e-6);
        CHECK(test::max_abs_diff(m.lin.bias, expected[1]) < 1e-6);
    }
    CHECK(opt.steps() == 5);
    CHECK(opt.lr() == o.lr);
}

TEST_CASE("Parameters without a gradient are untouched and keep their own step count", "[optim]") {
    Generator gen(13);
    Pair m(gen);
    const nn::AdamWOptions o{.lr = 0.01f, .weight_decay = 0.5f};
    nn::AdamW opt(m, o);
    nn::SGD sgd(m, {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.5f});
    const std::vector<float> other_weight = m.other.weight.to_vector(), other_bias = m.other.bias.to_vector();
    for (int step = 0; step < 3; ++step) {
        opt.zero_grad();
        random_loss(m.used, gen).backward();
        opt.step();
        sgd.step();
    }
    CHECK(m.other.weight.to_vector() == other_weight);  // decayed, yet not decayed without a gradient
    CHECK(m.other.bias.to_vector() == other_bias);
    for (const auto& [name, t] : opt.state()) {
        INFO(name);
        if (name == "adamw.step.used.weight" || name == "adamw.step.used.bias") CHECK(t.item() == 3.0f);
        if (name == "adamw.step.other.weight" || name == "adamw.step.other.bias") CHECK(t.item() == 0.0f);
        if (name.find(".other.") != std::string::npos)
            for (float v : t.data()) CHECK(v == 0.0f);
    }

    // Now only `other` has a gradient: its update is AdamW's first (t = 1), where
    // m_hat = g and v_hat = g^2, so p <- p (1 - lr wd) - lr g / (|g| + eps).
    const std::vector<float> used_weight = m.used.weight.to_vector();
    opt.zero_grad();
    random_loss(m.other, gen).backward();
    std::vector<double> expected = as_double(m.other.weight);
    const std::vector<double> g = as_double(m.other.weight.grad());
    for (size_t k = 0; k < expected.size(); ++k)
        expected[k] = expected[k] * (1.0 - double(o.lr) * double(o.weight_decay)) -
                      double(o.lr) * g[k] / (std::abs(g[k]) + double(o.eps));
    opt.step();
    CHECK(test::max_abs_diff(m.other.weight, expected) < 1e-6);
    CHECK(m.used.weight.to_vector() == used_weight);
    CHECK(opt.steps() == 4);
}

TEST_CASE("Update ratios are recorded only when asked, as ||change|| / ||parameter||", "[optim]") {
    Generator gen(16);
    Pair m(gen);
    nn::AdamW opt(m, {.lr = 0.01f});
    random_loss(m.used, gen).backward();
    opt.step();
    CHECK(opt.last_update_ratios().empty());  // off by default: it costs a copy of every weight

    opt.record_update_ratios(true);
    opt.zero_grad();
    random_loss(m.used, gen).backward();
    const std::vector<double> before = as_double(m.used.weight);
    opt.step();
    const std::vector<double> after = as_double(m.used.weight);
    double change2 = 0, param2 = 0;
    for (size_t k = 0; k < after.size(); ++k) {
        change2 += (after[k] - before[k]) * (after[k] - before[k]);
        param2 += after[k] * after[k];
    }
    // only the parameters with a gradient are listed
    REQUIRE(opt.last_update_ratios().size() == 2);
    CHECK(opt.last_update_ratios()[0].first == "used.weight");
    CHECK(opt.last_update_ratios()[0].second == Approx(std::sqrt(change2 / param2)).epsilon(1e-6));
    CHECK(opt.last_update_ratios()[1].first == "used.bias");

    opt.record_update_ratios(false);
    random_loss(m.used, gen).backward();
    opt.step();
    CHECK(opt.last_update_ratios().empty());  // a step without recording leaves no stale ratios
}

TEST_CASE("AdamW brings a quadratic loss to its minimum", "[optim]") {
    struct Quadratic : nn::Module {
        Tensor x;
        Quadratic() { x = register_parameter("x", tensor({3.0f, -2.0f, 0.5f, 4.0f}), true); }
    };
    Quadratic q;
    const Tensor target = tensor({1.0f, 2.0f, -1.0f, 0.5f});
    const auto loss = [&] {
        const Tensor d = q.x - target;
        return sum(mul(d, d));
    };
    nn::AdamW opt(q, {.lr = 0.05f, .weight_decay = 0.0f});
    const float initial = loss().item();
    for (int step = 0; step < 400; ++step) {
        opt.zero_grad();
        loss().backward();
        opt.step();
    }
    const float final_loss = loss().item();
    INFO("loss " << initial << " -> " << final_loss << ", x = " << test::values_str(q.x));
    CHECK(initial > 30.0f);
    CHECK(final_loss < 1e-3f);
    CHECK(test::max_abs_diff(q.x, {1.0, 2.0, -1.0, 0.5}) < 2e-2);
}

TEST_CASE("state and load_state resume a run bit-exactly", "[optim]") {
    constexpr int n = 4;
    const nn::CosineSchedule schedule{.lr = 0.05f, .min_lr = 0.005f, .warmup = 2, .total = 2 * n};
    // Step s of the run: its own data stream; `other` gets a gradient only every third step, so the
    // two layers' step counts differ.
    const auto train = [&](nn::Optimizer& opt, Pair& m, int from, int to) {
        for (int s = from; s < to; ++s) {
            Generator data(1000 + static_cast<uint64_t>(s));
            opt.set_lr(schedule.at(s));
            opt.zero_grad();
            Tensor loss = random_loss(m.used, data);
            if (s % 3 == 0) loss = loss + random_loss(m.other, data);
            loss.backward();
            opt.step();
        }
    };
    const auto make_adamw = [](Pair& m) -> std::unique_ptr<nn::Optimizer> {
        return std::make_unique<nn::AdamW>(m, nn::AdamWOptions{.beta2 = 0.99f, .weight_decay = 0.1f});
    };
    const auto make_sgd = [](Pair& m) -> std::unique_ptr<nn::Optimizer> {
        return std::make_unique<nn::SGD>(m, nn::SGDOptions{.momentum = 0.9f, .weight_decay = 0.1f});
    };
    for (const auto& make : {std::function(make_adamw), std::function(make_sgd)}) {
        Generator init_a(5), init_b(5), init_c(99), init_d(99);
        Pair straight(init_a), first_half(init_b), resumed(init_c), unrestored(init_d);
        auto opt_straight = make(straight);
        train(*opt_straight, straight, 0, 2 * n);

        auto opt_first = make(first_half);
        train(*opt_first, first_half, 0, n);
        const nn::NamedTensors saved = opt_first->state();
        const int64_t saved_steps = opt_first->steps();
        // A fresh model and optimizer, given copies of the parameters and of the optimizer state.
        for (Pair* target : {&resumed, &unrestored}) {
            const auto from = first_half.named_parameters();
            const auto to = target->named_parameters();
            for (size_t i = 0; i < from.size(); ++i)
                std::copy(from[i].second.data().begin(), from[i].second.data().end(), to[i].second.data().begin());
        }
        auto opt_resumed = make(resumed);
        opt_resumed->load_state(saved, saved_steps);
        CHECK(opt_resumed->steps() == n);
        train(*opt_resumed, resumed, n, 2 * n);
        auto opt_unrestored = make(unrestored);  // same weights, optimizer state lost
        train(*opt_unrestored, unrestored, n, 2 * n);

        INFO(opt_straight->state().front().first);
        const auto a = straight.named_parameters(), b = resumed.named_parameters(), c = unrestored.named_parameters();
        bool unrestored_differs = false;
        for (size_t i = 0; i < a.size(); ++i) {
            INFO(a[i].first);
            CHECK(a[i].second.to_vector() == b[i].second.to_vector());
            unrestored_differs |= a[i].second.to_vector() != c[i].second.to_vector();
        }
        CHECK(unrestored_differs);  // the state matters, so the comparison above means something
        CHECK(same_state(opt_straight->state(), opt_resumed->state()));
        CHECK(opt_resumed->steps() == 2 * n);
    }
}

TEST_CASE("load_state rejects wrong names, shapes and counts and changes nothing", "[optim]") {
    Generator gen(14);
    Tiny m(gen);
    nn::AdamW opt(m), donor(m);
    for (int step = 0; step < 2; ++step) {
        opt.zero_grad();
        random_loss(m.lin, gen).backward();
        opt.step();
    }
    donor.step();  // a valid state with other values
    const nn::NamedTensors before = opt.state();
    const nn::NamedTensors good = donor.state();
    REQUIRE(good.size() == 6);
    CHECK(good[0].first == "adamw.m.lin.weight");
    CHECK(good[3].first == "adamw.v.lin.bias");
    CHECK(good[4].first == "adamw.step.lin.weight");

    nn::NamedTensors renamed = good;
    renamed[0].first = "adamw.m.lin.wieght";
    REQUIRE_THROWS_WITH(opt.load_state(renamed, 2), Catch::Contains("AdamW.load_state") &&
                                                        Catch::Contains("missing [adamw.m.lin.weight]") &&
                                                        Catch::Contains("extra [adamw.m.lin.wieght]"));
    nn::NamedTensors dropped(good.begin() + 1, good.end());
    REQUIRE_THROWS_WITH(opt.load_state(dropped, 2), Catch::Contains("missing [adamw.m.lin.weight]"));
    nn::NamedTensors reshaped = good;
    reshaped[0].second = zeros({2, 3});
    REQUIRE_THROWS_WITH(
        opt.load_state(reshaped, 2),
        Catch::Contains("mismatched") && Catch::Contains("adamw.m.lin.weight (shape (2, 3), expected (3, 2))"));
    nn::NamedTensors duplicated = good;
    duplicated.push_back(good[1]);
    REQUIRE_THROWS_WITH(opt.load_state(duplicated, 2), Catch::Contains("given twice"));
    nn::NamedTensors fractional = good;
    fractional[4].second = scalar(1.5f);
    REQUIRE_THROWS_WITH(opt.load_state(fractional, 2), Catch::Contains("adamw.step.lin.weight (value 1.5"));
    REQUIRE_THROWS_WITH(opt.load_state(good, 0), Catch::Contains("adamw.step.lin.weight (value 1"));
    REQUIRE_THROWS_WITH(opt.load_state(good, -1), Catch::Contains("steps is -1"));
    nn::SGD sgd(m, {.momentum = 0.9f});
    sgd.step();
    REQUIRE_THROWS_WITH(opt.load_state(sgd.state(), 1), Catch::Contains("extra [sgd.momentum.lin.weight"));
    REQUIRE_THROWS_WITH(sgd.load_state(good, 1), Catch::Contains("missing [sgd.momentum.lin.bias"));
    nn::SGD plain(m);
    REQUIRE_THROWS_WITH(plain.load_state(good, 1), Catch::Contains("SGD.load_state") && Catch::Contains("extra"));

    CHECK(same_state(opt.state(), before));
    CHECK(opt.steps() == 2);
    opt.load_state(good, 5);  // and a good one loads
    CHECK(same_state(opt.state(), good));
    CHECK(opt.steps() == 5);
}

TEST_CASE("Invalid optimizer options throw naming the option and the value", "[optim]") {
    Generator gen(15);
    Tiny m(gen);
    using Catch::Contains;
    CHECK_THROWS_WITH(nn::AdamW(m, {.lr = -1.0f}), Contains("AdamW") && Contains("lr") && Contains("-1"));
    CHECK_THROWS_WITH(nn::AdamW(m, {.lr = INFINITY}), Contains("lr") && Contains("inf"));
    CHECK_THROWS_WITH(nn::AdamW(m, {.beta1 = 1.0f}), Contains("beta1") && Contains("got 1"));
    CHECK_THROWS_WITH(nn::AdamW(m, {.beta2 = -0.5f}), Contains("beta2") && Contains("-0.5"));
    CHECK_THROWS_WITH(nn::AdamW(m, {.eps = 0.0f}), Contains("eps") && Contains("got 0"));
    CHECK_THROWS_WITH(nn::AdamW(m, {.weight_decay = NAN}), Contains("weight_decay") && Contains("nan"));
    CHECK_THROWS_WITH(nn::SGD(m, {.momentum = -0.1f}), Contains("SGD") && Contains("momentum") && Contains("-0.1"));
    CHECK_THROWS_WITH(nn::SGD(m, {.weight_decay = -1.0f}), Contains("weight_decay"));
    CHECK_THROWS_WITH(nn::SGD(m, {.lr = NAN}), Contains("lr"));
    CHECK_NOTHROW(nn::AdamW(m, {.lr = 0.0f, .beta1 = 0.0f, .beta2 = 0.0f, .weight_decay = 0.0f}));
    nn::SGD sgd(m, {.lr = 0.5f});
    CHECK_THROWS_WITH(sgd.set_lr(-0.25f), Contains("lr") && Contains("-0.25"));
    CHECK(sgd.lr() == 0.5f);
    sgd.set_lr(0.125f);
    CHECK(sgd.lr() == 0.125f);
}

TEST_CASE("clip_grad_norm measures the global norm and scales down only above the limit", "[optim]") {
    Tensor a = tensor({1.0f}).requires_grad_(), b = tensor({1.0f, 1.0f}).requires_grad_();
    Tensor none = tensor({1.0f}).requires_grad_();  // no gradient: skipped

    set_grads({a, b}, {{3.0f}, {0.0f, 4.0f}});
    CHECK(nn::clip_grad_norm({a, b, none}, 1.0f) == Approx(5.0f));
    CHECK(a.grad().item() == Approx(0.6f).margin(1e-6));
    CHECK(b.grad().to_vector()[1] == Approx(0.8f).margin(1e-6));
    CHECK_FALSE(none.grad().defined());
    CHECK(nn::clip_grad_norm({a, b}, 0.0f) == Approx(1.0f).margin(1e-6));  // measures only

    a.zero_grad(), b.zero_grad();
    set_grads({a, b}, {{3.0f}, {0.0f, 4.0f}});
    CHECK(nn::clip_grad_norm({a, b}, 10.0f) == 5.0f);  // under the limit: untouched, exactly
    CHECK(a.grad().item() == 3.0f);
    CHECK(b.grad().to_vector() == std::vector<float>{0.0f, 4.0f});
    CHECK(nn::clip_grad_norm({a, b}, 0.0f) == 5.0f);
    CHECK(nn::clip_grad_norm({a, b}, -1.0f) == 5.0f);
    CHECK(a.grad().item() == 3.0f);

    // PyTorch's coefficient: max_norm / (norm + 1e-6), norm measured in double.
    Generator gen(16);
    Tensor c = randn({50}, gen).requires_grad_();
    set_grads({c}, {randn({50}, gen).to_vector()});
    std::vector<double> g = as_double(c.grad());
    double norm = 0.0;
    for (double x : g) norm += x * x;
    norm = std::sqrt(norm);
    CHECK(nn::clip_grad_norm({c}, 0.5f) == Approx(norm).epsilon(1e-6));
    for (double& x : g) x *= 0.5 / (norm + 1e-6);
    CHECK(test::max_abs_diff(c.grad(), g) < 1e-6);

    // A non-finite norm comes back as it is and nothing is scaled.
    a.grad().data()[0] = INFINITY;
    CHECK(std::isinf(nn::clip_grad_norm({a, b}, 1.0f)));
    CHECK(b.grad().to_vector() == std::vector<float>{0.0f, 4.0f});
    a.grad().data()[0] = NAN;
    CHECK(std::isnan(nn::clip_grad_norm({a, b}, 1.0f)));
    CHECK(b.grad().to_vector() == std::vector<float>{0.0f, 4.0f});
}

TEST_CASE("CosineSchedule follows nanoGPT's get_lr: warmup, cosine decay, floor", "[optim]") {
    const nn::CosineSchedule s{.lr = 1e-3f, .min_lr = 1e-4f, .warmup = 10, .total = 110};
    const double lr = s.lr, min_lr = s.min_lr;
    const auto cosine = [&](int64_t step) {
        const double ratio = double(step - 10) / 100.0;
        return min_lr + 0.5 * (1.0 + std::cos(std::numbers::pi * ratio)) * (lr - min_lr);
    };
    CHECK(s.at(0) == Approx(lr * 1.0 / 11.0).epsilon(1e-6));   // warmup starts above 0
    CHECK(s.at(9) == Approx(lr * 10.0 / 11.0).epsilon(1e-6));  // last warmup step
    CHECK(s.at(10) == Approx(lr).epsilon(1e-6));               // decay starts at the peak
    CHECK(s.at(35) == Approx(cosine(35)).epsilon(1e-6));
    CHECK(s.at(60) == Approx((lr + min_lr) / 2.0).epsilon(1e-6));  // midpoint
    CHECK(s.at(97) == Approx(cosine(97)).epsilon(1e-6));
    CHECK(s.at(110) == Approx(min_lr).epsilon(1e-6));  // end
    CHECK(s.at(111) == s.min_lr);                      // beyond the end
    CHECK(s.at(100000) == s.min_lr);
    for (int64_t step = 1; step <= 110; ++step)
        CHECK((step <= 10 ? s.at(step) >= s.at(step - 1) : s.at(step) <= s.at(step - 1)));

    const nn::CosineSchedule flat{.lr = 1e-3f, .min_lr = 1e-4f, .warmup = 5, .total = 5};  // no decay phase
    CHECK(flat.at(4) == Approx(lr * 5.0 / 6.0).epsilon(1e-6));
    CHECK(flat.at(5) == flat.min_lr);
    CHECK(flat.at(6) == flat.min_lr);
    const nn::CosineSchedule no_warmup{.lr = 1e-3f, .min_lr = 0.0f, .warmup = 0, .total = 4};
    CHECK(no_warmup.at(0) == Approx(lr).epsilon(1e-6));
    CHECK(no_warmup.at(2) == Approx(lr / 2.0).epsilon(1e-6));
    CHECK(no_warmup.at(4) == Approx(0.0).margin(1e-12));
    CHECK_THROWS_WITH(s.at(-1), Catch::Contains("CosineSchedule") && Catch::Contains("step -1"));
}
