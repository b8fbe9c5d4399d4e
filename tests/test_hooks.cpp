// Hooks that always fire: a module of your own runs its forward hooks through the one path it is called
// by (nn::Callable, LanguageModel's model(ids, B, T)), and the hook points of the gpt2 and gpt kinds,
// named as TransformerLens names them, fire with their documented shapes, can replace what flows on, and
// pass gradients that match finite differences.
//
// Shape legend: B batch, T time, C channels, H head width, V vocab.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nn/gpt2.h>
#include <nn/models.h>

#include "helpers.h"

using Catch::Matchers::Contains;
using namespace autograd;

namespace {

constexpr int64_t kVocab = 11, kEmbd = 8, kHeads = 2, kLayers = 2, kBlock = 200, kHead = kEmbd / kHeads;

std::unique_ptr<nn::LanguageModel> make_kind(const std::string& kind, Generator& gen) {
    if (kind == "gpt2")
        return std::make_unique<nn::GPT2>(
            nn::GPT2Options{.vocab = kVocab, .n_embd = kEmbd, .n_head = kHeads, .n_layer = kLayers, .block = kBlock},
            gen);
    return std::make_unique<nn::GPT>(
        nn::GPTOptions{.vocab = kVocab, .n_embd = kEmbd, .n_head = kHeads, .n_layer = kLayers, .block = kBlock}, gen);
}

std::vector<int64_t> random_ids(int64_t n, Generator& gen) {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < n; ++i) ids.push_back(static_cast<int64_t>(gen.next_u64() % kVocab));
    return ids;
}

// The output projection of layer `layer`'s attention, whichever kind: hook_z is what it multiplies.
Tensor& output_projection(nn::LanguageModel& model, int64_t layer) {
    if (auto* gpt2 = dynamic_cast<nn::GPT2*>(&model)) return gpt2->h[layer]->attn.c_proj.weight;
    return dynamic_cast<nn::GPT&>(model).blocks[layer]->attention.projection.weight;
}

// What a forward of (B, T) ids shows at each hook point, by the documentation, for either kind.
std::map<std::string, Shape> documented_shapes(int64_t B, int64_t T) {
    std::map<std::string, Shape> shapes = {{"hook_embed", {B, T, kEmbd}},
                                           {"hook_pos_embed", {B, T, kEmbd}},
                                           {"ln_final.hook_normalized", {B, T, kEmbd}},
                                           {"logits", {B, T, kVocab}}};
    for (int64_t l = 0; l < kLayers; ++l) {
        const std::string block = fmt::format("blocks.{}.", l);
        for (const char* name : {"hook_resid_pre", "ln1.hook_normalized", "hook_attn_out", "hook_resid_mid",
                                 "ln2.hook_normalized", "hook_mlp_out", "hook_resid_post"})
            shapes[block + name] = {B, T, kEmbd};
        for (const char* name : {"attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_z"})
            shapes[block + name] = {B, T, kHeads, kHead};
        shapes[block + "attn.hook_attn_scores"] = shapes[block + "attn.hook_pattern"] = {B, kHeads, T, T};
        shapes[block + "mlp.hook_post"] = {B, T, 4 * kEmbd};
    }
    return shapes;
}

}  // namespace

TEST_CASE("a module of your own runs its forward hooks with no output() in its forward", "[hooks]") {
    Generator gen(1);
    struct Doubler : nn::Callable<Doubler> {
        nn::Linear layer;
        explicit Doubler(Generator& g) : layer({.in = 3, .out = 3}, g) { register_module("layer", layer); }
        Tensor forward(const Tensor& x) { return scale(layer(x), 2.0f); }  // (N, 3) -> (N, 3)
    };
    // a whole model of its own: hooks on it and on its child fire when the library calls it as model(ids, B, T)
    struct Tiny : nn::LanguageModel {
        nn::Embedding token;
        Doubler inner;
        Tiny(Generator& g) : token({.num = 5, .dim = 3}, g), inner(g) {
            register_module("token", token);
            register_module("inner", inner);
        }
        Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override {
            return inner(token(ids, Shape{B, T}));
        }
        int64_t block_size() const override { return 4; }
        int64_t vocab_size() const override { return 5; }
    };
    Tiny model(gen);
    std::vector<std::string> fired;
    Tensor inner_out, model_out;
    model.inner.register_forward_hook([&](const nn::Module& m, const Tensor& out) {
        CHECK(&m == &model.inner);
        fired.push_back("inner");
        inner_out = out;
    });
    model.register_forward_hook([&](const nn::Module&, const Tensor& out) {
        fired.push_back("model");
        model_out = out;
    });
    nn::HookHandle logits = model.add_hook("logits", [&](Tensor&, const std::string& name) { fired.push_back(name); });
    const std::vector<int64_t> ids = {1, 4, 2};
    const Tensor out = model(ids, 1, 3);
    REQUIRE(fired == std::vector<std::string>{"inner", "logits", "model"});
    CHECK(inner_out.shape() == Shape{1, 3, 3});
    CHECK(model_out.to_vector() == out.to_vector());
    // by hand: the layer of the token rows, doubled
    const Tensor expected = scale(
        linear(embedding(model.token.weight, ids, {1, 3}), model.inner.layer.weight, model.inner.layer.bias), 2.0f);
    CHECK(test::max_abs_diff(out, expected) == 0.0);

    // a plain Module is not called through that path: its hooks would never fire, so they are refused
    struct Plain : nn::Module {};
    Plain plain;
    CHECK_THROWS_WITH(plain.register_forward_hook([](const nn::Module&, const Tensor&) {}), Contains("nn::Callable"));
    logits.remove();
    fired.clear();
    (void)model(ids, 1, 3);
    CHECK(fired == std::vector<std::string>{"inner", "model"});
}

TEST_CASE("every hook point of gpt2 and gpt fires once with its documented shape", "[hooks]") {
    for (const std::string kind : {"gpt2", "gpt"}) {
        for (const bool composed : {true, false}) {  // with hooks on the scores and pattern, and without
            DYNAMIC_SECTION(kind << (composed ? ", every point" : ", the fused attention")) {
                Generator gen(2);
                auto model = make_kind(kind, gen);
                const int64_t B = 2, T = 5;
                std::map<std::string, Shape> expected = documented_shapes(B, T);
                if (!composed)
                    expected = {{"blocks.1.attn.hook_z", {B, T, kHeads, kHead}},
                                {"blocks.0.attn.hook_q", {B, T, kHeads, kHead}}};
                std::map<std::string, std::vector<Shape>> seen;
                std::vector<nn::HookHandle> handles;
                for (const auto& [name, _] : expected)
                    handles.push_back(model->add_hook(
                        name, [&](Tensor& value, const std::string& at) { seen[at].push_back(value.shape()); }));
                (void)(*model)(random_ids(B * T, gen), B, T);
                for (const auto& [name, shape] : expected) {
                    INFO(name);
                    REQUIRE(seen[name].size() == 1);
                    CHECK(seen[name][0] == shape);
                }
                if (composed) {  // and the documentation names them all: nothing else is there
                    const auto names = model->hook_point_names();
                    CHECK(std::set<std::string>(names.begin(), names.end()).size() == expected.size());
                    CHECK(names.size() == expected.size());
                    for (const std::string& name : names) CHECK(expected.count(name) == 1);
                }
            }
        }
    }
}

TEST_CASE("hook_pattern is the softmax of hook_attn_scores, and the composed heads equal the fused ones", "[hooks]") {
    for (const std::string kind : {"gpt2", "gpt"}) {
        for (const int64_t T : {6, 170}) {  // the fused weights op, and from HeadOptions::kFlashFrom causal_attention
            DYNAMIC_SECTION(kind << " T " << T) {
                Generator gen(3);
                auto model = make_kind(kind, gen);
                const std::vector<int64_t> ids = random_ids(T, gen);
                const Tensor fused = (*model)(ids, 1, T);
                Tensor scores, pattern;
                auto a = model->add_hook("blocks.1.attn.hook_attn_scores",
                                         [&](Tensor& v, const std::string&) { scores = v; });
                auto b =
                    model->add_hook("blocks.1.attn.hook_pattern", [&](Tensor& v, const std::string&) { pattern = v; });
                const Tensor composed = (*model)(ids, 1, T);
                CHECK(test::max_abs_diff(composed, fused) < 1e-5);
                REQUIRE(pattern.shape() == Shape{1, kHeads, T, T});
                CHECK(test::max_abs_diff(pattern, softmax(scores, -1)) < 1e-6);
                const auto s = scores.data();
                const auto p = pattern.data();
                for (int64_t row = 0; row < kHeads * T; ++row) {
                    const int64_t i = row % T;
                    double total = 0;
                    for (int64_t j = 0; j < T; ++j) {
                        total += p[row * T + j];
                        if (j > i) CHECK((std::isinf(s[row * T + j]) && s[row * T + j] < 0 && p[row * T + j] == 0.0f));
                    }
                    CHECK(std::abs(total - 1.0) < 1e-5);
                }
                a.remove();
                b.remove();
                pattern = Tensor();
                CHECK(test::max_abs_diff((*model)(ids, 1, T), fused) == 0.0);  // fused again, unhooked
                CHECK_FALSE(pattern.defined());
            }
        }
    }
}

TEST_CASE("replacing a value at a hook point changes what follows as computed by hand", "[hooks]") {
    for (const std::string kind : {"gpt2", "gpt"}) {
        DYNAMIC_SECTION(kind) {
            Generator gen(4);
            auto model = make_kind(kind, gen);
            const int64_t B = 2, T = 7;
            const std::vector<int64_t> ids = random_ids(B * T, gen);
            const Tensor clean = (*model)(ids, B, T);

            // Zeroing head 1 of layer 0 at hook_z equals zeroing that head's rows of the output projection
            // (the rows its slice multiplies), computed without any hook.
            Tensor mask = ones({1, 1, kHeads, 1});
            mask.data()[1] = 0.0f;
            auto ablate =
                model->add_hook("blocks.0.attn.hook_z", [&](Tensor& z, const std::string&) { z = mul(z, mask); });
            const Tensor ablated = (*model)(ids, B, T);
            ablate.remove();
            Tensor& w = output_projection(*model, 0);  // (C, C)
            const std::vector<float> kept = w.to_vector();
            for (int64_t r = kHead; r < 2 * kHead; ++r)
                for (int64_t c = 0; c < kEmbd; ++c) w.data()[r * kEmbd + c] = 0.0f;
            const Tensor by_weights = (*model)(ids, B, T);
            std::copy(kept.begin(), kept.end(), w.data().begin());
            CHECK(test::max_abs_diff(ablated, by_weights) < 1e-6);
            CHECK(test::max_abs_diff(ablated, clean) > 1e-3);

            // A residual stream of our own after the last block: the logits are the final norm and the
            // unembedding of it, by hand.
            const Tensor resid = randn({B, T, kEmbd}, gen);
            auto patch = model->add_hook("blocks.1.hook_resid_post", [&](Tensor& x, const std::string&) { x = resid; });
            const Tensor patched = (*model)(ids, B, T);
            patch.remove();
            Tensor by_hand;
            if (auto* gpt2 = dynamic_cast<nn::GPT2*>(model.get()))
                by_hand = matmul(layer_norm(resid, gpt2->ln_f.gain, gpt2->ln_f.bias, 1e-5f),
                                 gpt2->wte.weight.transpose(0, 1));
            else {
                auto& gpt = dynamic_cast<nn::GPT&>(*model);
                by_hand = linear(layer_norm(resid, gpt.final_norm.gain, gpt.final_norm.bias, 1e-5f), gpt.lm_head.weight,
                                 gpt.lm_head.bias);
            }
            CHECK(test::max_abs_diff(patched, by_hand) < 1e-5);

            // a hook that changes the shape is an error naming the point
            auto bad = model->add_hook("blocks.0.attn.hook_v", [](Tensor& v, const std::string&) { v = zeros({1}); });
            CHECK_THROWS_WITH((*model)(ids, B, T), Contains("blocks.0.attn.hook_v") && Contains("(2, 7, 2, 4)"));
            bad.remove();
        }
    }
}

TEST_CASE("the gradient at a hook point matches finite differences", "[hooks][gradcheck]") {
    for (const std::string kind : {"gpt2", "gpt"}) {
        for (const std::string point :
             {"blocks.0.hook_resid_mid", "blocks.1.attn.hook_pattern", "blocks.0.attn.hook_q"}) {
            DYNAMIC_SECTION(kind << " " << point) {
                Generator gen(5);
                auto model = make_kind(kind, gen);
                const int64_t B = 2, T = 4;
                const std::vector<int64_t> ids = random_ids(B * T, gen);
                Shape shape;
                auto probe = model->add_hook(point, [&](Tensor& v, const std::string&) { shape = v.shape(); });
                (void)(*model)(ids, B, T);
                probe.remove();
                // d logits / d value, through a delta added at the point (random upstream gradient); of
                // order 1, so that the LayerNorms after a residual stream of GPT-2's small initial values are
                // not so steep that the finite differences lose their meaning
                Tensor delta = randn(shape, gen).requires_grad_();
                Tensor seen_grad;
                auto add = model->add_hook(point, [&](Tensor& v, const std::string&) {
                    v = v + delta;
                    if (v.requires_grad())  // (gradcheck's finite differences run without a graph)
                        v.register_hook([&seen_grad](const Tensor& grad) { seen_grad = grad.clone(); });
                });
                REQUIRE_GRADCHECK([&](const test::Inputs&) { return (*model)(ids, B, T); }, {delta}, {.eps = 1e-2});
                // and register_hook on the value sees that same gradient
                delta.zero_grad();
                const Tensor upstream = randn({B, T, kVocab}, gen);
                (*model)(ids, B, T).backward(upstream);
                REQUIRE(seen_grad.defined());
                CHECK(test::max_abs_diff(seen_grad, delta.grad()) == 0.0);
                add.remove();
            }
        }
    }
}

TEST_CASE("hooks fire while decoding with a cache, on the rows computed, and patch as the full window does",
          "[hooks]") {
    for (const std::string kind : {"gpt2", "gpt"}) {
        DYNAMIC_SECTION(kind) {
            Generator gen(6);
            auto model = make_kind(kind, gen);
            const std::vector<int64_t> ids = random_ids(9, gen);
            std::vector<Shape> keys, patterns;
            auto k = model->add_hook("blocks.0.attn.hook_k",
                                     [&](Tensor& v, const std::string&) { keys.push_back(v.shape()); });
            auto p = model->add_hook("blocks.0.attn.hook_pattern",
                                     [&](Tensor& v, const std::string&) { patterns.push_back(v.shape()); });
            auto cached = model->cached_decoder();
            (void)cached->append(std::span(ids).first(6));
            (void)cached->append(ids[6]);
            REQUIRE(keys == std::vector<Shape>{{1, 6, kHeads, kHead}, {1, 1, kHeads, kHead}});
            REQUIRE(patterns == std::vector<Shape>{{1, kHeads, 6, 6}, {1, kHeads, 1, 7}});
            k.remove();
            p.remove();

            // head 0 of layer 1 ablated at hook_z: the cache and the whole window agree token by token
            Tensor mask = ones({1, 1, kHeads, 1});
            mask.data()[0] = 0.0f;
            auto ablate =
                model->add_hook("blocks.1.attn.hook_z", [&](Tensor& z, const std::string&) { z = mul(z, mask); });
            cached->clear();
            auto window = nn::window_decoder(*model);
            for (const int64_t id : ids) {
                const auto from_cache = cached->append(id);
                const std::vector<double> c(from_cache.begin(), from_cache.end());
                CHECK(test::max_abs_diff(window->append(id), c) < 1e-5);
            }
            // and the ablation mattered: without it the last logits differ
            const auto last = cached->append(ids[0]);
            const std::vector<double> ablated(last.begin(), last.end());
            ablate.remove();
            window->clear();
            (void)window->append(std::span(ids));
            CHECK(test::max_abs_diff(window->append(ids[0]), ablated) > 1e-4);
        }
    }
}

TEST_CASE("hook points are found by name and glob, listed, and removed by handle", "[hooks]") {
    Generator gen(7);
    nn::GPT2 model({.vocab = kVocab, .n_embd = kEmbd, .n_head = kHeads, .n_layer = kLayers, .block = 8}, gen);
    std::vector<std::string> fired;
    nn::HookHandle all =
        model.add_hook("blocks.*.hook_resid_post", [&](Tensor&, const std::string& name) { fired.push_back(name); });
    const std::vector<int64_t> ids = {1, 2, 3};
    (void)model(ids, 1, 3);
    CHECK(fired == std::vector<std::string>{"blocks.0.hook_resid_post", "blocks.1.hook_resid_post"});
    CHECK(all.active());
    all.remove();
    CHECK_FALSE(all.active());
    fired.clear();
    (void)model(ids, 1, 3);
    CHECK(fired.empty());
    // the names are their own: the parameters keep Hugging Face's
    CHECK(model.named_parameters()[2].first == "h.0.ln_1.gain");
    CHECK_THROWS_WITH(model.add_hook("h.0.attn.hook_q", [](Tensor&, const std::string&) {}),
                      Contains("no hook point matches 'h.0.attn.hook_q'") && Contains("blocks.0.attn.hook_q"));
}
