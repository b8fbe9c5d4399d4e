// A training checkpoint read for inference: config, vocabulary and weights; the training state is ignored.
#include "checkpoint_fields.h"

#include "nn/tokenizers/bpe.h"
#include "nn/model_files/gpt2_weights.h"
#include "nn/generate/sample.h"
#include "nn/llama.h"
#include "nn/model_files/llama2c.h"
#include "nn/tokenizers/llama2c_tokenizer.h"
#include "nn/model_files/hf_llama.h"
#include "nn/tokenizers/hf_tokenizer.h"

#include <fstream>

namespace nn {

using namespace detail;

namespace {

bool has_bpe_files(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    return (fs::is_regular_file(dir / "vocab.json") && fs::is_regular_file(dir / "merges.txt")) ||
           (fs::is_regular_file(dir / "encoder.json") && fs::is_regular_file(dir / "vocab.bpe"));
}

// The model a file's weights were read into: loaded (every name and shape checked) and in eval mode.
TrainedModel with_weights(TrainedModel out, std::unique_ptr<LanguageModel> model, const NamedTensors& weights,
                          const std::filesystem::path& path) {
    out.model = std::move(model);
    naming_path(path, [&] { load_parameters(*out.model, weights); });
    out.model->eval();
    return out;
}

// Weights without a tokenizer read and write token ids; a note says which files were looked for.
std::shared_ptr<const Tokenizer> ids_only(int64_t vocab, const std::string& name, std::string_view looked_for) {
    fmt::print(stderr, "note: {}: no tokenizer (none given, {}): token ids only\n", name, looked_for);
    return std::make_shared<const IdTokenizer>(vocab, name);
}

// Hugging Face's or llm.c's GPT-2 weights: the tokenizer comes from --tokenizer, or from the files beside
// the weights (a Hugging Face download keeps them together, and so does export --hf); without either, the
// model reads and writes token ids only (IdTokenizer), and a note says so.
TrainedModel load_foreign(const std::filesystem::path& path, const LoadOptions& options) {
    // The weights straight into a new model's parameters (the model's size in memory, not twice it)
    autograd::Generator unused_init;  // every weight is overwritten by the file's
    std::unique_ptr<LanguageModel> model;
    ForeignWeights w = read_gpt2_weights(
        path,
        [&](const ModelConfig& config) {
            model = naming_path(path, [&] { return make_model(config, unused_init); });
            return model->named_parameters();
        },
        options.n_head, options.progress);
    check_finite(w.weights, printable_name(path.string()));
    for (const std::string& note : w.notes) fmt::print(stderr, "note: {}: {}\n", printable_name(path.string()), note);
    for (const std::string& warning : w.warnings)
        fmt::print(stderr, "warning: {}: {}\n", printable_name(path.string()), warning);
    const std::filesystem::path beside = path.parent_path().empty() ? "." : path.parent_path();
    const std::optional<std::filesystem::path> dir = options.tokenizer       ? options.tokenizer
                                                     : has_bpe_files(beside) ? std::optional(beside)
                                                                             : std::nullopt;
    TrainedModel out{w.config, nullptr, nullptr};
    if (dir) {
        out.tokenizer = std::make_shared<const BpeTokenizer>(BpeTokenizer::from_directory(*dir));
    } else {
        out.tokenizer =
            ids_only(w.config.vocab, printable_name(path.string()), "no vocab.json and merges.txt beside it");
    }
    if (out.tokenizer->vocab_size() != out.config.vocab)
        throw std::runtime_error(fmt::format("{}: the tokenizer in {} has {} tokens but the model's vocab is {}",
                                             printable_name(path.string()), path_str(dir.value_or("")),
                                             out.tokenizer->vocab_size(), out.config.vocab));
    return with_weights(std::move(out), std::move(model), w.weights, path);
}

// A llama2.c model file (nn/model_files/llama2c.h) as the llama kind (rope_theta 10000, norm_eps 1e-5, as
// run.c). The tokenizer: `options.tokenizer` (a tokenizer.bin, or a directory holding one), else the
// tokenizer.bin beside the file; without either, token ids only, as GPT-2's weights without BPE files.
// Either way the samples start from BOS and stop at it, as run.c's.
TrainedModel load_llama2c(const std::filesystem::path& path, const LoadOptions& options) {
    const std::string name = printable_name(path.string());
    autograd::Generator unused_init;  // every weight is overwritten by the file's
    std::unique_ptr<LanguageModel> model;
    ModelConfig config;
    const Llama2cModel file = read_llama2c(path, [&](const Llama2cConfig& c) {
        config = llama_config(llama_options(c));
        if (options.n_head && *options.n_head != c.n_heads)
            throw std::runtime_error(
                fmt::format("n_head {} was asked, but {} disagrees: its header field 'n_heads' is {}", *options.n_head,
                            name, c.n_heads));
        model = naming_path(path, [&] { return make_model(config, unused_init); });
        return model->named_parameters();
    });
    check_finite(file.tensors, name);
    namespace fs = std::filesystem;
    std::optional<fs::path> tokenizer = options.tokenizer;
    if (tokenizer && fs::is_directory(*tokenizer)) tokenizer = *tokenizer / "tokenizer.bin";
    const fs::path beside = (path.parent_path().empty() ? fs::path(".") : path.parent_path()) / "tokenizer.bin";
    if (!tokenizer && fs::is_regular_file(beside)) tokenizer = beside;
    TrainedModel out{config, nullptr, nullptr};
    if (tokenizer) {
        out.tokenizer = std::make_shared<const Llama2cTokenizer>(Llama2cTokenizer::from_file(*tokenizer, config.vocab));
    } else {
        out.tokenizer = ids_only(config.vocab, name, "no tokenizer.bin beside it");
    }
    out.bos = Llama2cTokenizer::kBos;
    return with_weights(std::move(out), std::move(model), file.tensors, path);
}

// The tokenizer given for a Llama: a tokenizer.json (a FILE ending in .json, or a DIR holding one), or
// llama2.c's tokenizer.bin (another FILE, or a DIR holding one and no tokenizer.json).
bool is_tokenizer_json(const std::filesystem::path& given) {
    namespace fs = std::filesystem;
    return fs::is_directory(given) ? fs::exists(given / "tokenizer.json") || !fs::exists(given / "tokenizer.bin")
                                   : given.extension() == ".json";
}
std::filesystem::path tokenizer_file(const std::filesystem::path& given) {
    if (!std::filesystem::is_directory(given)) return given;
    return given / (is_tokenizer_json(given) ? "tokenizer.json" : "tokenizer.bin");
}

// A Hugging Face LlamaForCausalLM folder (nn/model_files/hf_llama.h) as the llama kind, read straight into
// a new model's parameters. The tokenizer: `options.tokenizer` (a tokenizer.json or tokenizer.bin, or a
// directory holding one), else the tokenizer.json in the folder; without either, token ids only, starting
// from config.json's bos_token_id and stopping at it or its eos_token_id, as load_llama2c does.
TrainedModel load_hf_llama(const std::filesystem::path& path, const LoadOptions& options) {
    const std::string name = printable_name(path.string());
    autograd::Generator unused_init;  // every weight is overwritten by the folder's
    std::unique_ptr<LanguageModel> model;
    ModelConfig config;
    HfLlamaModel folder = read_hf_llama(path, [&](const LlamaOptions& l) {
        config = llama_config(l);
        if (options.n_head && *options.n_head != l.n_head)
            throw std::runtime_error(
                fmt::format("n_head {} was asked, but {} disagrees: its config.json's 'num_attention_heads' is {}",
                            *options.n_head, name, l.n_head));
        model = naming_path(path, [&] { return make_model(config, unused_init); });
        return model->named_parameters();
    });
    check_finite(folder.tensors, name);
    for (const std::string& note : folder.notes) fmt::print(stderr, "note: {}: {}\n", name, note);
    namespace fs = std::filesystem;
    std::optional<fs::path> tokenizer = options.tokenizer ? std::optional(tokenizer_file(*options.tokenizer))
                                        : fs::is_regular_file(path / "tokenizer.json")
                                            ? std::optional(path / "tokenizer.json")
                                            : std::nullopt;
    TrainedModel out{config, nullptr, nullptr};
    if (tokenizer && tokenizer->extension() == ".json") {
        const HfTokenizer tok =
            HfTokenizer::from_file(*tokenizer).with_model_ids({.bos = folder.bos_token_id, .eos = folder.eos_token_id});
        out.bos = sample_bos(tok);  // as docs/llama.md says (nn/generate/sample.h)
        out.eos = sample_eos(tok);
        out.tokenizer = std::make_shared<const HfTokenizer>(tok);
    } else if (tokenizer) {  // llama2.c's tokenizer.bin: run.c's BOS, as for its model files
        out.tokenizer = std::make_shared<const Llama2cTokenizer>(Llama2cTokenizer::from_file(*tokenizer, config.vocab));
        out.bos = Llama2cTokenizer::kBos;
    } else {
        out.tokenizer = ids_only(config.vocab, name, "no tokenizer.json in it");
        out.bos = folder.bos_token_id;
        out.eos = folder.eos_token_id;
    }
    // A vocabulary shorter than the model's output would let a sampler draw an id it cannot print
    if (out.tokenizer->vocab_size() < config.vocab)
        throw std::runtime_error(fmt::format("{}: the tokenizer {} has {} tokens but the model's vocab_size is {}",
                                             name, path_str(tokenizer.value_or("")), out.tokenizer->vocab_size(),
                                             config.vocab));
    if (out.tokenizer->vocab_size() > config.vocab)
        throw std::runtime_error(fmt::format(
            "{}: the tokenizer {} has {} tokens, more than the model's vocab_size {}: its ids past {} have no logits",
            name, path_str(tokenizer.value_or("")), out.tokenizer->vocab_size(), config.vocab, config.vocab - 1));
    return with_weights(std::move(out), std::move(model), folder.tensors, path);
}

// A regular file that weights_format did not take for GPT-2 weights is read as a tinygpt checkpoint, a
// safetensors file: 8 bytes of header length, then the JSON header, which starts with '{'. Anything else
// is neither that nor llm.c's model file, and is refused so, naming the magic it has instead of llm.c's.
void check_safetensors_start(const std::filesystem::path& path) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) return;  // (the reader names what it is instead)
    std::ifstream in(path, std::ios::binary);
    unsigned char first[9] = {};
    in.read(reinterpret_cast<char*>(first), sizeof first);
    const auto got = static_cast<size_t>(in.gcount());
    if (!in && got == 0 && !in.eof()) return;  // unreadable: the reader says why
    if (got == sizeof first && first[8] == '{') return;
    const std::string name = printable_name(path.string());
    if (got < sizeof first)
        throw std::runtime_error(
            fmt::format("{}: neither a tinygpt checkpoint (a safetensors file) nor llm.c's model file: its {} "
                        "byte{} are too few for either's header",
                        name, got, got == 1 ? "" : "s"));
    const auto magic = static_cast<int32_t>(uint32_t{first[0]} | uint32_t{first[1]} << 8 | uint32_t{first[2]} << 16 |
                                            uint32_t{first[3]} << 24);
    throw std::runtime_error(
        fmt::format("{}: neither a tinygpt checkpoint (a safetensors file, whose JSON header starts with '{{' "
                    "at byte 8: here 0x{:02x}) nor llm.c's model file (whose first int32 is the magic 20240326: "
                    "here {})",
                    name, first[8], magic));
}

}  // namespace

void check_tokenizer_dir(const std::filesystem::path& dir, const Tokenizer& saved, const std::string& checkpoint) {
    // A tokenizer.json or llama2.c's tokenizer.bin is given as the file, or as a directory holding it
    const auto given_file = [&](const char* name) { return std::filesystem::is_directory(dir) ? dir / name : dir; };
    const auto disagree = [&](const std::filesystem::path& file, std::string_view other) {
        return std::runtime_error(fmt::format("the tokenizer {} and the checkpoint {} disagree: the checkpoint's is {}",
                                              printable_name(file.string()), printable_name(checkpoint), other));
    };
    if (const auto* hf = dynamic_cast<const HfTokenizer*>(&saved)) {
        const std::filesystem::path file = given_file("tokenizer.json");
        if (HfTokenizer::from_file(file).json_text() != hf->json_text()) throw disagree(file, "another tokenizer.json");
        return;
    }
    if (const auto* llama2c = dynamic_cast<const Llama2cTokenizer*>(&saved)) {
        const std::filesystem::path file = given_file("tokenizer.bin");
        if (Llama2cTokenizer::from_file(file).file() != llama2c->file())
            throw disagree(file, "another llama2.c tokenizer.bin");
        return;
    }
    const auto* bpe = dynamic_cast<const BpeTokenizer*>(&saved);
    if (!bpe || !(*bpe == BpeTokenizer::from_directory(dir)))
        throw std::runtime_error(
            fmt::format("the tokenizer {} and the checkpoint {} disagree: the checkpoint's tokenizer is {}",
                        printable_name(dir.string()), printable_name(checkpoint),
                        bpe                  ? "another BPE vocabulary or merges"
                        : as_ids_only(saved) ? "none (token ids only)"
                                             : "characters"));
}

TrainedModel load_trained_model(const std::filesystem::path& path, const LoadOptions& options) {
    if (is_llama2c_file(path)) return load_llama2c(path, options);
    if (std::filesystem::is_directory(path) && std::filesystem::exists(path / "config.json"))
        return load_hf_llama(path, options);
    if (weights_format(path) != WeightsFormat::tinygpt) return load_foreign(path, options);
    check_safetensors_start(path);
    SafetensorsReader file(path);
    check_format(file.metadata(), path);
    TrainedModel out{model_config(file.metadata(), path), checkpoint_tokenizer(file.metadata(), path), nullptr};
    if (const auto step = file.metadata().find("train.step"); step != file.metadata().end())
        out.step = static_cast<int64_t>(to_u64(step->second, step->first, path));
    // A vocabulary shorter than the model's output would let a sampler draw an id it cannot print, after
    // printing the text before it: refused here, before anything is drawn.
    if (out.tokenizer->vocab_size() != out.config.vocab)
        throw std::runtime_error(fmt::format("{}: its vocabulary has {} tokens but its model's vocab is {}",
                                             printable_name(path.string()), out.tokenizer->vocab_size(),
                                             out.config.vocab));
    if (options.tokenizer) check_tokenizer_dir(*options.tokenizer, *out.tokenizer, path.string());
    out.bos = sample_bos(*out.tokenizer);
    out.eos = sample_eos(*out.tokenizer);
    if (options.n_head && *options.n_head != out.config.n_head)
        throw std::runtime_error(
            fmt::format("n_head {} was asked, but the checkpoint {} disagrees: its model has n_head {}",
                        *options.n_head, printable_name(path.string()), out.config.n_head));
    check_sizes_against_weights(out.config, file, path);
    if (options.progress) file.on_progress(options.progress);  // from here: making the model, then reading
    autograd::Generator unused_init;                           // every weight is overwritten by the file's
    std::unique_ptr<LanguageModel> model = naming_path(path, [&] { return make_model(out.config, unused_init); });
    // The weights straight into the model's parameters; the optimizer state is read (its checksums and
    // values checked) through a bounded buffer and dropped: the model's size in memory, not the file's twice.
    const NamedTensors weights = file.read_all(model->named_parameters(), is_weight, printable_name(path.string()));
    return with_weights(std::move(out), std::move(model), weights, path);
}

}  // namespace nn
