// The model ladder's one table: every kind of model, its name (on the command line and in
// checkpoints), which ModelConfig options it reads, how to build it, and how big it is. Everything
// that chooses or describes a model by kind (make_model, the trainer's memory estimate, the programs)
// reads this table; a kind's name is written here only.
//
//     const nn::ModelKindInfo& gpt = nn::model_kind_info(nn::ModelKind::gpt);
//     gpt.name;                      // "gpt"
//     nn::parse_model_kind("head");  // ModelKind::head; std::nullopt for an unknown name
//     fmt::format("{}", kind);       // its name
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <autograd/random.h>
#include <fmt/format.h>

namespace nn {

class LanguageModel;

// The rungs of the ladder, in order.
enum class ModelKind { bigram, average, head, multihead, gpt };

// The ModelConfig options beyond vocab, one bit each; a kind lists those its model reads.
enum ModelOption : unsigned {
    option_n_embd = 1u << 0,
    option_block = 1u << 1,
    option_n_head = 1u << 2,
    option_n_layer = 1u << 3,
    option_dropout = 1u << 4,
    option_feed_forward = 1u << 5,
    option_init = 1u << 6,  // gpt2_init
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

    std::map<std::string, std::string> to_metadata() const;  // "model.kind", "model.n_embd", ...
    static ModelConfig from_metadata(const std::map<std::string, std::string>& metadata);
    bool operator==(const ModelConfig&) const = default;
};

// How big a config's model is, in double (absurd sizes overflow int64 first): its parameters, and
// what its activations depend on: the layers that keep (B, T, C) tensors and the attention heads in each.
struct ModelSize {
    double parameters = 0;  // exactly the model's parameter_count() while that fits
    double layers = 1;
    double heads_per_layer = 0;
};

struct ModelKindInfo {
    ModelKind kind;
    std::string_view name;   // on the command line and in checkpoints ("model.kind")
    std::string_view title;  // in prose: "single-head"
    unsigned options;        // the ModelOption bits its model reads
    // Builds the model of a config that validate_model_config accepted.
    std::unique_ptr<LanguageModel> (*make)(const ModelConfig& config, autograd::Generator& gen);
    ModelSize (*size)(const ModelConfig& config);

    bool reads(ModelOption option) const { return (options & option) != 0; }
};

std::span<const ModelKindInfo> model_kinds();  // every kind, in ladder order
const ModelKindInfo& model_kind_info(ModelKind kind);
std::optional<ModelKind> parse_model_kind(std::string_view name);
// The names joined: model_kind_names(", ", " or ") is "bigram, average, head, multihead or gpt".
std::string model_kind_names(std::string_view separator, std::string_view last_separator);
inline ModelSize model_size(const ModelConfig& config) { return model_kind_info(config.kind).size(config); }

// Checks what the config's kind reads (std::invalid_argument naming the option): vocab, and where the
// model has them, n_embd and block positive, n_head dividing n_embd, n_layer positive, dropout in [0, 1).
// feed_forward on a kind without it is refused; the other options a kind does not read are ignored
// (checkpoints store every option, whatever the kind).
void validate_model_config(const ModelConfig& config);
// Validates the config and builds the model.
std::unique_ptr<LanguageModel> make_model(const ModelConfig& config, autograd::Generator& gen);

}  // namespace nn

// fmt::format("{}", kind) prints the kind's name.
template <>
struct fmt::formatter<nn::ModelKind> : fmt::formatter<std::string_view> {
    template <typename FormatContext>
    auto format(nn::ModelKind kind, FormatContext& ctx) const {
        return fmt::formatter<std::string_view>::format(nn::model_kind_info(kind).name, ctx);
    }
};
