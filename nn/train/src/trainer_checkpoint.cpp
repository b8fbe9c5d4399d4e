// Trainer::save and Trainer::resume: the whole training state in one safetensors file, read back so
// that the resumed run continues bit-exactly.
#include "nn/train/generator_states.h"

#include "checkpoint_fields.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace nn {

using namespace autograd;
using namespace detail;

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kGeneratorPrefix = "train.rng.";  // and the generator's dotted name
constexpr std::string_view kOutputPrefix = "outputs.";       // and the output's name (RunFiles)

// A run file's path as a checkpoint in `directory` keeps it: relative to that directory when the file is
// in it or below (a folder moved whole resumes), else absolute.
std::string kept_path(const fs::path& path, const fs::path& directory) {
    const fs::path absolute = fs::absolute(path).lexically_normal();
    const fs::path relative =
        absolute.lexically_relative(fs::absolute(directory.empty() ? "." : directory).lexically_normal());
    return relative.empty() || *relative.begin() == ".." ? absolute.string() : relative.string();
}

// The same path read back from `checkpoint`: a path from the current directory.
fs::path path_from_here(const std::string& kept, const fs::path& checkpoint) {
    const fs::path path(kept);
    return path.is_absolute() ? path : (checkpoint.parent_path() / path).lexically_normal();
}

void write_run_files(const RunFiles& files, const fs::path& directory, Metadata& metadata) {
    if (files.data)
        metadata.insert({{"data.file", kept_path(files.data->path, directory)},
                         {"data.file_bytes", std::to_string(files.data->bytes)},
                         {"data.file_checksum", std::to_string(files.data->checksum)}});
    for (const auto& [name, path] : files.outputs)
        metadata[std::string(kOutputPrefix) + name] = kept_path(path, directory);
}

RunFiles run_files_in(const Metadata& metadata, const fs::path& checkpoint) {
    RunFiles files;
    const auto path_under = [&](const std::string& key, const std::string& kept) {
        if (kept.empty())
            throw std::runtime_error(
                fmt::format("{}: metadata '{}' is empty, not a file name", printable_name(checkpoint.string()), key));
        return path_from_here(kept, checkpoint);
    };
    if (const auto data = metadata.find("data.file"); data != metadata.end())
        files.data =
            DataFile{path_under(data->first, data->second),
                     to_u64(field(metadata, "data.file_bytes", checkpoint), "data.file_bytes", checkpoint),
                     to_u64(field(metadata, "data.file_checksum", checkpoint), "data.file_checksum", checkpoint)};
    for (auto it = metadata.lower_bound(std::string(kOutputPrefix));
         it != metadata.end() && it->first.starts_with(kOutputPrefix); ++it)
        files.outputs.emplace(it->first.substr(kOutputPrefix.size()), path_under(it->first, it->second));
    return files;
}
}  // namespace

DataFile data_file(const fs::path& path) {
    const auto fail = [&](const char* what) {
        return std::runtime_error(
            fmt::format("{}: cannot {} ({})", detail::path_str(path), what, std::strerror(errno)));
    };
    struct Closer {
        int fd;
        ~Closer() {
            if (fd >= 0) ::close(fd);
        }
    };
    const Closer file{
        ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};  // (a FIFO is refused below, never waited on)
    if (file.fd < 0) throw fail("open");
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) throw fail("stat");
    if (!S_ISREG(st.st_mode))
        throw std::runtime_error(
            fmt::format("{}: is {}, not a data file", detail::path_str(path), file_kind(st.st_mode)));
    DataFile data{.path = path};
    uint64_t h = 0xcbf29ce484222325ull;
    std::vector<char> buffer(size_t{1} << 20);
    for (bool at_end = false; !at_end;) {
        size_t filled =
            0;  // the buffer is filled whole before it is hashed: the words do not depend on how reads split
        while (filled < buffer.size()) {
            const ssize_t n = ::read(file.fd, buffer.data() + filled, buffer.size() - filled);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw fail("read");
            if (n == 0) {
                at_end = true;
                break;
            }
            filled += static_cast<size_t>(n);
        }
        // FNV-1a on 8-byte words (the last one padded with zeros): each step is a bijection of the state,
        // so one changed word always changes the result.
        for (size_t at = 0; at < filled; at += 8) {
            uint64_t word = 0;
            std::memcpy(&word, buffer.data() + at, std::min<size_t>(8, filled - at));
            h = (h ^ word) * 0x100000001b3ull;
        }
        data.bytes += filled;
    }
    data.checksum = h;
    return data;
}

SavedRun read_saved_run(const fs::path& checkpoint) {
    const SafetensorsReader file(checkpoint);
    const Metadata& metadata = file.metadata();
    const auto id = metadata.find("run.id");
    const auto tokens = metadata.find("data.tokens");
    const auto bf16 = metadata.find("train.bf16");
    TrainConfig precision;  // (read as resume reads it: "0" or "1", float32 when absent)
    if (bf16 != metadata.end())
        naming_path(checkpoint,
                    [&] { train_setting("train.bf16").read(precision, bf16->second, TrainSetting::FloatText::bits); });
    return {.files = run_files_in(metadata, checkpoint),
            .run_id = id == metadata.end() ? std::string() : id->second,
            .tokens = tokens == metadata.end() ? 0 : to_u64(tokens->second, tokens->first, checkpoint),
            .bf16 = precision.bf16};
}

void write_generator_states(const Module& module, std::map<std::string, std::string>& metadata) {
    for (const auto& [name, gen] : module.named_generators()) {
        const std::string key = std::string(kGeneratorPrefix) + name;
        check(metadata.emplace(key, to_text(gen->state())).second,
              "checkpoint: generator '{}' would overwrite the metadata '{}'", name, key);
    }
}

void read_generator_states(Module& module, const std::map<std::string, std::string>& metadata,
                           const std::filesystem::path& path) {
    for (const auto& [name, gen] : module.named_generators()) {
        const std::string key = std::string(kGeneratorPrefix) + name;
        gen->set_state(state_from_text(field(metadata, key, path), key, path));
    }
}

std::pair<NamedTensors, Metadata> Trainer::checkpoint(const fs::path& directory) const {
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
    write_run_files(run_files_, directory, metadata);
    return {std::move(tensors), std::move(metadata)};
}

void Trainer::save(const std::filesystem::path& path) const {
    const auto [tensors, metadata] = checkpoint(path.parent_path());
    AtomicFile file(path, "checkpoint");  // its errors: "checkpoint: cannot write 'run.st': write failed (...)"
    write_safetensors(file, path, tensors, metadata);
    file.commit();
}

void save_model_checkpoint(const std::filesystem::path& path, const LanguageModel& model, const ModelConfig& config,
                           const Tokenizer& tokenizer) {
    check(model.vocab_size() == config.vocab && tokenizer.vocab_size() == config.vocab,
          "save_model_checkpoint: the model's vocabulary ({}), the config's ({}) and the tokenizer's ({}) differ",
          model.vocab_size(), config.vocab, tokenizer.vocab_size());
    Metadata metadata = config.to_metadata();
    metadata.insert({"format", kFormat});
    metadata.merge(tokenizer.checkpoint_metadata());
    write_generator_states(model, metadata);
    AtomicFile file(path, "checkpoint");
    write_safetensors(file, path, model.named_parameters(), metadata);
    file.commit();
}

Trainer Trainer::resume(const std::filesystem::path& path, std::string_view text) {
    return resume(path, [&](const Tokenizer& tokenizer) {
        if (as_ids_only(tokenizer))
            throw std::runtime_error(
                fmt::format("{}: it has no tokenizer, only token ids: resume it on the token file (.bin) it "
                            "was trained on",
                            printable_name(path.string())));
        try {
            return TextData(tokenizer.encode_ids(text));
        } catch (const std::bad_alloc&) {
            throw std::runtime_error(
                fmt::format("could not allocate {:.3g} GB for the token ids of the text to "
                            "resume on ({} bytes)",
                            double(text.size()) / 1e9, text.size()));
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
        throw std::runtime_error(fmt::format("{}: the checkpoint is at step {} of a run of {} steps",
                                             printable_name(path.string()), step, c.steps));
    check_sizes_against_weights(c.model, file, path);

    Trainer trainer = naming_path(path, [&] {
        std::shared_ptr<const Tokenizer> tokenizer = checkpoint_tokenizer(meta, path);
        TextData data = make_data(*tokenizer);
        const uint64_t expected = to_u64(field(meta, "data.fingerprint", path), "data.fingerprint", path);
        if (data.tokens().fingerprint() != expected)
            throw DataMismatch(
                fmt::format("{}: the checkpoint was trained on different data ({} tokens); "
                            "resume with the same data file",
                            printable_name(path.string()), field(meta, "data.tokens", path)));
        return Trainer(c, std::move(tokenizer), std::move(data));
    });

    // The weights and the optimizer's moments straight into the new trainer's own tensors (the file's size
    // in memory, not twice it), then checked and taken as any tensors would be.
    const NamedTensors into = join(trainer.model_->named_parameters(), trainer.optimizer_->state_in_place());
    const CheckpointParts parts =
        split(file.read_all(into, {}, printable_name(path.string())));  // weights and moments finite
    naming_path(path, [&] { load_parameters(*trainer.model_, parts.weights); });
    naming_path(path, [&] { trainer.optimizer_->load_state(parts.state, step); });
    trainer.batch_gen_.set_state(state_from_text(field(meta, "train.rng.batch", path), "train.rng.batch", path));
    read_generator_states(*trainer.model_, meta, path);
    if (const auto id = meta.find("run.id"); id != meta.end())
        naming_path(path, [&] { trainer.set_run_id(id->second); });
    trainer.run_files_ = run_files_in(meta, path);
    return trainer;
}

bool is_run_id(std::string_view id) {
    return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
    });
}

void Trainer::set_run_id(std::string id) {
    if (!is_run_id(id))  // (not shown: it may hold anything, a newline too)
        throw std::invalid_argument(
            fmt::format("the run id ('run.id', {} bytes) is not 1 to 64 letters, digits, '-' or '_'", id.size()));
    run_id_ = std::move(id);
}

}  // namespace nn
