// nn/: modules, layers and the attention head, checked against finite differences and by hand.
#include <nn/attention.h>
#include <nn/layers.h>

#include <string_view>

#include "helpers.h"

using namespace autograd;
using test::Inputs;

namespace {
struct TwoLayer : nn::Module {
    nn::Linear first, second;
    explicit TwoLayer(Generator& gen)
        : first({.in = 3, .out = 4}, gen), second({.in = 4, .out = 2, .bias = false}, gen) {
        register_module("first", first);
        register_module("second", second);
    }
};

// The gradcheck inputs for a module: x, then every parameter (which forward reaches directly).
Inputs with_parameters(const Tensor& x, const nn::Module& m) {
    Inputs in = {x};
    for (const Tensor& p : m.parameters()) in.push_back(p);
    return in;
}
}  // namespace

TEST_CASE("Module registers parameters once, by dotted name, depth first", "[nn]") {
    Generator gen(1);
    TwoLayer m(gen);
    const auto named = m.named_parameters();
    REQUIRE(named.size() == 3);
    CHECK(named[0].first == "first.weight");
    CHECK(named[1].first == "first.bias");
    CHECK(named[2].first == "second.weight");
    CHECK(m.parameter_count() == 3 * 4 + 4 + 4 * 2);
    CHECK(m.decayed_parameter_names() == std::vector<std::string>{"first.weight", "second.weight"});
    for (const auto& [name, p] : named) CHECK(p.requires_grad());
    // The registered tensor is the member itself (shared storage), not a copy.
    m.first.weight.data()[0] = 42.0f;
    CHECK(named[0].second.data()[0] == 42.0f);
}

TEST_CASE("Module registers generators once, by dotted name, depth first, as it does parameters", "[nn]") {
    struct Noisy : nn::Module {
        Generator noise{5};
        Noisy() { register_generator("noise", noise); }
    };
    struct Outer : nn::Module {
        Generator dropout{7};
        Noisy first, second;
        Outer() {
            register_generator("dropout", dropout);
            register_module("first", first);
            register_module("blocks.1", second);
        }
    };
    Outer m;
    const auto named = m.named_generators();
    REQUIRE(named.size() == 3);
    CHECK(named[0] == std::pair<std::string, Generator*>{"dropout", &m.dropout});
    CHECK(named[1] == std::pair<std::string, Generator*>{"first.noise", &m.first.noise});
    CHECK(named[2] == std::pair<std::string, Generator*>{"blocks.1.noise", &m.second.noise});
    const nn::Module& constant = m;
    CHECK(constant.named_generators()[2].second == &m.second.noise);
    CHECK(TwoLayer(m.dropout).named_generators().empty());

    struct Twice : nn::Module {
        Generator a, b;
        Twice() {
            register_generator("noise", a);
            register_generator("noise", b);
        }
    };
    CHECK_THROWS_WITH(Twice(), "register_generator: 'noise' is registered twice");
}

TEST_CASE("Module zero_grad clears every gradient, train/eval reach children", "[nn]") {
    Generator gen(2);
    TwoLayer m(gen);
    const Tensor x = randn({5, 3}, gen);
    sum(m.second.forward(relu(m.first.forward(x)))).backward();
    for (const Tensor& p : m.parameters()) REQUIRE(p.grad().defined());
    m.zero_grad();
    for (const Tensor& p : m.parameters()) CHECK_FALSE(p.grad().defined());
    m.eval();
    CHECK_FALSE(m.is_training());
    CHECK_FALSE(m.first.is_training());
    m.train();
    CHECK(m.second.is_training());
}

TEST_CASE("Linear computes x @ W + b and its gradients match finite differences", "[nn][gradcheck]") {
    Generator gen(3);
    for (bool bias : {true, false}) {
        nn::Linear layer({.in = 4, .out = 3, .bias = bias}, gen);
        const Tensor x = randn({2, 5, 4}, gen);
        // By hand for one element: out[1,2,0] = sum_c x[1,2,c] W[c,0] + b[0]
        double expected = bias ? layer.bias.at({0}) : 0.0;
        for (int64_t c = 0; c < 4; ++c) expected += double(x.at({1, 2, c})) * layer.weight.at({c, 0});
        CHECK(layer.forward(x).at({1, 2, 0}) == Approx(expected).epsilon(1e-5));

        REQUIRE_GRADCHECK([&](const Inputs& v) { return layer.forward(v[0]); },
                          with_parameters(x.clone().requires_grad_(), layer));
    }
}

TEST_CASE("Embedding gathers rows and scatter-adds repeated ids", "[nn][gradcheck]") {
    Generator gen(4);
    nn::Embedding table({.num = 5, .dim = 3}, gen);
    const std::vector<int64_t> ids = {4, 0, 4, 2, 4, 1};
    const Tensor out = table.forward(ids, {2, 3});
    REQUIRE(out.shape() == Shape{2, 3, 3});
    CHECK(out.at({1, 1, 2}) == table.weight.at({4, 2}));
    REQUIRE_GRADCHECK([&](const Inputs&) { return table.forward(ids, {2, 3}); }, table.parameters());
}

TEST_CASE("LayerNorm normalizes the last dim and its gradients match finite differences", "[nn][gradcheck]") {
    Generator gen(5);
    nn::LayerNorm norm({.dim = 6});
    const Tensor x = randn({3, 6}, gen, 2.0f, 3.0f);
    const Tensor y = norm.forward(x);
    for (int64_t r = 0; r < 3; ++r) {  // each row: mean 0, biased variance 1 (up to eps)
        double m = 0, v = 0;
        for (int64_t c = 0; c < 6; ++c) m += y.at({r, c}) / 6.0;
        for (int64_t c = 0; c < 6; ++c) v += (y.at({r, c}) - m) * (y.at({r, c}) - m) / 6.0;
        CHECK(std::abs(m) < 1e-5);
        CHECK(v == Approx(1.0).epsilon(1e-3));
    }
    // Non-trivial gain and bias so their gradients are exercised too.
    std::ranges::copy(randn({6}, gen).data(), norm.gain.data().begin());
    std::ranges::copy(randn({6}, gen).data(), norm.bias.data().begin());
    REQUIRE_GRADCHECK([&](const Inputs& v) { return norm.forward(v[0]); },
                      with_parameters(x.clone().requires_grad_(), norm));
}

TEST_CASE("Head passes gradcheck in every option combination", "[nn][attention][gradcheck]") {
    for (bool scaled : {true, false})
        for (bool compare_raw : {true, false})
            for (bool causal : {true, false}) {
                DYNAMIC_SECTION("scaled " << scaled << " compare_raw " << compare_raw << " causal " << causal) {
                    Generator gen(6);
                    nn::Head head(
                        {.n_embd = 4, .head_size = 3, .scaled = scaled, .compare_raw = compare_raw, .causal = causal},
                        gen);
                    const Inputs in = with_parameters(test::uniform_param({2, 5, 4}, gen), head);
                    CHECK(in.size() == (compare_raw ? 2u : 4u));  // raw compares x with x: only Wv is learned
                    REQUIRE_GRADCHECK([&](const Inputs& v) { return head.forward(v[0]); }, in);
                }
            }
}

TEST_CASE("Head keeps its attention: causal rows sum to 1 with zeros above the diagonal", "[nn][attention]") {
    Generator gen(7);
    nn::Head head({.n_embd = 8, .head_size = 4}, gen);
    const Tensor x = randn({3, 6, 8}, gen);
    const Tensor out = head.forward(x);
    REQUIRE(out.shape() == Shape{3, 6, 4});
    const Tensor& w = head.last_attention();
    REQUIRE(w.shape() == Shape{3, 6, 6});
    CHECK_FALSE(w.requires_grad());
    for (int64_t b = 0; b < 3; ++b)
        for (int64_t i = 0; i < 6; ++i) {
            double row = 0;
            for (int64_t j = 0; j < 6; ++j) {
                row += w.at({b, i, j});
                if (j > i) CHECK(w.at({b, i, j}) == 0.0f);
            }
            CHECK(row == Approx(1.0).margin(1e-6));
        }
    // Without the causal mask the last position's future is visible again (non-zero shares).
    nn::Head open({.n_embd = 8, .head_size = 4, .causal = false}, gen);
    open.forward(x);
    CHECK(open.last_attention().at({0, 0, 5}) > 0.0f);
}

TEST_CASE("Head without record_scores (the fused causal_softmax) equals the recording head", "[nn][attention]") {
    for (bool scaled : {true, false}) {
        DYNAMIC_SECTION("scaled " << scaled) {
            Generator gen(9);
            nn::Head recording({.n_embd = 8, .head_size = 4, .scaled = scaled}, gen);
            nn::Head fused({.n_embd = 8, .head_size = 4, .scaled = scaled, .record_scores = false}, gen);
            for (auto [from, to] : {std::pair{&recording.query, &fused.query},
                                    {&recording.key, &fused.key},
                                    {&recording.value, &fused.value}})
                std::ranges::copy(from->weight.data(), to->weight.data().begin());
            const Tensor x = randn({3, 6, 8}, gen), upstream = randn({3, 6, 4}, gen);
            const Tensor a = recording.forward(x), b = fused.forward(x);
            sum(a * upstream).backward();
            sum(b * upstream).backward();
            CHECK(test::max_abs_diff(a, b) < 1e-6);
            CHECK(test::max_abs_diff(recording.last_attention(), fused.last_attention()) < 1e-6);
            CHECK(recording.last_scores().defined());
            CHECK_FALSE(fused.last_scores().defined());
            for (auto [from, to] : {std::pair{&recording.query, &fused.query},
                                    {&recording.key, &fused.key},
                                    {&recording.value, &fused.value}})
                CHECK(test::max_abs_diff(from->weight.grad(), to->weight.grad()) < 1e-5);
        }
    }
}

TEST_CASE("Head through causal_attention (flash_from) equals the recording head, and still shows its attention",
          "[nn][attention]") {
    Generator gen(10);
    const int64_t B = 2, T = 70, C = 8, H = 4;  // T past one 64-query block
    nn::Head recording({.n_embd = C, .head_size = H}, gen);
    nn::Head flash({.n_embd = C, .head_size = H, .record_scores = false, .flash_from = T}, gen);
    for (auto [from, to] :
         {std::pair{&recording.query, &flash.query}, {&recording.key, &flash.key}, {&recording.value, &flash.value}})
        std::ranges::copy(from->weight.data(), to->weight.data().begin());
    const Tensor x = randn({B, T, C}, gen), upstream = randn({B, T, H}, gen);
    const Tensor a = recording.forward(x), b = flash.forward(x);
    REQUIRE(b.impl()->grad_fn);
    CHECK(std::string_view(b.impl()->grad_fn->op) == "causal_attention");
    sum(a * upstream).backward();
    sum(b * upstream).backward();
    CHECK(test::max_abs_diff(a, b) < 1e-5);
    CHECK_FALSE(flash.last_scores().defined());
    REQUIRE(flash.last_attention().defined());  // made on request from the forward's q and k
    CHECK(flash.last_attention().shape() == Shape{B, T, T});
    CHECK_FALSE(flash.last_attention().requires_grad());
    CHECK(test::max_abs_diff(recording.last_attention(), flash.last_attention()) < 1e-6);
    for (auto [from, to] :
         {std::pair{&recording.query, &flash.query}, {&recording.key, &flash.key}, {&recording.value, &flash.value}})
        CHECK(test::max_abs_diff(from->weight.grad(), to->weight.grad()) < 1e-4);
    // a shorter window goes the weights' way again, and last_attention() is that forward's
    const Tensor short_x = randn({1, T - 1, C}, gen);
    recording.forward(short_x);
    CHECK(std::string_view(flash.forward(short_x).impl()->grad_fn->op) == "matmul");
    CHECK(flash.last_attention().shape() == Shape{1, T - 1, T - 1});
    CHECK(test::max_abs_diff(recording.last_attention(), flash.last_attention()) < 1e-6);
}
TEST_CASE("attention_stats: the entropy and largest share of each row, and their means", "[nn][attention]") {
    const std::vector<float> one_hot = {0.0f, 1.0f, 0.0f}, even = {0.25f, 0.25f, 0.25f, 0.25f}, pair = {0.2f, 0.8f};
    CHECK(nn::attention_row_stats(one_hot).entropy == 0.0);
    CHECK(nn::attention_row_stats(one_hot).largest_share == 1.0);
    CHECK(nn::attention_row_stats(even).entropy == Approx(std::log(4.0)));
    CHECK(nn::attention_row_stats(even).largest_share == 0.25);
    const double pair_entropy = -(0.2 * std::log(0.2) + 0.8 * std::log(0.8));
    CHECK(nn::attention_row_stats(pair).entropy == Approx(pair_entropy).epsilon(1e-6));
    CHECK(nn::attention_row_stats(pair).largest_share == Approx(0.8).epsilon(1e-7));
    // (B 2, T 2, T 2): rows (1, 0), (0.2, 0.8), (1, 0), (0.5, 0.5); masked zeros count for nothing
    const Tensor w = tensor({1.0f, 0.0f, 0.2f, 0.8f, 1.0f, 0.0f, 0.5f, 0.5f}, {2, 2, 2});
    const nn::AttentionStats mean = nn::attention_stats(w);
    CHECK(mean.entropy == Approx((pair_entropy + std::log(2.0)) / 4).epsilon(1e-6));
    CHECK(mean.largest_share == Approx((1.0 + 0.8 + 1.0 + 0.5) / 4).epsilon(1e-6));
}

TEST_CASE("Head keeps the input of its last forward: what reached it inside a model", "[nn][attention]") {
    Generator gen(8);
    nn::Head head({.n_embd = 4, .head_size = 2}, gen);
    CHECK_FALSE(head.last_input().defined());
    const Tensor x = randn({1, 3, 4}, gen);
    head.forward(x);
    CHECK(head.last_input().data().data() == x.data().data());  // the same storage, not a copy
    const Tensor y = randn({1, 3, 4}, gen).requires_grad_(true);
    head.forward(y);
    CHECK(head.last_input().data().data() == y.data().data());
    CHECK_FALSE(head.last_input().requires_grad());  // and not the graph, which it would keep alive
}

TEST_CASE("Average gives each of the i+1 visible positions 1/(i+1)", "[nn][attention]") {
    Generator gen(8);
    const Tensor x = randn({2, 5, 3}, gen).requires_grad_();
    const Tensor y = nn::Average().forward(x);
    for (int64_t i = 0; i < 5; ++i) {  // by hand: the running mean of rows 0..i
        double m = 0;
        for (int64_t j = 0; j <= i; ++j) m += x.at({1, j, 2});
        CHECK(y.at({1, i, 2}) == Approx(m / double(i + 1)).epsilon(1e-5));
    }
    REQUIRE_GRADCHECK([](const Inputs& v) { return nn::Average().forward(v[0]); }, Inputs{x});
}

TEST_CASE("nn errors name the layer and the shape", "[nn][errors]") {
    Generator gen(9);
    nn::Linear layer({.in = 4, .out = 2}, gen);
    REQUIRE_THROWS_WITH(layer.forward(zeros({3, 5})), Catch::Contains("Linear") && Catch::Contains("(3, 5)"));
    nn::Head head({.n_embd = 4, .head_size = 2}, gen);
    REQUIRE_THROWS_WITH(head.forward(zeros({3, 4})), Catch::Contains("Head") && Catch::Contains("(3, 4)"));
    nn::LayerNorm norm({.dim = 4});
    REQUIRE_THROWS_WITH(norm.forward(zeros({2, 3})), Catch::Contains("LayerNorm") && Catch::Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(nn::Linear({.in = 0, .out = 2}), Catch::Contains("Linear"));
    REQUIRE_THROWS_WITH(nn::Embedding({.num = 3, .dim = 2}, gen).forward(std::vector<int64_t>{3}, {1}),
                        Catch::Contains("embedding") && Catch::Contains("(3, 2)"));
}
