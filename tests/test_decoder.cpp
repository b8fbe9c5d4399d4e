// nn/decoder.h: the cached decoders against the reference that reruns forward() on the window, for
// every model kind, over generations longer than three blocks (so the full-window policy refills several
// times); the policy itself by hand; the same sampled text with and without the cache; the errors.
#include <autograd/threads.h>
#include <nn/decoder.h>
#include <nn/gpt2.h>
#include <nn/models.h>
#include <nn/generate/sample.h>
#include <nn/tutorial/study.h>

#include "helpers.h"

using Catch::Matchers::Contains;
using namespace autograd;

namespace {

constexpr int64_t kVocab = 11, kBlock = 8;

// Every kind of the registry, and the variants of a head the models can hold.
struct Case {
    std::string name;
    std::function<std::unique_ptr<nn::LanguageModel>(Generator&)> make;
};
std::vector<Case> all_models() {
    std::vector<Case> cases;
    for (const nn::ModelKindInfo& info : nn::model_kinds()) {
        nn::ModelConfig config{
            .kind = info.kind, .vocab = kVocab, .n_embd = 12, .n_head = 3, .n_layer = 2, .block = kBlock};
        cases.push_back({std::string(info.name), [config](Generator& g) { return nn::make_model(config, g); }});
    }
    cases.push_back({"gpt2 with the exact GELU", [](Generator& g) {
                         return nn::make_model({.kind = nn::ModelKind::gpt2,
                                                .vocab = kVocab,
                                                .n_embd = 12,
                                                .n_head = 3,
                                                .n_layer = 2,
                                                .block = kBlock,
                                                .gelu_exact = true},
                                               g);
                     }});
    cases.push_back({"multihead with feed-forward", [](Generator& g) {
                         return std::make_unique<nn::MultiHead>(
                             nn::MultiHeadOptions{
                                 .vocab = kVocab, .n_embd = 12, .n_head = 2, .block = kBlock, .feed_forward = true},
                             g);
                     }});
    cases.push_back(
        {"unscaled head of width 5", [](Generator& g) {
             return std::make_unique<nn::SingleHead>(
                 nn::SingleHeadOptions{.vocab = kVocab, .n_embd = 12, .head_size = 5, .block = kBlock, .scaled = false},
                 g);
         }});
    return cases;
}

// Untrained weights are tiny (GPT-2's init) and give near-uniform attention; spread them so that each
// position's attention row differs and a wrong key or position shows.
void spread(nn::LanguageModel& model, Generator& g) {
    for (Tensor& p : model.parameters())
        for (float& v : p.data()) v = g.normal(0.0f, 0.5f);
}
std::unique_ptr<nn::LanguageModel> make_spread(const Case& c, Generator& g) {
    auto model = c.make(g);
    spread(*model, g);
    return model;
}

// max |a - b| / max |b|
double relative_difference(std::span<const float> a, std::span<const float> b) {
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
        scale = std::max(scale, std::abs(double(b[i])));
    }
    return diff / std::max(scale, 1e-30);
}

}  // namespace

TEST_CASE("cached and uncached logits agree at every position of a generation of 3.5 blocks", "[decoder]") {
    for (const Case& c : all_models()) {
        SECTION(c.name) {
            Generator g(41);
            auto model = make_spread(c, g);
            const int64_t block = model->block_size();
            nn::GenerationWindow cached(model->cached_decoder()), reference(nn::window_decoder(*model));
            CHECK(cached.decoder().cached());
            CHECK_FALSE(reference.decoder().cached());
            const std::vector<int64_t> prompt = {3, 1, 4};
            double worst = relative_difference(cached.start(prompt), reference.start(prompt));
            const int64_t n = block * 7 / 2 + 1;
            for (int64_t i = 0; i < n; ++i) {
                const auto id = static_cast<int64_t>(g.uniform() * kVocab) % kVocab;
                const auto a = cached.push(id);
                const auto b = reference.push(id);
                INFO("position " << i << " window " << fmt::format("{}", cached.window()));
                REQUIRE(a.size() == static_cast<size_t>(kVocab));
                worst = std::max(worst, relative_difference(a, b));
                REQUIRE(std::ranges::equal(cached.window(), reference.window()));
            }
            INFO("worst relative difference " << worst);
            CHECK(worst <= 1e-5);
            CHECK(cached.refills() >= 3);  // the window filled and was refilled more than three times
            CHECK(cached.refills() == reference.refills());
        }
    }
}

TEST_CASE("gpt2's cached logits are forward()'s last row at every token, across refills, with either GELU",
          "[decoder][gpt2]") {
    for (const bool exact : {false, true}) {
        SECTION(exact ? "exact GELU" : "tanh GELU") {
            Generator g(29);
            constexpr int64_t V = 300, block = 12;  // heads of 8 over c_attn's (24, 72); a vocabulary wider than C
            nn::GPT2 model({.vocab = V, .n_embd = 24, .n_head = 3, .n_layer = 3, .block = block, .gelu_exact = exact},
                           g);
            spread(model, g);
            nn::GenerationWindow window(model.cached_decoder());
            REQUIRE(window.decoder().cached());
            const std::vector<int64_t> prompt = {7, 250, 3, 99, 1};
            std::span<const float> logits = window.start(prompt);
            double worst = 0.0;
            for (int64_t i = 0; i < 3 * block; ++i) {
                const std::vector<int64_t> ids(window.window().begin(), window.window().end());
                const auto T = static_cast<int64_t>(ids.size());
                NoGradGuard no_grad;
                const Tensor all = model.forward(ids, 1, T);  // (1, T, V)
                const auto last = all.data().subspan(static_cast<size_t>((T - 1) * V));
                INFO("token " << i << " window " << fmt::format("{}", ids));
                worst = std::max(worst, relative_difference(logits, last));
                REQUIRE(relative_difference(logits, last) <= 1e-5);
                logits = window.push((i * 37 + 11) % V);
            }
            INFO("worst relative difference " << worst);
            CHECK(window.refills() >= 4);  // refilled from its last half (block / 2 positions) several times
        }
    }
}

// Two threads split a token's products: the tied output's rows (from a quarter million floats of table)
// and the one-row products (from as many of a weight). Each output is the same sums on any thread.
TEST_CASE("gpt2's cached logits are the same bits on 1 and 2 threads", "[decoder][gpt2][threads]") {
    Generator g(41);
    // wte (V, C) 512,000 floats and c_fc (C, 4C) 262,144: both split
    constexpr int64_t V = 2000;
    nn::GPT2 model({.vocab = V, .n_embd = 256, .n_head = 4, .n_layer = 2, .block = 16}, g);
    spread(model, g);
    const std::vector<int64_t> prompt = {7, 1999, 3, 99, 1};
    const auto logits_of = [&](int threads) {
        set_num_threads(threads);
        nn::GenerationWindow window(model.cached_decoder());
        std::vector<float> all;
        std::span<const float> logits = window.start(prompt);
        for (int64_t i = 0; i < 20; ++i) {  // past a refill
            all.insert(all.end(), logits.begin(), logits.end());
            logits = window.push((i * 577 + 3) % V);
        }
        set_num_threads(1);
        return all;
    };
    const std::vector<float> one = logits_of(1);
    CHECK(logits_of(2) == one);
}

TEST_CASE("the window keeps its last half when full, and the reference reads exactly that window", "[decoder]") {
    Generator g(5);
    nn::GPT model({.vocab = kVocab, .n_embd = 8, .n_head = 2, .n_layer = 1, .block = kBlock}, g);
    spread(model, g);
    nn::GenerationWindow window(nn::window_decoder(model));
    // the policy by hand: crop the context to the block; a full window drops its first block - block/2
    std::vector<int64_t> expected = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    int64_t refills = 0;
    window.start(expected);
    expected.erase(expected.begin(), expected.end() - kBlock);
    CHECK(std::ranges::equal(window.window(), expected));
    for (int64_t id = 0; id < 3 * kBlock; ++id) {
        const auto logits = window.push(id % kVocab);
        if (static_cast<int64_t>(expected.size()) == kBlock) {
            expected.erase(expected.begin(), expected.begin() + kBlock - kBlock / 2);
            ++refills;
        }
        expected.push_back(id % kVocab);
        REQUIRE(std::ranges::equal(window.window(), expected));
        // forward() on the window by hand: its last row
        NoGradGuard no_grad;
        const auto T = static_cast<int64_t>(expected.size());
        const Tensor all = model.forward(expected, 1, T);  // (1, T, V)
        const auto last = all.data().subspan(static_cast<size_t>((T - 1) * kVocab));
        REQUIRE(std::ranges::equal(logits, last));
    }
    CHECK(refills == 6);  // the start filled the window: refills at pushes 1, 5, 9, 13, 17 and 21
    CHECK(window.refills() == refills);
}

TEST_CASE("the same seed samples the same text with and without the cache, for every model kind", "[decoder]") {
    for (const Case& c : all_models()) {
        SECTION(c.name) {
            Generator g(7);
            auto model = make_spread(c, g);
            for (const nn::SampleOptions& options :
                 {nn::SampleOptions{.temperature = 1.0f}, nn::SampleOptions{.temperature = 0.8f, .top_k = 3}}) {
                Generator a(123), b(123);
                nn::SampleOptions cached = options, uncached = options;
                uncached.cache = false;
                const auto with = nn::generate(*model, {2}, 4 * kBlock + 3, cached, a);
                const auto without = nn::generate(*model, {2}, 4 * kBlock + 3, uncached, b);
                CHECK(with == without);
                CHECK(a.state() == b.state());
            }
        }
    }
}

TEST_CASE("generate over a caller's window: one window serves every sample, and its decoder says whether a cache ran",
          "[decoder][gpt2]") {
    Generator g(13);
    nn::GPT2 model({.vocab = kVocab, .n_embd = 12, .n_head = 3, .n_layer = 2, .block = kBlock}, g);
    spread(model, g);
    nn::GenerationWindow window(model.cached_decoder());
    CHECK(window.decoder().cached());
    Generator a(5), b(5);
    for (const std::vector<int64_t>& context : {std::vector<int64_t>{1, 2}, std::vector<int64_t>{9}}) {
        const auto reused = nn::generate(model, window, context, 3 * kBlock, {.top_k = 4}, a);
        const auto fresh = nn::generate(model, context, 3 * kBlock, {.top_k = 4, .cache = false}, b);
        CHECK(reused == fresh);
    }
    // a model that does not say it can continue a sequence from caches (can_cache()) reruns the window
    struct WithoutCache : nn::Bigram {
        using nn::Bigram::Bigram;
        bool can_cache() const override { return false; }
    } plain({.vocab = kVocab}, g);
    nn::GenerationWindow plain_window(plain.cached_decoder());
    CHECK_FALSE(plain_window.decoder().cached());
    CHECK(nn::generate(plain, plain_window, {1}, 5, {}, a).size() == 5);
    nn::GPT2 longer({.vocab = kVocab, .n_embd = 12, .n_head = 3, .n_layer = 1, .block = 2 * kBlock}, g);
    CHECK_THROWS_WITH(nn::generate(longer, window, {1}, 2, {}, a),
                      Contains("the window holds 8 tokens, the model's block is 16"));
}

TEST_CASE("generate's emit sees each token as it is drawn and can stop the generation", "[decoder]") {
    Generator g(9);
    nn::GPT model({.vocab = kVocab, .n_embd = 8, .n_head = 2, .n_layer = 1, .block = kBlock}, g);
    spread(model, g);
    Generator a(1), b(1);
    const auto all = nn::generate(model, {0}, 30, {}, a);
    std::vector<int64_t> seen;
    const auto stopped = nn::generate(model, {0}, 30, {}, b, [&](int64_t id) {
        seen.push_back(id);
        return seen.size() < 12;
    });
    CHECK(seen == stopped);
    REQUIRE(stopped.size() == 12);
    CHECK(std::ranges::equal(stopped, std::span(all).first(12)));
}

TEST_CASE("a decoder refuses ids outside the vocabulary and a window past the block", "[decoder]") {
    Generator g(3);
    for (const Case& c : all_models()) {
        SECTION(c.name) {
            auto model = c.make(g);
            std::vector<std::unique_ptr<nn::Decoder>> decoders;
            decoders.push_back(model->cached_decoder());
            decoders.push_back(nn::window_decoder(*model));
            for (auto& decoder : decoders) {
                CHECK_THROWS_WITH(decoder->append(kVocab), Contains(std::to_string(kVocab)) && Contains("vocabulary"));
                CHECK_THROWS_WITH(decoder->append(std::span<const int64_t>()), Contains("at least one id"));
                std::vector<int64_t> full(static_cast<size_t>(model->block_size()), 1);
                decoder->append(full);
                CHECK(decoder->length() == model->block_size());
                CHECK_THROWS_WITH(decoder->append(1),
                                  Contains(fmt::format("past the block size {}", model->block_size())));
                decoder->clear();
                CHECK(decoder->length() == 0);
                CHECK(decoder->append(1).size() == static_cast<size_t>(kVocab));
            }
        }
    }
}

TEST_CASE("the lesson: a prefix's attention is unchanged by what follows, only under the mask", "[decoder][tutorial]") {
    Generator gen(17);
    const auto masked = nn::study::prefix_stability({.n_embd = 16, .head_size = 8}, 5, 12, gen);
    CHECK(masked.attention_change <= 1e-6);
    CHECK(masked.output_change <= 1e-5);
    CHECK(masked.weight_on_later == 0.0);
    const auto unmasked = nn::study::prefix_stability({.n_embd = 16, .head_size = 8, .causal = false}, 5, 12, gen);
    CHECK(unmasked.attention_change > 0.01);  // every row also reads the 7 later positions
    CHECK(unmasked.weight_on_later > 0.01);
    CHECK_THROWS_WITH(nn::study::prefix_stability({.n_embd = 4, .head_size = 4}, 6, 6, gen), Contains("prefix 6"));
}

TEST_CASE("the lesson: what the cache saves grows with the window", "[decoder][tutorial]") {
    // one position: the cache has nothing to save
    const auto one = nn::study::cache_cost(384, 6, 65, 1);
    CHECK(one.cached == one.uncached);
    // by hand for C = 4, L = 1, V = 3, T = 2: uncached 12*16*2 + 4*2*3 + 4*3*2 = 384 + 24 + 24; cached 192 + 16 + 12
    const auto small = nn::study::cache_cost(4, 1, 3, 2);
    CHECK(small.uncached == 432.0);
    CHECK(small.cached == 220.0);
    double last = 0;
    for (int64_t T : {8, 32, 64, 128, 256}) {
        const auto cost = nn::study::cache_cost(384, 6, 65, T);
        CHECK(cost.saving() > last);
        CHECK(cost.saving() > 0.9 * static_cast<double>(T));  // about T: the cache does one row of T
        last = cost.saving();
    }
}
