#include "checkpoint_fields.h"

#include <bit>
#include <cstdio>
#include <variant>

#include "nn/tokenizers/bpe.h"
#include "nn/tokenizers/hf_tokenizer.h"
#include "nn/tokenizers/llama2c_tokenizer.h"

namespace nn::detail {

std::shared_ptr<const Tokenizer> checkpoint_tokenizer(const Metadata& metadata, const std::filesystem::path& path) {
    return naming_path(path, [&]() -> std::shared_ptr<const Tokenizer> {
        if (BpeTokenizer::in_checkpoint_metadata(metadata))
            return std::make_shared<const BpeTokenizer>(BpeTokenizer::from_checkpoint_metadata(metadata));
        if (HfTokenizer::in_checkpoint_metadata(metadata))
            return std::make_shared<const HfTokenizer>(HfTokenizer::from_checkpoint_metadata(metadata));
        if (Llama2cTokenizer::in_checkpoint_metadata(metadata))
            return std::make_shared<const Llama2cTokenizer>(Llama2cTokenizer::from_checkpoint_metadata(metadata));
        if (IdTokenizer::in_checkpoint_metadata(metadata))
            return std::make_shared<const IdTokenizer>(
                IdTokenizer::from_checkpoint_metadata(metadata, printable_name(path.string())));
        return std::make_shared<const CharTokenizer>(
            CharTokenizer::from_vocabulary_utf8(field(metadata, "tokenizer.vocabulary", path)));
    });
}

using namespace autograd;

const std::string& field(const Metadata& metadata, const std::string& key, const std::filesystem::path& path) {
    const auto it = metadata.find(key);
    if (it == metadata.end())
        throw std::runtime_error(fmt::format("{}: not a tinygpt training checkpoint (no '{}' in its metadata)",
                                             printable_name(path.string()), key));
    return it->second;
}

uint64_t to_u64(const std::string& text, const std::string& key, const std::filesystem::path& path) {
    size_t used = 0;
    uint64_t v = 0;
    try {
        v = std::stoull(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || text[0] == '-')
        throw std::runtime_error(
            fmt::format("{}: metadata '{}' is '{}', not a whole number", printable_name(path.string()), key, text));
    return v;
}

std::string to_text(const Generator::State& s) {
    return fmt::format("{} {} {}", s.counter, s.has_spare ? 1 : 0, std::bit_cast<uint32_t>(s.spare));
}

Generator::State state_from_text(const std::string& text, const std::string& key, const std::filesystem::path& path) {
    unsigned long long counter = 0, spare = 0;
    int has_spare = 0;
    char extra = 0;
    if (std::sscanf(text.c_str(), "%llu %d %llu %c", &counter, &has_spare, &spare, &extra) != 3 || has_spare < 0 ||
        has_spare > 1 || spare > UINT32_MAX)
        throw std::runtime_error(
            fmt::format("{}: metadata '{}' is not a generator state: '{}'", printable_name(path.string()), key, text));
    return {counter, has_spare == 1, std::bit_cast<float>(static_cast<uint32_t>(spare))};
}

// Training checkpoints store floats by their bits, so that a resumed run uses exactly the same numbers.
constexpr auto kFloats = TrainSetting::FloatText::bits;

void write_train_config(const TrainConfig& config, Metadata& metadata) {
    for (const TrainSetting& s : train_settings()) metadata[std::string(s.key)] = s.stored(config, kFloats);
}

void read_train_config(const Metadata& metadata, const std::filesystem::path& path, TrainConfig& config) {
    naming_path(path, [&] {
        for (const TrainSetting& s : train_settings()) {
            const std::string key(s.key);
            if (s.added_later && !metadata.contains(key)) continue;  // its default
            s.read(config, field(metadata, key, path), kFloats);
        }
        // Each value within its limits: an edited or damaged file is refused here, before a run of 2^64 - 1
        // steps or an evaluation of 4e9 batches starts.
        check_train_settings(config);
    });
}

void check_format(const Metadata& meta, const std::filesystem::path& path) {
    if (field(meta, "format", path) != kFormat)
        throw std::runtime_error(fmt::format("{}: checkpoint format '{}' is not '{}'", printable_name(path.string()),
                                             meta.at("format"), kFormat));
}

ModelConfig model_config(const Metadata& meta, const std::filesystem::path& path) {
    return naming_path(path, [&] { return ModelConfig::from_metadata(meta); });
}

CheckpointParts split(NamedTensors tensors) {
    CheckpointParts parts;
    for (auto& [name, t] : tensors) {
        if (name.starts_with(kStatePrefix)) parts.state.emplace_back(name.substr(kStatePrefix.size()), t);
        else parts.weights.emplace_back(name, t);
    }
    return parts;
}

NamedTensors join(NamedTensors weights, const NamedTensors& state) {
    for (const auto& [name, t] : state) weights.emplace_back(std::string(kStatePrefix) + name, t);
    return weights;
}

void check_sizes_against_weights(const ModelConfig& m, const SafetensorsReader& file,
                                 const std::filesystem::path& path) {
    double stored = 0;
    for (const SafetensorsReader::Entry& e : file.tensors())
        if (is_weight(e.name)) stored += double((e.end - e.begin) / e.value_bytes);
    // (a config validation refuses is refused as making the model would refuse it: naming the file)
    const double needed = naming_path(path, [&] { return model_size(m).parameters; });
    if (needed > 2 * stored + 4096)
        throw std::runtime_error(
            fmt::format("{}: the model in its metadata ({} n_embd {} n_layer {} block {} vocab {}) needs "
                        "about {:.3g} parameters, but the file stores {:.3g}",
                        printable_name(path.string()), m.kind, m.n_embd, m.n_layer, m.block, m.vocab, needed, stored));
}

}  // namespace nn::detail
