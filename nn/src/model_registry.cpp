#include "nn/model_registry.h"

#include <cmath>
#include <cstdlib>

#include "nn/models.h"

namespace nn {

using namespace autograd;

namespace {

// --- each kind's size: its parameters exactly, as its constructor registers them (C n_embd, T block,
// V vocab); Linear layers have a bias unless noted ---------------------------------------------------

struct Dims {
    double V, C, T, H, L;
    explicit Dims(const ModelConfig& c)
        : V(double(c.vocab)), C(double(c.n_embd)), T(double(c.block)), H(double(std::max<int64_t>(c.n_head, 1))),
          L(double(std::max<int64_t>(c.n_layer, 1))) {}
    double embeddings() const { return V * C + T * C; }     // token and position tables
    double lm_head() const { return C * V + V; }
    double attention() const { return 3 * C * C + C * C + C; }  // heads' query, key, value (no bias), projection
    double feed_forward() const { return 8 * C * C + 5 * C; }   // C -> 4C -> C
};

ModelSize bigram_size(const ModelConfig& c) { return {.parameters = Dims(c).V * Dims(c).V}; }
ModelSize average_size(const ModelConfig& c) {
    const Dims d(c);
    return {.parameters = d.embeddings() + d.lm_head()};
}
ModelSize head_size(const ModelConfig& c) {
    const Dims d(c);
    return {.parameters = d.embeddings() + 3 * d.C * d.C + d.lm_head(), .heads_per_layer = 1};
}
ModelSize multihead_size(const ModelConfig& c) {
    const Dims d(c);
    return {.parameters = d.embeddings() + d.attention() + (c.feed_forward ? d.feed_forward() : 0) + d.lm_head(),
            .heads_per_layer = d.H};
}
ModelSize gpt_size(const ModelConfig& c) {
    const Dims d(c);
    const double block = 2 * d.C + d.attention() + 2 * d.C + d.feed_forward();  // norm1, attention, norm2, feed-forward
    return {.parameters = d.embeddings() + d.L * block + 2 * d.C + d.lm_head(), .layers = d.L, .heads_per_layer = d.H};
}

// --- each kind's model, from a validated config ---------------------------------------------------------

std::unique_ptr<LanguageModel> make_bigram(const ModelConfig& c, Generator& gen) {
    return std::make_unique<Bigram>(BigramOptions{.vocab = c.vocab}, gen);
}
std::unique_ptr<LanguageModel> make_average(const ModelConfig& c, Generator& gen) {
    return std::make_unique<AverageModel>(AverageModelOptions{.vocab = c.vocab, .n_embd = c.n_embd, .block = c.block}, gen);
}
std::unique_ptr<LanguageModel> make_head(const ModelConfig& c, Generator& gen) {
    return std::make_unique<SingleHead>(SingleHeadOptions{.vocab = c.vocab, .n_embd = c.n_embd, .block = c.block}, gen);
}
std::unique_ptr<LanguageModel> make_multihead(const ModelConfig& c, Generator& gen) {
    return std::make_unique<MultiHead>(
        MultiHeadOptions{.vocab = c.vocab, .n_embd = c.n_embd, .n_head = c.n_head, .block = c.block, .feed_forward = c.feed_forward},
        gen);
}
std::unique_ptr<LanguageModel> make_gpt(const ModelConfig& c, Generator& gen) {
    return std::make_unique<GPT>(GPTOptions{.vocab = c.vocab, .n_embd = c.n_embd, .n_head = c.n_head, .n_layer = c.n_layer,
                                            .block = c.block, .dropout = c.dropout, .dropout_seed = gen.next_u64(),
                                            .gpt2_init = c.gpt2_init},
                                 gen);
}

constexpr unsigned kPositional = option_n_embd | option_block;
constexpr ModelKindInfo kKinds[] = {
    {ModelKind::bigram, "bigram", "bigram", 0, make_bigram, bigram_size},
    {ModelKind::average, "average", "averaging", kPositional, make_average, average_size},
    {ModelKind::head, "head", "single-head", kPositional, make_head, head_size},
    {ModelKind::multihead, "multihead", "multi-head", kPositional | option_n_head | option_feed_forward, make_multihead,
     multihead_size},
    {ModelKind::gpt, "gpt", "GPT", kPositional | option_n_head | option_n_layer | option_dropout | option_init, make_gpt,
     gpt_size},
};

}  // namespace

std::span<const ModelKindInfo> model_kinds() { return kKinds; }

const ModelKindInfo& model_kind_info(ModelKind kind) {
    for (const ModelKindInfo& info : kKinds)
        if (info.kind == kind) return info;
    check(false, "model: kind {} is not in the table", static_cast<int>(kind));
    return kKinds[0];
}

std::optional<ModelKind> parse_model_kind(std::string_view name) {
    for (const ModelKindInfo& info : kKinds)
        if (info.name == name) return info.kind;
    return std::nullopt;
}

std::string model_kind_names(std::string_view separator, std::string_view last_separator) {
    std::string out;
    const size_t n = std::size(kKinds);
    for (size_t i = 0; i < n; ++i) {
        if (i > 0) out += i + 1 == n ? last_separator : separator;
        out += kKinds[i].name;
    }
    return out;
}

void validate_model_config(const ModelConfig& c) {
    const ModelKindInfo& info = model_kind_info(c.kind);
    check(c.vocab > 0, "model: vocab must be positive, got {}", c.vocab);
    if (info.reads(option_n_embd) || info.reads(option_block))
        check(c.n_embd > 0 && c.block > 0, "model: n_embd ({}) and block ({}) must be positive", c.n_embd, c.block);
    if (info.reads(option_n_head))
        check(c.n_head > 0 && c.n_embd % c.n_head == 0, "model: n_head {} must divide n_embd {}", c.n_head, c.n_embd);
    if (info.reads(option_n_layer)) check(c.n_layer > 0, "model: n_layer must be positive, got {}", c.n_layer);
    if (info.reads(option_dropout)) check(c.dropout >= 0.0f && c.dropout < 1.0f, "model: dropout {} must be in [0, 1)", c.dropout);
    check(!c.feed_forward || info.reads(option_feed_forward), "model: feed_forward applies to multihead only, not {}",
          info.name);
}

std::unique_ptr<LanguageModel> make_model(const ModelConfig& c, Generator& gen) {
    validate_model_config(c);
    return model_kind_info(c.kind).make(c, gen);
}

// --- ModelConfig in checkpoint metadata -----------------------------------------------------------------

std::map<std::string, std::string> ModelConfig::to_metadata() const {
    return {{"model.kind", std::string(model_kind_info(kind).name)},
            {"model.vocab", std::to_string(vocab)},
            {"model.n_embd", std::to_string(n_embd)},
            {"model.n_head", std::to_string(n_head)},
            {"model.n_layer", std::to_string(n_layer)},
            {"model.block", std::to_string(block)},
            {"model.dropout", fmt::format("{}", dropout)},
            {"model.feed_forward", feed_forward ? "1" : "0"},
            {"model.gpt2_init", gpt2_init ? "1" : "0"}};
}

ModelConfig ModelConfig::from_metadata(const std::map<std::string, std::string>& metadata) {
    const auto field = [&](const std::string& key) -> const std::string& {
        const auto it = metadata.find(key);
        check(it != metadata.end(), "checkpoint: metadata has no '{}'", key);
        return it->second;
    };
    const auto integer = [&](const std::string& key) {
        const std::string& text = field(key);
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        check(!text.empty() && *end == '\0', "checkpoint: '{}' is '{}', not a whole number", key, text);
        return static_cast<int64_t>(v);
    };
    ModelConfig c;
    const std::string& kind = field("model.kind");
    const std::optional<ModelKind> parsed = parse_model_kind(kind);
    check(parsed.has_value(), "model: unknown kind '{}' ({})", kind, model_kind_names(", ", ", "));
    c.kind = *parsed;
    c.vocab = integer("model.vocab");
    c.n_embd = integer("model.n_embd");
    c.n_head = integer("model.n_head");
    c.n_layer = integer("model.n_layer");
    c.block = integer("model.block");
    const std::string& d = field("model.dropout");
    char* end = nullptr;
    c.dropout = std::strtof(d.c_str(), &end);
    check(!d.empty() && *end == '\0', "checkpoint: 'model.dropout' is '{}', not a number", d);
    c.feed_forward = integer("model.feed_forward") != 0;
    c.gpt2_init = integer("model.gpt2_init") != 0;
    return c;
}

}  // namespace nn
