// The Llama model and its parts (nn/llama.h): a naive Llama written here from primitive ops (Hugging Face's
// modeling_llama.py line by line: rotate_half, repeat_kv, the causal softmax) against the model, values and
// gradients; gradients against finite differences with grouped-query (4 query heads on 2 key-value heads)
// and multi-query (1) attention, tied and untied; cached decoding against the whole window, token by token;
// Hugging Face's names and shapes and a parameter count written out; every hook point's shape; the heads
// the inspect tools read; the initialization; bad options. The llama kind in the registry (its settings,
// their metadata and validation), and llama2.c's files through nn::load_trained_model.
#include <autograd/ops.h>
#include <nn/attention.h>
#include <nn/decoder.h>
#include <nn/llama.h>
#include <nn/model_files/llama2c.h>
#include <nn/model_files/safetensors.h>
#include <nn/model_registry.h>
#include <nn/train/trainer.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "helpers.h"
#include "temp_dir.h"

using Catch::Matchers::Contains;
using namespace autograd;
using test::Inputs;

namespace {

// V 7, C 16, 4 query heads of H 4 on n_kv_head key-value heads, F 24, 2 layers, block 12
nn::LlamaOptions tiny(int64_t n_kv_head, bool tied) {
    return {.vocab = 7,
            .n_embd = 16,
            .n_head = 4,
            .n_kv_head = n_kv_head,
            .n_layer = 2,
            .ffn_hidden = 24,
            .block = 12,
            .rope_theta = 100.0f,
            .norm_eps = 1e-5f,
            .tied_embeddings = tied};
}

// O(1) weights, so that every gradient is well above gradcheck's atol (N(0, 0.02) would leave them under it)
void randomize(nn::Module& model, Generator& gen, float spread = 1.0f) {
    for (Tensor& p : model.parameters())
        for (float& v : p.data()) v = gen.uniform(-spread, spread);
}

std::vector<int64_t> random_ids(int64_t n, int64_t vocab, Generator& gen) {
    std::vector<int64_t> ids(static_cast<size_t>(n));
    for (int64_t& id : ids) id = gen.randint(vocab);
    return ids;
}

// --- the naive Llama: primitive ops only, as modeling_llama.py writes it ---------------------------------

Tensor naive_rms_norm(const Tensor& x, const Tensor& weight, float eps) {  // (B, T, C)
    return x / sqrt(mean(x * x, -1, true) + eps) * weight;
}

// x: (B, T, n, H) at positions 0 .. T - 1: x * cos + rotate_half(x) * sin, the angles computed in double here
Tensor naive_rotary(const Tensor& x, double theta) {
    const int64_t T = x.size(1), H = x.size(3), half = H / 2;
    std::vector<float> c(static_cast<size_t>(T * H)), s(c.size());  // (T, H): the half table twice, as HF's emb
    for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < H; ++i) {
            const double angle = double(t) * std::pow(theta, -2.0 * double(i % half) / double(H));
            c[static_cast<size_t>(t * H + i)] = static_cast<float>(std::cos(angle));
            s[static_cast<size_t>(t * H + i)] = static_cast<float>(std::sin(angle));
        }
    const Tensor rotated = concat({neg(slice(x, 3, half, H)), slice(x, 3, 0, half)}, 3);
    return x * tensor(c, {1, T, 1, H}) + rotated * tensor(s, {1, T, 1, H});
}

Tensor naive_attention(const nn::LlamaAttention& a, const Tensor& x, double theta) {  // (B, T, C)
    const int64_t B = x.size(0), T = x.size(1), H = a.head_width(), group = a.n_head / a.n_kv_head;
    const Tensor q = naive_rotary(reshape(matmul(x, a.q_proj.weight), {B, T, a.n_head, H}), theta);
    const Tensor k = naive_rotary(reshape(matmul(x, a.k_proj.weight), {B, T, a.n_kv_head, H}), theta);
    const Tensor v = reshape(matmul(x, a.v_proj.weight), {B, T, a.n_kv_head, H});
    std::vector<Tensor> outs;
    for (int64_t h = 0; h < a.n_head; ++h) {  // repeat_kv: query head h reads key-value head h / group
        const int64_t g = h / group;
        const Tensor qh = reshape(slice(q, 2, h, h + 1), {B, T, H}), kh = reshape(slice(k, 2, g, g + 1), {B, T, H});
        const Tensor vh = reshape(slice(v, 2, g, g + 1), {B, T, H});
        const Tensor scores = causal_mask(scale(matmul(qh, transpose(kh, 1, 2)), 1.0f / std::sqrt(float(H))));
        outs.push_back(matmul(softmax(scores, -1), vh));  // (B, T, H)
    }
    return matmul(concat(outs, 2), a.o_proj.weight);
}

Tensor naive_llama(const nn::Llama& m, std::span<const int64_t> ids, int64_t B, int64_t T) {
    const float eps = m.options.norm_eps;
    Tensor x = embedding(m.embed_tokens.weight, ids, {B, T});
    for (const auto& layer : m.layers) {
        x = x + naive_attention(layer->self_attn, naive_rms_norm(x, layer->input_layernorm.weight, eps),
                                m.options.rope_theta);
        const Tensor h = naive_rms_norm(x, layer->post_attention_layernorm.weight, eps);
        const Tensor gate = matmul(h, layer->mlp.gate_proj.weight);
        x = x +
            matmul(gate / (exp(neg(gate)) + 1.0f) * matmul(h, layer->mlp.up_proj.weight), layer->mlp.down_proj.weight);
    }
    x = naive_rms_norm(x, m.norm.weight, eps);
    return matmul(x, m.lm_head ? m.lm_head->weight : transpose(m.embed_tokens.weight, 0, 1));  // (B, T, V)
}

double relative(const Tensor& a, const Tensor& b) {
    double scale = 1.0;
    for (float v : b.data()) scale = std::max(scale, double(std::abs(v)));
    return test::max_abs_diff(a, b) / scale;
}

}  // namespace

TEST_CASE("llama equals a naive Llama of primitive ops (modeling_llama.py), values and gradients", "[models][llama]") {
    for (const int64_t n_kv_head : {4, 2, 1})
        for (const bool tied : {true, false})
            for (const int64_t T : {5, 12}) {
                INFO("n_kv_head " << n_kv_head << " tied " << tied << " T " << T);
                Generator gen(51);
                nn::Llama model(tiny(n_kv_head, tied), gen);
                randomize(model, gen, 0.5f);
                const int64_t B = 2;
                const std::vector<int64_t> ids = random_ids(B * T, 7, gen);
                const Tensor fused = model(ids, B, T);
                const Tensor upstream = randn(fused.shape(), gen);
                fused.backward(upstream);
                std::vector<Tensor> grads;
                for (const Tensor& p : model.parameters()) grads.push_back(p.grad().clone());
                model.zero_grad();
                const Tensor naive = naive_llama(model, ids, B, T);
                REQUIRE(naive.shape() == Shape{B, T, 7});
                CHECK(relative(fused, naive) < 1e-5);
                naive.backward(upstream);
                const auto named = model.named_parameters();
                for (size_t i = 0; i < named.size(); ++i) {
                    INFO(named[i].first);
                    CHECK(relative(grads[i], named[i].second.grad()) < 1e-4);
                }
            }
}

TEST_CASE("llama's gradients match finite differences: grouped-query and multi-query, tied and untied",
          "[models][llama][gradcheck]") {
    for (const auto& [n_kv_head, tied] : {std::pair<int64_t, bool>{2, true}, {1, false}}) {
        INFO("n_kv_head " << n_kv_head << " tied " << tied);
        Generator gen(52);
        nn::Llama model(tiny(n_kv_head, tied), gen);
        randomize(model, gen);
        const std::vector<int64_t> ids = random_ids(2 * 5, 7, gen);
        // the logits under a random upstream gradient (gradcheck's), with respect to every parameter
        REQUIRE_GRADCHECK([&](const Inputs&) { return model.forward(ids, 2, 5); }, model.parameters(), {.eps = 1e-2});
        // and the loss with respect to a few, through cross_entropy
        std::vector<int64_t> targets = random_ids(2 * 5, 7, gen);
        const auto& attn = model.layers[1]->self_attn;
        REQUIRE_GRADCHECK([&](const Inputs&) { return cross_entropy(model.forward(ids, 2, 5), targets); },
                          {attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight, model.norm.weight,
                           model.layers[0]->mlp.gate_proj.weight},
                          {.eps = 1e-2});
    }
}

TEST_CASE("llama decoding with a cache gives the whole window's logits, token by token", "[models][llama][cache]") {
    for (const int64_t n_kv_head : {2, 1}) {
        INFO("n_kv_head " << n_kv_head);
        Generator gen(53);
        nn::Llama model(tiny(n_kv_head, false), gen);
        randomize(model, gen, 0.5f);
        const std::vector<int64_t> ids = random_ids(12, 7, gen);
        auto cached = model.cached_decoder();
        auto window = nn::window_decoder(model);
        REQUIRE(cached->cached());
        // a prompt of 4, then one token at a time up to the block
        const auto first = cached->append(std::span(ids).first(4));
        const auto first_window = window->append(std::span(ids).first(4));
        CHECK(test::max_abs_diff(first, std::vector<double>(first_window.begin(), first_window.end())) < 1e-5);
        for (size_t t = 4; t < ids.size(); ++t) {
            INFO("position " << t);
            const auto c = cached->append(ids[t]);
            const std::vector<double> from_cache(c.begin(), c.end());
            const auto w = window->append(ids[t]);
            REQUIRE(w.size() == 7);
            CHECK(test::max_abs_diff(w, from_cache) < 1e-5);
        }
    }
}

TEST_CASE("llama's grouped heads from kFlashFrom positions (causal_attention) give the weights path's logits",
          "[models][llama]") {
    // causality: the first 150 positions of a window of 170 (one fused op per head) are a window of 150's
    // (the weights op and matmul), rotations included
    Generator gen(59);
    nn::LlamaOptions o = tiny(2, false);
    o.block = 192;
    nn::Llama model(o, gen);
    randomize(model, gen, 0.3f);
    const int64_t longer = 170, shorter = 150;
    REQUIRE(longer >= nn::HeadOptions::kFlashFrom);
    REQUIRE(shorter < nn::HeadOptions::kFlashFrom);
    const std::vector<int64_t> ids = random_ids(longer, 7, gen);
    NoGradGuard no_grad;
    const Tensor all = model.forward(ids, 1, longer);
    const Tensor prefix = model.forward(std::span<const int64_t>(ids).first(shorter), 1, shorter);
    CHECK(test::max_abs_diff(slice(all, 1, 0, shorter), prefix) < 1e-4);
}

TEST_CASE("llama carries Hugging Face's names and shapes, and its parameter count is the formula's",
          "[models][llama]") {
    const int64_t V = 7, C = 16, n_head = 4, n_kv_head = 2, H = 4, F = 24, L = 2;
    for (const bool tied : {true, false}) {
        INFO("tied " << tied);
        Generator gen(54);
        nn::Llama model(tiny(n_kv_head, tied), gen);
        std::vector<std::pair<std::string, Shape>> expected = {{"embed_tokens.weight", {V, C}}};
        for (int64_t l = 0; l < L; ++l)
            for (const auto& [name, shape] :
                 std::vector<std::pair<std::string, Shape>>{{"self_attn.q_proj.weight", {C, n_head * H}},
                                                            {"self_attn.k_proj.weight", {C, n_kv_head * H}},
                                                            {"self_attn.v_proj.weight", {C, n_kv_head * H}},
                                                            {"self_attn.o_proj.weight", {n_head * H, C}},
                                                            {"mlp.gate_proj.weight", {C, F}},
                                                            {"mlp.up_proj.weight", {C, F}},
                                                            {"mlp.down_proj.weight", {F, C}},
                                                            {"input_layernorm.weight", {C}},
                                                            {"post_attention_layernorm.weight", {C}}})
                expected.emplace_back(fmt::format("layers.{}.{}", l, name), shape);
        expected.emplace_back("norm.weight", Shape{C});
        if (!tied) expected.emplace_back("lm_head.weight", Shape{C, V});
        std::vector<std::pair<std::string, Shape>> got;
        for (const auto& [name, p] : model.named_parameters()) got.emplace_back(name, p.shape());
        CHECK(got == expected);
        // per layer: q and o (C x n_head H each), k and v (C x n_kv_head H each), three C x F, two norms
        const int64_t per_layer = 2 * C * n_head * H + 2 * C * n_kv_head * H + 3 * C * F + 2 * C;
        CHECK(model.parameter_count() == V * C + L * per_layer + C + (tied ? 0 : C * V));
        // the matrices decay; the token table and the norms do not
        for (const std::string& name : model.decayed_parameter_names())
            CHECK((name.ends_with("_proj.weight") || name == "lm_head.weight"));
        CHECK(model.decayed_parameter_names().size() == size_t(7 * L + (tied ? 0 : 1)));
    }
    // the defaults, stories15M's shapes (tied), without allocating them: 9,216,000 in the table, 6 layers of
    // 995,904, the final norm's 288
    ShapesOnlyGuard shapes_only;
    const nn::Llama stories15m({});
    int64_t count = 0;
    for (const Tensor& p : stories15m.parameters()) count += numel_of(p.shape());
    CHECK(count == 15191712);
}

TEST_CASE("every llama hook point fires once with its documented shape, also while decoding",
          "[models][llama][hooks]") {
    Generator gen(55);
    const int64_t B = 2, T = 5, C = 16, nh = 4, nkv = 2, H = 4, F = 24, V = 7;
    nn::Llama model(tiny(nkv, true), gen);
    std::map<std::string, Shape> expected = {
        {"hook_embed", {B, T, C}}, {"ln_final.hook_normalized", {B, T, C}}, {"logits", {B, T, V}}};
    for (int64_t l = 0; l < 2; ++l) {
        const std::string block = fmt::format("blocks.{}.", l);
        for (const char* name : {"hook_resid_pre", "ln1.hook_normalized", "hook_attn_out", "hook_resid_mid",
                                 "ln2.hook_normalized", "hook_mlp_out", "hook_resid_post"})
            expected[block + name] = {B, T, C};
        for (const char* name : {"attn.hook_q", "attn.hook_rot_q", "attn.hook_z"})
            expected[block + name] = {B, T, nh, H};
        for (const char* name : {"attn.hook_k", "attn.hook_v", "attn.hook_rot_k"})
            expected[block + name] = {B, T, nkv, H};
        expected[block + "attn.hook_attn_scores"] = expected[block + "attn.hook_pattern"] = {B, nh, T, T};
        expected[block + "mlp.hook_post"] = {B, T, F};
    }
    std::map<std::string, std::vector<Shape>> seen;
    std::vector<nn::HookHandle> handles;
    for (const auto& [name, _] : expected)
        handles.push_back(
            model.add_hook(name, [&](Tensor& value, const std::string& at) { seen[at].push_back(value.shape()); }));
    const std::vector<int64_t> ids = random_ids(B * T, V, gen);
    const Tensor hooked = model(ids, B, T);
    for (const auto& [name, shape] : expected) {
        INFO(name);
        REQUIRE(seen[name].size() == 1);
        CHECK(seen[name][0] == shape);
    }
    const auto names = model.hook_point_names();  // and nothing else is there
    CHECK(std::set<std::string>(names.begin(), names.end()).size() == expected.size());
    CHECK(names.size() == expected.size());
    // the composed heads (made for the scores and pattern hooks) give the fused heads' logits
    for (auto& handle : handles) handle.remove();
    CHECK(test::max_abs_diff(model(ids, B, T), hooked) < 1e-5);

    // decoding: the rows computed, the keys of n_kv_head heads, the pattern over every position cached
    std::vector<Shape> keys, patterns;
    auto k = model.add_hook("blocks.0.attn.hook_k", [&](Tensor& v, const std::string&) { keys.push_back(v.shape()); });
    auto p = model.add_hook("blocks.0.attn.hook_pattern",
                            [&](Tensor& v, const std::string&) { patterns.push_back(v.shape()); });
    auto cached = model.cached_decoder();
    (void)cached->append(std::span(ids).first(6));
    (void)cached->append(ids[6]);
    CHECK(keys == std::vector<Shape>{{1, 6, nkv, H}, {1, 1, nkv, H}});
    CHECK(patterns == std::vector<Shape>{{1, nh, 6, 6}, {1, nh, 1, 7}});
}

TEST_CASE("llama's heads are where the inspect tools look: rebuilt from their parts, they give the forward's weights",
          "[models][llama][attention]") {
    Generator gen(56);
    nn::Llama model(tiny(2, true), gen);
    randomize(model, gen, 0.5f);
    const auto heads = nn::attention_heads(model);
    REQUIRE(heads.size() == 2 * 4);
    CHECK(heads[5].layer == 1);
    CHECK(heads[5].head == 1);
    CHECK(heads[5].name == "layers.1.self_attn.heads.1");
    const std::vector<int64_t> ids = random_ids(6, 7, gen);
    Tensor pattern;  // (1, n_head, T, T) of layer 1
    auto hook =
        model.add_hook("blocks.1.attn.hook_pattern", [&](Tensor& v, const std::string&) { pattern = v.detach(); });
    (void)model(ids, 1, 6);
    hook.remove();
    REQUIRE(pattern.shape() == Shape{1, 4, 6, 6});
    for (int64_t h = 0; h < 4; ++h) {
        INFO("head " << h);
        const nn::InspectableHead& head = heads[static_cast<size_t>(4 + h)].module;
        const Tensor& weights = head.last_attention();  // (1, T, T)
        REQUIRE(weights.shape() == Shape{1, 6, 6});
        CHECK(test::max_abs_diff(weights, reshape(slice(pattern, 1, h, h + 1), {1, 6, 6})) < 1e-6);
        // the figure's rebuild: softmax(causal_mask(Q K^T / divisor)) from the head's own parts
        const Tensor x = head.last_input();
        const Tensor rebuilt = softmax(
            causal_mask(scale(matmul(head.queries(x), transpose(head.keys(x), 1, 2)), 1.0f / head.divisor())), -1);
        CHECK(test::max_abs_diff(rebuilt, weights) < 1e-5);
        CHECK(head.values(x).shape() == Shape{1, 6, 4});
    }
    // grouped: query heads 0 and 1 read key-value head 0, heads 2 and 3 key-value head 1
    const auto& h0 = heads[4].module;
    const Tensor x = h0.last_input();
    CHECK(test::max_abs_diff(h0.keys(x), heads[5].module.keys(x)) == 0.0);
    CHECK(test::max_abs_diff(h0.keys(x), heads[6].module.keys(x)) > 1e-3);
}

TEST_CASE("llama starts from GPT-2's initialization: 0.02, the residual projections scaled, norms 1",
          "[models][llama]") {
    Generator gen(57);
    const int64_t L = 3;
    nn::Llama model({.vocab = 300,
                     .n_embd = 64,
                     .n_head = 4,
                     .n_kv_head = 2,
                     .n_layer = L,
                     .ffn_hidden = 96,
                     .block = 64,
                     .tied_embeddings = false},
                    gen);
    for (const auto& [name, p] : model.named_parameters()) {
        INFO(name);
        if (name.find("norm") != std::string::npos) {
            for (float v : p.data()) CHECK(v == 1.0f);
            continue;
        }
        double sum = 0, squares = 0;
        for (float v : p.data()) sum += v, squares += double(v) * v;
        const double n = double(p.numel()), stddev = std::sqrt(squares / n - (sum / n) * (sum / n));
        const bool residual = name.ends_with("o_proj.weight") || name.ends_with("down_proj.weight");
        const double expected = residual ? 0.02 / std::sqrt(2.0 * L) : 0.02;
        CHECK(std::abs(stddev - expected) < 0.1 * expected);
    }
}

TEST_CASE("llama refuses options that cannot make one, naming the field", "[models][llama][errors]") {
    const auto make = [](nn::LlamaOptions o) { nn::Llama model(o); };
    nn::LlamaOptions o = tiny(2, true);
    o.n_kv_head = 3;
    CHECK_THROWS_AS(make(o), std::invalid_argument);
    CHECK_THROWS_WITH(make(o), Contains("Llama") && Contains("n_kv_head 3 must divide n_head 4"));
    o = tiny(2, true);
    o.n_head = 8;  // 16 / 8 = 2: even, fine; 16 / 16 = 1: odd
    CHECK_NOTHROW(make(o));
    o.n_head = 16;
    CHECK_THROWS_WITH(make(o), Contains("Llama") && Contains("must be even"));
    o = tiny(2, true);
    o.n_head = 3;
    CHECK_THROWS_WITH(make(o), Contains("n_head 3 must divide n_embd 16"));
    for (const auto& [field, member] :
         std::vector<std::pair<std::string, int64_t nn::LlamaOptions::*>>{{"vocab", &nn::LlamaOptions::vocab},
                                                                          {"n_embd", &nn::LlamaOptions::n_embd},
                                                                          {"n_head", &nn::LlamaOptions::n_head},
                                                                          {"n_kv_head", &nn::LlamaOptions::n_kv_head},
                                                                          {"n_layer", &nn::LlamaOptions::n_layer},
                                                                          {"ffn_hidden", &nn::LlamaOptions::ffn_hidden},
                                                                          {"block", &nn::LlamaOptions::block}}) {
        INFO(field);
        o = tiny(2, true);
        o.*member = 0;
        CHECK_THROWS_WITH(make(o), Contains("Llama") && Contains(field + " must be positive"));
    }
    o = tiny(2, true);
    o.rope_theta = 0.0f;
    CHECK_THROWS_WITH(make(o), Contains("rope_theta"));
    o = tiny(2, true);
    o.norm_eps = -1.0f;
    CHECK_THROWS_WITH(make(o), Contains("norm_eps"));
    // and the window: longer than the block, or ids outside the vocabulary
    Generator gen(58);
    nn::Llama model(tiny(2, true), gen);
    const std::vector<int64_t> long_ids(13, 1), bad_id = {1, 7};
    CHECK_THROWS_WITH(model.forward(long_ids, 1, 13), Contains("Llama") && Contains("block size 12"));
    CHECK_THROWS_WITH(model.forward(bad_id, 1, 2), Contains("Llama") && Contains("id 7"));
}

// --- the llama kind in the registry (nn/model_registry.h) -------------------------------------------------

TEST_CASE("the llama kind builds the Llama its settings describe, the rules' values for n_kv_head and ffn_hidden 0",
          "[models][llama][registry]") {
    const nn::ModelKindInfo& info = nn::model_kind_info(nn::ModelKind::llama);
    CHECK(info.name == "llama");
    CHECK(nn::parse_model_kind("llama") == nn::ModelKind::llama);
    CHECK_FALSE(info.reads(nn::option_dropout));  // (no dropout, and its heads always divide by sqrt(H))
    CHECK_FALSE(info.reads(nn::option_divisor));
    nn::ModelConfig c{.kind = nn::ModelKind::llama, .vocab = 11, .n_embd = 24, .n_head = 6, .n_layer = 2, .block = 9};
    // 0: one key-value head a query head, and llama2.c's width: int(2 * 4 * 24 / 3) = 64, a multiple of 32
    nn::LlamaOptions o = nn::llama_options(c);
    CHECK(o.n_kv_head == 6);
    CHECK(o.ffn_hidden == 64);
    CHECK(nn::llama_options({.kind = nn::ModelKind::llama, .n_embd = 288}).ffn_hidden == 768);  // stories15M's
    CHECK(nn::llama_options({.kind = nn::ModelKind::llama, .n_embd = 64}).ffn_hidden == 192);   // 170 up to 192
    c.n_kv_head = 2, c.ffn_hidden = 20, c.rope_theta = 500.0f, c.norm_eps = 1e-6f, c.tied_embeddings = false;
    o = nn::llama_options(c);
    CHECK(nn::llama_config(o) == c);
    Generator gen(3);
    const auto model = nn::make_model(c, gen);
    const auto* llama = dynamic_cast<const nn::Llama*>(model.get());
    REQUIRE(llama != nullptr);
    CHECK(llama->options.n_kv_head == 2);
    CHECK(llama->options.ffn_hidden == 20);
    CHECK(llama->options.rope_theta == 500.0f);
    CHECK(llama->options.norm_eps == 1e-6f);
    CHECK(llama->lm_head != nullptr);
    // V C (table) + V C (lm_head) + L (C C q + 2 C (2 H) k, v + C C o + 3 C F + 2 C) + C, with H 4
    const int64_t C = 24, V = 11, F = 20, KV = 2 * 4;
    const int64_t expected = 2 * V * C + 2 * (2 * C * C + 2 * C * KV + 3 * C * F + 2 * C) + C;
    CHECK(model->parameter_count() == expected);
    CHECK(nn::model_size(c).parameters == double(expected));
    CHECK(nn::model_size(c).layers == 2);
    CHECK(nn::model_size(c).heads_per_layer == 6);
}

TEST_CASE("llama's settings are checkpoint metadata for llama only: other kinds keep their bytes, old ones read",
          "[models][llama][registry]") {
    const std::vector<std::string> llama_keys = {"model.ffn_hidden", "model.n_kv_head", "model.norm_eps",
                                                 "model.rope_theta", "model.tied_embeddings"};
    const nn::ModelConfig c{.kind = nn::ModelKind::llama,
                            .vocab = 11,
                            .n_embd = 24,
                            .n_head = 6,
                            .n_layer = 2,
                            .block = 9,
                            .n_kv_head = 3,
                            .ffn_hidden = 40,
                            .rope_theta = 123456.5f,
                            .norm_eps = 3e-7f,
                            .tied_embeddings = false};
    auto metadata = c.to_metadata();
    CHECK(metadata.at("model.kind") == "llama");
    CHECK(metadata.at("model.n_kv_head") == "3");
    CHECK(metadata.at("model.tied_embeddings") == "0");
    CHECK(nn::ModelConfig::from_metadata(metadata) == c);  // the floats too, exactly
    for (const nn::ModelKind kind : {nn::ModelKind::gpt, nn::ModelKind::gpt2, nn::ModelKind::head}) {
        const auto other = nn::ModelConfig{.kind = kind, .vocab = 5}.to_metadata();
        for (const std::string& key : llama_keys) CHECK_FALSE(other.contains(key));
    }
    // each absent: its default
    for (const std::string& key : llama_keys) metadata.erase(key);
    const nn::ModelConfig defaults = nn::ModelConfig::from_metadata(metadata);
    CHECK(defaults.n_kv_head == 0);
    CHECK(defaults.ffn_hidden == 0);
    CHECK(defaults.rope_theta == 10000.0f);
    CHECK(defaults.norm_eps == 1e-5f);
    CHECK(defaults.tied_embeddings);
}

TEST_CASE("validate_model_config refuses a llama that cannot be, naming the setting",
          "[models][llama][registry][errors]") {
    const auto error_with = [](auto change) {
        nn::ModelConfig c{
            .kind = nn::ModelKind::llama, .vocab = 7, .n_embd = 16, .n_head = 4, .n_layer = 1, .block = 4};
        change(c);
        try {
            nn::validate_model_config(c);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    CHECK(error_with([](nn::ModelConfig&) {}) == "accepted");
    CHECK(error_with([](nn::ModelConfig& c) { c.n_kv_head = 1; }) == "accepted");  // multi-query
    CHECK_THAT(error_with([](nn::ModelConfig& c) { c.n_kv_head = 3; }), Contains("n_kv_head 3 must divide n_head 4"));
    CHECK_THAT(error_with([](nn::ModelConfig& c) { c.n_kv_head = -2; }), Contains("model.n_kv_head is -2"));
    CHECK_THAT(error_with([](nn::ModelConfig& c) { c.ffn_hidden = -1; }), Contains("model.ffn_hidden is -1"));
    CHECK_THAT(error_with([](nn::ModelConfig& c) { c.n_embd = 12; }),
               Contains("head width n_embd / n_head = 12 / 4 = 3 must be even"));
    CHECK_THAT(error_with([](nn::ModelConfig& c) { c.n_head = 3; }), Contains("n_head 3 must divide n_embd 16"));
    for (const float bad :
         {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
        INFO(bad);
        CHECK_THAT(error_with([bad](nn::ModelConfig& c) { c.rope_theta = bad; }), Contains("model.rope_theta is"));
        CHECK_THAT(error_with([bad](nn::ModelConfig& c) { c.norm_eps = bad; }), Contains("model.norm_eps is"));
    }
    // another kind would not keep them in its checkpoint: refused, not ignored
    nn::ModelConfig gpt{.kind = nn::ModelKind::gpt, .vocab = 7, .n_kv_head = 2};
    CHECK_THROWS_WITH(nn::validate_model_config(gpt), Contains("model.n_kv_head applies to llama only, not gpt"));
    gpt = {.kind = nn::ModelKind::gpt2, .vocab = 7, .tied_embeddings = false};
    CHECK_THROWS_WITH(nn::validate_model_config(gpt),
                      Contains("model.tied_embeddings applies to llama only, not gpt2"));
}

// --- llama2.c's model files through nn::load_trained_model -------------------------------------------------

TEST_CASE(
    "load_trained_model reads a llama2.c file, legacy or version 1, tied or untied, as the llama kind: the "
    "model's logits, BOS for its samples, token ids without a tokenizer",
    "[models][llama][llama2c]") {
    const test::TempDir dir("llama2c-load");
    const std::vector<int64_t> ids = {1, 5, 3, 6, 2, 0, 4, 4};  // (1, 8)
    for (const bool tied : {true, false})
        for (const nn::Llama2cVersion version : {nn::Llama2cVersion::legacy, nn::Llama2cVersion::v1}) {
            INFO(fmt::format("tied {} version {}", tied, int(version)));
            Generator gen(21);
            nn::LlamaOptions options = tiny(2, tied);
            options.rope_theta = 10000.0f;  // run.c's, which a llama2.c file does not hold
            nn::Llama model(options, gen);
            randomize(model, gen, 0.5f);
            const nn::Llama2cModel file{.config = nn::llama2c_config(model.options),
                                        .tensors = model.named_parameters(),
                                        .legacy_rope_tables = {}};
            const std::filesystem::path path = dir.path / "model.bin";
            nn::write_llama2c(path, file, version);
            CHECK(nn::is_llama2c_file(path));
            const nn::TrainedModel loaded = nn::load_trained_model(path);
            CHECK(loaded.config == nn::llama_config(model.options));
            CHECK(loaded.bos == 1);
            CHECK(nn::as_ids_only(*loaded.tokenizer) != nullptr);
            const auto want = model.forward(ids, 1, 8).to_vector();
            CHECK(loaded.model->forward(ids, 1, 8).to_vector() == want);  // the same weights, bit for bit
        }
    // neither a safetensors file nor a few bytes nor text is one
    CHECK_FALSE(nn::is_llama2c_file(dir.write("three.bin", "abc")));
    CHECK_FALSE(nn::is_llama2c_file(dir.write("text.txt", "First Citizen: we are accounted poor citizens")));
    Generator gen(1);
    nn::Llama model(tiny(2, true), gen);
    nn::save_safetensors(dir.path / "weights.safetensors", model.named_parameters());
    CHECK_FALSE(nn::is_llama2c_file(dir.path / "weights.safetensors"));
    CHECK_FALSE(nn::is_llama2c_file(dir.path / "none.bin"));
}
