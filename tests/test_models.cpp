// nn/models.h: every rung of the ladder against finite differences with respect to all of its
// parameters, the shapes and errors of forward, make_model's validation, the config's metadata round
// trip, dropout in training mode only, and the documented parameter names.
#include <autograd/kernels.h>
#include <nn/models.h>
#include <nn/train/optim.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>

#include "helpers.h"

using Catch::Matchers::Contains;
using namespace autograd;
using test::Inputs;

namespace {

// The tiny sizes every gradient check uses: V 5, C 4 (two heads of 2), block 4, a (2, 4) window.
constexpr int64_t kVocab = 5, kEmbd = 4, kBlock = 4, kB = 2, kT = 4;
const std::vector<int64_t> kIds = {0, 3, 1, 4, 2, 2, 4, 0};  // (2, 4), every id of the vocabulary used

struct NamedModel {
    std::string name;
    std::function<std::unique_ptr<nn::LanguageModel>(Generator&)> make;
};

// One entry per model the brief names, built directly from its own options struct.
std::vector<NamedModel> tiny_models() {
    return {
        {"Bigram", [](Generator& g) { return std::make_unique<nn::Bigram>(nn::BigramOptions{.vocab = kVocab}, g); }},
        {"AverageModel",
         [](Generator& g) {
             return std::make_unique<nn::AverageModel>(
                 nn::AverageModelOptions{.vocab = kVocab, .n_embd = kEmbd, .block = kBlock}, g);
         }},
        {"SingleHead",
         [](Generator& g) {
             return std::make_unique<nn::SingleHead>(
                 nn::SingleHeadOptions{.vocab = kVocab, .n_embd = kEmbd, .head_size = 3, .block = kBlock}, g);
         }},
        {"MultiHead",
         [](Generator& g) {
             return std::make_unique<nn::MultiHead>(
                 nn::MultiHeadOptions{.vocab = kVocab, .n_embd = kEmbd, .n_head = 2, .block = kBlock}, g);
         }},
        {"MultiHead with feed_forward",
         [](Generator& g) {
             return std::make_unique<nn::MultiHead>(
                 nn::MultiHeadOptions{
                     .vocab = kVocab, .n_embd = kEmbd, .n_head = 2, .block = kBlock, .feed_forward = true},
                 g);
         }},
        {"GPT",
         [](Generator& g) {
             return std::make_unique<nn::GPT>(
                 nn::GPTOptions{
                     .vocab = kVocab, .n_embd = kEmbd, .n_head = 2, .n_layer = 2, .block = kBlock, .dropout = 0.0f},
                 g);
         }},
    };
}

bool same_bits(const Tensor& a, const Tensor& b) {
    const auto bits = [](float v) { return std::bit_cast<uint32_t>(v); };
    return a.shape() == b.shape() && std::ranges::equal(a.data(), b.data(), {}, bits, bits);
}

std::vector<std::string> names_of(const nn::Module& m) {
    std::vector<std::string> names;
    for (const auto& [name, p] : m.named_parameters()) names.push_back(name);
    return names;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
    return std::ranges::find(names, name) != names.end();
}

// The message of the std::invalid_argument make_model throws; fails the test otherwise.
std::string make_model_error(const nn::ModelConfig& config) {
    Generator gen(1);
    try {
        (void)nn::make_model(config, gen);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    FAIL("make_model accepted kind '" << fmt::format("{}", config.kind) << "' n_embd " << config.n_embd << " n_head "
                                      << config.n_head);
    return {};
}

}  // namespace

TEST_CASE("Every model's gradients match finite differences for all its parameters", "[models][gradcheck]") {
    for (const NamedModel& entry : tiny_models()) {
        DYNAMIC_SECTION(entry.name) {
            Generator gen(11);
            const auto model = entry.make(gen);
            // Initial weights are small (GPT's are N(0, 0.02)): with them most gradients would be far
            // below gradcheck's atol of 2e-3 and any backward would pass. O(1) weights make every
            // gradient large enough to mean something; the loop below proves they are.
            for (Tensor& p : model->parameters())
                for (float& v : p.data()) v = gen.uniform(-1.0f, 1.0f);

            // Every parameter tensor takes part: each receives a gradient well above the tolerance,
            // so the comparison below is not won by tiny numbers on both sides.
            {
                const Tensor logits = model->forward(kIds, kB, kT);
                REQUIRE(logits.shape() == Shape{kB, kT, kVocab});
                logits.backward(randn(logits.shape(), gen));
                for (const auto& [name, p] : model->named_parameters()) {
                    INFO(entry.name << " parameter " << name);
                    REQUIRE(p.grad().defined());
                    float largest = 0.0f;
                    for (float g : p.grad().data()) largest = std::max(largest, std::abs(g));
                    CHECK(largest > 2e-2f);
                }
                model->zero_grad();
            }
            // The default tolerance (|analytic - numeric| <= 2e-3 + 2e-2 |numeric|) is kept; only the
            // step is larger. Through GPT's two blocks (LayerNorm, attention, GELU) the float32 rounding
            // of each forward, divided by 2 eps, dominates at the default eps 1e-3: GPT's worst error was
            // 1e-3 (2.7e-3 for the f + 2f check, over atol). It fell to 3.7e-4 at eps 3e-3 and to 8e-5
            // (2.4e-4 for f + 2f) at eps 1e-2; at 3e-2 the truncation error (~eps^2) takes over (3.6e-3).
            // So eps 1e-2: every model passes with 8x margin, and a wrong backward is still off by O(1).
            REQUIRE_GRADCHECK([&](const Inputs&) { return model->forward(kIds, kB, kT); }, model->parameters(),
                              {.eps = 1e-2});
        }
    }
}

TEST_CASE("Models map a (B, T) window to (B, T, V) logits and check their input", "[models]") {
    for (const NamedModel& entry : tiny_models()) {
        DYNAMIC_SECTION(entry.name) {
            Generator gen(12);
            const auto model = entry.make(gen);
            CHECK(model->vocab_size() == kVocab);
            for (int64_t T = 1; T <= model->block_size(); ++T) {
                const std::vector<int64_t> ids(static_cast<size_t>(3 * T), 1);
                CHECK(model->forward(ids, 3, T).shape() == Shape{3, T, kVocab});
            }
            // An id outside [0, V) is an error, whatever its position.
            for (int64_t bad : {int64_t{-1}, kVocab, int64_t{1000}}) {
                std::vector<int64_t> ids = kIds;
                ids[5] = bad;
                CHECK_THROWS_WITH(model->forward(ids, kB, kT), Contains(fmt::format("id {}", bad)));
            }
            // The ids must fill the window exactly.
            CHECK_THROWS_AS(model->forward(std::vector<int64_t>(7, 0), kB, kT), std::invalid_argument);
            CHECK_THROWS_AS(model->forward({}, 0, kT), std::invalid_argument);
        }
    }
}

TEST_CASE("A window longer than the block is rejected with a message naming the model", "[models]") {
    for (const NamedModel& entry : tiny_models()) {
        if (entry.name == "Bigram") continue;  // reads one character at a time: see the next test
        DYNAMIC_SECTION(entry.name) {
            Generator gen(13);
            const auto model = entry.make(gen);
            const int64_t T = model->block_size() + 1;
            const std::vector<int64_t> ids(static_cast<size_t>(2 * T), 0);
            const std::string model_name =
                entry.name.substr(0, entry.name.find(' '));  // "MultiHead with..." -> "MultiHead"
            CHECK_THROWS_WITH(model->forward(ids, 2, T),
                              Contains(model_name) && Contains("longer than the block size 4"));
        }
    }
}

TEST_CASE("Bigram reads each position's own character, so any window length works", "[models]") {
    Generator gen(14);
    nn::Bigram model({.vocab = kVocab}, gen);
    CHECK(model.block_size() == 1);
    const std::vector<int64_t> ids = {2, 0, 4, 4, 1, 3, 2};
    const Tensor logits = model.forward(ids, 1, 7);  // T 7 > block 1
    REQUIRE(logits.shape() == Shape{1, 7, kVocab});
    for (int64_t t = 0; t < 7; ++t)
        for (int64_t v = 0; v < kVocab; ++v) CHECK(logits.at({0, t, v}) == model.logits_table.weight.at({ids[t], v}));
    CHECK_THROWS_WITH(model.forward(ids, 2, 7), Contains("Bigram"));
}

TEST_CASE("make_model builds each kind and validates the config with clear messages", "[models]") {
    const nn::ModelConfig base{
        .kind = nn::ModelKind::gpt, .vocab = 7, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = 6};
    for (const nn::ModelKindInfo& info : nn::model_kinds()) {
        const nn::ModelKind kind = info.kind;
        nn::ModelConfig c = base;
        c.kind = kind;
        Generator gen(15);
        const auto model = nn::make_model(c, gen);
        REQUIRE(model);
        CHECK(model->vocab_size() == 7);
        CHECK(model->block_size() == (kind == nn::ModelKind::bigram ? 1 : 6));
        // the table's size is the model's, to the parameter
        CHECK(nn::model_size(c).parameters == double(model->parameter_count()));
        const std::vector<int64_t> ids(6, 3);
        CHECK(model->forward(ids, 1, 6).shape() == Shape{1, 6, 7});
    }
    {
        nn::ModelConfig c = base;
        c.kind = nn::ModelKind::multihead;
        c.feed_forward = true;
        Generator gen(15);
        const auto model = nn::make_model(c, gen);
        CHECK(has(names_of(*model), "feed_forward.up.weight"));
    }

    nn::ModelConfig c = base;
    c.n_head = 3;  // does not divide 8
    for (const nn::ModelKind kind : {nn::ModelKind::multihead, nn::ModelKind::gpt}) {
        c.kind = kind;
        CHECK_THAT(make_model_error(c), Contains("n_head 3 must divide n_embd 8"));
    }
    // The base config with one change, and what make_model says about it.
    const auto error_with = [&](auto change) {
        nn::ModelConfig changed = base;
        change(changed);
        return make_model_error(changed);
    };
    CHECK_THAT(error_with([](nn::ModelConfig& m) { m.n_head = 0; }), Contains("n_head 0"));
    CHECK_THAT(error_with([](nn::ModelConfig& m) { m.vocab = 0; }), Contains("vocab must be positive, got 0"));
    CHECK_THAT(error_with([](nn::ModelConfig& m) { m.n_embd = 0; }), Contains("n_embd (0)"));
    CHECK_THAT(error_with([](nn::ModelConfig& m) { m.block = 0; }), Contains("block (0)"));
    CHECK_THAT(error_with([](nn::ModelConfig& m) { m.block = -3; }), Contains("block (-3)"));
    CHECK_THAT(error_with([](nn::ModelConfig& m) { m.n_layer = 0; }), Contains("n_layer must be positive, got 0"));
    for (float p : {-0.1f, 1.0f, std::numeric_limits<float>::quiet_NaN()})
        CHECK_THAT(error_with([p](nn::ModelConfig& m) { m.dropout = p; }), Contains("dropout"));
}

TEST_CASE("ModelConfig's settings make its metadata: the keys checkpoints hold, each one required", "[models]") {
    const std::vector<std::string> keys = {"model.block",  "model.dropout", "model.feed_forward", "model.gpt2_init",
                                           "model.kind",   "model.n_embd",  "model.n_head",       "model.n_layer",
                                           "model.scaled", "model.vocab"};
    const auto metadata = nn::ModelConfig{.vocab = 5}.to_metadata();
    std::vector<std::string> written;
    for (const auto& [key, value] : metadata) written.push_back(key);
    CHECK(written == keys);
    // every field but the kind is a row; gelu_exact is written only for the kinds that read it (gpt2, not
    // this gpt), scaled for those with heads, and llama's five (n_kv_head, ffn_hidden, rope_theta,
    // norm_eps, tied_embeddings) for llama only (test_llama.cpp)
    CHECK(nn::model_settings().size() == keys.size() + 5);  // (gelu_exact in place of the kind)
    for (const nn::ModelSetting& setting : nn::model_settings()) {
        if (setting.added_later) continue;  // (test_gpt2.cpp: absent means its default)
        auto m = metadata;
        m.erase(std::string(setting.key));
        CHECK_THROWS_WITH(nn::ModelConfig::from_metadata(m),
                          Contains(fmt::format("metadata has no '{}'", setting.key)));
        CHECK(&nn::model_setting(setting.key) == &setting);
    }
    CHECK_THROWS_WITH(nn::model_setting("--n-embd"),
                      Contains("no setting '--n-embd'"));  // keys only: the library has no flags
}

TEST_CASE("ModelConfig survives a trip through checkpoint metadata and rejects a malformed field", "[models]") {
    const nn::ModelConfig config{.kind = nn::ModelKind::multihead,
                                 .vocab = 65,
                                 .n_embd = 48,
                                 .n_head = 6,
                                 .n_layer = 3,
                                 .block = 17,
                                 .dropout = 0.1f,
                                 .feed_forward = true,
                                 .gpt2_init = false};
    const auto metadata = config.to_metadata();
    CHECK(metadata.at("model.kind") == "multihead");
    CHECK(metadata.at("model.n_embd") == "48");
    CHECK(metadata.at("model.gpt2_init") == "0");
    CHECK(nn::ModelConfig::from_metadata(metadata) == config);
    const nn::ModelConfig defaults;
    CHECK(nn::ModelConfig::from_metadata(defaults.to_metadata()) == defaults);
    // dropout values that have no short decimal form come back bit for bit too
    for (float p : {0.3f, 1.0f / 3.0f, 0.123456789f}) {
        nn::ModelConfig c = config;
        c.dropout = p;
        CHECK(std::bit_cast<uint32_t>(nn::ModelConfig::from_metadata(c.to_metadata()).dropout) ==
              std::bit_cast<uint32_t>(p));
    }

    for (const std::string bad : {"abc", "12x", "", "4.5"}) {
        auto m = metadata;
        m["model.n_embd"] = bad;
        CHECK_THROWS_WITH(nn::ModelConfig::from_metadata(m),
                          Contains("model.n_embd") && Contains("not a whole number"));
    }
    auto m = metadata;
    m["model.dropout"] = "lots";
    CHECK_THROWS_WITH(nn::ModelConfig::from_metadata(m), Contains("model.dropout") && Contains("lots"));
    m = metadata;
    m.erase("model.block");
    CHECK_THROWS_WITH(nn::ModelConfig::from_metadata(m), Contains("model.block"));
    for (const std::string bad : {"lstm", "", "GPT"}) {
        m = metadata;
        m["model.kind"] = bad;
        CHECK_THROWS_WITH(nn::ModelConfig::from_metadata(m),
                          Contains("unknown kind '" + bad + "'") && Contains("bigram"));
    }
}

TEST_CASE("The model registry: one entry per kind, names that round-trip, options checked where they apply",
          "[models]") {
    // every kind once, in ladder order, under the name checkpoints store
    const std::vector<std::string> expected = {"bigram", "average", "head",  "multihead",
                                               "gpt",    "gpt2",    "llama", "attn_only"};
    REQUIRE(nn::model_kinds().size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        const nn::ModelKindInfo& info = nn::model_kinds()[i];
        CHECK(info.name == expected[i]);
        CHECK(nn::parse_model_kind(expected[i]) == info.kind);
        CHECK(&nn::model_kind_info(info.kind) == &info);
        CHECK(fmt::format("{}", info.kind) == expected[i]);
        const nn::ModelConfig config{.kind = info.kind, .vocab = 5};
        CHECK(config.to_metadata().at("model.kind") == expected[i]);  // the names old checkpoints hold
    }
    CHECK_FALSE(nn::parse_model_kind("lstm").has_value());
    CHECK(nn::model_kind_names(", ", " or ") == "bigram, average, head, multihead, gpt, gpt2, llama or attn_only");

    // options a kind does not read are not checked: a head has no n_head, a multihead no n_layer
    Generator gen(3);
    const nn::ModelConfig head{
        .kind = nn::ModelKind::head, .vocab = 5, .n_embd = 8, .n_head = 3, .n_layer = 0, .block = 4};
    CHECK(nn::make_model(head, gen)->parameter_count() > 0);
    CHECK_FALSE(nn::model_kind_info(nn::ModelKind::head).reads(nn::option_n_head));
    CHECK(nn::model_kind_info(nn::ModelKind::gpt).reads(nn::option_dropout));
    CHECK_FALSE(nn::model_kind_info(nn::ModelKind::multihead).reads(nn::option_dropout));
    // ... except feed_forward, refused wherever the model has no feed-forward layer to add
    for (const nn::ModelKind kind : {nn::ModelKind::bigram, nn::ModelKind::head, nn::ModelKind::gpt}) {
        nn::ModelConfig c{.kind = kind, .vocab = 5, .n_embd = 8, .n_head = 2, .block = 4, .feed_forward = true};
        CHECK_THAT(make_model_error(c), Contains("feed_forward applies to multihead only"));
    }
    // and a bigram reads neither n_embd nor block
    const nn::ModelConfig bigram{.kind = nn::ModelKind::bigram, .vocab = 5, .n_embd = 0, .block = 0};
    CHECK(nn::make_model(bigram, gen)->parameter_count() == 25);
    // memory-estimate inputs: layers and heads per layer
    const nn::ModelConfig gpt{
        .kind = nn::ModelKind::gpt, .vocab = 5, .n_embd = 8, .n_head = 2, .n_layer = 3, .block = 4};
    CHECK(nn::model_size(gpt).layers == 3);
    CHECK(nn::model_size(gpt).heads_per_layer == 2);
    CHECK(nn::model_size(bigram).heads_per_layer == 0);
}

// issue 40: each kind's size comes from its constructor run shapes-only; the expectations here are the
// parameters counted by hand from each model's layers (V vocab, C n_embd, T block, L n_layer; a Linear
// with a bias unless noted).
TEST_CASE("model_size counts each kind's parameters from its shapes, whatever their size, allocating nothing",
          "[models]") {
    const auto expected = [](const nn::ModelConfig& c) {
        const double V = double(c.vocab), C = double(c.n_embd), T = double(c.block), L = double(c.n_layer);
        const double tables = V * C + T * C, lm_head = C * V + V;
        const double attention = 3 * C * C + C * C + C;  // heads' query, key, value (no bias), projection
        const double feed_forward = 8 * C * C + 5 * C;   // C -> 4C -> C
        switch (c.kind.index()) {
            case 0:
                return V * V;
            case 1:
                return tables + lm_head;
            case 2:
                return tables + 3 * C * C + lm_head;
            case 3:
                return tables + attention + (c.feed_forward ? feed_forward : 0) + lm_head;
            case 4:
                return tables + L * (4 * C + attention + feed_forward) + 2 * C + lm_head;
            default:  // gpt2: c_attn and c_proj with biases, the output tied to the token table
                return tables + L * (4 * C + 3 * C * C + 3 * C + C * C + C + feed_forward) + 2 * C;
        }
    };
    for (const nn::ModelKind kind : {nn::ModelKind::bigram, nn::ModelKind::average, nn::ModelKind::head,
                                     nn::ModelKind::multihead, nn::ModelKind::gpt, nn::ModelKind::gpt2})
        for (const bool feed_forward : {false, true}) {
            if (feed_forward && kind != nn::ModelKind::multihead) continue;
            const nn::ModelConfig c{.kind = kind,
                                    .vocab = 13,
                                    .n_embd = 12,
                                    .n_head = 3,
                                    .n_layer = 2,
                                    .block = 5,
                                    .feed_forward = feed_forward};
            INFO(fmt::format("{} feed_forward {}", kind, feed_forward));
            Generator gen(1);
            CHECK(nn::model_size(c).parameters == expected(c));
            CHECK(nn::model_size(c).parameters == double(nn::make_model(c, gen)->parameter_count()));
            const bool layered = kind == nn::ModelKind::gpt || kind == nn::ModelKind::gpt2;
            CHECK(nn::model_size(c).layers == (layered ? 2 : 1));
            CHECK(nn::model_size(c).heads_per_layer == (kind.index() < 2 ? 0 : kind == nn::ModelKind::head ? 1 : 3));
        }
    // sizes no machine holds: counted from the shapes alone (a real model would need exabytes)
    const nn::ModelConfig absurd{.kind = nn::ModelKind::gpt,
                                 .vocab = 65,
                                 .n_embd = int64_t{1} << 30,
                                 .n_head = 1,
                                 .n_layer = 4,
                                 .block = 1 << 20};
    CHECK(nn::model_size(absurd).parameters == Approx(expected(absurd)).epsilon(1e-12));  // (sums in another order)
    CHECK(nn::model_size(absurd).parameters > 5e19);
    // a structure too large to hold is refused by name, before it is built
    const nn::ModelConfig many{
        .kind = nn::ModelKind::gpt, .vocab = 65, .n_embd = 4096, .n_head = 4096, .n_layer = 1024, .block = 8};
    CHECK_THROWS_WITH(nn::model_size(many),
                      Contains("model: a gpt of n_embd 4096 n_head 4096 n_layer 1024 would hold more than "
                               "262144 parameter tensors; choose smaller sizes"));
    // and a config validate_model_config refuses is refused as make_model refuses it
    CHECK_THROWS_WITH(nn::model_size({.kind = nn::ModelKind::gpt, .vocab = 5, .n_embd = 8, .n_head = 3}),
                      Contains("must divide"));
}

TEST_CASE("The positional models share their embeddings under the same names", "[models]") {
    Generator gen(4);
    nn::ModelConfig c{.vocab = 5, .n_embd = 8, .n_head = 2, .n_layer = 1, .block = 4};
    for (const nn::ModelKind kind :
         {nn::ModelKind::average, nn::ModelKind::head, nn::ModelKind::multihead, nn::ModelKind::gpt}) {
        c.kind = kind;
        const auto model = nn::make_model(c, gen);
        auto* positional = dynamic_cast<nn::PositionalModel*>(model.get());
        REQUIRE(positional);
        // registered first, under the names every checkpoint so far has
        const auto params = model->named_parameters();
        CHECK(params[0].first == "token.weight");
        CHECK(params[0].second.shape() == Shape{5, 8});
        CHECK(params[1].first == "position.weight");
        CHECK(params[1].second.shape() == Shape{4, 8});
        CHECK(model->vocab_size() == 5);
        CHECK(model->block_size() == 4);
        // embed is the two tables' rows summed
        const std::vector<int64_t> ids = {1, 3};
        const Tensor x = positional->embed(ids, 1, 2);  // (1, 2, C)
        for (int64_t t = 0; t < 2; ++t)
            for (int64_t j = 0; j < 8; ++j)
                CHECK(x.data()[size_t(t * 8 + j)] == positional->token.weight.data()[size_t(ids[t] * 8 + j)] +
                                                         positional->position.weight.data()[size_t(t * 8 + j)]);
    }
}

TEST_CASE("attention_heads finds every head of any model by what it holds: layer, head, name", "[models][attention]") {
    Generator gen(4);
    const auto listed = [](const nn::Module& m) {
        std::vector<std::string> out;
        for (const nn::AttentionHead& h : nn::attention_heads(m))
            out.push_back(fmt::format("{} {} {}", h.layer, h.head, h.name));
        return out;
    };
    nn::GPT gpt({.vocab = kVocab, .n_embd = kEmbd, .n_head = 2, .n_layer = 2, .block = kBlock}, gen);
    CHECK(listed(gpt) == std::vector<std::string>{"0 0 blocks.0.attention.heads.0", "0 1 blocks.0.attention.heads.1",
                                                  "1 0 blocks.1.attention.heads.0", "1 1 blocks.1.attention.heads.1"});
    CHECK(&nn::attention_heads(gpt)[3].module == gpt.blocks[1]->attention.heads[1].get());
    nn::SingleHead single({.vocab = kVocab, .n_embd = kEmbd, .block = kBlock}, gen);
    CHECK(listed(single) == std::vector<std::string>{"0 0 head"});
    CHECK(&nn::attention_heads(single)[0].module == &single.head);
    nn::MultiHead multi({.vocab = kVocab, .n_embd = kEmbd, .n_head = 2, .block = kBlock, .feed_forward = true}, gen);
    CHECK(listed(multi) == std::vector<std::string>{"0 0 attention.heads.0", "0 1 attention.heads.1"});
    CHECK(nn::attention_heads(nn::Bigram({.vocab = kVocab}, gen)).empty());
    CHECK(nn::attention_heads(nn::AverageModel({.vocab = kVocab, .n_embd = kEmbd, .block = kBlock}, gen)).empty());

    // A kind of the test's own: a lone head, then a layer of two under a name of its own; found all the same.
    struct Pair : nn::Module {
        nn::Head left, right;
        explicit Pair(Generator& g) : left({.n_embd = 4, .head_size = 2}, g), right({.n_embd = 4, .head_size = 2}, g) {
            register_module("left", left);
            register_module("right", right);
        }
    };
    struct Odd : nn::Module {
        nn::Head lone;
        Pair pair;
        explicit Odd(Generator& g) : lone({.n_embd = 4, .head_size = 2}, g), pair(g) {
            register_module("lone", lone);
            register_module("pair", pair);
        }
    };
    CHECK(listed(Odd(gen)) == std::vector<std::string>{"0 0 lone", "1 0 pair.left", "1 1 pair.right"});
}

TEST_CASE("GPT applies dropout in training mode only, and eval mode is deterministic", "[models]") {
    Generator gen(16);
    nn::GPT model({.vocab = kVocab, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = kBlock, .dropout = 0.3f}, gen);
    model.train();
    const Tensor train1 = model.forward(kIds, kB, kT);
    const Tensor train2 = model.forward(kIds, kB, kT);
    model.eval();
    const Tensor eval1 = model.forward(kIds, kB, kT);
    const Tensor eval2 = model.forward(kIds, kB, kT);
    CHECK(test::max_abs_diff(train1, eval1) > 1e-3);
    CHECK(test::max_abs_diff(train1, train2) > 1e-3);  // a new mask each forward
    CHECK(same_bits(eval1, eval2));

    // Without dropout, training mode changes nothing.
    Generator same(17), again(17);
    nn::GPT plain({.vocab = kVocab, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = kBlock}, same);
    const Tensor in_training = plain.forward(kIds, kB, kT);
    plain.eval();
    CHECK(same_bits(in_training, plain.forward(kIds, kB, kT)));

    // The dropout stream is the model's own generator: the same state gives the same masks.
    nn::GPT a(
        {.vocab = kVocab, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = kBlock, .dropout = 0.3f, .dropout_seed = 5},
        again);
    const auto state = a.dropout_generator().state();
    const Tensor first = a.forward(kIds, kB, kT);
    a.dropout_generator().set_state(state);
    CHECK(same_bits(first, a.forward(kIds, kB, kT)));
}

TEST_CASE("Parameters carry the documented names, and only Linear weights decay", "[models]") {
    Generator gen(18);
    nn::GPT gpt({.vocab = kVocab, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = kBlock}, gen);
    const auto names = names_of(gpt);
    for (const std::string name :
         {"token.weight", "position.weight", "blocks.0.norm1.gain", "blocks.0.norm1.bias",
          "blocks.0.attention.heads.0.query.weight", "blocks.0.attention.heads.1.key.weight",
          "blocks.1.attention.heads.1.value.weight", "blocks.0.attention.projection.weight",
          "blocks.0.attention.projection.bias", "blocks.1.norm2.gain", "blocks.1.feed_forward.up.weight",
          "blocks.1.feed_forward.up.bias", "blocks.1.feed_forward.down.weight", "final_norm.gain", "final_norm.bias",
          "lm_head.weight", "lm_head.bias"})
        CHECK(has(names, name));
    CHECK_FALSE(has(names, "blocks.2.norm1.gain"));
    CHECK_FALSE(has(names, "blocks.0.attention.heads.2.query.weight"));
    CHECK_FALSE(has(names, "blocks.0.attention.heads.0.query.bias"));  // the head's matrices have no bias
    // C 8, 4C 32, V 5, block 4, two layers:
    const int64_t per_block = 2 * (2 * 8)                      // two LayerNorms
                              + 3 * 8 * 8 + (8 * 8 + 8)        // q, k, v of both heads; projection
                              + (8 * 32 + 32) + (32 * 8 + 8);  // feed-forward up and down
    CHECK(gpt.parameter_count() == 5 * 8 + 4 * 8 + 2 * per_block + 2 * 8 + (8 * 5 + 5));

    {
        Generator g(19);
        nn::SingleHead head({.vocab = kVocab, .n_embd = 8, .block = kBlock}, g);
        CHECK(names_of(head) == std::vector<std::string>{"token.weight", "position.weight", "head.query.weight",
                                                         "head.key.weight", "head.value.weight", "lm_head.weight",
                                                         "lm_head.bias"});
        nn::Bigram bigram({.vocab = kVocab}, g);
        CHECK(names_of(bigram) == std::vector<std::string>{"logits_table.weight"});
        CHECK(bigram.decayed_parameter_names().empty());  // an embedding table only
        nn::MultiHead multi({.vocab = kVocab, .n_embd = 8, .n_head = 2, .block = kBlock, .feed_forward = true}, g);
        CHECK(has(names_of(multi), "attention.heads.1.query.weight"));
        CHECK(has(names_of(multi), "feed_forward.down.weight"));
    }

    // Decay goes to exactly the Linear weights: the names ending in ".weight" that are not embedding
    // tables (LayerNorm's parameters are gain and bias).
    for (const NamedModel& entry : tiny_models()) {
        Generator g(20);
        const auto model = entry.make(g);
        std::vector<std::string> expected;
        for (const std::string& name : names_of(*model))
            if (name.ends_with(".weight") && !name.starts_with("token.") && !name.starts_with("position.") &&
                !name.starts_with("logits_table."))
                expected.push_back(name);
        const auto decayed = model->decayed_parameter_names();
        INFO(entry.name);
        CHECK(decayed == expected);
        for (const std::string& name : decayed) {
            CHECK_FALSE(name.ends_with(".bias"));
            CHECK_FALSE(name.ends_with(".gain"));
            CHECK(name.find("norm") == std::string::npos);
        }
    }
    const auto decayed = gpt.decayed_parameter_names();
    CHECK(has(decayed, "blocks.0.attention.heads.0.query.weight"));
    CHECK(has(decayed, "blocks.1.feed_forward.down.weight"));
    CHECK(has(decayed, "lm_head.weight"));
    CHECK_FALSE(has(decayed, "token.weight"));
    CHECK_FALSE(has(decayed, "position.weight"));
    CHECK_FALSE(has(decayed, "lm_head.bias"));
    CHECK_FALSE(has(decayed, "final_norm.gain"));
}

namespace {
// Three AdamW steps of a 2-layer GPT on `threads` threads from a fixed start, on one random batch drawn
// from data_seed: the step losses, and every weight after the last step. Big enough that every parallel
// path splits (kMinElementsPerThread): (B, T, 4C) = 65,536 elements in the feed-forward, (B, T, T)
// scores of 8,192 rows' worth per head, gemms over the thread threshold.
struct TrainedGpt {
    std::vector<float> losses, weights;
};
TrainedGpt train_gpt_three_steps(int threads, uint64_t data_seed) {
    const nn::ModelConfig config{
        .kind = nn::ModelKind::gpt, .vocab = 65, .n_embd = 64, .n_head = 4, .n_layer = 2, .block = 32};
    const int64_t B = 8, T = 32;
    Generator data(data_seed);
    std::vector<int64_t> ids(B * T), targets(B * T);
    for (auto& id : ids) id = static_cast<int64_t>(data.next_u64() % 65);
    for (auto& t : targets) t = static_cast<int64_t>(data.next_u64() % 65);
    autograd::set_num_threads(threads);
    Generator init(5);
    auto model = nn::make_model(config, init);
    nn::AdamW optimizer(*model, {.lr = 1e-3f, .weight_decay = 0.1f});
    TrainedGpt out;
    for (int step = 0; step < 3; ++step) {
        optimizer.zero_grad();
        Tensor loss = cross_entropy(model->forward(ids, B, T), targets);
        loss.backward();
        nn::clip_grad_norm(model->parameters(), 1.0f);
        optimizer.step();
        out.losses.push_back(loss.item());
    }
    for (const Tensor& p : model->parameters()) out.weights.insert(out.weights.end(), p.data().begin(), p.data().end());
    autograd::set_num_threads(1);
    return out;
}
}  // namespace

TEST_CASE("A training step gives the same bits on 1, 2 and 3 threads", "[models][threads]") {
    const TrainedGpt one = train_gpt_three_steps(1, 11);
    for (int threads : {2, 3}) {
        INFO(threads << " threads");
        const TrainedGpt many = train_gpt_three_steps(threads, 11);
        REQUIRE(many.weights.size() == one.weights.size());
        size_t differing = 0;
        for (size_t i = 0; i < one.weights.size(); ++i)
            differing += std::memcmp(&one.weights[i], &many.weights[i], sizeof(float)) != 0;
        CHECK(differing == 0);
        CHECK(many.losses == one.losses);
    }
}

TEST_CASE("Every instruction set trains a GPT as the portable kernels do, within the README's tolerance",
          "[models][isa]") {
    // The README's promise across instruction sets: losses within 1e-5 relative, and weights within 1e-4
    // (a tenth of the learning rate) after three AdamW steps: gemm sums round differently (other K
    // blocks, fused multiply-adds), and so does the AVX-512 softmax rows' exp; AdamW's m / sqrt(v) then
    // magnifies a rounding difference in a gradient near zero. Each run uses both threads.
    const autograd::kernels::Isa saved = autograd::kernels::active_isa();
    autograd::kernels::set_isa(autograd::kernels::Isa::portable);
    const TrainedGpt portable = train_gpt_three_steps(2, 12);
    for (const autograd::kernels::Isa isa : autograd::kernels::available_isas()) {
        INFO("instruction set " << autograd::kernels::isa_name(isa));
        autograd::kernels::set_isa(isa);
        const TrainedGpt run = train_gpt_three_steps(2, 12);
        REQUIRE(run.weights.size() == portable.weights.size());
        double worst_loss = 0.0, worst_weight = 0.0;
        for (size_t i = 0; i < run.losses.size(); ++i)
            worst_loss = std::max(worst_loss, std::abs(double(run.losses[i]) - portable.losses[i]) /
                                                  std::abs(double(portable.losses[i])));
        for (size_t i = 0; i < run.weights.size(); ++i)
            worst_weight = std::max(worst_weight, std::abs(double(run.weights[i]) - portable.weights[i]));
        INFO("losses differ by " << worst_loss << " relative, weights by " << worst_weight);
        CHECK(worst_loss <= 1e-5);
        CHECK(worst_weight <= 1e-4);
    }
    autograd::kernels::set_isa(saved);
}

// --- the divisor (ModelConfig::scaled, train --divisor) ------------------------------------------------

namespace {

nn::ModelConfig divisor_config(nn::ModelKind kind, bool scaled, int64_t block = 6) {
    return {.kind = kind, .vocab = kVocab, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = block, .scaled = scaled};
}

// Draws the attention's weights N(0, 0.3^2), so that q, k and v entries are of everyday size (the heads read
// rows of about unit variance, C = 8) and the divisor changes the attention, and what it adds, visibly: at
// their initial size the softmax is nearly uniform either way, much larger and it is one-hot either way.
void redraw_attention(nn::LanguageModel& model) {
    Generator gen(7);
    for (auto& [name, p] : model.named_parameters())
        if (name.ends_with("query.weight") || name.ends_with("key.weight") || name.ends_with("value.weight") ||
            name.ends_with("projection.weight") || name.ends_with("c_attn.weight"))
            for (float& v : p.data()) v = gen.normal(0.0f, 0.3f);
}

// softmax over j <= i of (q_i . k_j) / divisor, computed naively in double: (B, T, T) as floats.
std::vector<float> naive_attention(const Tensor& q, const Tensor& k, double divisor) {
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2);
    const auto qd = q.data(), kd = k.data();
    std::vector<float> out(static_cast<size_t>(B * T * T), 0.0f);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i) {
            std::vector<double> s(static_cast<size_t>(i + 1));
            double top = -INFINITY, sum = 0;
            for (int64_t j = 0; j <= i; ++j) {
                double dot = 0;
                for (int64_t h = 0; h < H; ++h)
                    dot += double(qd[(b * T + i) * H + h]) * double(kd[(b * T + j) * H + h]);
                top = std::max(top, s[j] = dot / divisor);
            }
            for (double& v : s) sum += v = std::exp(v - top);
            for (int64_t j = 0; j <= i; ++j) out[(b * T + i) * T + j] = float(s[j] / sum);
        }
    return out;
}

double largest_difference(std::span<const float> a, std::span<const float> b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
    return worst;
}

}  // namespace

TEST_CASE(
    "Every kind with heads reads scaled: its heads' weights are softmax(Q K^T / sqrt(H)), or softmax(Q K^T) without "
    "the divisor",
    "[models][divisor]") {
    const std::vector<int64_t> ids = {0, 3, 1, 4, 2, 2, 4, 0, 1, 1, 3, 2};  // (2, 6)
    for (const nn::ModelKind kind :
         {nn::ModelKind::head, nn::ModelKind::multihead, nn::ModelKind::gpt, nn::ModelKind::gpt2}) {
        CHECK(nn::model_kind_info(kind).reads(nn::option_divisor));
        for (const bool scaled : {true, false}) {
            INFO(fmt::format("{} scaled {}", kind, scaled));
            Generator gen(11);
            const auto model = nn::make_model(divisor_config(kind, scaled), gen);
            redraw_attention(*model);
            model->forward(ids, 2, 6);
            const auto heads = nn::attention_heads(*model);
            REQUIRE(!heads.empty());
            for (const nn::AttentionHead& h : heads) {
                INFO(h.name);
                const Tensor x = h.module.last_input(), q = h.module.queries(x), k = h.module.keys(x);
                const double sqrt_width = std::sqrt(double(q.size(2)));
                CHECK(h.module.divisor() == Approx(scaled ? sqrt_width : 1.0));
                const auto weights = h.module.last_attention().data();
                CHECK(largest_difference(weights, naive_attention(q, k, scaled ? sqrt_width : 1.0)) < 2e-5);
                // and the other setting's weights are visibly not these (the check above can fail)
                CHECK(largest_difference(weights, naive_attention(q, k, scaled ? 1.0 : sqrt_width)) > 1e-2);
            }
        }
    }
}

TEST_CASE(
    "Without the divisor, forward over windows long enough for the fused causal_attention gives the cached decoder's "
    "logits, and not the scaled model's",
    "[models][divisor]") {
    constexpr int64_t T = nn::HeadOptions::kFlashFrom + 4;  // forward runs autograd::causal_attention
    std::vector<int64_t> ids(T);
    for (int64_t t = 0; t < T; ++t) ids[t] = (t * 7 + t / 3) % kVocab;
    for (const nn::ModelKind kind : {nn::ModelKind::multihead, nn::ModelKind::gpt, nn::ModelKind::gpt2}) {
        INFO(fmt::format("{}", kind));
        std::vector<std::vector<float>> last_rows;
        for (const bool scaled : {false, true}) {
            Generator gen(5);
            const auto model = nn::make_model(divisor_config(kind, scaled, T), gen);
            redraw_attention(*model);
            const Tensor logits = model->forward(ids, 1, T);  // (1, T, V)
            const auto all = logits.data();
            const std::vector<float> last(all.end() - kVocab, all.end());
            const auto decoder = model->cached_decoder();
            CHECK(largest_difference(last, decoder->append(ids)) < 1e-4);
            last_rows.push_back(last);
        }
        CHECK(largest_difference(last_rows[0], last_rows[1]) > 1e-2);
    }
}

TEST_CASE(
    "scaled is checkpoint metadata for the kinds with heads only, absent means the divisor, and a kind without heads "
    "refuses scaled false",
    "[models][divisor]") {
    const nn::ModelConfig unscaled = divisor_config(nn::ModelKind::gpt, false);
    auto metadata = unscaled.to_metadata();
    CHECK(metadata.at("model.scaled") == "0");
    CHECK(nn::ModelConfig::from_metadata(metadata) == unscaled);
    CHECK(divisor_config(nn::ModelKind::head, true).to_metadata().at("model.scaled") == "1");
    metadata.erase("model.scaled");  // a checkpoint from before the field: the divisor
    CHECK(nn::ModelConfig::from_metadata(metadata).scaled);
    metadata["model.scaled"] = "no";
    CHECK_THROWS_WITH(nn::ModelConfig::from_metadata(metadata),
                      Contains("model.scaled") && Contains("not a whole number"));

    Generator gen(1);
    for (const nn::ModelKind kind : {nn::ModelKind::bigram, nn::ModelKind::average}) {
        INFO(fmt::format("{}", kind));
        CHECK_FALSE(nn::model_kind_info(kind).reads(nn::option_divisor));
        CHECK_FALSE(
            divisor_config(kind, true).to_metadata().contains("model.scaled"));  // their checkpoints' bytes as before
        CHECK_THAT(make_model_error(divisor_config(kind, false)),
                   Contains("dropping the divisor (scaled false) applies to head, multihead, gpt, gpt2 only, not " +
                            std::string(nn::model_kind_info(kind).name)));
    }
}
