// The fused ops (causal_softmax, causal_attention_weights, causal_attention, layer_norm, rms_norm, rotary, silu,
// linear, linear_gelu, linear_gelu_tanh, matmul_transposed) and gelu_tanh's fast loop
// against the compositions they replace, values and gradients with a random upstream gradient; gradcheck;
// bad input. And the accuracy of fast_math.h's exp and erf, which the fused ops, softmax, cross_entropy and
// gelu are built on.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "../autograd/src/fast_math.h"  // internal header, tested directly
#include "helpers.h"

using namespace autograd;
using Catch::Matchers::Contains;
using test::Fn;
using test::Inputs;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor composed_causal_softmax(const Tensor& scores, float factor) {
    return softmax(causal_mask(scale(scores, factor)), -1);
}

Tensor composed_layer_norm(const Tensor& x, const Tensor& gain, const Tensor& bias, float eps) {
    const Tensor centered = x - mean(x, -1, /*keepdim=*/true);                // (..., C)
    const Tensor variance = mean(centered * centered, -1, /*keepdim=*/true);  // (..., 1)
    return centered / sqrt(variance + eps) * gain + bias;
}

Tensor composed_rms_norm(const Tensor& x, const Tensor& weight, float eps) {
    return x / sqrt(mean(x * x, -1, /*keepdim=*/true) + eps) * weight;  // (..., C) / (..., 1) * (C)
}

Tensor composed_silu(const Tensor& x) { return x / (exp(neg(x)) + 1.0f); }  // x * sigmoid(x)

// Rotary as Hugging Face writes it (halves: x * cos + rotate_half(x) * sin) and as run.c does
// (interleaved pairs), from slices, concat, mul and add, with a table of angles computed here in double.
// x: (B, T, n, H)
Tensor composed_rotary(const Tensor& x, int64_t start, double theta, RotaryLayout layout) {
    const int64_t T = x.size(1), H = x.size(3), half = H / 2;
    std::vector<float> c(static_cast<size_t>(T * half)), s(c.size());  // (T, H/2)
    for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < half; ++i) {
            const double angle = double(start + t) * std::pow(theta, -2.0 * double(i) / double(H));
            c[static_cast<size_t>(t * half + i)] = static_cast<float>(std::cos(angle));
            s[static_cast<size_t>(t * half + i)] = static_cast<float>(std::sin(angle));
        }
    if (layout == RotaryLayout::halves) {
        const Tensor cos_half = tensor(c, {1, T, 1, half}), sin_half = tensor(s, {1, T, 1, half});
        const Tensor cos = concat({cos_half, cos_half}, 3), sin = concat({sin_half, sin_half}, 3);  // (1, T, 1, H)
        const Tensor rotated = concat({neg(slice(x, 3, half, H)), slice(x, 3, 0, half)}, 3);        // rotate_half(x)
        return x * cos + rotated * sin;
    }
    const Tensor pairs = reshape(x, {x.size(0), T, x.size(2), half, 2});
    const Tensor a = slice(pairs, 4, 0, 1), b = slice(pairs, 4, 1, 2);  // (B, T, n, H/2, 1) each
    const Tensor cos = tensor(c, {1, T, 1, half, 1}), sin = tensor(s, {1, T, 1, half, 1});
    return reshape(concat({a * cos - b * sin, a * sin + b * cos}, 4), x.shape());
}

// Largest |a - b| over the values, relative to the largest |b| when that exceeds 1.
double relative_diff(const Tensor& a, const Tensor& b) {
    double scale = 1.0;
    for (float v : b.data()) scale = std::max(scale, double(std::abs(v)));
    return test::max_abs_diff(a, b) / scale;
}

// Runs `fused` and `composed` on separate copies of the inputs, backpropagates the same random upstream
// gradient through both, and returns the worst relative difference of the values and of each gradient.
double disagreement(const Fn& fused, const Fn& composed, const Inputs& inputs, Generator& gen) {
    Inputs a, b;
    for (const Tensor& t : inputs) {
        a.push_back(t.clone().requires_grad_());
        b.push_back(t.clone().requires_grad_());
    }
    const Tensor ya = fused(a), yb = composed(b);
    REQUIRE(ya.shape() == yb.shape());
    const Tensor upstream = randn(ya.shape(), gen);
    ya.backward(upstream);
    yb.backward(upstream);
    double worst = relative_diff(ya, yb);
    INFO("values: " << worst);
    for (size_t i = 0; i < inputs.size(); ++i) {
        REQUIRE(a[i].grad().defined() == b[i].grad().defined());
        if (!b[i].grad().defined()) continue;
        CHECK(test::all_finite(a[i].grad()));
        worst = std::max(worst, relative_diff(a[i].grad(), b[i].grad()));
    }
    return worst;
}

// Scores of shape `shape` drawn N(0, std^2).
Tensor scores_like(const Shape& shape, Generator& gen, float std = 1.0f) { return randn(shape, gen, 0.0f, std); }
}  // namespace

// --- causal_softmax ------------------------------------------------------------------------------------

TEST_CASE("causal_softmax equals softmax(causal_mask(scale(x))) in values and gradients", "[fused]") {
    Generator gen(11);
    const auto fused = [](float f) { return Fn([f](const Inputs& in) { return causal_softmax(in[0], f); }); };
    const auto composed = [](float f) {
        return Fn([f](const Inputs& in) { return composed_causal_softmax(in[0], f); });
    };
    struct Case {
        Shape shape;
        float factor, std;
    };
    for (const Case& c : {Case{{4, 4}, 0.5f, 1.0f}, Case{{2, 8, 8}, 0.25f, 1.0f}, Case{{2, 3, 5, 5}, 1.0f, 2.0f},
                          Case{{3, 1, 1}, 0.7f, 1.0f}, Case{{2, 16, 16}, 0.125f, 300.0f}, Case{{1, 6, 6}, 1.0f, 1e4f},
                          Case{{2, 64, 64}, 0.17677669f, 3.0f}}) {
        INFO("shape " << shape_str(c.shape) << " factor " << c.factor << " std " << c.std);
        const Tensor x = scores_like(c.shape, gen, c.std);
        CHECK(disagreement(fused(c.factor), composed(c.factor), {x}, gen) < 2e-6);
    }
}

TEST_CASE("causal_softmax: rows sum to 1, zero above the diagonal, T = 1 gives 1", "[fused]") {
    Generator gen(12);
    const Tensor y = causal_softmax(scores_like({2, 5, 5}, gen, 10.0f), 0.3f);
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < 5; ++i) {
            double total = 0.0;
            for (int64_t j = 0; j < 5; ++j) {
                total += y.at({b, i, j});
                if (j > i) CHECK(y.at({b, i, j}) == 0.0f);
            }
            CHECK(total == Approx(1.0).margin(1e-6));
        }
    CHECK(causal_softmax(tensor({-3.0f}, {1, 1}), 2.0f).item() == 1.0f);
    // [1000, 0] after the diagonal: finite, the max is subtracted
    CHECK(test::max_abs_diff(causal_softmax(tensor({5, 0, 1000, 0}, {2, 2}), 1.0f), {1, 0, 1, 0}) == 0.0);
}

TEST_CASE("causal_softmax: a fully masked row is zeros and passes no gradient, like the composition",
          "[fused][numerics]") {
    Generator gen(13);
    Tensor x = scores_like({2, 4, 4}, gen);
    x.at({0, 0, 0}) = -kInf;                                   // row 0 sees only -inf: fully masked
    for (int64_t j = 0; j <= 2; ++j) x.at({1, 2, j}) = -kInf;  // so is row 2 of the second batch
    x.at({1, 3, 1}) = -kInf;                                   // one visible -inf in a live row
    x.at({0, 1, 3}) = kInf;                                    // +inf above the diagonal is masked out
    const Tensor y = causal_softmax(x, 0.5f);
    for (int64_t j = 0; j < 4; ++j) CHECK(y.at({0, 0, j}) == 0.0f);
    for (int64_t j = 0; j < 4; ++j) CHECK(y.at({1, 2, j}) == 0.0f);
    CHECK(test::all_finite(y));
    CHECK(disagreement([](const Inputs& in) { return causal_softmax(in[0], 0.5f); },
                       [](const Inputs& in) { return composed_causal_softmax(in[0], 0.5f); }, {x}, gen) == 0.0);
}

TEST_CASE("causal_softmax passes gradcheck", "[fused][gradcheck]") {
    Generator gen(14);
    for (const Shape& shape : {Shape{5, 5}, Shape{2, 4, 4}, Shape{2, 1, 1}}) {
        INFO(shape_str(shape));
        const Tensor x = test::uniform_param(shape, gen, -2.0f, 2.0f);
        REQUIRE_GRADCHECK([](const Inputs& in) { return causal_softmax(in[0], 0.7f); }, {x});
    }
}

TEST_CASE("causal_softmax rejects scores that are not (..., T, T)", "[fused][errors]") {
    REQUIRE_THROWS_AS(causal_softmax(zeros({2, 3, 4}), 1.0f), std::invalid_argument);
    REQUIRE_THROWS_WITH(causal_softmax(zeros({2, 3, 4}), 1.0f), Contains("causal_softmax") && Contains("(2, 3, 4)"));
    REQUIRE_THROWS_WITH(causal_softmax(zeros({3}), 1.0f), Contains("causal_softmax") && Contains("(3)"));
    REQUIRE_THROWS_WITH(causal_softmax(scalar(1.0f), 1.0f), Contains("causal_softmax") && Contains("()"));
}

// --- causal_attention_weights -------------------------------------------------------------------------

TEST_CASE("causal_attention_weights equals causal_softmax(q @ k^T) in values and both gradients", "[fused]") {
    Generator gen(31);
    struct Case {
        int64_t B, T, H;
        float std;
    };
    // T = 1, odd sizes, the models' shapes (T 8 / 32 / 64, H 16 / 32), rows past the threads' grain
    for (const Case& c : {Case{1, 1, 3, 1.0f}, Case{2, 5, 7, 1.0f}, Case{32, 8, 32, 1.0f}, Case{16, 32, 16, 2.0f},
                          Case{12, 64, 32, 1.0f}, Case{2, 9, 4, 30.0f}}) {
        INFO("B " << c.B << " T " << c.T << " H " << c.H << " std " << c.std);
        const float factor = 1.0f / std::sqrt(static_cast<float>(c.H));
        const Inputs qk = {randn({c.B, c.T, c.H}, gen, 0.0f, c.std), randn({c.B, c.T, c.H}, gen)};
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            CHECK(disagreement([factor](const Inputs& in) { return causal_attention_weights(in[0], in[1], factor); },
                               [factor](const Inputs& in) {
                                   return causal_softmax(matmul(in[0], in[1].transpose(1, 2)), factor);
                               },
                               qk, gen) < 2e-6);
        }
        set_num_threads(1);
    }
}

TEST_CASE("causal_attention_weights passes gradcheck for q and k", "[fused][gradcheck]") {
    Generator gen(32);
    const Tensor q = test::uniform_param({2, 4, 3}, gen, -1.0f, 1.0f),
                 k = test::uniform_param({2, 4, 3}, gen, -1.0f, 1.0f);
    REQUIRE_GRADCHECK([](const Inputs& in) { return causal_attention_weights(in[0], in[1], 0.8f); }, {q, k});
}

TEST_CASE("causal_attention_weights rejects q and k that are not the same (B, T, H)", "[fused][errors]") {
    REQUIRE_THROWS_WITH(causal_attention_weights(zeros({2, 3, 4}), zeros({2, 3, 5}), 1.0f),
                        Contains("causal_attention_weights") && Contains("(2, 3, 4)") && Contains("(2, 3, 5)"));
    REQUIRE_THROWS_WITH(causal_attention_weights(zeros({3, 4}), zeros({3, 4}), 1.0f),
                        Contains("causal_attention_weights") && Contains("(3, 4)"));
    REQUIRE_THROWS_WITH(causal_attention_weights(zeros({2, 0, 4}), zeros({2, 0, 4}), 1.0f),
                        Contains("causal_attention_weights") && Contains("(2, 0, 4)"));
}

// --- causal_attention ------------------------------------------------------------------------------------

namespace {
Tensor composed_attention(const Tensor& q, const Tensor& k, const Tensor& v, float factor) {
    return matmul(causal_attention_weights(q, k, factor), v);  // (B, T, T) @ (B, T, H)
}
Tensor op_by_op_attention(const Tensor& q, const Tensor& k, const Tensor& v, float factor) {
    return matmul(softmax(causal_mask(scale(matmul(q, k.transpose(1, 2)), factor)), -1), v);
}
}  // namespace

TEST_CASE("causal_attention equals causal_attention_weights(q, k) @ v in values and all three gradients", "[fused]") {
    Generator gen(33);
    // T across the 64-wide blocks: one partial block, exactly one, one and a bit, two and a bit, four
    for (const int64_t T : {1, 7, 64, 65, 130, 256})
        for (const int64_t H : {8, 32, 64})
            for (const int64_t B : {1, 3}) {
                INFO("B " << B << " T " << T << " H " << H);
                const float factor = 1.0f / std::sqrt(static_cast<float>(H));
                const Inputs qkv = {randn({B, T, H}, gen), randn({B, T, H}, gen), randn({B, T, H}, gen)};
                CHECK(
                    disagreement([factor](const Inputs& in) { return causal_attention(in[0], in[1], in[2], factor); },
                                 [factor](const Inputs& in) { return composed_attention(in[0], in[1], in[2], factor); },
                                 qkv, gen) < 1e-5);
            }
}

TEST_CASE("causal_attention equals the op-by-op head when a later key block holds a row's largest score",
          "[fused][numerics]") {
    // Scores of std 30 (the running max changes from block to block, and exp(old max - new max)
    // underflows), and a key far after the first block that every query weighs most: the online
    // softmax's rescaling must carry the earlier blocks' sums correctly.
    Generator gen(34);
    const int64_t B = 2, T = 200, H = 16;
    Tensor q = randn({B, T, H}, gen, 0.0f, 30.0f), k = randn({B, T, H}, gen), v = randn({B, T, H}, gen);
    for (int64_t h = 0; h < H; ++h) k.at({1, 150, h}) = 2.0f * q.at({1, 180, h}) / 30.0f;
    CHECK(disagreement([](const Inputs& in) { return causal_attention(in[0], in[1], in[2], 0.25f); },
                       [](const Inputs& in) { return op_by_op_attention(in[0], in[1], in[2], 0.25f); }, {q, k, v},
                       gen) < 1e-4);
}

TEST_CASE("causal_attention passes gradcheck for q, k and v, also when they are one tensor", "[fused][gradcheck]") {
    Generator gen(35);
    for (const Shape& shape : {Shape{2, 5, 3}, Shape{1, 70, 2}}) {  // one block; two, the second of 6 queries
        INFO(shape_str(shape));
        const Tensor q = test::uniform_param(shape, gen), k = test::uniform_param(shape, gen),
                     v = test::uniform_param(shape, gen);
        REQUIRE_GRADCHECK([](const Inputs& in) { return causal_attention(in[0], in[1], in[2], 0.8f); }, {q, k, v});
        REQUIRE_GRADCHECK([](const Inputs& in) { return causal_attention(in[0], in[0], in[0], 0.8f); }, {q});
    }
}

TEST_CASE("causal_attention gives the same bits on 1, 2 and 3 threads, values and gradients", "[fused][threads]") {
    Generator gen(36);
    const Inputs qkv = {randn({3, 130, 32}, gen), randn({3, 130, 32}, gen), randn({3, 130, 32}, gen)};
    const Tensor upstream = randn({3, 130, 32}, gen);
    std::vector<std::vector<Tensor>> runs;  // per thread count: out, dq, dk, dv
    for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        Inputs in;
        for (const Tensor& t : qkv) in.push_back(t.clone().requires_grad_());
        const Tensor out = causal_attention(in[0], in[1], in[2], 0.125f);
        out.backward(upstream);
        runs.push_back({out.detach(), in[0].grad(), in[1].grad(), in[2].grad()});
    }
    set_num_threads(1);
    for (size_t run = 1; run < runs.size(); ++run)
        for (size_t t = 0; t < 4; ++t) {
            INFO("threads " << run + 1 << ", tensor " << t << " (out, dq, dk, dv)");
            CHECK(test::max_abs_diff(runs[run][t], runs[0][t]) == 0.0);
        }
}

TEST_CASE("causal_attention rejects q, k and v that are not one (B, T, H)", "[fused][errors]") {
    REQUIRE_THROWS_AS(causal_attention(zeros({2, 3, 4}), zeros({2, 3, 4}), zeros({2, 3, 5}), 1.0f),
                      std::invalid_argument);
    REQUIRE_THROWS_WITH(causal_attention(zeros({2, 3, 4}), zeros({2, 3, 4}), zeros({2, 3, 5}), 1.0f),
                        Contains("causal_attention:") && Contains("q (2, 3, 4), k (2, 3, 4) and v (2, 3, 5)"));
    REQUIRE_THROWS_WITH(causal_attention(zeros({2, 3, 4}), zeros({2, 4, 4}), zeros({2, 3, 4}), 1.0f),
                        Contains("causal_attention:") && Contains("q (2, 3, 4), k (2, 4, 4) and v (2, 3, 4)"));
    REQUIRE_THROWS_WITH(causal_attention(zeros({3, 4}), zeros({3, 4}), zeros({3, 4}), 1.0f),
                        Contains("causal_attention:") && Contains("q (3, 4), k (3, 4) and v (3, 4)"));
    REQUIRE_THROWS_WITH(causal_attention(zeros({2, 0, 4}), zeros({2, 0, 4}), zeros({2, 0, 4}), 1.0f),
                        Contains("causal_attention:") && Contains("q (2, 0, 4)") && Contains("0 < Tq"));
    REQUIRE_THROWS_WITH(causal_attention(zeros({2, 3, 0}), zeros({2, 3, 0}), zeros({2, 3, 0}), 1.0f),
                        Contains("causal_attention:") && Contains("q (2, 3, 0)") && Contains("H > 0"));
}

// --- queries after a cache's keys: Tq < Tk ----------------------------------------------------------------

TEST_CASE("causal attention of the last Tq queries against all Tk keys equals the last Tq rows of the whole window",
          "[fused][cache]") {
    // What a cache of keys and values relies on: positions already seen are not computed again, and the
    // new rows are those the whole window would give them (the mask shifted by Tk - Tq).
    Generator gen(37);
    for (const auto& [Tk, Tq] :
         {std::pair<int64_t, int64_t>{1, 1}, {9, 1}, {9, 4}, {64, 1}, {130, 3}, {200, 70}, {256, 256}})
        for (const int64_t H : {8, 64}) {
            INFO("Tk " << Tk << " Tq " << Tq << " H " << H);
            const int64_t B = 2;
            const float factor = 1.0f / std::sqrt(static_cast<float>(H));
            const Tensor q = randn({B, Tk, H}, gen), k = randn({B, Tk, H}, gen), v = randn({B, Tk, H}, gen);
            const Tensor last_q = q.slice(1, Tk - Tq, Tk);
            CHECK(test::max_abs_diff(causal_attention(last_q, k, v, factor),
                                     causal_attention(q, k, v, factor).slice(1, Tk - Tq, Tk)) < 1e-5);
            CHECK(test::max_abs_diff(causal_attention_weights(last_q, k, factor),
                                     causal_attention_weights(q, k, factor).slice(1, Tk - Tq, Tk)) < 1e-6);
        }
}

TEST_CASE("causal attention with Tq < Tk equals the composition with the shifted mask, values and gradients",
          "[fused][cache]") {
    Generator gen(38);
    for (const auto& [Tk, Tq] : {std::pair<int64_t, int64_t>{5, 2}, {70, 3}, {130, 66}}) {
        INFO("Tk " << Tk << " Tq " << Tq);
        const int64_t B = 2, H = 8;
        const float factor = 0.5f;
        Tensor mask = zeros({Tq, Tk});  // 1 where query i (position Tk - Tq + i) may not see key j
        for (int64_t i = 0; i < Tq; ++i)
            for (int64_t j = Tk - Tq + i + 1; j < Tk; ++j) mask.at({i, j}) = 1.0f;
        const auto composed_weights = [&](const Tensor& q, const Tensor& k) {
            return softmax(masked_fill(scale(matmul(q, k.transpose(1, 2)), factor), mask, -kInf), -1);
        };
        const Inputs qkv = {randn({B, Tq, H}, gen), randn({B, Tk, H}, gen), randn({B, Tk, H}, gen)};
        CHECK(disagreement([&](const Inputs& in) { return causal_attention_weights(in[0], in[1], factor); },
                           [&](const Inputs& in) { return composed_weights(in[0], in[1]); }, {qkv[0], qkv[1]},
                           gen) < 2e-6);
        CHECK(disagreement([&](const Inputs& in) { return causal_attention(in[0], in[1], in[2], factor); },
                           [&](const Inputs& in) { return matmul(composed_weights(in[0], in[1]), in[2]); }, qkv,
                           gen) < 1e-5);
    }
    const Tensor q = test::uniform_param({2, 3, 4}, gen), k = test::uniform_param({2, 7, 4}, gen),
                 v = test::uniform_param({2, 7, 4}, gen);
    REQUIRE_GRADCHECK([](const Inputs& in) { return causal_attention_weights(in[0], in[1], 0.8f); }, {q, k});
    REQUIRE_GRADCHECK([](const Inputs& in) { return causal_attention(in[0], in[1], in[2], 0.8f); }, {q, k, v});
    CHECK_THROWS_WITH(causal_attention_weights(zeros({1, 4, 2}), zeros({1, 3, 2}), 1.0f), Contains("0 < Tq <= Tk"));
}

TEST_CASE("leading_rows views the first rows of a tensor's storage, and refuses one in the graph", "[ops][cache]") {
    const Tensor cache = tensor({1, 2, 3, 4, 5, 6}, {3, 2});
    const Tensor view = leading_rows(cache, 2);
    CHECK(view.shape() == Shape{2, 2});
    CHECK(view.to_vector() == std::vector<float>{1, 2, 3, 4});
    cache.data()[1] = 20.0f;  // the same storage: a write shows through
    CHECK(view.data()[1] == 20.0f);
    CHECK(leading_rows(cache, 0).numel() == 0);
    CHECK(view.reshape({1, 2, 2}).to_vector() == std::vector<float>{1, 20, 3, 4});
    CHECK_THROWS_WITH(leading_rows(cache, 4), Contains("leading_rows") && Contains("(3, 2)"));
    Tensor p = cache.clone().requires_grad_();
    CHECK_THROWS_WITH(leading_rows(p, 1), Contains("requires a gradient"));
}

// --- layer_norm --------------------------------------------------------------------------------------------

TEST_CASE("layer_norm equals the composition (x - mean) / sqrt(var + eps) * gain + bias", "[fused]") {
    Generator gen(21);
    struct Case {
        Shape shape;
        float std, eps;
    };
    for (const Case& c : {Case{{3, 5}, 1.0f, 1e-5f}, Case{{2, 4, 16}, 2.0f, 1e-5f}, Case{{7}, 1.0f, 1e-3f},
                          Case{{2, 3, 4, 8}, 1.0f, 0.5f}, Case{{16, 128}, 1000.0f, 1e-5f}, Case{{4, 1}, 1.0f, 1e-5f},
                          Case{{3, 64}, 1e-3f, 1e-5f}}) {
        INFO("shape " << shape_str(c.shape) << " std " << c.std << " eps " << c.eps);
        const int64_t C = c.shape.back();
        const Tensor x = randn(c.shape, gen, 0.5f * c.std, c.std);
        const Tensor gain = randn({C}, gen, 1.0f, 0.5f), bias = randn({C}, gen);
        const float eps = c.eps;
        CHECK(disagreement([eps](const Inputs& in) { return layer_norm(in[0], in[1], in[2], eps); },
                           [eps](const Inputs& in) { return composed_layer_norm(in[0], in[1], in[2], eps); },
                           {x, gain, bias}, gen) < 1e-5);
    }
}

TEST_CASE("layer_norm matches torch.nn.LayerNorm on a hand example: biased variance, eps inside", "[fused]") {
    // torch.nn.LayerNorm(4, eps=0.5) with weight [1, 2, 1, 1], bias [0, 0, 0, 1] on [1, 2, 3, 4]:
    // mean 2.5, biased variance 1.25, so (x - 2.5) / sqrt(1.75) * weight + bias
    const Tensor y = layer_norm(tensor({1, 2, 3, 4}, {1, 4}), tensor({1, 2, 1, 1}), tensor({0, 0, 0, 1}), 0.5f);
    const double s = 1.0 / std::sqrt(1.75);
    CHECK(test::max_abs_diff(y, {-1.5 * s, -1.0 * s, 0.5 * s, 1.5 * s + 1.0}) < 1e-6);
}

TEST_CASE("layer_norm passes gradcheck for x, gain and bias", "[fused][gradcheck]") {
    Generator gen(22);
    for (const Shape& shape : {Shape{3, 5}, Shape{2, 2, 4}, Shape{6}}) {
        INFO(shape_str(shape));
        const int64_t C = shape.back();
        const Tensor x = test::uniform_param(shape, gen, -2.0f, 2.0f);
        const Tensor gain = test::away_from_zero({C}, gen), bias = test::uniform_param({C}, gen);
        REQUIRE_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], in[1], in[2], 1e-5f); }, {x, gain, bias});
    }
}

TEST_CASE("layer_norm rejects mismatched gain or bias, an empty last dim and eps <= 0", "[fused][errors]") {
    const Tensor x = zeros({2, 3});
    REQUIRE_THROWS_AS(layer_norm(x, zeros({4}), zeros({3}), 1e-5f), std::invalid_argument);
    REQUIRE_THROWS_WITH(layer_norm(x, zeros({4}), zeros({3}), 1e-5f),
                        Contains("layer_norm") && Contains("(4)") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(layer_norm(x, zeros({3}), zeros({1, 3}), 1e-5f),
                        Contains("layer_norm") && Contains("(1, 3)") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(layer_norm(scalar(1.0f), zeros({1}), zeros({1}), 1e-5f),
                        Contains("layer_norm") && Contains("()"));
    REQUIRE_THROWS_WITH(layer_norm(zeros({2, 0}), zeros({0}), zeros({0}), 1e-5f),
                        Contains("layer_norm") && Contains("(2, 0)"));
    REQUIRE_THROWS_WITH(layer_norm(x, zeros({3}), zeros({3}), 0.0f), Contains("layer_norm") && Contains("eps"));
}

// --- linear ------------------------------------------------------------------------------------------------

TEST_CASE("linear equals matmul(x, w) + bias bit for bit, values and gradients", "[fused]") {
    Generator gen(21);
    // rows below and above the threads' grain, N on and off the kernels' tile widths
    for (const auto& [x_shape, N] : std::vector<std::pair<Shape, int64_t>>{
             {{1, 3}, 1}, {{4, 5, 7}, 65}, {{2, 64, 32}, 128}, {{12, 64, 128}, 512}}) {
        INFO(shape_str(x_shape) << " -> " << N);
        const int64_t K = x_shape.back();
        const Inputs inputs = {randn(x_shape, gen), randn({K, N}, gen), randn({N}, gen)};
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            CHECK(disagreement([](const Inputs& in) { return linear(in[0], in[1], in[2]); },
                               [](const Inputs& in) { return matmul(in[0], in[1]) + in[2]; }, inputs, gen) == 0.0);
        }
        set_num_threads(1);
    }
}

TEST_CASE("linear passes gradcheck for x, weight and bias", "[fused][gradcheck]") {
    Generator gen(22);
    const Tensor x = test::uniform_param({2, 3, 4}, gen, -1.0f, 1.0f),
                 w = test::uniform_param({4, 5}, gen, -1.0f, 1.0f), b = test::uniform_param({5}, gen, -1.0f, 1.0f);
    REQUIRE_GRADCHECK([](const Inputs& in) { return linear(in[0], in[1], in[2]); }, {x, w, b});
}

TEST_CASE("linear rejects mismatched input, weight and bias", "[fused][errors]") {
    REQUIRE_THROWS_WITH(linear(zeros({2, 3}), zeros({4, 5}), zeros({5})),
                        Contains("linear") && Contains("(2, 3)") && Contains("(4, 5)"));
    REQUIRE_THROWS_WITH(linear(zeros({2, 4}), zeros({4}), zeros({4})), Contains("linear") && Contains("(4)"));
    REQUIRE_THROWS_WITH(linear(zeros({2, 4}), zeros({4, 5}), zeros({4})),
                        Contains("linear") && Contains("bias (4)") && Contains("(4, 5)"));
    REQUIRE_THROWS_WITH(linear(zeros({2, 4}), zeros({4, 5}), zeros({1, 5})), Contains("linear") && Contains("(1, 5)"));
}

// --- gelu_tanh, linear_gelu_tanh, matmul_transposed (the gpt2 kind's) --------------------------------------

namespace {
// GPT-2's formula as written, in double with std::tanh: the naive reference for gelu_tanh's loop
double reference_gelu_tanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double reference_gelu_tanh_slope(double x) {
    const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x), t = std::tanh(u);
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * std::sqrt(2.0 / M_PI) * (1.0 + 3.0 * 0.044715 * x * x);
}
}  // namespace

TEST_CASE("gelu_tanh is GPT-2's 0.5 x (1 + tanh(...)) and its slope, densely, with saturated tails",
          "[fused][numerics]") {
    std::vector<float> xs;
    for (double x = -12.0; x <= 12.0; x += 1.0 / 512) xs.push_back(float(x));
    for (const float far : {-1e4f, -100.0f, 100.0f, 1e4f}) xs.push_back(far);
    const Tensor x = tensor(xs, {int64_t(xs.size())}).requires_grad_();
    const Tensor y = gelu_tanh(x);
    y.backward(ones(y.shape()));
    double worst_value = 0, worst_slope = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
        worst_value = std::max(
            worst_value, std::abs(y.data()[i] - reference_gelu_tanh(xs[i])) / std::max(1.0, std::abs(double(xs[i]))));
        worst_slope = std::max(worst_slope, std::abs(x.grad().data()[i] - reference_gelu_tanh_slope(xs[i])));
    }
    INFO("value " << worst_value << ", slope " << worst_slope);
    CHECK(worst_value < 3e-7);
    CHECK(worst_slope < 4e-6);
    // it is the approximation, not the exact gelu: they differ by 4.4e-4 at x = 2.5
    CHECK(std::abs(gelu_tanh(scalar(2.5f)).item() - gelu(scalar(2.5f)).item()) > 4e-4);
}

TEST_CASE("gelu_tanh, linear_gelu_tanh and matmul_transposed pass gradcheck", "[fused][gradcheck]") {
    Generator gen(25);
    const Tensor y = test::uniform_param({3, 7}, gen, -3.0f, 3.0f);
    REQUIRE_GRADCHECK([](const Inputs& in) { return gelu_tanh(in[0]); }, {y});
    const Tensor x = test::uniform_param({2, 3, 4}, gen, -2.0f, 2.0f),
                 w = test::uniform_param({4, 5}, gen, -1.0f, 1.0f), b = test::uniform_param({5}, gen, -1.0f, 1.0f);
    REQUIRE_GRADCHECK([](const Inputs& in) { return linear_gelu_tanh(in[0], in[1], in[2]); }, {x, w, b});
    const Tensor table = test::uniform_param({6, 4}, gen, -1.0f, 1.0f);  // (N, K), as a (V, C) token table
    REQUIRE_GRADCHECK([](const Inputs& in) { return matmul_transposed(in[0], in[1]); }, {x, table});
}

TEST_CASE("linear_gelu_tanh equals gelu_tanh(linear(x, w, b)) bit for bit, values and gradients", "[fused]") {
    Generator gen(26);
    for (const auto& [x_shape, N] :
         std::vector<std::pair<Shape, int64_t>>{{{1, 3}, 1}, {{4, 5, 7}, 65}, {{12, 64, 128}, 512}}) {
        INFO(shape_str(x_shape) << " -> " << N);
        const int64_t K = x_shape.back();
        const Inputs inputs = {randn(x_shape, gen), randn({K, N}, gen), randn({N}, gen)};
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            CHECK(disagreement([](const Inputs& in) { return linear_gelu_tanh(in[0], in[1], in[2]); },
                               [](const Inputs& in) { return gelu_tanh(linear(in[0], in[1], in[2])); }, inputs,
                               gen) == 0.0);
        }
        set_num_threads(1);
    }
    const Tensor x = randn({3, 4}, gen), w = randn({4, 6}, gen), b = randn({6}, gen);
    NoGradGuard no_grad;
    CHECK(linear_gelu_tanh(x, w, b).to_vector() == gelu_tanh(linear(x, w, b)).to_vector());
    REQUIRE_THROWS_WITH(linear_gelu_tanh(zeros({2, 4}), zeros({4, 5}), zeros({4})),
                        Contains("linear_gelu_tanh") && Contains("bias (4)"));
}

TEST_CASE("matmul_transposed equals matmul(x, transpose(w)), values and gradients, and names bad shapes", "[fused]") {
    Generator gen(27);
    for (const auto& [x_shape, N] :
         std::vector<std::pair<Shape, int64_t>>{{{1, 3}, 1}, {{4, 5, 7}, 65}, {{2, 64, 32}, 300}}) {
        INFO(shape_str(x_shape) << " -> " << N);
        const int64_t K = x_shape.back();
        const Inputs inputs = {randn(x_shape, gen), randn({N, K}, gen)};
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            CHECK(disagreement([](const Inputs& in) { return matmul_transposed(in[0], in[1]); },
                               [](const Inputs& in) { return matmul(in[0], transpose(in[1], 0, 1)); }, inputs,
                               gen) < 1e-5);
        }
        set_num_threads(1);
    }
    REQUIRE_THROWS_WITH(matmul_transposed(zeros({2, 3}), zeros({3, 4})),
                        Contains("matmul_transposed") && Contains("(2, 3)") && Contains("(3, 4)"));
}

// --- linear_gelu -------------------------------------------------------------------------------------------

TEST_CASE("linear_gelu equals gelu(linear(x, w, b)) bit for bit, values and gradients", "[fused]") {
    Generator gen(23);
    for (const auto& [x_shape, N] :
         std::vector<std::pair<Shape, int64_t>>{{{1, 3}, 1}, {{4, 5, 7}, 65}, {{12, 64, 128}, 512}}) {
        INFO(shape_str(x_shape) << " -> " << N);
        const int64_t K = x_shape.back();
        const Inputs inputs = {randn(x_shape, gen), randn({K, N}, gen), randn({N}, gen)};
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            CHECK(disagreement([](const Inputs& in) { return linear_gelu(in[0], in[1], in[2]); },
                               [](const Inputs& in) { return gelu(linear(in[0], in[1], in[2])); }, inputs, gen) == 0.0);
        }
        set_num_threads(1);
    }
    // without a graph (no slope kept) the values are the same bits too
    const Tensor x = randn({3, 4}, gen), w = randn({4, 6}, gen), b = randn({6}, gen);
    NoGradGuard no_grad;
    CHECK(linear_gelu(x, w, b).to_vector() == gelu(linear(x, w, b)).to_vector());
}

TEST_CASE("linear_gelu passes gradcheck and rejects mismatched shapes naming itself", "[fused][gradcheck][errors]") {
    Generator gen(24);
    const Tensor x = test::uniform_param({2, 3, 4}, gen, -2.0f, 2.0f),
                 w = test::uniform_param({4, 5}, gen, -1.0f, 1.0f), b = test::uniform_param({5}, gen, -1.0f, 1.0f);
    REQUIRE_GRADCHECK([](const Inputs& in) { return linear_gelu(in[0], in[1], in[2]); }, {x, w, b});
    REQUIRE_THROWS_WITH(linear_gelu(zeros({2, 3}), zeros({4, 5}), zeros({5})),
                        Contains("linear_gelu") && Contains("(2, 3)") && Contains("(4, 5)"));
    REQUIRE_THROWS_WITH(linear_gelu(zeros({2, 4}), zeros({4, 5}), zeros({4})),
                        Contains("linear_gelu") && Contains("bias (4)"));
}

// --- fast_math -------------------------------------------------------------------------------------------

TEST_CASE("fast_exp: relative error under 2e-7 over the normal range, and the special values", "[fused][numerics]") {
    double worst = 0.0, worst_at = 0.0;
    for (double x = -87.0; x <= 88.7; x += 1e-4) {
        const auto xf = static_cast<float>(x);
        const double exact = std::exp(double(xf));
        const double err = std::abs(double(detail::fast_exp(xf)) - exact) / exact;
        if (err > worst) worst = err, worst_at = xf;
    }
    INFO("max relative error " << worst << " at " << worst_at);
    CHECK(worst < 2e-7);
    CHECK(detail::fast_exp(0.0f) == 1.0f);
    CHECK(detail::fast_exp(-kInf) == 0.0f);
    CHECK(detail::fast_exp(-200.0f) == 0.0f);
    CHECK(detail::fast_exp(kInf) == kInf);
    CHECK(detail::fast_exp(89.0f) == kInf);
    CHECK(std::isfinite(detail::fast_exp(88.7f)));
    CHECK(std::isnan(detail::fast_exp(std::numeric_limits<float>::quiet_NaN())));
    // a subnormal result: within one step of the subnormal grid (2^-149)
    CHECK(std::abs(double(detail::fast_exp(-100.0f)) - std::exp(-100.0)) <= std::ldexp(1.0, -149));
}

TEST_CASE("fast_erf: absolute error under 2e-7 everywhere, and the special values", "[fused][numerics]") {
    double worst = 0.0, worst_at = 0.0;
    for (double x = -6.0; x <= 6.0; x += 1e-5) {
        const auto xf = static_cast<float>(x);
        const double err = std::abs(double(detail::fast_erf(xf)) - std::erf(double(xf)));
        if (err > worst) worst = err, worst_at = xf;
    }
    INFO("max absolute error " << worst << " at " << worst_at);
    CHECK(worst < 2e-7);
    CHECK(detail::fast_erf(0.0f) == 0.0f);
    CHECK(detail::fast_erf(kInf) == 1.0f);
    CHECK(detail::fast_erf(-kInf) == -1.0f);
    CHECK(detail::fast_erf(100.0f) == 1.0f);
    CHECK(std::isnan(detail::fast_erf(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("max_of and sum_in_double: the row max exactly, and the row sum, at every length", "[fused][numerics]") {
    Generator gen(25);
    for (int64_t n = 1; n <= 70; ++n) {  // short rows (no lanes), full blocks, and blocks plus a rest
        INFO("n = " << n);
        std::vector<float> row(static_cast<size_t>(n));
        for (float& v : row) v = gen.uniform(-1e3f, 1e3f);
        row[static_cast<size_t>(gen.randint(n))] = -kInf;  // masked scores are -inf
        const auto at = [&](int64_t k) { return row[static_cast<size_t>(k)]; };
        REQUIRE(detail::max_of(n, at) == *std::max_element(row.begin(), row.end()));
        row[static_cast<size_t>(gen.randint(n))] = 1e30f;  // the largest wherever it is
        REQUIRE(detail::max_of(n, at) == 1e30f);
        std::fill(row.begin(), row.end(), -kInf);
        REQUIRE(detail::max_of(n, at) == -kInf);  // a fully masked row
        std::fill(row.begin(), row.end(), -1.0f);
        row[static_cast<size_t>(n - 1)] = -0.5f;  // all negative: the bit order is reversed there
        REQUIRE(detail::max_of(n, at) == -0.5f);

        double exact = 0.0;
        for (float& v : row) v = gen.uniform(-1.0f, 1.0f), exact += v;
        CHECK(detail::sum_in_double(n, at) == Approx(exact).margin(1e-12));
    }
    const std::vector<float> zeros = {-0.0f, 0.0f, -0.0f};
    CHECK(std::signbit(detail::max_of(1, [&](int64_t) { return -0.0f; })));
    CHECK(detail::max_of(3, [&](int64_t k) { return zeros[static_cast<size_t>(k)]; }) == 0.0f);
    CHECK(std::isnan(
        detail::max_of(20, [](int64_t k) { return k == 7 ? std::numeric_limits<float>::quiet_NaN() : 1.0f; })));
}

// --- rms_norm ------------------------------------------------------------------------------------------------

TEST_CASE("rms_norm equals the composition x / sqrt(mean(x^2) + eps) * weight", "[fused]") {
    Generator gen(31);
    struct Case {
        Shape shape;
        float std, eps;
    };
    for (const Case& c : {Case{{3, 5}, 1.0f, 1e-5f}, Case{{2, 4, 16}, 2.0f, 1e-6f}, Case{{7}, 1.0f, 1e-3f},
                          Case{{2, 3, 4, 8}, 1.0f, 0.5f}, Case{{16, 288}, 100.0f, 1e-5f}, Case{{4, 1}, 1.0f, 1e-5f},
                          Case{{3, 64}, 1e-2f, 1e-5f}}) {
        INFO("shape " << shape_str(c.shape) << " std " << c.std << " eps " << c.eps);
        const int64_t C = c.shape.back();
        const Tensor x = randn(c.shape, gen, 0.3f * c.std, c.std);
        const Tensor weight = randn({C}, gen, 1.0f, 0.5f);
        const float eps = c.eps;
        CHECK(disagreement([eps](const Inputs& in) { return rms_norm(in[0], in[1], eps); },
                           [eps](const Inputs& in) { return composed_rms_norm(in[0], in[1], eps); }, {x, weight},
                           gen) < 1e-5);
    }
}

TEST_CASE("rms_norm matches a hand example: no centering, eps inside the root", "[fused]") {
    // [1, 2, 3, 4]: mean of squares 7.5; eps 0.5: divided by sqrt(8) = 2 sqrt(2), then * [1, 2, 1, -1]
    const Tensor y = rms_norm(tensor({1, 2, 3, 4}, {1, 4}), tensor({1, 2, 1, -1}), 0.5f);
    const double s = 1.0 / std::sqrt(8.0);
    CHECK(test::max_abs_diff(y, {1 * s, 4 * s, 3 * s, -4 * s}) < 1e-6);
    // a row of zeros stays zeros (eps > 0: no 0/0), and its gradient is finite
    Tensor zero = zeros({1, 3}).requires_grad_();
    const Tensor z = rms_norm(zero, ones({3}), 1e-5f);
    CHECK(z.to_vector() == std::vector<float>{0, 0, 0});
    z.backward(ones({1, 3}));
    CHECK(test::all_finite(zero.grad()));
}

TEST_CASE("rms_norm passes gradcheck for x and weight", "[fused][gradcheck]") {
    Generator gen(32);
    for (const Shape& shape : {Shape{3, 5}, Shape{2, 2, 4}, Shape{6}}) {
        INFO(shape_str(shape));
        const Tensor x = test::uniform_param(shape, gen, -2.0f, 2.0f);
        const Tensor weight = test::away_from_zero({shape.back()}, gen);
        REQUIRE_GRADCHECK([](const Inputs& in) { return rms_norm(in[0], in[1], 1e-5f); }, {x, weight});
    }
}

TEST_CASE("rms_norm rejects a mismatched weight, an empty last dim and eps <= 0", "[fused][errors]") {
    const Tensor x = zeros({2, 3});
    REQUIRE_THROWS_AS(rms_norm(x, zeros({4}), 1e-5f), std::invalid_argument);
    REQUIRE_THROWS_WITH(rms_norm(x, zeros({4}), 1e-5f), Contains("rms_norm") && Contains("(4)") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(rms_norm(x, zeros({1, 3}), 1e-5f), Contains("rms_norm") && Contains("(1, 3)"));
    REQUIRE_THROWS_WITH(rms_norm(scalar(1.0f), zeros({1}), 1e-5f), Contains("rms_norm") && Contains("()"));
    REQUIRE_THROWS_WITH(rms_norm(zeros({2, 0}), zeros({0}), 1e-5f), Contains("rms_norm") && Contains("(2, 0)"));
    REQUIRE_THROWS_WITH(rms_norm(x, zeros({3}), 0.0f), Contains("rms_norm") && Contains("eps"));
}

// --- silu ----------------------------------------------------------------------------------------------------

TEST_CASE("silu equals x / (1 + exp(-x)), passes gradcheck, and stays finite far out", "[fused][gradcheck]") {
    Generator gen(33);
    CHECK(disagreement([](const Inputs& in) { return silu(in[0]); },
                       [](const Inputs& in) { return composed_silu(in[0]); }, {randn({4, 37}, gen, 0.0f, 3.0f)},
                       gen) < 1e-6);
    const Tensor x = test::uniform_param({4, 5}, gen, -4.0f, 4.0f);
    REQUIRE_GRADCHECK([](const Inputs& in) { return silu(in[0]); }, {x});
    // by hand: silu(0) = 0, silu(1) = 1 / (1 + e^-1); far left 0 (exp(-x) overflows to inf), far right x
    Tensor far = tensor({0.0f, 1.0f, -200.0f, 200.0f}).requires_grad_();
    const Tensor y = silu(far);
    CHECK(test::max_abs_diff(y, {0.0, 1.0 / (1.0 + std::exp(-1.0)), 0.0, 200.0}) < 1e-6);
    y.backward(ones({4}));
    const double s1 = 1.0 / (1.0 + std::exp(-1.0));  // the slope s (1 + x (1 - s)): 1/2 at 0, 0 and 1 far out
    CHECK(test::max_abs_diff(far.grad(), {0.5, s1 * (2.0 - s1), 0.0, 1.0}) < 1e-6);
}

// --- rotary ----------------------------------------------------------------------------------------------------

TEST_CASE("rotary equals Hugging Face's x cos + rotate_half(x) sin and run.c's interleaved pairs", "[fused]") {
    Generator gen(34);
    struct Case {
        Shape shape;
        int64_t start;
        double theta;
    };
    for (const RotaryLayout layout : {RotaryLayout::interleaved, RotaryLayout::halves})
        for (const Case& c :
             {Case{{2, 5, 3, 8}, 0, 10000.0}, Case{{1, 1, 2, 16}, 37, 10000.0}, Case{{3, 4, 1, 2}, 5, 10000.0},
              Case{{2, 7, 4, 64}, 11, 500000.0}, Case{{1, 3, 2, 6}, 2, 100.0}}) {
            INFO("layout " << (layout == RotaryLayout::halves ? "halves" : "interleaved") << " shape "
                           << shape_str(c.shape) << " start " << c.start << " theta " << c.theta);
            const int64_t start = c.start;
            const double theta = c.theta;
            CHECK(
                disagreement([=](const Inputs& in) { return rotary(in[0], start, static_cast<float>(theta), layout); },
                             [=](const Inputs& in) { return composed_rotary(in[0], start, theta, layout); },
                             {randn(c.shape, gen)}, gen) < 2e-5);
        }
}

TEST_CASE("rotary by hand, and q . k depends on the positions' difference only", "[fused]") {
    // one pair at position 1: frequency theta^0 = 1, so (1, 0) turns by 1 radian; at position 0 nothing moves
    const Tensor x = tensor({1, 0, 0.5f, 2}, {1, 2, 1, 2});  // positions 0 and 1
    CHECK(test::max_abs_diff(rotary(x, 0, 10000.0f, RotaryLayout::interleaved),
                             {1, 0, 0.5 * std::cos(1.0) - 2 * std::sin(1.0), 0.5 * std::sin(1.0) + 2 * std::cos(1.0)}) <
          1e-6);
    // H = 4, position 3, theta 100: pair 0 turns by 3, pair 1 by 3 / 10; halves pair features (0, 2) and (1, 3)
    const Tensor e0 = tensor({1, 0, 0, 0}, {1, 1, 1, 4}), e1 = tensor({0, 1, 0, 0}, {1, 1, 1, 4});
    CHECK(test::max_abs_diff(rotary(e0, 3, 100.0f, RotaryLayout::halves), {std::cos(3.0), 0, std::sin(3.0), 0}) < 1e-6);
    CHECK(test::max_abs_diff(rotary(e1, 3, 100.0f, RotaryLayout::halves), {0, std::cos(0.3), 0, std::sin(0.3)}) < 1e-6);
    CHECK(test::max_abs_diff(rotary(e1, 3, 100.0f, RotaryLayout::interleaved), {-std::sin(3.0), std::cos(3.0), 0, 0}) <
          1e-6);

    // the point of it: a query at p and a key at p' score as at p + d and p' + d
    Generator gen(35);
    const Tensor q = randn({1, 1, 1, 16}, gen), k = randn({1, 1, 1, 16}, gen);
    const auto score = [&](int64_t p, int64_t pk, RotaryLayout layout) {
        return sum(rotary(q, p, 10000.0f, layout) * rotary(k, pk, 10000.0f, layout)).item();
    };
    for (const RotaryLayout layout : {RotaryLayout::interleaved, RotaryLayout::halves}) {
        CHECK(score(5, 2, layout) == Approx(score(25, 22, layout)).margin(1e-4));
        CHECK(score(5, 2, layout) != Approx(score(5, 3, layout)).margin(1e-3));
    }
}

TEST_CASE("rotary passes gradcheck in both layouts, from any start position", "[fused][gradcheck]") {
    Generator gen(36);
    for (const RotaryLayout layout : {RotaryLayout::interleaved, RotaryLayout::halves})
        for (const int64_t start : {0, 9}) {
            INFO("start " << start);
            const Tensor x = test::uniform_param({2, 3, 2, 6}, gen);
            REQUIRE_GRADCHECK([=](const Inputs& in) { return rotary(in[0], start, 10000.0f, layout); }, {x});
        }
}

TEST_CASE(
    "rotary_permute is convert_llama_weights_to_hf.py's permute: interleaved rotary of x W is halves rotary of x W'",
    "[fused]") {
    // by hand, one head of 4 features: interleaved pairs (0, 1), (2, 3) become halves pairs (0, 2), (1, 3), as
    // w.view(n_head, H / 2, 2, dim).transpose(1, 2) reorders the rows [r0, r1, r2, r3] to [r0, r2, r1, r3]
    const Tensor features = tensor({0, 1, 2, 3, 10, 11, 12, 13}, {1, 8});  // two heads
    const auto halves = rotary_permute(features, 2, RotaryLayout::interleaved, RotaryLayout::halves);
    CHECK(halves.to_vector() == std::vector<float>{0, 2, 1, 3, 10, 12, 11, 13});
    CHECK(rotary_permute(halves, 2, RotaryLayout::halves, RotaryLayout::interleaved).to_vector() ==
          features.to_vector());

    Generator gen(37);
    const int64_t B = 2, T = 5, C = 12, n_head = 3, n_kv_head = 1, H = 8, start = 4;
    const Tensor x = randn({B, T, C}, gen);
    const Tensor wq = randn({C, n_head * H}, gen), wk = randn({C, n_kv_head * H}, gen);  // (in, out), interleaved
    const auto project = [&](const Tensor& w, int64_t heads, RotaryLayout layout) {      // -> (B, T, heads * H)
        const Tensor w_in_layout = rotary_permute(w, heads, RotaryLayout::interleaved, layout);
        return reshape(rotary(reshape(matmul(x, w_in_layout), {B, T, heads, H}), start, 10000.0f, layout),
                       {B, T, heads * H});
    };
    const Tensor q_interleaved = project(wq, n_head, RotaryLayout::interleaved),
                 q_halves = project(wq, n_head, RotaryLayout::halves);
    const Tensor k_interleaved = project(wk, n_kv_head, RotaryLayout::interleaved),
                 k_halves = project(wk, n_kv_head, RotaryLayout::halves);
    // the same features, each head reordered
    CHECK(test::max_abs_diff(rotary_permute(q_interleaved, n_head, RotaryLayout::interleaved, RotaryLayout::halves),
                             q_halves) < 1e-5);
    CHECK(test::max_abs_diff(q_interleaved, q_halves) > 0.1);
    // so every head's scores q . k are equal
    for (int64_t h = 0; h < n_head; ++h) {
        const auto scores = [&](const Tensor& q, const Tensor& k) {
            return matmul(slice(q, 2, h * H, (h + 1) * H), transpose(slice(k, 2, 0, H), 1, 2));  // (B, T, T)
        };
        CHECK(test::max_abs_diff(scores(q_interleaved, k_interleaved), scores(q_halves, k_halves)) < 1e-4);
    }
}

TEST_CASE("rotary and rotary_permute reject odd head widths, a wrong rank, a negative start and a bad theta",
          "[fused][errors]") {
    REQUIRE_THROWS_AS(rotary(zeros({1, 2, 2, 5}), 0, 10000.0f, RotaryLayout::halves), std::invalid_argument);
    REQUIRE_THROWS_WITH(rotary(zeros({1, 2, 2, 5}), 0, 10000.0f, RotaryLayout::halves),
                        Contains("rotary") && Contains("H 5") && Contains("even") && Contains("(1, 2, 2, 5)"));
    REQUIRE_THROWS_WITH(rotary(zeros({2, 8}), 0, 10000.0f, RotaryLayout::halves),
                        Contains("rotary") && Contains("(2, 8)"));
    REQUIRE_THROWS_WITH(rotary(zeros({1, 2, 2, 4}), -1, 10000.0f, RotaryLayout::halves),
                        Contains("rotary") && Contains("-1"));
    REQUIRE_THROWS_WITH(rotary(zeros({1, 2, 2, 4}), 0, 0.0f, RotaryLayout::halves),
                        Contains("rotary") && Contains("theta"));
    REQUIRE_THROWS_WITH(rotary(zeros({1, 2, 2, 4}), 0, std::numeric_limits<float>::quiet_NaN(), RotaryLayout::halves),
                        Contains("theta"));
    REQUIRE_THROWS_WITH(rotary_permute(zeros({3, 10}), 2, RotaryLayout::interleaved, RotaryLayout::halves),
                        Contains("rotary_permute") && Contains("(3, 10)") && Contains("n_head 2"));
    REQUIRE_THROWS_WITH(rotary_permute(zeros({3, 12}), 5, RotaryLayout::interleaved, RotaryLayout::halves),
                        Contains("rotary_permute") && Contains("n_head 5"));
}
