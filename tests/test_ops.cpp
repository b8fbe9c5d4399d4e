// Every op in ops.h against gradcheck (central differences with a random upstream gradient), plus
// forward values computed by hand, plus proof that gradcheck catches wrong backwards.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <autograd/op.h>

#include "helpers.h"

using namespace autograd;
using test::Inputs;
using test::max_abs_diff;

namespace {

using BinaryOp = Tensor (*)(const Tensor&, const Tensor&);

struct NamedBinary {
    const char* name;
    BinaryOp op;
};

// Lambdas, not &autograd::add: every op takes a trailing source_location parameter (ops.h).
const NamedBinary binary_ops[] = {{"add", [](const Tensor& a, const Tensor& b) { return autograd::add(a, b); }},
                                  {"sub", [](const Tensor& a, const Tensor& b) { return autograd::sub(a, b); }},
                                  {"mul", [](const Tensor& a, const Tensor& b) { return autograd::mul(a, b); }},
                                  {"div", [](const Tensor& a, const Tensor& b) { return autograd::div(a, b); }}};

// The broadcast patterns every binary op is checked on: (a shape, b shape, result shape).
struct Pattern {
    Shape a, b, out;
};
const Pattern patterns[] = {
    {{2, 3}, {3}, {2, 3}},    {{2, 1, 4}, {3, 1}, {2, 3, 4}}, {{}, {2, 3}, {2, 3}},        {{2, 3}, {}, {2, 3}},
    {{2, 3}, {2, 3}, {2, 3}}, {{3, 1}, {1, 4}, {3, 4}},       {{4}, {2, 3, 4}, {2, 3, 4}},
};

std::vector<double> softmax_ref(const std::vector<double>& x) {
    double m = x[0];
    for (double v : x) m = std::max(m, v);
    double s = 0.0;
    for (double v : x) s += std::exp(v - m);
    std::vector<double> y;
    for (double v : x) y.push_back(std::exp(v - m) / s);
    return y;
}

// x * x with a deliberately wrong backward (x instead of 2x), or the right one.
Tensor square_op(const Tensor& x, bool correct) {
    std::vector<float> values;
    for (float v : x.data()) values.push_back(v * v);
    const float factor = correct ? 2.0f : 1.0f;
    return make_result(correct ? "square" : "bad_square", x.shape(), std::move(values), {x},
                       [factor](const GradContext& ctx) {
                           if (!ctx.needs(0)) return;
                           const std::span<const float> xs = ctx.inputs[0].data();
                           const std::span<float> dx = ctx.grad(0);
                           for (size_t i = 0; i < dx.size(); ++i) dx[i] += factor * xs[i] * ctx.dout[i];
                       });
}

// softmax over the last dim of an (N, V) tensor, written by hand. With correct == false the backward
// forgets the factor y_i: dx_i = dout_i - sum_j y_j dout_j. For dout = 1 (a sum() loss) that is 0,
// exactly the right answer, so only a random upstream gradient exposes it.
Tensor hand_softmax(const Tensor& x, bool correct) {
    const int64_t n = x.size(0), v = x.size(1);
    std::vector<float> values(static_cast<size_t>(n * v));
    for (int64_t r = 0; r < n; ++r) {
        std::vector<double> row;
        for (int64_t c = 0; c < v; ++c) row.push_back(x.at({r, c}));
        const std::vector<double> y = softmax_ref(row);
        for (int64_t c = 0; c < v; ++c)
            values[static_cast<size_t>(r * v + c)] = static_cast<float>(y[static_cast<size_t>(c)]);
    }
    return make_result(correct ? "hand_softmax" : "bad_softmax", x.shape(), std::move(values), {x},
                       [n, v, correct](const GradContext& ctx) {
                           if (!ctx.needs(0)) return;
                           const std::span<float> dx = ctx.grad(0);
                           for (int64_t r = 0; r < n; ++r) {
                               const size_t base = static_cast<size_t>(r * v);
                               double dot = 0.0;
                               for (size_t c = 0; c < static_cast<size_t>(v); ++c)
                                   dot += double(ctx.out[base + c]) * ctx.dout[base + c];
                               for (size_t c = 0; c < static_cast<size_t>(v); ++c) {
                                   const double g = ctx.dout[base + c] - dot;
                                   dx[base + c] += static_cast<float>(correct ? ctx.out[base + c] * g : g);
                               }
                           }
                       });
}

}  // namespace

// --- elementwise, broadcasting ------------------------------------------------------------------

TEST_CASE("add, sub, mul, div with broadcasting pass gradcheck", "[ops]") {
    Generator gen(1);
    for (const NamedBinary& b : binary_ops) {
        for (const Pattern& p : patterns) {
            INFO(b.name << " " << shape_str(p.a) << " with " << shape_str(p.b));
            const Tensor x = test::uniform_param(p.a, gen);
            // keep the divisor away from 0
            const Tensor y = test::away_from_zero(p.b, gen, 0.5f, 1.5f);
            const BinaryOp op = b.op;
            REQUIRE(op(x, y).shape() == p.out);
            REQUIRE(op(y, x).shape() == p.out);
            REQUIRE_GRADCHECK([op](const Inputs& in) { return op(in[0], in[1]); }, {x, y});
            const Tensor xd = test::away_from_zero(p.a, gen, 0.5f, 1.5f);
            REQUIRE_GRADCHECK([op](const Inputs& in) { return op(in[1], in[0]); }, {xd, y});
        }
    }
}

TEST_CASE("a tensor used twice in one binary op gets both gradients", "[ops]") {
    Generator gen(2);
    const Tensor x = test::away_from_zero({2, 3}, gen, 0.5f, 1.5f);
    for (const NamedBinary& b : binary_ops) {
        INFO(b.name);
        const BinaryOp op = b.op;
        REQUIRE_GRADCHECK([op](const Inputs& in) { return op(in[0], in[0]); }, {x});
    }
}

TEST_CASE("broadcast forward values", "[ops]") {
    const Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    const Tensor b = tensor({10, 20, 30});
    REQUIRE(add(a, b).to_vector() == std::vector<float>{11, 22, 33, 14, 25, 36});
    REQUIRE(sub(a, b).to_vector() == std::vector<float>{-9, -18, -27, -6, -15, -24});
    const Tensor col = tensor({2, 3}, {2, 1});
    REQUIRE(mul(a, col).to_vector() == std::vector<float>{2, 4, 6, 12, 15, 18});
    REQUIRE(div(a, col).to_vector() == std::vector<float>{0.5f, 1.0f, 1.5f, 4.0f / 3.0f, 5.0f / 3.0f, 2.0f});
    REQUIRE((a + 1.0f).to_vector() == std::vector<float>{2, 3, 4, 5, 6, 7});
    REQUIRE((1.0f - a).to_vector() == std::vector<float>{0, -1, -2, -3, -4, -5});
    REQUIRE((a - 1.0f).to_vector() == std::vector<float>{0, 1, 2, 3, 4, 5});
    REQUIRE((2.0f * a).to_vector() == std::vector<float>{2, 4, 6, 8, 10, 12});
    REQUIRE((a * 2.0f).to_vector() == std::vector<float>{2, 4, 6, 8, 10, 12});
    REQUIRE((a / 2.0f).to_vector() == std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3});
    REQUIRE((6.0f / a).to_vector() == std::vector<float>{6, 3, 2, 1.5f, 1.2f, 1});
    REQUIRE((-a).to_vector() == std::vector<float>{-1, -2, -3, -4, -5, -6});
    REQUIRE((a * a - a / a + a).to_vector() == std::vector<float>{1, 5, 11, 19, 29, 41});
    // (3, 1) + (1, 4) -> (3, 4): element (i, j) = i*10 + j
    const Tensor outer = add(tensor({0, 10, 20}, {3, 1}), tensor({0, 1, 2, 3}, {1, 4}));
    REQUIRE(outer.shape() == Shape{3, 4});
    REQUIRE(outer.at({2, 3}) == 23.0f);
    REQUIRE(outer.at({1, 0}) == 10.0f);
}

TEST_CASE("broadcast gradients are summed back to each input's shape", "[ops]") {
    // d/db sum(a + b) for a (2, 3), b (3) is 2 per element; d/db sum(a * b) is the column sums of a
    const Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
    Tensor b = tensor({1, 1, 1}).requires_grad_();
    sum(a + b).backward();
    REQUIRE(b.grad().shape() == Shape{3});
    REQUIRE(b.grad().to_vector() == std::vector<float>{2, 2, 2});
    b.zero_grad();
    sum(a * b).backward();
    REQUIRE(b.grad().to_vector() == std::vector<float>{5, 7, 9});
    const Tensor s = scalar(2.0f).requires_grad_();
    sum(a * s).backward();
    REQUIRE(s.grad().shape().empty());
    REQUIRE(s.grad().item() == 21.0f);
}

TEST_CASE("neg, operators with constants, and scale pass gradcheck", "[ops]") {
    Generator gen(3);
    const Tensor x = test::uniform_param({3, 4}, gen);
    REQUIRE_GRADCHECK([](const Inputs& in) { return neg(in[0]); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return -in[0]; }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return scale(in[0], 2.5f); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return scale(in[0], -0.5f); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return 3.0f - in[0] * 2.0f + 1.0f; }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return (1.0f + 2.0f * in[0]) * in[0] - in[0] / 3.0f; }, {x});
    const Tensor xd = test::away_from_zero({3, 4}, gen, 0.5f, 1.5f);
    REQUIRE_GRADCHECK([](const Inputs& in) { return 2.0f / in[0] - in[0] / 4.0f; }, {xd});
    REQUIRE(scale(tensor({1, -2}), 3.0f).to_vector() == std::vector<float>{3, -6});
}

// --- elementwise, unary ----------------------------------------------------------------------------

TEST_CASE("exp, log, sqrt, tanh pass gradcheck", "[ops]") {
    Generator gen(4);
    const Tensor x = test::uniform_param({2, 3, 2}, gen, -1.5f, 1.5f);
    const Tensor pos = test::uniform_param({2, 3, 2}, gen, 0.5f, 2.0f);
    REQUIRE_GRADCHECK([](const Inputs& in) { return autograd::exp(in[0]); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return autograd::log(in[0]); }, {pos});
    REQUIRE_GRADCHECK([](const Inputs& in) { return autograd::sqrt(in[0]); }, {pos});
    REQUIRE_GRADCHECK([](const Inputs& in) { return autograd::tanh(in[0]); }, {x});

    const Tensor v = tensor({-1.0f, 0.0f, 0.5f, 2.0f});
    REQUIRE(max_abs_diff(autograd::exp(v), {std::exp(-1.0), 1.0, std::exp(0.5), std::exp(2.0)}) < 1e-5);
    REQUIRE(max_abs_diff(autograd::tanh(v), {std::tanh(-1.0), 0.0, std::tanh(0.5), std::tanh(2.0)}) < 1e-6);
    const Tensor p = tensor({0.25f, 1.0f, 4.0f});
    REQUIRE(max_abs_diff(autograd::log(p), {std::log(0.25), 0.0, std::log(4.0)}) < 1e-6);
    REQUIRE(max_abs_diff(autograd::sqrt(p), {0.5, 1.0, 2.0}) < 1e-6);
}

TEST_CASE("pow by a constant passes gradcheck", "[ops]") {
    Generator gen(5);
    const Tensor x = test::uniform_param({3, 3}, gen, -1.5f, 1.5f);
    const Tensor pos = test::uniform_param({3, 3}, gen, 0.5f, 2.0f);
    REQUIRE_GRADCHECK([](const Inputs& in) { return autograd::pow(in[0], 2.0f); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return autograd::pow(in[0], 3.0f); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return autograd::pow(in[0], -1.0f); }, {pos});
    REQUIRE_GRADCHECK([](const Inputs& in) { return autograd::pow(in[0], 0.5f); }, {pos});
    REQUIRE_GRADCHECK([](const Inputs& in) { return autograd::pow(in[0], 1.7f); }, {pos});
    REQUIRE(max_abs_diff(autograd::pow(tensor({-2.0f, 3.0f}), 3.0f), {-8.0, 27.0}) < 1e-5);
    REQUIRE(max_abs_diff(autograd::pow(tensor({4.0f, 0.25f}), -0.5f), {0.5, 2.0}) < 1e-6);
}

TEST_CASE("relu and gelu pass gradcheck", "[ops]") {
    Generator gen(6);
    const Tensor x = test::away_from_zero({4, 5}, gen, 0.1f, 2.0f);  // relu's kink stays away
    REQUIRE_GRADCHECK([](const Inputs& in) { return relu(in[0]); }, {x});
    const Tensor y = test::uniform_param({4, 5}, gen, -3.0f, 3.0f);
    REQUIRE_GRADCHECK([](const Inputs& in) { return gelu(in[0]); }, {y});
    REQUIRE(relu(tensor({-1.0f, 0.0f, 2.0f})).to_vector() == std::vector<float>{0, 0, 2});
}

TEST_CASE("gelu is the exact x * Phi(x)", "[ops]") {
    const std::vector<float> xs = {-4.0f, -3.0f, -1.0f, -0.5f, 0.0f, 0.3f, 1.0f, 2.0f, 5.0f};
    std::vector<double> expected;
    for (float x : xs) expected.push_back(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
    REQUIRE(max_abs_diff(gelu(tensor(xs)), expected) < 1e-6);
    // Recording a graph, gelu keeps Phi(x) for its backward: the values are the same bits, and the
    // gradient is Phi(x) + x phi(x) (gradcheck above tests it against finite differences; here exactly)
    Tensor x = tensor(xs).requires_grad_();
    const Tensor y = gelu(x);
    CHECK(y.to_vector() == gelu(tensor(xs)).to_vector());
    y.backward(ones({static_cast<int64_t>(xs.size())}));
    std::vector<double> slope;
    for (float v : xs)
        slope.push_back(0.5 * (1.0 + std::erf(v / std::sqrt(2.0))) +
                        v * std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI));
    CHECK(max_abs_diff(x.grad(), slope) < 1e-6);
}

// --- matmul ----------------------------------------------------------------------------------------

TEST_CASE("matmul forward against a hand product", "[ops]") {
    const Tensor a = tensor({1, 2, 3, 4}, {2, 2});
    const Tensor b = tensor({5, 6, 7, 8}, {2, 2});
    REQUIRE(matmul(a, b).to_vector() == std::vector<float>{19, 22, 43, 50});
    // (2, 3) @ (3, 1)
    const Tensor c = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    const Tensor d = tensor({1, 0, -1}, {3, 1});
    REQUIRE(matmul(c, d).shape() == Shape{2, 1});
    REQUIRE(matmul(c, d).to_vector() == std::vector<float>{-2, -2});
    // batched: each batch element multiplies by its own matrix
    const Tensor e = tensor({1, 2, 3, 4, 1, 0, 0, 1}, {2, 2, 2});
    const Tensor ee = matmul(e, b);
    REQUIRE(ee.shape() == Shape{2, 2, 2});
    REQUIRE(ee.to_vector() == std::vector<float>{19, 22, 43, 50, 5, 6, 7, 8});
}

TEST_CASE("matmul passes gradcheck: 2-D, batched, broadcast leading dims", "[ops]") {
    Generator gen(7);
    struct Case {
        Shape a, b, out;
    };
    const Case cases[] = {
        {{3, 4}, {4, 5}, {3, 5}},
        {{1, 1}, {1, 1}, {1, 1}},
        {{2, 3, 4}, {4, 5}, {2, 3, 5}},           // (B, T, C) @ (C, H)
        {{2, 3, 4}, {2, 4, 3}, {2, 3, 3}},        // (B, T, H) @ (B, H, T)
        {{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}},  // leading dims broadcast both ways
        {{3, 4}, {2, 4, 5}, {2, 3, 5}},           // a broadcast over b's batch
        {{2, 2, 3, 2}, {2, 2, 2, 3}, {2, 2, 3, 3}},
    };
    for (const Case& c : cases) {
        INFO(shape_str(c.a) << " @ " << shape_str(c.b));
        const Tensor a = test::uniform_param(c.a, gen);
        const Tensor b = test::uniform_param(c.b, gen);
        REQUIRE(matmul(a, b).shape() == c.out);
        REQUIRE_GRADCHECK([](const Inputs& in) { return matmul(in[0], in[1]); }, {a, b});
    }
    // the same tensor on both sides
    const Tensor sq = test::uniform_param({3, 3}, gen);
    REQUIRE_GRADCHECK([](const Inputs& in) { return matmul(in[0], in[0]); }, {sq});
}

// --- shape ---------------------------------------------------------------------------------------

TEST_CASE("reshape and transpose pass gradcheck", "[ops]") {
    Generator gen(8);
    const Tensor x = test::uniform_param({2, 3, 4}, gen);
    REQUIRE_GRADCHECK([](const Inputs& in) { return reshape(in[0], {4, -1}); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return in[0].reshape({24}); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return transpose(in[0], 0, 1); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return transpose(in[0], 0, 2); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return in[0].transpose(-1, -2); }, {x});

    const Tensor r4 = test::uniform_param({2, 3, 4, 5}, gen);
    const std::pair<int64_t, int64_t> dims[] = {{1, 3}, {0, 2}, {-1, -2}, {0, 3}, {2, 1}};
    for (const auto& [d0, d1] : dims) {
        INFO("transpose " << d0 << ", " << d1);
        REQUIRE_GRADCHECK([d0 = d0, d1 = d1](const Inputs& in) { return transpose(in[0], d0, d1); }, {r4});
    }
    // rank 4 values: (i, j, k, l) -> (i, l, k, j)
    const Tensor t = transpose(r4, 1, 3);
    REQUIRE(t.shape() == Shape{2, 5, 4, 3});
    REQUIRE(t.at({1, 4, 2, 0}) == r4.at({1, 0, 2, 4}));
    REQUIRE(t.at({0, 1, 3, 2}) == r4.at({0, 2, 3, 1}));
}

TEST_CASE("slice, concat and split pass gradcheck", "[ops]") {
    Generator gen(9);
    const Tensor x = test::uniform_param({4, 5}, gen);
    REQUIRE_GRADCHECK([](const Inputs& in) { return slice(in[0], 1, 1, 4); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return in[0].slice(0, 0, 2); }, {x});
    const Tensor r3 = test::uniform_param({2, 3, 4}, gen);
    REQUIRE_GRADCHECK([](const Inputs& in) { return slice(in[0], 1, 1, 3); }, {r3});
    REQUIRE_GRADCHECK([](const Inputs& in) { return slice(in[0], -1, 2, 4); }, {r3});

    const Tensor a = test::uniform_param({2, 3}, gen);
    const Tensor b = test::uniform_param({2, 1}, gen);
    const Tensor c = test::uniform_param({2, 2}, gen);
    REQUIRE(concat({a, b, c}, 1).shape() == Shape{2, 6});
    REQUIRE_GRADCHECK([](const Inputs& in) { return concat({in[0], in[1], in[2]}, 1); }, {a, b, c});
    REQUIRE_GRADCHECK([](const Inputs& in) { return concat({in[0], in[1], in[2]}, -1); }, {a, b, c});
    const Tensor d = test::uniform_param({1, 3}, gen);
    REQUIRE_GRADCHECK([](const Inputs& in) { return concat({in[0], in[1], in[0]}, 0); }, {a, d});

    const Tensor s = test::uniform_param({3, 5}, gen);
    const std::vector<Tensor> parts = split(s, 2, 1);
    REQUIRE(parts.size() == 3);
    REQUIRE(parts[0].shape() == Shape{3, 2});
    REQUIRE(parts[2].shape() == Shape{3, 1});
    for (size_t i = 0; i < 3; ++i) {
        INFO("part " << i);
        REQUIRE_GRADCHECK([i](const Inputs& in) { return split(in[0], 2, 1)[i]; }, {s});
    }
    REQUIRE_GRADCHECK(
        [](const Inputs& in) {
            const std::vector<Tensor> p = split(in[0], std::vector<int64_t>{1, 3, 1}, 1);
            return concat({scale(p[2], 3.0f), p[0], scale(p[1], -1.0f)}, 1);
        },
        {s});
    REQUIRE_GRADCHECK([](const Inputs& in) { return split(in[0], std::vector<int64_t>{2, 1}, 0)[0]; }, {s});
}

TEST_CASE("slice, concat and split forward values", "[ops]") {
    const Tensor a = tensor({1, 2, 3, 4}, {2, 2});
    const Tensor b = tensor({5, 6}, {2, 1});
    REQUIRE(concat({a, b}, 1).to_vector() == std::vector<float>{1, 2, 5, 3, 4, 6});
    REQUIRE(concat({a, a}, 0).to_vector() == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4});
    REQUIRE(concat({a}, 0).to_vector() == a.to_vector());

    const Tensor x = arange(10).reshape({2, 5});
    const std::vector<Tensor> p = split(x, std::vector<int64_t>{2, 3}, 1);
    REQUIRE(p.size() == 2);
    REQUIRE(p[0].to_vector() == std::vector<float>{0, 1, 5, 6});
    REQUIRE(p[1].to_vector() == std::vector<float>{2, 3, 4, 7, 8, 9});
    const std::vector<Tensor> rows = split(x, 1, 0);
    REQUIRE(rows.size() == 2);
    REQUIRE(rows[1].shape() == Shape{1, 5});
    REQUIRE(rows[1].to_vector() == std::vector<float>{5, 6, 7, 8, 9});
    REQUIRE(split(x, 5, 1).size() == 1);
    REQUIRE(split(x, 7, 1).size() == 1);  // one chunk shorter than size
}

// --- reductions ----------------------------------------------------------------------------------

TEST_CASE("sum and mean pass gradcheck: whole and along each dim", "[ops]") {
    Generator gen(10);
    const Tensor x = test::uniform_param({2, 3, 4}, gen);
    REQUIRE_GRADCHECK([](const Inputs& in) { return sum(in[0]); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return mean(in[0]); }, {x});
    for (int64_t dim : {0, 1, 2, -1}) {
        for (bool keepdim : {false, true}) {
            INFO("dim " << dim << " keepdim " << keepdim);
            REQUIRE_GRADCHECK([dim, keepdim](const Inputs& in) { return sum(in[0], dim, keepdim); }, {x});
            REQUIRE_GRADCHECK([dim, keepdim](const Inputs& in) { return mean(in[0], dim, keepdim); }, {x});
        }
    }
}

TEST_CASE("sum, mean, max forward values and shapes", "[ops]") {
    const Tensor t = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    REQUIRE(sum(t).shape().empty());
    REQUIRE(sum(t).item() == 21.0f);
    REQUIRE(mean(t).item() == 3.5f);
    REQUIRE(sum(t, 0).shape() == Shape{3});
    REQUIRE(sum(t, 0).to_vector() == std::vector<float>{5, 7, 9});
    REQUIRE(sum(t, 1).to_vector() == std::vector<float>{6, 15});
    REQUIRE(sum(t, 1, true).shape() == Shape{2, 1});
    REQUIRE(sum(t, 0, true).shape() == Shape{1, 3});
    REQUIRE(mean(t, -1).to_vector() == std::vector<float>{2, 5});
    REQUIRE(mean(t, 0).to_vector() == std::vector<float>{2.5f, 3.5f, 4.5f});

    const Tensor m = tensor({3, 9, 1, 7, 2, 8}, {2, 3});
    REQUIRE(max(m, 1).to_vector() == std::vector<float>{9, 8});
    REQUIRE(max(m, 0).to_vector() == std::vector<float>{7, 9, 8});
    REQUIRE(max(m, 0, true).shape() == Shape{1, 3});
    REQUIRE(argmax(m, 1) == std::vector<int64_t>{1, 2});
    REQUIRE(argmax(m, 0) == std::vector<int64_t>{1, 0, 1});

    // ties: the gradient goes to the first maximum only
    const Tensor tie = tensor({2, 5, 5, 1}).requires_grad_();
    max(tie, 0).backward();
    REQUIRE(tie.grad().to_vector() == std::vector<float>{0, 1, 0, 0});
    REQUIRE(argmax(tie, 0) == std::vector<int64_t>{1});
}

TEST_CASE("max along a dim passes gradcheck", "[ops]") {
    Generator gen(11);
    const Tensor x = test::distinct_param({2, 3, 4}, gen);
    for (int64_t dim : {0, 1, 2, -1}) {
        for (bool keepdim : {false, true}) {
            INFO("dim " << dim << " keepdim " << keepdim);
            REQUIRE_GRADCHECK([dim, keepdim](const Inputs& in) { return max(in[0], dim, keepdim); }, {x});
        }
    }
}

// --- masking, softmax ----------------------------------------------------------------------------

TEST_CASE("masked_fill passes gradcheck and blocks the gradient where masked", "[ops]") {
    Generator gen(12);
    const Tensor x = test::uniform_param({2, 3, 4}, gen);
    const Tensor mask = tensor({1, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0}, {3, 4});
    REQUIRE_GRADCHECK([mask](const Inputs& in) { return masked_fill(in[0], mask, -5.0f); }, {x});
    const Tensor row_mask = tensor({0, 1, 0, 1}, {1, 4});
    REQUIRE_GRADCHECK([row_mask](const Inputs& in) { return masked_fill(in[0], row_mask, 2.0f); }, {x});

    const Tensor v = tensor({1, 2, 3, 4}, {2, 2}).requires_grad_();
    const Tensor filled = masked_fill(v, tensor({0, 1}), 9.0f);
    REQUIRE(filled.to_vector() == std::vector<float>{1, 9, 3, 9});
    sum(filled * tensor({1, 2, 3, 4}, {2, 2})).backward();
    REQUIRE(v.grad().to_vector() == std::vector<float>{1, 0, 3, 0});
}

TEST_CASE("causal mask and upper triangle", "[ops]") {
    REQUIRE(upper_triangle_mask(3).shape() == Shape{3, 3});
    REQUIRE(upper_triangle_mask(3).to_vector() == std::vector<float>{0, 1, 1, 0, 0, 1, 0, 0, 0});
    const Tensor x = arange(8).reshape({2, 2, 2});
    const Tensor m = causal_mask(x);
    REQUIRE(m.shape() == Shape{2, 2, 2});
    const float inf = std::numeric_limits<float>::infinity();
    REQUIRE(m.to_vector() == std::vector<float>{0, -inf, 2, 3, 4, -inf, 6, 7});

    // softmax of a causal-masked row attends only to positions <= i
    const Tensor p = softmax(causal_mask(zeros({3, 3})), -1);
    REQUIRE(max_abs_diff(p, {1, 0, 0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3}) < 1e-6);
}

TEST_CASE("masked softmax passes gradcheck", "[ops]") {
    Generator gen(13);
    const Tensor x = test::uniform_param({2, 4, 4}, gen, -2.0f, 2.0f);
    REQUIRE_GRADCHECK([](const Inputs& in) { return softmax(causal_mask(in[0]), -1); }, {x});
    REQUIRE_GRADCHECK([](const Inputs& in) { return log_softmax(causal_mask(in[0]), -1).slice(2, 0, 1); }, {x});
    // the attention head: scores (B, T, T) = q @ k^T / sqrt(H), masked, softmax, @ v
    const Tensor q = test::uniform_param({2, 3, 4}, gen);
    const Tensor k = test::uniform_param({2, 3, 4}, gen);
    const Tensor v = test::uniform_param({2, 3, 4}, gen);
    REQUIRE_GRADCHECK(
        [](const Inputs& in) {
            const Tensor scores = scale(matmul(in[0], transpose(in[1], 1, 2)), 0.5f);
            return matmul(softmax(causal_mask(scores), -1), in[2]);
        },
        {q, k, v});
}

TEST_CASE("softmax and log_softmax pass gradcheck along dims 0, 1, -1 of rank 3", "[ops]") {
    Generator gen(14);
    const Tensor x = test::uniform_param({2, 3, 4}, gen, -2.0f, 2.0f);
    for (int64_t dim : {0, 1, 2, -1}) {
        INFO("dim " << dim);
        REQUIRE_GRADCHECK([dim](const Inputs& in) { return softmax(in[0], dim); }, {x});
        REQUIRE_GRADCHECK([dim](const Inputs& in) { return log_softmax(in[0], dim); }, {x});
    }
}

TEST_CASE("softmax and log_softmax forward values", "[ops]") {
    const std::vector<double> row = {1.0, 2.0, 3.0};
    const std::vector<double> expected = softmax_ref(row);
    REQUIRE(max_abs_diff(softmax(tensor({1, 2, 3}), 0), expected) < 1e-6);
    std::vector<double> log_expected;
    for (double p : expected) log_expected.push_back(std::log(p));
    REQUIRE(max_abs_diff(log_softmax(tensor({1, 2, 3}), 0), log_expected) < 1e-5);

    // along dim 0 of a (2, 2): columns are normalized
    const Tensor t = tensor({0, 1, 2, 1}, {2, 2});
    const std::vector<double> c0 = softmax_ref({0.0, 2.0});
    REQUIRE(max_abs_diff(softmax(t, 0), {c0[0], 0.5, c0[1], 0.5}) < 1e-6);
    const std::vector<double> r0 = softmax_ref({0.0, 1.0}), r1 = softmax_ref({2.0, 1.0});
    REQUIRE(max_abs_diff(softmax(t, 1), {r0[0], r0[1], r1[0], r1[1]}) < 1e-6);
    REQUIRE(max_abs_diff(softmax(tensor({5, 5, 5, 5}), 0), {0.25, 0.25, 0.25, 0.25}) < 1e-7);
}

// --- cross entropy, embedding, dropout ------------------------------------------------------------

TEST_CASE("cross_entropy forward against a hand computation", "[ops]") {
    const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 0.0f, 3.0f};
    const std::vector<int64_t> targets = {2, 0};
    double expected = 0.0;
    for (size_t r = 0; r < 2; ++r) {
        double s = 0.0;
        for (size_t c = 0; c < 3; ++c) s += std::exp(double(logits[r * 3 + c]));
        expected += -(logits[r * 3 + static_cast<size_t>(targets[r])] - std::log(s));
    }
    expected /= 2;
    const Tensor loss = cross_entropy(tensor(logits, {2, 3}), targets);
    REQUIRE(loss.shape().empty());
    REQUIRE(loss.item() == Approx(expected).epsilon(1e-6));

    // uniform logits: log(V)
    REQUIRE(cross_entropy(zeros({4, 8}), std::vector<int64_t>{0, 1, 7, 3}).item() ==
            Approx(std::log(8.0)).epsilon(1e-6));

    // gradient: (softmax - onehot) / N
    const Tensor l = tensor(logits, {2, 3}).requires_grad_();
    cross_entropy(l, targets).backward();
    std::vector<double> dl;
    for (size_t r = 0; r < 2; ++r) {
        const std::vector<double> p = softmax_ref({logits[r * 3], logits[r * 3 + 1], logits[r * 3 + 2]});
        for (size_t c = 0; c < 3; ++c) dl.push_back((p[c] - (int64_t(c) == targets[r] ? 1.0 : 0.0)) / 2);
    }
    REQUIRE(max_abs_diff(l.grad(), dl) < 1e-6);
}

TEST_CASE("cross_entropy passes gradcheck for (N, V) and (B, T, V)", "[ops]") {
    Generator gen(15);
    const Tensor a = test::uniform_param({4, 5}, gen, -2.0f, 2.0f);
    const std::vector<int64_t> ta = {0, 4, 2, 2};
    REQUIRE_GRADCHECK([&ta](const Inputs& in) { return cross_entropy(in[0], ta); }, {a});
    const Tensor b = test::uniform_param({2, 3, 5}, gen, -2.0f, 2.0f);
    const std::vector<int64_t> tb = {1, 0, 4, 3, 3, 2};
    REQUIRE_GRADCHECK([&tb](const Inputs& in) { return cross_entropy(in[0], std::span<const int64_t>(tb)); }, {b});
    // a loss built on top: the gradient of logits that come from a matmul
    const Tensor x = test::uniform_param({4, 3}, gen);
    const Tensor w = test::uniform_param({3, 5}, gen);
    REQUIRE_GRADCHECK([&ta](const Inputs& in) { return cross_entropy(matmul(in[0], in[1]), ta); }, {x, w});
}

TEST_CASE("embedding passes gradcheck with repeated ids", "[ops]") {
    Generator gen(16);
    const Tensor weight = test::uniform_param({5, 3}, gen);
    const std::vector<int64_t> ids = {1, 3, 1, 1, 0, 4};
    REQUIRE(embedding(weight, ids, {2, 3}).shape() == Shape{2, 3, 3});
    REQUIRE(embedding(weight, ids, {6}).shape() == Shape{6, 3});
    REQUIRE_GRADCHECK([&ids](const Inputs& in) { return embedding(in[0], ids, {2, 3}); }, {weight});
    REQUIRE_GRADCHECK([&ids](const Inputs& in) { return embedding(in[0], ids, {6}); }, {weight});
}

TEST_CASE("embedding gathers rows and scatter-adds gradients by hand", "[ops]") {
    const Tensor weight = arange(15).reshape({5, 3}).clone().requires_grad_();
    const std::vector<int64_t> ids = {1, 3, 1, 1, 0, 4};  // id 1 three times, id 2 never
    Tensor out = embedding(weight, ids, {2, 3});
    for (int64_t i = 0; i < 6; ++i)
        for (int64_t c = 0; c < 3; ++c)
            REQUIRE(out.at({i / 3, i % 3, c}) == static_cast<float>(ids[static_cast<size_t>(i)] * 3 + c));

    Generator gen(17);
    const Tensor upstream = randn({2, 3, 3}, gen);
    out.backward(upstream);
    const Tensor g = weight.grad();
    REQUIRE(g.shape() == Shape{5, 3});
    for (int64_t c = 0; c < 3; ++c) {
        // row 1 collects positions (0,0), (0,2), (1,0)
        const double row1 = double(upstream.at({0, 0, c})) + upstream.at({0, 2, c}) + upstream.at({1, 0, c});
        REQUIRE(g.at({1, c}) == Approx(row1).margin(1e-6));
        REQUIRE(g.at({0, c}) == upstream.at({1, 1, c}));
        REQUIRE(g.at({3, c}) == upstream.at({0, 1, c}));
        REQUIRE(g.at({4, c}) == upstream.at({1, 2, c}));
        REQUIRE(g.at({2, c}) == 0.0f);
    }
}

TEST_CASE("dropout: seeded mask, scaled survivors, gradcheck, identity in eval", "[ops]") {
    Generator init(18);
    const Tensor x = test::away_from_zero({4, 6}, init, 0.5f, 1.5f);
    // training: recreating the generator inside f gives the same mask on every call
    REQUIRE_GRADCHECK(
        [](const Inputs& in) {
            Generator g(99);
            return dropout(in[0], 0.5f, true, g);
        },
        {x});

    Generator g1(5), g2(5);
    const Tensor big = ones({100, 100});
    const Tensor d1 = dropout(big, 0.25f, true, g1);
    const Tensor d2 = dropout(big, 0.25f, true, g2);
    REQUIRE(d1.to_vector() == d2.to_vector());
    int zeros_seen = 0;
    for (float v : d1.data()) {
        const bool is_zero = v == 0.0f;
        REQUIRE((is_zero || v == Approx(1.0 / 0.75).epsilon(1e-6)));
        zeros_seen += is_zero ? 1 : 0;
    }
    REQUIRE(std::abs(zeros_seen - 2500) < 250);  // binomial std 43

    // eval mode and p == 0: identity, and the gradient passes unchanged
    Generator g3(1);
    REQUIRE(dropout(x, 0.5f, false, g3).to_vector() == x.to_vector());
    REQUIRE(dropout(x, 0.0f, true, g3).to_vector() == x.to_vector());
    REQUIRE_GRADCHECK(
        [](const Inputs& in) {
            Generator g(1);
            return dropout(in[0], 0.5f, false, g);
        },
        {x});
}

// --- gradcheck itself must be able to fail -----------------------------------------------------

TEST_CASE("gradcheck catches a wrong backward and names the worst element", "[ops]") {
    Generator gen(19);
    const Tensor x = test::away_from_zero({3, 4}, gen, 0.5f, 1.5f);

    const GradcheckResult good = gradcheck([](const Inputs& in) { return square_op(in[0], true); }, {x});
    INFO(good.message);
    REQUIRE(good.ok);
    REQUIRE(good.checked == 12);

    const GradcheckResult bad = gradcheck([](const Inputs& in) { return square_op(in[0], false); }, {x});
    INFO(bad.message);
    REQUIRE_FALSE(bad.ok);
    REQUIRE_FALSE(bad.message.empty());
    REQUIRE(bad.input == 0);
    REQUIRE(bad.element >= 0);
    REQUIRE(bad.element < 12);
    // the analytic gradient is half the numeric one at the reported element
    REQUIRE(bad.analytic == Approx(bad.numeric / 2).epsilon(0.02).margin(2e-3));
    REQUIRE(bad.abs_error > 0.05);

    // with a second input that is correct, the failing input is the one named
    const Tensor y = test::uniform_param({3, 4}, gen);
    const GradcheckResult bad2 =
        gradcheck([](const Inputs& in) { return add(in[0], square_op(in[1], false)); }, {y, x});
    INFO(bad2.message);
    REQUIRE_FALSE(bad2.ok);
    REQUIRE(bad2.input == 1);
    // the inputs were restored
    REQUIRE(test::all_finite(x));
}

TEST_CASE("a softmax backward that passes a sum() check fails gradcheck", "[ops]") {
    Generator gen(20);
    const Tensor x = test::uniform_param({3, 5}, gen, -2.0f, 2.0f);

    // the plain check: with sum() as the loss the wrong backward gives exactly the right answer (0)
    const Tensor xs = x.clone().requires_grad_();
    sum(hand_softmax(xs, false)).backward();
    for (float g : xs.grad().data()) REQUIRE(std::abs(g) < 1e-6f);
    const GradcheckResult summed = gradcheck([](const Inputs& in) { return sum(hand_softmax(in[0], false)); }, {x});
    INFO(summed.message);
    REQUIRE(summed.ok);  // vacuous: softmax rows sum to 1, so d sum / dx = 0 both ways

    // the random upstream gradient exposes it
    const GradcheckResult bad = gradcheck([](const Inputs& in) { return hand_softmax(in[0], false); }, {x});
    INFO(bad.message);
    REQUIRE_FALSE(bad.ok);

    // the correct hand softmax passes, and agrees with the library's
    REQUIRE_GRADCHECK([](const Inputs& in) { return hand_softmax(in[0], true); }, {x});
    REQUIRE(max_abs_diff(hand_softmax(x, true), softmax(x, -1)) < 1e-6);
}
