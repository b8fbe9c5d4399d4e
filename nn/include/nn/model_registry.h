// The model ladder's one table: every kind of model, its name (on the command line and in
// checkpoints), which ModelConfig options it reads, and how to build it (how big it is comes from
// building it shapes-only: model_size). Everything that chooses or describes a model by kind
// (make_model, the trainer's memory estimate, checkpoints, the programs) reads this table; a kind's name
// is written here only. The table is open: a model of your own registers its kind (register_model_kind)
// and then trains, saves, resumes and loads as the built-in kinds do (docs/model_kinds.md).
//
//     const nn::ModelKindInfo& gpt = nn::model_kind_info(nn::ModelKind::gpt);
//     gpt.name;                      // "gpt"
//     nn::parse_model_kind("head");  // ModelKind::head; std::nullopt for an unknown name
//     fmt::format("{}", kind);       // its name
//     const nn::ModelKind mine = nn::register_model_kind({.name = "mine", .title = "my", ...});
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <autograd/random.h>
#include <fmt/format.h>

#include "nn/setting.h"

namespace nn {

class LanguageModel;
struct ModelKindInfo;
struct LlamaOptions;

// A kind of model: its entry in the registry. The built-in rungs of the ladder are the constants below,
// in order; register_model_kind makes a new kind. A default ModelKind is no kind (model_kind_info refuses it).
class ModelKind {
public:
    static const ModelKind bigram, average, head, multihead, gpt, gpt2, llama, attn_only;

    constexpr ModelKind() = default;
    constexpr size_t index() const { return index_; }  // in model_kinds()
    constexpr bool operator==(const ModelKind&) const = default;

private:
    friend ModelKind register_model_kind(const ModelKindInfo& info);
    constexpr explicit ModelKind(size_t index) : index_(index) {}
    size_t index_ = std::numeric_limits<size_t>::max();
};
inline constexpr ModelKind ModelKind::bigram{0}, ModelKind::average{1}, ModelKind::head{2}, ModelKind::multihead{3},
    ModelKind::gpt{4}, ModelKind::gpt2{5}, ModelKind::llama{6}, ModelKind::attn_only{7};

// The ModelConfig options beyond vocab, one bit each; a kind lists those its model reads.
enum ModelOption : unsigned {
    option_n_embd = 1u << 0,
    option_block = 1u << 1,
    option_n_head = 1u << 2,
    option_n_layer = 1u << 3,
    option_dropout = 1u << 4,
    option_feed_forward = 1u << 5,
    option_init = 1u << 6,     // gpt2_init
    option_gelu = 1u << 7,     // gelu_exact
    option_divisor = 1u << 8,  // scaled
    option_n_kv_head = 1u << 9,
    option_ffn_hidden = 1u << 10,
    option_rope_theta = 1u << 11,
    option_norm_eps = 1u << 12,
    option_tied = 1u << 13,  // tied_embeddings
};

struct ModelConfig {
    ModelKind kind = ModelKind::gpt;
    int64_t vocab = 0;
    int64_t n_embd = 32;
    int64_t n_head = 4;
    int64_t n_layer = 4;
    int64_t block = 8;
    float dropout = 0.0f;
    bool feed_forward = false;  // multihead only
    bool gpt2_init = true;      // gpt only
    bool gelu_exact = false;    // gpt2 only: the exact (erf) GELU, as nanoGPT's model, instead of GPT-2's tanh
    // The kinds with attention heads: each head divides its scores Q K^T by sqrt(its width); false drops
    // the divisor (the tutorial's saturation experiment).
    bool scaled = true;
    // llama only (nn/llama.h's LlamaOptions); a value 0 is the rule the comment gives (llama_options)
    int64_t n_kv_head = 0;        // key-value heads, dividing n_head; 0: n_head (one each)
    int64_t ffn_hidden = 0;       // the SwiGLU's hidden width; 0: llama2.c's, 8 n_embd / 3 up to a multiple of 32
    float rope_theta = 10000.0f;  // the rotary base
    float norm_eps = 1e-5f;       // RMSNorm's epsilon
    bool tied_embeddings = true;  // the logits are x @ the token table^T; false: an lm_head of its own

    // Every setting under its model_settings() key, and the kind's name as "model.kind".
    std::map<std::string, std::string> to_metadata() const;
    static ModelConfig from_metadata(const std::map<std::string, std::string>& metadata);
    bool operator==(const ModelConfig&) const = default;
};

// ModelConfig's settings beside the kind (nn/setting.h), in the order a checkpoint's metadata is read:
// to_metadata, from_metadata, validate_model_config, the report page and train's model flags are made
// from them. A row's `option` is the ModelOption bit of the kinds that read it (0: every kind: vocab).
using ModelSetting = Setting<ModelConfig>;
std::span<const ModelSetting> model_settings();
const ModelSetting& model_setting(std::string_view key);  // "model.n_embd"; std::invalid_argument if none

struct ModelKindInfo {
    ModelKind kind = {};          // its entry (register_model_kind sets it)
    std::string_view name = {};   // on the command line and in checkpoints ("model.kind"): letters, digits, '-', '_'
    std::string_view title = {};  // in prose: "single-head" (register_model_kind: the name if empty)
    unsigned options = 0;         // the ModelOption bits its model reads
    // Builds the model of a config that validate_model_config accepted. `gen` draws the initial weights;
    // a model with dropout seeds its own generator from it and registers that (Module::register_generator),
    // so that checkpoints resume it exactly.
    std::unique_ptr<LanguageModel> (*make)(const ModelConfig& config, autograd::Generator& gen) = nullptr;

    bool reads(unsigned option) const { return (options & option) != 0; }  // a ModelOption bit
};

// Every kind: the ladder in order, then the registered ones in the order they were registered.
const std::deque<ModelKindInfo>& model_kinds();
const ModelKindInfo& model_kind_info(ModelKind kind);
// Adds a kind to the registry (a copy; its name and title are copied too) and returns it. Refused
// (std::invalid_argument): a name that is empty, longer than 32 characters, not letters, digits, '-' and
// '_', or already registered; no make; option bits that are not ModelOptions. Register before
// other threads use the registry: at the start of main, or as a namespace-scope constant.
ModelKind register_model_kind(const ModelKindInfo& info);
std::optional<ModelKind> parse_model_kind(std::string_view name);
// The names joined: model_kind_names(", ", " or ") is "bigram, average, head, multihead, gpt, gpt2, llama or attn_only".
std::string model_kind_names(std::string_view separator, std::string_view last_separator);
// The names of the kinds that read a ModelOption (`reads`), or of those that do not, in registry order.
std::vector<std::string_view> model_kinds_reading(unsigned option, bool reads = true);

// Checks what the config's kind reads (std::invalid_argument naming the option): vocab, and where the
// model has them, n_embd and block positive, n_head dividing n_embd, n_layer positive, dropout in [0, 1).
// The llama kind: n_kv_head dividing n_head, an even head width (rotary turns pairs), ffn_hidden positive,
// rope_theta and norm_eps positive and finite. feed_forward on a kind without it, and scaled false on a kind without heads, are refused; the other options
// a kind does not read are ignored (checkpoints store every option, whatever the kind).
void validate_model_config(const ModelConfig& config);
// A config that validate_model_config accepted, checked once where it is made: make_model, model_size and
// the memory estimates (nn/train/trainer.h) take it without checking again, and a ModelConfig by validating it.
class ValidModelConfig {
public:
    explicit ValidModelConfig(const ModelConfig& config) : config_(config) { validate_model_config(config_); }
    const ModelConfig& get() const { return config_; }
    const ModelConfig* operator->() const { return &config_; }

private:
    ModelConfig config_;
};

// The llama kind's LlamaOptions (nn/llama.h) of a config: n_kv_head and ffn_hidden 0 made their rules'
// values (n_head; llama2.c's model.py: int(2 * 4 n_embd / 3) rounded up to a multiple of 32).
LlamaOptions llama_options(const ModelConfig& config);
// The ModelConfig of the llama kind that makes a Llama of `options`: the inverse of llama_options.
ModelConfig llama_config(const LlamaOptions& options);

// Builds the model.
std::unique_ptr<LanguageModel> make_model(const ValidModelConfig& config, autograd::Generator& gen);
std::unique_ptr<LanguageModel> make_model(const ModelConfig& config, autograd::Generator& gen);

// How big a config's model is, in double (absurd sizes overflow int64 first): its parameters, and
// what its activations depend on: the layers that keep (B, T, C) tensors and the attention heads in each.
struct ModelSize {
    double parameters = 0;  // exactly the model's parameter_count() while that fits
    double layers = 1;      // the modules holding attention heads (at least 1)
    double heads_per_layer = 0;
};
// The kind's own constructor run shapes-only (autograd::ShapesOnlyGuard): the parameters' shapes are
// counted and the heads (nn::InspectableHead) found, with nothing allocated or drawn, before a model or
// a checkpoint's tensors are. A kind therefore states no sizes of its own. std::invalid_argument: what
// validate_model_config refuses, and a structure too large to hold (more than 262144 tensors).
ModelSize model_size(const ValidModelConfig& config);
inline ModelSize model_size(const ModelConfig& config) { return model_size(ValidModelConfig(config)); }

}  // namespace nn

// fmt::format("{}", kind) prints the kind's name.
template <>
struct fmt::formatter<nn::ModelKind> : fmt::formatter<std::string_view> {
    template <typename FormatContext>
    auto format(nn::ModelKind kind, FormatContext& ctx) const {
        return fmt::formatter<std::string_view>::format(nn::model_kind_info(kind).name, ctx);
    }
};
