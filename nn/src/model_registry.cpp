#include "nn/model_registry.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <stdexcept>
#include <vector>

#include <fmt/ranges.h>

#include "nn/attention.h"
#include "nn/attention_only.h"
#include "nn/gpt2.h"
#include "nn/llama.h"
#include "nn/models.h"

namespace nn {

using namespace autograd;

namespace {

// --- each kind's model, from a validated config ---------------------------------------------------------

std::unique_ptr<LanguageModel> make_bigram(const ModelConfig& c, Generator& gen) {
    return std::make_unique<Bigram>(BigramOptions{.vocab = c.vocab}, gen);
}
std::unique_ptr<LanguageModel> make_average(const ModelConfig& c, Generator& gen) {
    return std::make_unique<AverageModel>(AverageModelOptions{.vocab = c.vocab, .n_embd = c.n_embd, .block = c.block},
                                          gen);
}
std::unique_ptr<LanguageModel> make_head(const ModelConfig& c, Generator& gen) {
    return std::make_unique<SingleHead>(
        SingleHeadOptions{.vocab = c.vocab, .n_embd = c.n_embd, .block = c.block, .scaled = c.scaled}, gen);
}
std::unique_ptr<LanguageModel> make_multihead(const ModelConfig& c, Generator& gen) {
    return std::make_unique<MultiHead>(MultiHeadOptions{.vocab = c.vocab,
                                                        .n_embd = c.n_embd,
                                                        .n_head = c.n_head,
                                                        .block = c.block,
                                                        .feed_forward = c.feed_forward,
                                                        .scaled = c.scaled},
                                       gen);
}
std::unique_ptr<LanguageModel> make_gpt(const ModelConfig& c, Generator& gen) {
    return std::make_unique<GPT>(GPTOptions{.vocab = c.vocab,
                                            .n_embd = c.n_embd,
                                            .n_head = c.n_head,
                                            .n_layer = c.n_layer,
                                            .block = c.block,
                                            .dropout = c.dropout,
                                            .dropout_seed = gen.next_u64(),
                                            .gpt2_init = c.gpt2_init,
                                            .scaled = c.scaled},
                                 gen);
}

std::unique_ptr<LanguageModel> make_gpt2(const ModelConfig& c, Generator& gen) {
    return std::make_unique<GPT2>(GPT2Options{.vocab = c.vocab,
                                              .n_embd = c.n_embd,
                                              .n_head = c.n_head,
                                              .n_layer = c.n_layer,
                                              .block = c.block,
                                              .dropout = c.dropout,
                                              .dropout_seed = gen.next_u64(),
                                              .gelu_exact = c.gelu_exact,
                                              .scaled = c.scaled},
                                  gen);
}

std::unique_ptr<LanguageModel> make_llama(const ModelConfig& c, Generator& gen) {
    return std::make_unique<Llama>(llama_options(c), gen);
}

std::unique_ptr<LanguageModel> make_attn_only(const ModelConfig& c, Generator& gen) {
    return std::make_unique<AttentionOnly>(
        AttentionOnlyOptions{
            .vocab = c.vocab, .n_embd = c.n_embd, .n_head = c.n_head, .n_layer = c.n_layer, .block = c.block},
        gen);
}

// model_size's shapes-only model holds at most this many tensors: its modules cost memory of their own,
// and a model with more (n_layer and n_head in the thousands) fits no machine this library runs on.
constexpr int64_t kMaxShapesOnlyTensors = int64_t{1} << 18;

constexpr unsigned kPositional = option_n_embd | option_block;
constexpr unsigned kAllOptions = option_n_embd | option_block | option_n_head | option_n_layer | option_dropout |
                                 option_feed_forward | option_init | option_gelu | option_divisor | option_n_kv_head |
                                 option_ffn_hidden | option_rope_theta | option_norm_eps | option_tied;
// The llama kind's own settings (no dropout, and its heads always divide by sqrt(H)).
constexpr unsigned kLlamaOnly =
    option_n_kv_head | option_ffn_hidden | option_rope_theta | option_norm_eps | option_tied;

// The table: the ladder first, then the registered kinds (a deque keeps every entry where it is, so the
// references model_kind_info hands out stay valid), with the names and titles it owns.
struct Registry {
    std::deque<ModelKindInfo> kinds;
    std::deque<std::string> owned_text;
};

Registry& registry() {
    static Registry r{
        .kinds = {{ModelKind::bigram, "bigram", "bigram", 0, make_bigram},
                  {ModelKind::average, "average", "averaging", kPositional, make_average},
                  {ModelKind::head, "head", "single-head", kPositional | option_divisor, make_head},
                  {ModelKind::multihead, "multihead", "multi-head",
                   kPositional | option_n_head | option_feed_forward | option_divisor, make_multihead},
                  {ModelKind::gpt, "gpt", "GPT",
                   kPositional | option_n_head | option_n_layer | option_dropout | option_init | option_divisor,
                   make_gpt},
                  {ModelKind::gpt2, "gpt2", "GPT-2",
                   kPositional | option_n_head | option_n_layer | option_dropout | option_gelu | option_divisor,
                   make_gpt2},
                  {ModelKind::llama, "llama", "Llama", kPositional | option_n_head | option_n_layer | kLlamaOnly,
                   make_llama},
                  {ModelKind::attn_only, "attn_only", "attention-only", kPositional | option_n_head | option_n_layer,
                   make_attn_only}},
        .owned_text = {}};
    return r;
}

bool is_kind_name(std::string_view name) {
    if (name.empty() || name.size() > 32) return false;
    for (const char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
    return true;
}

}  // namespace

const std::deque<ModelKindInfo>& model_kinds() { return registry().kinds; }

const ModelKindInfo& model_kind_info(ModelKind kind) {
    const std::deque<ModelKindInfo>& kinds = registry().kinds;
    check(kind.index() < kinds.size(), "model: kind {} is not in the table ({})", kind.index(),
          model_kind_names(", ", ", "));
    return kinds[kind.index()];
}

std::optional<ModelKind> parse_model_kind(std::string_view name) {
    for (const ModelKindInfo& info : registry().kinds)
        if (info.name == name) return info.kind;
    return std::nullopt;
}

std::string model_kind_names(std::string_view separator, std::string_view last_separator) {
    std::string out;
    const std::deque<ModelKindInfo>& kinds = registry().kinds;
    for (size_t i = 0; i < kinds.size(); ++i) {
        if (i > 0) out += i + 1 == kinds.size() ? last_separator : separator;
        out += kinds[i].name;
    }
    return out;
}

std::vector<std::string_view> model_kinds_reading(unsigned option, bool reads) {
    std::vector<std::string_view> names;
    for (const ModelKindInfo& kind : registry().kinds)
        if (kind.reads(option) == reads) names.push_back(kind.name);
    return names;
}

ModelKind register_model_kind(const ModelKindInfo& info) {
    check(is_kind_name(info.name),
          "model: cannot register the kind {:?}: a name is 1 to 32 letters, digits, '-' or '_'", info.name);
    check(!parse_model_kind(info.name), "model: cannot register the kind '{}': the name is taken ({})", info.name,
          model_kind_names(", ", ", "));
    check(info.make != nullptr, "model: cannot register the kind '{}' without its make function", info.name);
    check((info.options & ~kAllOptions) == 0,
          "model: cannot register the kind '{}': options {:#x} are not ModelOption bits", info.name,
          info.options & ~kAllOptions);
    Registry& r = registry();
    ModelKindInfo entry = info;
    entry.kind = ModelKind(r.kinds.size());
    entry.name = r.owned_text.emplace_back(info.name);
    entry.title = r.owned_text.emplace_back(info.title.empty() ? info.name : info.title);
    return r.kinds.emplace_back(entry).kind;
}

namespace {
std::span<const ModelSetting> kLlamaSettings();
constexpr auto kFloats = ModelSetting::FloatText::decimal;  // model checkpoints store floats as text ("0.1")
}  // namespace

LlamaOptions llama_options(const ModelConfig& c) {
    // llama2.c's model.py: hidden_dim = int(2 * (4 * dim) / 3), rounded up to multiple_of (32)
    const int64_t llama2c_hidden = (2 * 4 * c.n_embd / 3 + 31) / 32 * 32;
    return LlamaOptions{.vocab = c.vocab,
                        .n_embd = c.n_embd,
                        .n_head = c.n_head,
                        .n_kv_head = c.n_kv_head == 0 ? c.n_head : c.n_kv_head,
                        .n_layer = c.n_layer,
                        .ffn_hidden = c.ffn_hidden == 0 ? llama2c_hidden : c.ffn_hidden,
                        .block = c.block,
                        .rope_theta = c.rope_theta,
                        .norm_eps = c.norm_eps,
                        .tied_embeddings = c.tied_embeddings};
}

ModelConfig llama_config(const LlamaOptions& o) {
    return ModelConfig{.kind = ModelKind::llama,
                       .vocab = o.vocab,
                       .n_embd = o.n_embd,
                       .n_head = o.n_head,
                       .n_layer = o.n_layer,
                       .block = o.block,
                       .n_kv_head = o.n_kv_head,
                       .ffn_hidden = o.ffn_hidden,
                       .rope_theta = o.rope_theta,
                       .norm_eps = o.norm_eps,
                       .tied_embeddings = o.tied_embeddings};
}

void validate_model_config(const ModelConfig& c) {
    const ModelKindInfo& info = model_kind_info(c.kind);
    const auto low = [](std::string_view key) { return model_setting(key).min; };
    check(c.vocab >= low("model.vocab"), "model: vocab must be positive, got {}", c.vocab);
    if (info.reads(option_n_embd) || info.reads(option_block))
        check(c.n_embd >= low("model.n_embd") && c.block >= low("model.block"),
              "model: n_embd ({}) and block ({}) must be positive", c.n_embd, c.block);
    if (info.reads(option_n_head))
        check(c.n_head >= low("model.n_head") && c.n_embd % c.n_head == 0, "model: n_head {} must divide n_embd {}",
              c.n_head, c.n_embd);
    if (info.reads(option_n_layer))
        check(c.n_layer >= low("model.n_layer"), "model: n_layer must be positive, got {}", c.n_layer);
    const ModelSetting& dropout = model_setting("model.dropout");
    if (info.reads(option_dropout))
        check(c.dropout >= dropout.low && c.dropout < dropout.high, "model: dropout {} must be in [{}, {})", c.dropout,
              dropout.low, dropout.high);
    if (info.reads(option_n_kv_head)) {
        for (const ModelSetting& s : kLlamaSettings()) s.check(c);  // the limits: theta and eps positive, finite
        const LlamaOptions o = llama_options(c);
        check(o.n_head % o.n_kv_head == 0, "model: n_kv_head {} must divide n_head {}", o.n_kv_head, o.n_head);
        check((o.n_embd / o.n_head) % 2 == 0,
              "model: the head width n_embd / n_head = {} / {} = {} must be even (rotary positions turn pairs)",
              o.n_embd, o.n_head, o.n_embd / o.n_head);
    }
    for (const ModelSetting& s : kLlamaSettings())  // a checkpoint of another kind would not keep them
        if (!info.reads(s.option) && s.stored(c, kFloats) != s.stored(ModelConfig{}, kFloats))
            check(false, "model: {} applies to {} only, not {}", s.key, fmt::join(model_kinds_reading(s.option), ", "),
                  info.name);
    if (c.feed_forward && !info.reads(option_feed_forward))  // (the names are listed only when refused)
        check(false, "model: feed_forward applies to {} only, not {}",
              fmt::join(model_kinds_reading(option_feed_forward), ", "), info.name);
    if (!c.scaled && !info.reads(option_divisor))  // (a checkpoint of the kind would not keep it: only_when_read)
        check(false, "model: dropping the divisor (scaled false) applies to {} only, not {}",
              fmt::join(model_kinds_reading(option_divisor), ", "), info.name);
}

std::unique_ptr<LanguageModel> make_model(const ValidModelConfig& config, Generator& gen) {
    return model_kind_info(config->kind).make(config.get(), gen);
}

std::unique_ptr<LanguageModel> make_model(const ModelConfig& config, Generator& gen) {
    return make_model(ValidModelConfig(config), gen);
}

ModelSize model_size(const ValidModelConfig& config) {
    const ModelConfig& c = config.get();
    const ModelKindInfo& info = model_kind_info(c.kind);
    const auto too_large = [&] {
        check(false,
              "model: a {} of n_embd {} n_head {} n_layer {} would hold more than {} parameter tensors; "
              "choose smaller sizes",
              c.kind, c.n_embd, c.n_head, c.n_layer, kMaxShapesOnlyTensors);
    };
    // Modules without tensors (GPT-2's per-head views) escape the guard's count: heads times layers is
    // bounded first.
    const double heads = info.reads(option_n_head) ? double(c.n_head) : 1;
    const double layers = info.reads(option_n_layer) ? double(c.n_layer) : 1;
    if (heads * layers > double(kMaxShapesOnlyTensors)) too_large();
    std::unique_ptr<LanguageModel> model;
    try {
        const autograd::ShapesOnlyGuard shapes_only(kMaxShapesOnlyTensors);
        Generator unused;  // nothing is drawn
        model = info.make(c, unused);
    } catch (const std::length_error&) {
        too_large();
    }
    ModelSize size;
    for (const Tensor& p : model->parameters()) {
        double count = 1;  // in double: an absurd shape's count overflows int64
        for (const int64_t d : p.shape()) count *= double(d);
        size.parameters += count;
    }
    // The attention heads, and the layers that hold them: each head's holder is the nearest module above it.
    std::set<std::string> names, holders;
    double head_count = 0;
    for (const auto& [name, module] : model->named_modules()) names.insert(name);
    for (const auto& [name, module] : model->named_modules()) {
        if (dynamic_cast<const InspectableHead*>(module) == nullptr) continue;
        head_count += 1;
        std::string holder = name;
        do {
            const size_t dot = holder.rfind('.');
            holder.resize(dot == std::string::npos ? 0 : dot);  // at last "", the model itself
        } while (!names.contains(holder));
        holders.insert(holder);
    }
    size.layers = double(std::max<size_t>(holders.size(), 1));
    size.heads_per_layer = head_count / size.layers;
    return size;
}

// --- ModelConfig's settings, in checkpoint metadata -------------------------------------------------------

namespace {

using Ref = ModelSetting::Ref;
constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();  // sizes: the memory estimate bounds them
// (one row a setting, as a table reads)
// clang-format off
const ModelSetting kSettings[] = {
    {.key = "model.vocab", .meaning = "vocabulary size", .value = [](ModelConfig& c) -> Ref { return &c.vocab; }, .min = 1,
     .max = kUnbounded},
    {.key = "model.n_embd", .meaning = "embedding width", .value = [](ModelConfig& c) -> Ref { return &c.n_embd; }, .min = 1,
     .max = kUnbounded, .option = option_n_embd},
    {.key = "model.n_head", .meaning = "attention heads, dividing n_embd",
     .value = [](ModelConfig& c) -> Ref { return &c.n_head; }, .min = 1, .max = kUnbounded, .option = option_n_head},
    {.key = "model.n_layer", .meaning = "transformer blocks", .value = [](ModelConfig& c) -> Ref { return &c.n_layer; },
     .min = 1, .max = kUnbounded, .option = option_n_layer},
    {.key = "model.block", .meaning = "window length", .value = [](ModelConfig& c) -> Ref { return &c.block; }, .min = 1,
     .max = kUnbounded, .option = option_block},
    {.key = "model.dropout", .meaning = "dropout probability", .value = [](ModelConfig& c) -> Ref { return &c.dropout; },
     .low = 0, .high = 1, .high_open = true, .option = option_dropout},
    {.key = "model.feed_forward", .meaning = "add a feed-forward layer",
     .value = [](ModelConfig& c) -> Ref { return &c.feed_forward; }, .option = option_feed_forward},
    {.key = "model.gpt2_init", .meaning = "gpt2 (normal, std 0.02) or default (the layers' own)",
     .value = [](ModelConfig& c) -> Ref { return &c.gpt2_init; }, .words = {"default", "gpt2"}, .option = option_init},
    {.key = "model.gelu_exact", .meaning = "tanh (GPT-2's approximation) or exact (erf, as nanoGPT's)",
     .value = [](ModelConfig& c) -> Ref { return &c.gelu_exact; }, .words = {"tanh", "exact"}, .option = option_gelu,
     .added_later = true},
    {.key = "model.scaled",
     .meaning = "sqrt (divide attention scores by sqrt(head width)) or none (the tutorial's saturation experiment)",
     .value = [](ModelConfig& c) -> Ref { return &c.scaled; }, .words = {"none", "sqrt"}, .option = option_divisor,
     .added_later = true},
    // the llama kind's (the last rows: kLlamaSettings)
    {.key = "model.n_kv_head", .meaning = "key-value heads, dividing n_head (1: multi-query)",
     .value = [](ModelConfig& c) -> Ref { return &c.n_kv_head; }, .min = 1, .max = kUnbounded, .special = 0,
     .special_means = "n_head", .option = option_n_kv_head, .added_later = true},
    {.key = "model.ffn_hidden", .meaning = "the gated MLP's hidden width",
     .value = [](ModelConfig& c) -> Ref { return &c.ffn_hidden; }, .min = 1, .max = kUnbounded, .special = 0,
     .special_means = "8 n_embd / 3 up to a multiple of 32", .option = option_ffn_hidden, .added_later = true},
    {.key = "model.rope_theta", .meaning = "the rotary positions' base",
     .value = [](ModelConfig& c) -> Ref { return &c.rope_theta; }, .low = 0, .high = 1e12, .low_open = true,
     .option = option_rope_theta, .added_later = true},
    {.key = "model.norm_eps", .meaning = "RMSNorm's epsilon",
     .value = [](ModelConfig& c) -> Ref { return &c.norm_eps; }, .low = 0, .high = 1, .low_open = true,
     .option = option_norm_eps, .added_later = true},
    {.key = "model.tied_embeddings", .meaning = "tied (logits from the token table) or untied (an lm_head of its own)",
     .value = [](ModelConfig& c) -> Ref { return &c.tied_embeddings; }, .words = {"untied", "tied"},
     .option = option_tied, .added_later = true},
};
// clang-format on
constexpr size_t kLlamaRows = 5;

std::span<const ModelSetting> kLlamaSettings() { return std::span(kSettings).last(kLlamaRows); }

}  // namespace

std::span<const ModelSetting> model_settings() { return kSettings; }

const ModelSetting& model_setting(std::string_view key) {
    for (const ModelSetting& s : kSettings)
        if (s.key == key) return s;
    check(false, "model: no setting '{}'", key);
    return kSettings[0];
}

std::map<std::string, std::string> ModelConfig::to_metadata() const {
    std::map<std::string, std::string> out{{"model.kind", std::string(model_kind_info(kind).name)}};
    for (const ModelSetting& s : kSettings)
        if (!s.added_later || model_kind_info(kind).reads(s.option)) out.emplace(s.key, s.stored(*this, kFloats));
    return out;
}

ModelConfig ModelConfig::from_metadata(const std::map<std::string, std::string>& metadata) {
    const auto text_of = [&](std::string_view key) -> const std::string& {
        const auto it = metadata.find(std::string(key));
        check(it != metadata.end(), "checkpoint: metadata has no '{}'", key);
        return it->second;
    };
    ModelConfig c;
    const std::string& kind = text_of("model.kind");
    const std::optional<ModelKind> parsed = parse_model_kind(kind);
    check(parsed.has_value(), "model: unknown kind '{}' ({})", kind, model_kind_names(", ", ", "));
    c.kind = *parsed;
    for (const ModelSetting& s : kSettings) {
        if (s.added_later && !metadata.contains(std::string(s.key))) continue;  // its default
        s.read(c, text_of(s.key), kFloats);
    }
    return c;
}

}  // namespace nn
