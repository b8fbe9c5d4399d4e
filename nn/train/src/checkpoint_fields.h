// The training checkpoint's metadata, as text (private to nn/train/src): how each value is written and
// read back, the one table of the TrainConfig keys that save and resume both walk, and the helpers
// that put the checkpoint's path in front of an error.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <autograd/random.h>
#include <fmt/format.h>

#include "nn/model_files/safetensors.h"
#include "nn/files/atomic_file.h"
#include "nn/train/settings.h"
#include "nn/train/trainer.h"

namespace nn::detail {

using Metadata = std::map<std::string, std::string>;

inline constexpr std::string_view kStatePrefix = "train_state.";  // optimizer state tensors
inline constexpr const char* kFormat = "tinygpt-checkpoint-1";

// Runs f(); an std::invalid_argument from it (a bad value in the file, text outside its vocabulary)
// becomes a std::runtime_error that starts with the path.
template <typename F>
auto naming_path(const std::filesystem::path& path, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(fmt::format("{}: {}", printable_name(path.string()), e.what()));
    }
}

// The value under `key`; a missing key is "not a tinygpt training checkpoint".
const std::string& field(const Metadata& metadata, const std::string& key, const std::filesystem::path& path);
uint64_t to_u64(const std::string& text, const std::string& key, const std::filesystem::path& path);
std::string to_text(const autograd::Generator::State& state);  // exactly (the spare normal by its bits)
autograd::Generator::State state_from_text(const std::string& text, const std::string& key,
                                           const std::filesystem::path& path);

// Every TrainConfig value but the model's (ModelConfig::to_metadata has those), as nn::train_settings() lists
// them: "train.*" keys, which every checkpoint has, and "run.*" keys (RunSettings), which older ones lack.
void write_train_config(const TrainConfig& config, Metadata& metadata);
// `config.model` is left as it is. A missing "train.*" key is an error; a missing "run.*" key keeps
// the RunSettings default; a value outside its setting's limits is an error naming the key and them.
void read_train_config(const Metadata& metadata, const std::filesystem::path& path, TrainConfig& config);

void check_format(const Metadata& metadata, const std::filesystem::path& path);
// The tokenizer the checkpoint keeps: GPT-2's BPE or token ids only (tokenizer.kind), or the character vocabulary.
std::shared_ptr<const Tokenizer> checkpoint_tokenizer(const Metadata& metadata, const std::filesystem::path& path);
ModelConfig model_config(const Metadata& metadata, const std::filesystem::path& path);

// The checkpoint's own parts: weights under their names, optimizer state under kStatePrefix.
struct CheckpointParts {
    NamedTensors weights, state;
};
CheckpointParts split(NamedTensors tensors);
// split's inverse: the weights, then the state under kStatePrefix (the tensors a checkpoint holds)
NamedTensors join(NamedTensors weights, const NamedTensors& state);
// The model sizes in a file are believed only as far as the file's own weights go: a config whose model
// would need far more parameters than the file stores (a corrupt or edited size) is refused before the
// model is allocated, instead of allocating whatever it names.
void check_sizes_against_weights(const ModelConfig& model, const SafetensorsReader& file,
                                 const std::filesystem::path& path);
// Whether a checkpoint's tensor is a weight (not optimizer state): SafetensorsReader::read_all's `keep`
// for a loader that wants the model only.
inline bool is_weight(const std::string& name) { return !name.starts_with(kStatePrefix); }

}  // namespace nn::detail
