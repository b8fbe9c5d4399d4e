// Trainer::save and Trainer::resume: the whole training state in one safetensors file, read back so
// that the resumed run continues bit-exactly.
#include "nn/train/generator_states.h"

#include "checkpoint_fields.h"

#include <algorithm>

namespace nn {

using namespace autograd;
using namespace detail;

namespace {
constexpr std::string_view kGeneratorPrefix = "train.rng.";  // and the generator's dotted name
}  // namespace

void write_generator_states(const Module& module, std::map<std::string, std::string>& metadata) {
    for (const auto& [name, gen] : module.named_generators()) {
        const std::string key = std::string(kGeneratorPrefix) + name;
        check(metadata.emplace(key, to_text(gen->state())).second, "checkpoint: generator '{}' would overwrite the metadata '{}'",
              name, key);
    }
}

void read_generator_states(Module& module, const std::map<std::string, std::string>& metadata, const std::filesystem::path& path) {
    for (const auto& [name, gen] : module.named_generators()) {
        const std::string key = std::string(kGeneratorPrefix) + name;
        gen->set_state(state_from_text(field(metadata, key, path), key, path));
    }
}

std::pair<NamedTensors, Metadata> Trainer::checkpoint() const {
    NamedTensors tensors = join(model_->named_parameters(), optimizer_->state_in_place());
    Metadata metadata = config_.model.to_metadata();
    write_train_config(config_, metadata);
    metadata.insert({{"format", kFormat},
                     {"train.step", std::to_string(step_count())},
                     {"train.rng.batch", to_text(batch_gen_.state())},
                     {"data.tokens", std::to_string(data_.size(Split::train) + data_.size(Split::validation))},
                     {"data.fingerprint", std::to_string(data_fingerprint_)}});
    metadata.merge(tokenizer_->checkpoint_metadata());
    write_generator_states(*model_, metadata);
    if (!run_id_.empty()) metadata["run.id"] = run_id_;
    return {std::move(tensors), std::move(metadata)};
}

void Trainer::save(const std::filesystem::path& path) const {
    const auto [tensors, metadata] = checkpoint();
    save_safetensors(path, tensors, metadata);
}

Trainer Trainer::resume(const std::filesystem::path& path, std::string_view text) {
    return resume(path, [&](const Tokenizer& tokenizer) {
        if (as_ids_only(tokenizer))
            throw std::runtime_error(fmt::format("{}: it has no tokenizer, only token ids: resume it on the token file (.bin) it "
                                                 "was trained on", printable_name(path.string())));
        try {
            return TextData(tokenizer.encode_ids(text));
        } catch (const std::bad_alloc&) {
            throw std::runtime_error(fmt::format("could not allocate {:.3g} GB for the token ids of the text to "
                                                 "resume on ({} bytes)", double(text.size()) / 1e9, text.size()));
        }
    });
}

Trainer Trainer::resume(const std::filesystem::path& path, const std::function<TextData(const Tokenizer&)>& make_data) {
    SafetensorsReader file(path);
    const Metadata& meta = file.metadata();
    check_format(meta, path);
    TrainConfig c;
    c.model = model_config(meta, path);
    read_train_config(meta, path, c);
    const auto step = static_cast<int64_t>(to_u64(field(meta, "train.step", path), "train.step", path));
    if (step > c.steps)
        throw std::runtime_error(fmt::format("{}: the checkpoint is at step {} of a run of {} steps", printable_name(path.string()), step,
                                             c.steps));
    check_sizes_against_weights(c.model, file, path);

    Trainer trainer = naming_path(path, [&] {
        std::shared_ptr<const Tokenizer> tokenizer = checkpoint_tokenizer(meta, path);
        TextData data = make_data(*tokenizer);
        const uint64_t expected = to_u64(field(meta, "data.fingerprint", path), "data.fingerprint", path);
        if (data.tokens().fingerprint() != expected)
            throw std::runtime_error(fmt::format("{}: the checkpoint was trained on different data ({} tokens); "
                                                 "resume with the same --data file",
                                                 printable_name(path.string()), field(meta, "data.tokens", path)));
        return Trainer(c, std::move(tokenizer), std::move(data));
    });

    // The weights and the optimizer's moments straight into the new trainer's own tensors (the file's size
    // in memory, not twice it), then checked and taken as any tensors would be.
    const NamedTensors into = join(trainer.model_->named_parameters(), trainer.optimizer_->state_in_place());
    const CheckpointParts parts = split(file.read_all(into, {}, printable_name(path.string())));  // weights and moments finite
    naming_path(path, [&] { load_parameters(*trainer.model_, parts.weights); });
    naming_path(path, [&] { trainer.optimizer_->load_state(parts.state, step); });
    trainer.batch_gen_.set_state(state_from_text(field(meta, "train.rng.batch", path), "train.rng.batch", path));
    read_generator_states(*trainer.model_, meta, path);
    if (const auto id = meta.find("run.id"); id != meta.end())
        naming_path(path, [&] { trainer.set_run_id(id->second); });
    return trainer;
}

bool is_run_id(std::string_view id) {
    return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
    });
}

void Trainer::set_run_id(std::string id) {
    if (!is_run_id(id))  // (not shown: it may hold anything, a newline too)
        throw std::invalid_argument(fmt::format("the run id ('run.id', {} bytes) is not 1 to 64 letters, digits, '-' or '_'", id.size()));
    run_id_ = std::move(id);
}

}  // namespace nn
