// Asking a model why (nn/interpret): caches of every hook point and of the gradients that reach them,
// the logit lens, direct logit attribution, activation and attribution patching and head ablation, each
// against a naive reference written here from the model's own call (model(ids, B, T) with one hook) or
// finite differences, on every kind that is an nn::Transformer (gpt, gpt2, llama, attn_only).
//
// Shape legend: B batch, T time, C channels, H head width, L blocks, V vocab.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <autograd/ops.h>
#include <nn/attention_only.h>
#include <nn/gpt2.h>
#include <nn/interpret/cache.h>
#include <nn/interpret/probes.h>
#include <nn/llama.h>
#include <nn/models.h>

#include "helpers.h"

using Catch::Matchers::Contains;
using namespace autograd;

namespace {

constexpr int64_t kVocab = 13, kEmbd = 16, kHeads = 4, kLayers = 3, kBlock = 32;

// Every kind that is an nn::Transformer, small, with every parameter (biases and norms too) drawn at
// random: a zero bias or a unit gain would hide a term the attribution forgets.
std::unique_ptr<nn::LanguageModel> make_kind(const std::string& kind, Generator& gen) {
    nn::ModelConfig c{.vocab = kVocab, .n_embd = kEmbd, .n_head = kHeads, .n_layer = kLayers, .block = kBlock};
    c.kind = *nn::parse_model_kind(kind);
    if (kind == "llama") c.n_kv_head = 2, c.ffn_hidden = 24, c.tied_embeddings = false;
    auto model = nn::make_model(c, gen);
    NoGradGuard no_grad;
    for (Tensor& p : model->parameters())
        for (float& v : p.data()) v = gen.normal(p.dim() == 1 ? 0.5f : 0.0f, 0.4f);
    model->eval();
    return model;
}

const std::vector<std::string> kKinds = {"gpt", "gpt2", "llama", "attn_only"};

std::vector<int64_t> random_ids(int64_t n, Generator& gen) {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < n; ++i) ids.push_back(static_cast<int64_t>(gen.next_u64() % kVocab));
    return ids;
}

double logit_diff(const Tensor& logits, const nn::LogitDiff& m) {  // (1, T, V): the last position's
    const int64_t T = logits.size(1);
    return double(logits.at({0, T - 1, m.answer})) - (m.wrong ? double(logits.at({0, T - 1, *m.wrong})) : 0.0);
}

// The naive patch: the whole corrupt run with one hook that copies part `unit` from `clean`.
double naive_patched(nn::LanguageModel& model, std::span<const int64_t> corrupt, const std::string& point,
                     const Tensor& clean, int64_t unit, bool head, const nn::LogitDiff& m) {
    NoGradGuard no_grad;
    const nn::ScopedHook hook{model.add_hook(point, [&](Tensor& v, const std::string&) {
        Tensor out = v.clone();
        const int64_t T = v.size(1);
        for (int64_t t = 0; t < T; ++t)
            if (head) {
                for (int64_t k = 0; k < v.size(3); ++k) out.at({0, t, unit, k}) = clean.at({0, t, unit, k});
            } else if (t == unit) {
                for (int64_t c = 0; c < v.size(2); ++c) out.at({0, t, c}) = clean.at({0, t, c});
            }
        v = out;
    })};
    return logit_diff(model(corrupt, 1, int64_t(corrupt.size())), m);
}

}  // namespace

TEST_CASE("run_with_cache keeps a copy of every hook point of every kind, the logits the model's own", "[interpret]") {
    for (const std::string& kind : kKinds) {
        INFO(kind);
        Generator gen(1);
        auto model = make_kind(kind, gen);
        const auto ids = random_ids(9, gen);
        const nn::ActivationCache cache = nn::run_with_cache(*model, ids);
        const std::vector<std::string> names = model->hook_point_names(), cached = cache.names();
        CHECK(std::set<std::string>(names.begin(), names.end()) == std::set<std::string>(cached.begin(), cached.end()));
        NoGradGuard no_grad;
        const Tensor logits = (*model)(ids, 1, 9);
        CHECK(cache["logits"].to_vector() == logits.to_vector());
        CHECK(cache["blocks.1.attn.hook_pattern"].shape() == Shape{1, kHeads, 9, 9});
        CHECK(cache["blocks.2.attn.hook_z"].shape() == Shape{1, 9, kHeads, kEmbd / kHeads});
        // the stream after a block is the one into the next
        CHECK(cache["blocks.0.hook_resid_post"].to_vector() == cache["blocks.1.hook_resid_pre"].to_vector());
        // globs, several at once; none left behind
        const nn::ActivationCache some = nn::run_with_cache(*model, ids, "blocks.1.attn.hook_z, *hook_resid_pre");
        CHECK(some.names() == std::vector<std::string>{"blocks.0.hook_resid_pre", "blocks.1.hook_resid_pre",
                                                       "blocks.1.attn.hook_z", "blocks.2.hook_resid_pre"});
        CHECK(nn::run_with_cache(*model, ids, "logits").size() == 1);
        CHECK_THROWS_WITH(nn::run_with_cache(*model, ids, "blocks.9.*"), Contains("blocks.9.*"));
        CHECK_THROWS_WITH(cache["blocks.0.hook_nothing"], Contains("blocks.0.hook_nothing"));
    }
}

TEST_CASE("run_with_gradients: the gradient at a hook point matches finite differences, parameters untouched",
          "[interpret]") {
    for (const std::string& kind : kKinds) {
        INFO(kind);
        Generator gen(2);
        auto model = make_kind(kind, gen);
        const auto ids = random_ids(7, gen);
        const Tensor upstream = randn({1, 7, kVocab}, gen);  // a random upstream gradient: metric = sum(logits * R)
        const auto metric = [&](const Tensor& logits) { return sum(logits * upstream); };
        const std::string point = kind == "attn_only" ? "blocks.1.hook_attn_out" : "blocks.1.hook_resid_mid";
        const nn::GradientCache g = nn::run_with_gradients(*model, ids, 1, 7, point + ",blocks.2.attn.hook_z", metric);
        for (const Tensor& p : model->parameters()) {
            CHECK(p.requires_grad());  // restored
            CHECK_FALSE(p.grad().defined());
        }
        const Tensor& grad = g.gradients[point];
        REQUIRE(grad.shape() == Shape{1, 7, kEmbd});
        for (const int64_t at : {3, 40, 111}) {
            const auto shifted = [&](float eps) {
                NoGradGuard no_grad;
                const nn::ScopedHook hook{model->add_hook(point, [&](Tensor& v, const std::string&) {
                    v = v.clone();
                    v.data()[size_t(at)] += eps;
                })};
                return double(metric((*model)(ids, 1, 7)).item());
            };
            const float eps = 1e-2f;
            const double numeric = (shifted(eps) - shifted(-eps)) / (2.0 * double(eps));
            CHECK(double(grad.data()[size_t(at)]) == Approx(numeric).epsilon(2e-2).margin(2e-3));
        }
        CHECK(g.gradients["blocks.2.attn.hook_z"].shape() == Shape{1, 7, kHeads, kEmbd / kHeads});
        CHECK(g.metric == Approx(metric((*model)(ids, 1, 7)).item()).epsilon(1e-5));
    }
}

TEST_CASE("The logit lens: the last layer is the model's log-probabilities, earlier ones read the stream there",
          "[interpret]") {
    for (const std::string& kind : kKinds) {
        INFO(kind);
        Generator gen(3);
        auto model = make_kind(kind, gen);
        const auto ids = random_ids(8, gen);
        const nn::LogitLens lens = nn::logit_lens(*model, ids);
        REQUIRE(lens.logprob_next.size() == kLayers + 1);
        REQUIRE(lens.top.size() == kLayers + 1);
        const nn::ActivationCache cache = nn::run_with_cache(*model, ids, "logits,blocks.1.hook_resid_pre");
        NoGradGuard no_grad;
        const Tensor logp = log_softmax(cache["logits"], -1);
        auto& t = dynamic_cast<nn::Transformer&>(*model);
        const Tensor mid = log_softmax(t.unembed_stream(t.normalize_stream(cache["blocks.1.hook_resid_pre"])), -1);
        for (int64_t p = 0; p + 1 < 8; ++p) {
            CHECK(lens.logprob_next[kLayers][size_t(p)] == Approx(logp.at({0, p, ids[size_t(p + 1)]})).epsilon(1e-5));
            CHECK(lens.logprob_next[1][size_t(p)] == Approx(mid.at({0, p, ids[size_t(p + 1)]})).epsilon(1e-5));
        }
        for (int64_t p = 0; p < 8; ++p) {
            const int64_t top = lens.top[kLayers][size_t(p)];
            for (int64_t v = 0; v < kVocab; ++v) CHECK(logp.at({0, p, top}) >= logp.at({0, p, v}));
        }
    }
    Generator gen(4);
    auto multihead =
        nn::make_model({.kind = nn::ModelKind::multihead, .vocab = 5, .n_embd = 8, .n_head = 2, .block = 8}, gen);
    CHECK_THROWS_WITH(nn::logit_lens(*multihead, std::vector<int64_t>{1, 2}), Contains("not an nn::Transformer"));
}

TEST_CASE("Direct logit attribution: the embeddings, every head, every MLP and the biases sum to the logit difference",
          "[interpret]") {
    for (const std::string& kind : kKinds) {
        INFO(kind);
        Generator gen(5);
        auto model = make_kind(kind, gen);
        const auto ids = random_ids(10, gen);
        for (const nn::LogitDiff m :
             {nn::LogitDiff{.answer = 3, .wrong = 7}, nn::LogitDiff{.answer = 5, .wrong = std::nullopt}}) {
            const nn::LogitAttribution a = nn::direct_logit_attribution(*model, ids, m);
            REQUIRE(a.heads.size() == kLayers);
            CHECK(a.mlps.size() == (kind == "attn_only" ? 0u : size_t(kLayers)));
            double total = a.embed + a.bias;
            for (const auto& layer : a.heads)
                for (const double h : layer) total += h;
            for (const double mlp : a.mlps) total += mlp;
            CHECK(total == Approx(a.logit_diff).epsilon(1e-4).margin(1e-4));
            NoGradGuard no_grad;
            CHECK(a.logit_diff == Approx(logit_diff((*model)(ids, 1, 10), m)).epsilon(1e-5));
            // the parts are not all one: a head's share differs from another's
            CHECK(a.heads[0][0] != a.heads[0][1]);
        }
    }
}

TEST_CASE("Activation patching equals the whole corrupt run with one hook, at every site of every kind",
          "[interpret]") {
    for (const std::string& kind : kKinds) {
        INFO(kind);
        Generator gen(6);
        auto model = make_kind(kind, gen);
        const auto clean = random_ids(6, gen);
        auto corrupt = clean;
        corrupt[3] = (clean[3] + 1) % kVocab;  // one position differs
        const nn::LogitDiff m{.answer = 2, .wrong = 9};
        for (const nn::PatchSite site :
             {nn::PatchSite::resid_pre, nn::PatchSite::attn_out, nn::PatchSite::mlp_out, nn::PatchSite::head}) {
            INFO(nn::patch_site_name(site));
            if (kind == "attn_only" && site == nn::PatchSite::mlp_out) {
                CHECK_THROWS_WITH(nn::patch(*model, clean, corrupt, m, site), Contains("blocks.0.hook_mlp_out"));
                continue;
            }
            const nn::Patching p = nn::patch(*model, clean, corrupt, m, site);
            NoGradGuard no_grad;
            CHECK(p.clean == Approx(logit_diff((*model)(clean, 1, 6), m)).epsilon(1e-5));
            CHECK(p.corrupt == Approx(logit_diff((*model)(corrupt, 1, 6), m)).epsilon(1e-5));
            const std::string glob = site == nn::PatchSite::head
                                         ? "blocks.*.attn.hook_z"
                                         : fmt::format("blocks.*.hook_{}", nn::patch_site_name(site));
            const nn::ActivationCache values = nn::run_with_cache(*model, clean, glob);
            REQUIRE(p.effects.size() == kLayers);
            for (int64_t l = 0; l < kLayers; ++l) {
                const std::string point = values.names()[size_t(l)];
                const bool head = site == nn::PatchSite::head;
                REQUIRE(p.effects[size_t(l)].size() == size_t(head ? kHeads : 6));
                for (int64_t u = 0; u < int64_t(p.effects[size_t(l)].size()); ++u)
                    CHECK(p.effects[size_t(l)][size_t(u)] ==
                          Approx(naive_patched(*model, corrupt, point, values[point], u, head, m))
                              .epsilon(1e-4)
                              .margin(1e-5));
            }
            if (site == nn::PatchSite::resid_pre) {
                CHECK(p.effects[0][3] == Approx(p.clean).epsilon(1e-5));    // the one position that differs: all of it
                CHECK(p.effects[0][1] == Approx(p.corrupt).epsilon(1e-5));  // a position that does not: nothing
            }
        }
    }
}

TEST_CASE("Attribution patching is the first-order term of activation patching, from one backward", "[interpret]") {
    for (const std::string& kind : kKinds) {
        INFO(kind);
        Generator gen(7);
        auto model = make_kind(kind, gen);
        const auto clean = random_ids(6, gen);
        auto corrupt = clean;
        corrupt[4] = (clean[4] + 5) % kVocab;
        const nn::LogitDiff m{.answer = 1, .wrong = 4};
        for (const nn::PatchSite site : {nn::PatchSite::resid_pre, nn::PatchSite::head}) {
            INFO(nn::patch_site_name(site));
            const bool head = site == nn::PatchSite::head;
            const nn::Patching a = nn::patch(*model, clean, corrupt, m, site, nn::PatchMethod::attribution);
            const nn::Patching exact = nn::patch(*model, clean, corrupt, m, site);
            CHECK(a.clean == Approx(exact.clean).epsilon(1e-5));
            CHECK(a.corrupt == Approx(exact.corrupt).epsilon(1e-5));
            const std::string glob = head ? "blocks.*.attn.hook_z" : "blocks.*.hook_resid_pre";
            const nn::ActivationCache c = nn::run_with_cache(*model, clean, glob),
                                      x = nn::run_with_cache(*model, corrupt, glob);
            for (int64_t l = 0; l < kLayers; ++l) {
                const std::string point = c.names()[size_t(l)];
                for (int64_t u = 0; u < int64_t(a.effects[size_t(l)].size()); ++u) {
                    // the derivative along a_clean - a_corrupt by a central difference of the patched run
                    const auto along = [&](float t) {
                        Tensor mixed = x[point].clone();
                        for (size_t i = 0; i < mixed.data().size(); ++i)
                            mixed.data()[i] += t * (c[point].data()[i] - x[point].data()[i]);
                        return naive_patched(*model, corrupt, point, mixed, u, head, m);
                    };
                    const double slope = (along(1e-2f) - along(-1e-2f)) / 2e-2;
                    CHECK(a.effects[size_t(l)][size_t(u)] - a.corrupt == Approx(slope).epsilon(2e-2).margin(2e-3));
                    if (!head && u < 4) CHECK(a.effects[size_t(l)][size_t(u)] == a.corrupt);  // nothing differs there
                }
            }
        }
    }
}

TEST_CASE("Head ablation: each head's loss equals the model's with that head's hook_z zeroed or averaged",
          "[interpret]") {
    for (const std::string& kind : kKinds) {
        INFO(kind);
        Generator gen(8);
        auto model = make_kind(kind, gen);
        const int64_t windows = 2, B = 2, T = 5;
        const auto inputs = random_ids(windows * B * T, gen), targets = random_ids(windows * B * T, gen);
        for (const nn::AblationMode mode : {nn::AblationMode::zero, nn::AblationMode::mean}) {
            const nn::HeadAblation a = nn::ablate_heads(*model, inputs, targets, windows, B, T, mode);
            NoGradGuard no_grad;
            const auto loss = [&](int64_t layer, int64_t head) {  // the naive loop: a hook and the whole model
                double total = 0;
                for (int64_t w = 0; w < windows; ++w) {
                    const std::span<const int64_t> ids(inputs.data() + w * B * T, size_t(B * T)),
                        next(targets.data() + w * B * T, size_t(B * T));
                    nn::ScopedHook hook;
                    if (layer >= 0)
                        hook.handle = model->add_hook(
                            fmt::format("blocks.{}.attn.hook_z", layer), [&](Tensor& z, const std::string&) {
                                Tensor out = z.clone();
                                for (int64_t k = 0; k < z.size(3); ++k) {
                                    double mean = 0;
                                    for (int64_t r = 0; r < B * T; ++r)
                                        mean += z.at({r / T, r % T, head, k}) / double(B * T);
                                    for (int64_t r = 0; r < B * T; ++r)
                                        out.at({r / T, r % T, head, k}) =
                                            mode == nn::AblationMode::zero ? 0.0f : float(mean);
                                }
                                z = out;
                            });
                    total += cross_entropy((*model)(ids, B, T), next).item() / double(windows);
                }
                return total;
            };
            CHECK(a.loss == Approx(loss(-1, 0)).epsilon(1e-5));
            for (int64_t l = 0; l < kLayers; ++l)
                for (int64_t h = 0; h < kHeads; ++h)
                    CHECK(a.heads[size_t(l)][size_t(h)] == Approx(loss(l, h)).epsilon(1e-5));
        }
    }
}

TEST_CASE("The probes refuse what they cannot answer, naming it, and leave no hook behind", "[interpret]") {
    Generator gen(9);
    auto model = make_kind("gpt", gen);
    const std::vector<int64_t> a{1, 2, 3}, b{1, 2};
    CHECK_THROWS_WITH(nn::patch(*model, a, b, {.answer = 1, .wrong = 2}, nn::PatchSite::resid_pre),
                      Contains("3 ids") && Contains("2"));
    CHECK_THROWS_WITH(nn::patch(*model, a, a, {.answer = 99, .wrong = 2}, nn::PatchSite::head), Contains("99"));
    CHECK_THROWS_WITH(
        nn::direct_logit_attribution(*model, std::vector<int64_t>{1, 20}, {.answer = 1, .wrong = std::nullopt}),
        Contains("id 20"));
    CHECK_THROWS_WITH(nn::logit_lens(*model, std::vector<int64_t>(kBlock + 1, 1)), Contains("block"));
    CHECK_THROWS_WITH(nn::ablate_heads(*model, a, b, 1, 1, 3), Contains("targets"));
    // every hook removed: a forward after all that runs the fused path and caches nothing
    for (auto& [name, point] : model->named_hook_points()) CHECK_FALSE(point->hooked());
}
