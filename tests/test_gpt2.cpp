// The gpt2 kind (nn/gpt2.h): its gradients against finite differences, Hugging Face's names and shapes,
// the registry's exact size (GPT-2 small's 124,439,808 without allocating it), GPT-2's initialization,
// the tied output, the two GELUs, dropout that resumes exactly, and the gelu_exact field in checkpoint
// metadata (written for gpt2 only, so other kinds' checkpoints keep their keys). Training and resuming it:
// tests/cli/gpt2_train.sh.
#include <autograd/ops.h>
#include <nn/attention.h>
#include <nn/gpt2.h>
#include <nn/model_registry.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "helpers.h"

using Catch::Matchers::Contains;
using namespace autograd;
using test::Inputs;

namespace {

nn::GPT2Options tiny(bool gelu_exact = false) {
    return {.vocab = 5, .n_embd = 4, .n_head = 2, .n_layer = 2, .block = 4, .gelu_exact = gelu_exact};
}
const std::vector<int64_t> kIds = {0, 3, 1, 4, 2, 2, 4, 0};  // (2, 4)

}  // namespace

TEST_CASE("gpt2's gradients match finite differences for all its parameters, with either GELU",
          "[models][gpt2][gradcheck]") {
    for (const bool exact : {false, true}) {
        INFO("gelu_exact " << exact);
        Generator gen(41);
        nn::GPT2 model(tiny(exact), gen);
        // O(1) weights, as test_models.cpp's check: GPT-2's N(0, 0.02) would leave every gradient under atol
        for (Tensor& p : model.parameters())
            for (float& v : p.data()) v = gen.uniform(-1.0f, 1.0f);
        const Tensor logits = model.forward(kIds, 2, 4);
        REQUIRE(logits.shape() == Shape{2, 4, 5});
        logits.backward(randn(logits.shape(), gen));
        for (const auto& [name, p] : model.named_parameters()) {
            INFO(name);
            REQUIRE(p.grad().defined());
            float largest = 0.0f;
            for (float g : p.grad().data()) largest = std::max(largest, std::abs(g));
            CHECK(largest > 2e-2f);
        }
        model.zero_grad();
        REQUIRE_GRADCHECK([&](const Inputs&) { return model.forward(kIds, 2, 4); }, model.parameters(), {.eps = 1e-2});
    }
}

TEST_CASE("gpt2 carries Hugging Face's names and shapes, with no lm_head: the logits are ln_f(x) @ wte^T",
          "[models][gpt2]") {
    Generator gen(42);
    const int64_t V = 7, C = 8, L = 2, block = 6;
    nn::GPT2 model({.vocab = V, .n_embd = C, .n_head = 2, .n_layer = L, .block = block}, gen);
    std::vector<std::pair<std::string, Shape>> expected = {{"wte.weight", {V, C}}, {"wpe.weight", {block, C}}};
    for (int64_t l = 0; l < L; ++l) {
        const std::string h = fmt::format("h.{}.", l);
        for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{{"ln_1.gain", {C}},
                                                                                    {"ln_1.bias", {C}},
                                                                                    {"attn.c_attn.weight", {C, 3 * C}},
                                                                                    {"attn.c_attn.bias", {3 * C}},
                                                                                    {"attn.c_proj.weight", {C, C}},
                                                                                    {"attn.c_proj.bias", {C}},
                                                                                    {"ln_2.gain", {C}},
                                                                                    {"ln_2.bias", {C}},
                                                                                    {"mlp.c_fc.weight", {C, 4 * C}},
                                                                                    {"mlp.c_fc.bias", {4 * C}},
                                                                                    {"mlp.c_proj.weight", {4 * C, C}},
                                                                                    {"mlp.c_proj.bias", {C}}})
            expected.emplace_back(h + name, shape);
    }
    expected.emplace_back("ln_f.gain", Shape{C});
    expected.emplace_back("ln_f.bias", Shape{C});
    std::vector<std::pair<std::string, Shape>> got;
    for (const auto& [name, p] : model.named_parameters()) got.emplace_back(name, p.shape());
    CHECK(got == expected);
    // Linear weights decay (as in every kind); the tables, biases and norms do not
    const auto decayed = model.decayed_parameter_names();
    CHECK(decayed == std::vector<std::string>{"h.0.attn.c_attn.weight", "h.0.attn.c_proj.weight", "h.0.mlp.c_fc.weight",
                                              "h.0.mlp.c_proj.weight", "h.1.attn.c_attn.weight",
                                              "h.1.attn.c_proj.weight", "h.1.mlp.c_fc.weight",
                                              "h.1.mlp.c_proj.weight"});

    // the tied output: the final hidden state times the token table, recomputed here from the pieces
    const std::vector<int64_t> ids = {1, 6, 0, 3};  // (1, 4)
    Tensor hidden;
    const auto handle =
        model.ln_f.register_forward_hook([&](const nn::Module&, const Tensor& out) { hidden = out.detach(); });
    const Tensor logits = model.forward(ids, 1, 4);
    REQUIRE(logits.shape() == Shape{1, 4, V});
    CHECK(test::max_abs_diff(logits, matmul(hidden, transpose(model.wte.weight, 0, 1))) < 1e-6);
    // a change to wte moves the logits of a token that is not in the window (it is the output layer too)
    const float before = logits.data()[5];  // position 0, token 5
    for (int64_t c = 0; c < C; ++c) model.wte.weight.data()[5 * C + c] += 1.0f;
    CHECK(model.forward(ids, 1, 4).data()[5] != before);
    const std::vector<int64_t> too_long = {1, 2, 3, 4, 5, 6, 0};
    CHECK_THROWS_WITH(model.forward(too_long, 1, 7), Contains("GPT2") && Contains("block size 6"));
}

TEST_CASE("gpt2 starts from GPT-2's initialization", "[models][gpt2]") {
    Generator gen(43);
    const int64_t L = 3;
    nn::GPT2 model({.vocab = 300, .n_embd = 64, .n_head = 4, .n_layer = L, .block = 64}, gen);
    const auto stddev = [](const Tensor& t) {
        double sum = 0, squares = 0;
        for (float v : t.data()) {
            sum += v;
            squares += double(v) * v;
        }
        const double n = double(t.numel());
        return std::sqrt(squares / n - (sum / n) * (sum / n));
    };
    for (const auto& [name, p] : model.named_parameters()) {
        INFO(name);
        if (name.find("ln_") != std::string::npos) {
            for (float v : p.data()) CHECK(v == (name.ends_with(".gain") ? 1.0f : 0.0f));
        } else if (name.ends_with(".bias")) {
            for (float v : p.data()) CHECK(v == 0.0f);
        } else {
            const double expected = name.ends_with("c_proj.weight") ? 0.02 / std::sqrt(2.0 * L) : 0.02;
            CHECK(std::abs(stddev(p) - expected) < 0.1 * expected);
        }
    }
}

TEST_CASE("gpt2's GELU is the tanh one unless gelu_exact: same weights, different logits", "[models][gpt2]") {
    Generator gen_a(44), gen_b(44);
    nn::GPT2 tanh_model(tiny(false), gen_a), exact_model(tiny(true), gen_b);
    for (Tensor& p : tanh_model.parameters())
        for (float& v : p.data()) v = gen_a.uniform(-1.0f, 1.0f);
    const auto a = tanh_model.parameters(), b = exact_model.parameters();
    for (size_t i = 0; i < a.size(); ++i) std::ranges::copy(a[i].data(), b[i].data().begin());
    NoGradGuard no_grad;
    const Tensor la = tanh_model.forward(kIds, 2, 4), lb = exact_model.forward(kIds, 2, 4);
    CHECK(test::max_abs_diff(la, lb) > 1e-5);
    CHECK(test::max_abs_diff(la, lb) < 1e-2);  // an approximation of the same function
    // and the hooked path (c_fc's output shown to a hook) gives the fused path's values
    const auto handle = tanh_model.h[0]->mlp.c_fc.register_forward_hook([](const nn::Module&, const Tensor&) {});
    CHECK(test::max_abs_diff(tanh_model.forward(kIds, 2, 4), la) == 0.0);
}

TEST_CASE("The registry's gpt2 size is its exact parameter count, and GPT-2 small's 124,439,808 without allocating",
          "[models][gpt2]") {
    const nn::ModelKindInfo& info = nn::model_kind_info(nn::ModelKind::gpt2);
    CHECK(info.name == "gpt2");
    CHECK(nn::parse_model_kind("gpt2") == nn::ModelKind::gpt2);
    CHECK(info.reads(nn::option_gelu));
    CHECK_FALSE(info.reads(nn::option_feed_forward));
    CHECK_FALSE(info.reads(nn::option_init));
    for (const auto& [V, C, H, L, T] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>>{
             {5, 4, 2, 1, 4}, {65, 32, 4, 3, 16}, {300, 48, 6, 2, 40}, {1000, 64, 2, 4, 128}}) {
        const nn::ModelConfig c{
            .kind = nn::ModelKind::gpt2, .vocab = V, .n_embd = C, .n_head = H, .n_layer = L, .block = T};
        Generator gen(45);
        const auto model = nn::make_model(c, gen);
        INFO("V " << V << " C " << C << " L " << L << " T " << T);
        CHECK(nn::model_size(c).parameters == double(model->parameter_count()));
        CHECK(nn::model_size(c).layers == double(L));
        CHECK(nn::model_size(c).heads_per_layer == double(H));
    }
    // GPT-2 small, medium, large, XL: Hugging Face's published counts (the tied lm_head counted once)
    const auto parameters = [](int64_t C, int64_t H, int64_t L) {
        return nn::model_size(
                   {.kind = nn::ModelKind::gpt2, .vocab = 50257, .n_embd = C, .n_head = H, .n_layer = L, .block = 1024})
            .parameters;
    };
    CHECK(parameters(768, 12, 12) == 124439808.0);
    CHECK(parameters(1024, 16, 24) == 354823168.0);
    CHECK(parameters(1280, 20, 36) == 774030080.0);
    CHECK(parameters(1600, 25, 48) == 1557611200.0);
}

TEST_CASE("gelu_exact is checkpoint metadata for gpt2 only: other kinds keep their keys, and its absence means tanh",
          "[models][gpt2]") {
    const nn::ModelConfig gpt{.kind = nn::ModelKind::gpt, .vocab = 5};
    CHECK_FALSE(gpt.to_metadata().contains("model.gelu_exact"));
    CHECK(nn::ModelConfig::from_metadata(gpt.to_metadata()) == gpt);
    nn::ModelConfig gpt2{.kind = nn::ModelKind::gpt2, .vocab = 5, .gelu_exact = true};
    auto metadata = gpt2.to_metadata();
    CHECK(metadata.at("model.gelu_exact") == "1");
    CHECK(nn::ModelConfig::from_metadata(metadata) == gpt2);
    metadata.erase("model.gelu_exact");
    CHECK_FALSE(nn::ModelConfig::from_metadata(metadata).gelu_exact);
    metadata["model.gelu_exact"] = "yes";
    CHECK_THROWS_WITH(nn::ModelConfig::from_metadata(metadata),
                      Contains("model.gelu_exact") && Contains("not a whole number"));
}

TEST_CASE("gpt2's attention from kFlashFrom positions (causal_attention) gives the weights path's logits",
          "[models][gpt2]") {
    // causality: the first T0 positions of a longer window see what a window of T0 sees, so a window of
    // 170 (one fused op per head) must give the logits a window of 150 (the weights op and matmul) gives
    Generator gen(46);
    nn::GPT2 model({.vocab = 50, .n_embd = 16, .n_head = 2, .n_layer = 2, .block = 192}, gen);
    for (Tensor& p : model.parameters())
        for (float& v : p.data()) v = gen.normal(0.0f, 0.3f);
    const int64_t longer = 170, shorter = 150;
    REQUIRE(longer >= nn::HeadOptions::kFlashFrom);
    REQUIRE(shorter < nn::HeadOptions::kFlashFrom);
    std::vector<int64_t> ids(longer);
    for (int64_t& id : ids) id = static_cast<int64_t>(gen.uniform() * 50) % 50;
    NoGradGuard no_grad;
    const Tensor all = model.forward(ids, 1, longer);
    const Tensor prefix = model.forward(std::span<const int64_t>(ids).first(shorter), 1, shorter);
    CHECK(test::max_abs_diff(slice(all, 1, 0, shorter), prefix) < 1e-4);
}

TEST_CASE("gpt2's heads are where the inspect tools look: one per head, its slice of c_attn, its weights",
          "[models][gpt2][attention]") {
    Generator gen(47);
    nn::GPT2 model({.vocab = 7, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = 6}, gen);
    for (Tensor& p : model.parameters())
        for (float& v : p.data()) v = gen.normal(0.0f, 0.5f);
    const std::vector<nn::AttentionHead> heads = nn::attention_heads(model);
    REQUIRE(heads.size() == 4);
    CHECK((heads[3].layer == 1 && heads[3].head == 1 && heads[3].name == "h.1.attn.heads.1"));
    CHECK(&heads[2].module == model.h[1]->attn.heads[0].get());
    CHECK_FALSE(heads[0].module.last_attention().defined());  // before any forward

    // the heads add no parameters: the names and the count stay Hugging Face's
    for (const auto& [name, p] : model.named_parameters()) CHECK(name.find("heads") == std::string::npos);

    const std::vector<int64_t> ids = {0, 3, 1, 4, 2, 6, 5, 2, 2, 4, 0, 1};  // (2, 6)
    NoGradGuard no_grad;
    (void)model.forward(ids, 2, 6);
    for (const nn::AttentionHead& head : heads) {
        INFO(head.name);
        const nn::InspectableHead& h = head.module;
        const Tensor& x = h.last_input();  // (2, 6, 8): ln_1 of the residual stream
        REQUIRE(x.shape() == Shape{2, 6, 8});
        CHECK(h.divisor() == 2.0f);  // sqrt(8 / 2)
        // the weights are the tutorial's composition on the head's own q and k
        const Tensor q = h.queries(x), k = h.keys(x);  // (2, 6, 4)
        const Tensor expected = softmax(causal_mask(scale(matmul(q, k.transpose(1, 2)), 1.0f / h.divisor())), -1);
        CHECK(test::max_abs_diff(h.last_attention(), expected) < 1e-6);
        CHECK(h.values(x).shape() == Shape{2, 6, 4});
    }
    // the two heads of a layer read different columns of c_attn
    CHECK(test::max_abs_diff(heads[0].module.queries(heads[0].module.last_input()),
                             heads[1].module.queries(heads[1].module.last_input())) > 1e-3);
    // a new forward makes new weights
    const Tensor before = heads[2].module.last_attention().clone();
    (void)model.forward(std::span<const int64_t>(ids).first(6), 1, 6);
    CHECK(heads[2].module.last_attention().shape() == Shape{1, 6, 6});
    CHECK(test::max_abs_diff(slice(before, 0, 1, 2), heads[2].module.last_attention()) > 1e-4);
}
