// A `gpt2` model to GPT-2's published formats (docs/gpt2_weights.md): a folder Hugging Face's
// GPT2LMHeadModel.from_pretrained reads, or llm.c's version-3 model file; a `llama` model to llama2.c's
// model file (docs/llama.md), the legacy format run.c reads, or to a folder LlamaForCausalLM.from_pretrained
// reads.
//
//   export run.safetensors --hf gpt2-mine/          (gpt2-mine/model.safetensors, config.json, and the
//                                                    BPE tokenizer's vocab.json + merges.txt)
//   export run.safetensors --llmc gpt2_mine.bin     (train_gpt2.c's --load file: 256 int32, then fp32)
//   export gpt2/model.safetensors --llmc gpt2_124M.bin   (Hugging Face's file to llm.c's, or back)
//   export llama.safetensors --llama2c llama.bin    (run.c's model file: 7 int32, then fp32)
//   export stories260K.bin --hf stories260K-hf/     (config.json + model.safetensors [+ tokenizer.json])
//   export SmolLM-135M/ --llama2c smol.bin          (a Hugging Face Llama folder to llama2.c's file)
//
// CKPT is a tinygpt checkpoint of a gpt2 model (train --model gpt2), or GPT-2 weights in either format
// (their vocab.json + merges.txt beside them or in --tokenizer DIR, which --hf copies). The values are
// copied bit for bit, so loading the export gives the same model, and generate reads the folder's text
// with its tokenizer. The files appear only when complete: every output is checked before any is
// written (an existing one needs --force), --hf's files are renamed into place together, and a refused
// export leaves no folder.
//
// Exit status: 0 done, 1 failed (message on stderr), 2 bad arguments.
#include <array>
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <cli.h>
#include <fmt/format.h>
#include <nn/files/atomic_file.h>
#include <nn/llama.h>
#include <nn/models.h>
#include <nn/tokenizers/bpe.h>
#include <nn/model_files/gpt2_weights.h>
#include <nn/model_files/hf_llama.h>
#include <nn/model_files/llama2c.h>
#include <nn/tokenizers/hf_tokenizer.h>
#include <nn/tokenizers/llama2c_tokenizer.h>
#include <nn/train/trainer.h>

#include "load_checkpoint.h"
#include "progress.h"
#include "train_progress.h"

namespace {

struct Options {
    std::optional<cli::Input> checkpoint;
    std::string hf, llmc, llama2c;
    std::optional<std::string> tokenizer;
    std::optional<int64_t> n_head;
    bool force = false;
};

// Hugging Face's folder: the weights, their config, and GPT2Tokenizer's files (a gpt2 model), or
// tokenizer.json (a llama model). Each is claimed by either kind (an existing one needs --force), and
// the ones a kind does not write are removed, so a folder never mixes two models' files; so is an index
// of shards, which a reader could take for the weights.
constexpr std::array<const char*, 6> kHfFiles = {"model.safetensors", "config.json",    "vocab.json",
                                                 "merges.txt",        "tokenizer.json", "model.safetensors.index.json"};
// A checkpoint this large takes seconds to read and write (GPT-2 small's: 0.5 GB, 1.5 GB with AdamW's
// moments): each part is announced on stderr as it starts, and timed, when stderr is a terminal (a log or
// a pipe gets the results and messages only, as with the progress bars).
constexpr uintmax_t kAnnouncedBytes = uintmax_t{64} << 20;

std::string megabytes(uintmax_t bytes) { return fmt::format("{:.0f} MB", static_cast<double>(bytes) / 1e6); }

// A llama model as llama2.c's legacy file (run.c's), which holds only the sizes: run.c's rotary base
// (10000) and RMSNorm epsilon (1e-5) are fixed, so a model of others is refused by name (llama2c_config).
void export_llama2c(const std::string& out, const nn::TrainedModel& trained, const std::string& path) {
    const nn::ModelConfig& c = trained.config;
    if (c.kind != nn::ModelKind::llama)
        throw std::runtime_error(fmt::format("{}: a {} model; llama2.c's file holds a llama model only", path, c.kind));
    nn::Llama2cConfig config;
    try {
        config = nn::llama2c_config(nn::llama_options(c));
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
    }
    nn::write_llama2c(out, {.config = config, .tensors = trained.model->named_parameters(), .legacy_rope_tables = {}},
                      nn::Llama2cVersion::legacy);
}

// A llama model as Hugging Face's LlamaForCausalLM folder (write_hf_llama: config.json + model.safetensors),
// with its tokenizer.json when it has one, and config.json's bos_token_id and eos_token_id: the folder's
// own when the model came from one, else where its samples start and stop (llama2.c's BOS, 1). Every
// file is complete before any is renamed into place; GPT-2's tokenizer files there are removed.
void export_hf_llama(const std::filesystem::path& out, const nn::TrainedModel& trained) {
    const auto* tok = dynamic_cast<const nn::HfTokenizer*>(trained.tokenizer.get());
    nn::HfLlamaModel m{.config = nn::llama_options(trained.config),
                       .bos_token_id = tok ? tok->model_ids().bos : trained.bos,
                       .eos_token_id = tok ? tok->model_ids().eos : trained.eos,
                       .tensors = trained.model->named_parameters(),
                       .notes = {}};
    std::optional<nn::AtomicFile> tokenizer_file;
    if (tok) {
        tokenizer_file.emplace(out / "tokenizer.json", "export");
        tokenizer_file->write(tok->json_text().data(), tok->json_text().size());
    }
    nn::write_hf_llama(out, m);  // the model's two files, together
    if (tokenizer_file) tokenizer_file->commit();
    for (const char* stale : {"vocab.json", "merges.txt", tok ? "" : "tokenizer.json"}) {
        std::error_code error;
        if (*stale) std::filesystem::remove(out / stale, error);
        if (error)
            throw std::runtime_error(fmt::format("{}: cannot remove another model's tokenizer file ({})",
                                                 nn::printable_name((out / stale).string()), error.message()));
    }
}

int run(const Options& o) {
    if (int(!o.hf.empty()) + int(!o.llmc.empty()) + int(!o.llama2c.empty()) != 1)
        throw cli::UsageError("give one of --hf DIR, --llmc FILE and --llama2c FILE");
    const std::string& path = o.checkpoint->path;
    const std::string& out = !o.hf.empty() ? o.hf : !o.llmc.empty() ? o.llmc : o.llama2c;
    std::vector<cli::Output> outputs;
    if (!o.llmc.empty()) outputs.push_back({"--llmc", o.llmc});
    if (!o.llama2c.empty()) outputs.push_back({"--llama2c", o.llama2c});
    for (const char* name : o.hf.empty() ? std::span<const char* const>() : kHfFiles)
        outputs.push_back({"--hf", (std::filesystem::path(o.hf) / name).string()});
    // Every output checked before anything is written; the folder (the checks need it) is removed again
    // when the export is refused or fails. (`made` outlives the locks: their files are in it.)
    std::optional<nn::NewDirectories> made;
    if (!o.hf.empty()) made.emplace(o.hf, "export");
    const cli::OutputLocks locks = cli::claim_outputs({*o.checkpoint}, outputs, o.force);
    std::error_code error;
    const uintmax_t size = std::filesystem::file_size(path, error);
    const bool announced = !error && size >= kAnnouncedBytes && progress::stderr_on_terminal();
    const auto start = std::chrono::steady_clock::now();
    const auto seconds = [&start] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    if (announced) train_progress::note(fmt::format("export: reading {} ({})\n", path, megabytes(size)));
    const nn::TrainedModel trained = load_checkpoint(path, {o.tokenizer, o.n_head});
    const nn::NamedTensors weights = trained.model->named_parameters();
    if (announced)
        train_progress::note(
            fmt::format("export: read in {:.1f} s; writing {} ({} of weights)\n", seconds(), out,
                        megabytes(uintmax_t{4} * static_cast<uintmax_t>(trained.model->parameter_count()))));
    if (!o.llama2c.empty()) {
        export_llama2c(o.llama2c, trained, path);
        if (announced) train_progress::note(fmt::format("export: done in {:.1f} s\n", seconds()));
        const nn::LlamaOptions l = nn::llama_options(trained.config);
        fmt::print(
            "{}: Llama dim {} hidden_dim {} n_layers {} n_heads {} n_kv_heads {} vocab_size {} seq_len {}, {} "
            "classifier (llama2.c legacy, fp32; the tokenizer is not written)\n",
            out, l.n_embd, l.ffn_hidden, l.n_layer, l.n_head, l.n_kv_head, l.vocab, l.block,
            l.tied_embeddings ? "shared" : "untied");
        return 0;
    }
    if (!o.hf.empty() && trained.config.kind == nn::ModelKind::llama) {
        export_hf_llama(o.hf, trained);
        if (made) made->keep();
        if (announced) train_progress::note(fmt::format("export: done in {:.1f} s\n", seconds()));
        const bool with_tokenizer = dynamic_cast<const nn::HfTokenizer*>(trained.tokenizer.get()) != nullptr;
        if (!with_tokenizer) {
            const bool ids = nn::as_ids_only(*trained.tokenizer) != nullptr;
            const bool llama2c = dynamic_cast<const nn::Llama2cTokenizer*>(trained.tokenizer.get()) != nullptr;
            train_progress::note(
                fmt::format("note: {} has {}: {} gets no tokenizer.json, and {}\n", path,
                            ids       ? "no tokenizer"
                            : llama2c ? "llama2.c's tokenizer.bin, which a Hugging Face folder cannot hold"
                                      : "a character tokenizer, which a Hugging Face folder cannot hold",
                            o.hf, llama2c ? "takes the tokenizer.bin as --tokenizer" : "reads and writes token ids"));
        }
        const nn::LlamaOptions l = nn::llama_options(trained.config);
        fmt::print(
            "{}: Llama hidden_size {} intermediate_size {} num_hidden_layers {} num_attention_heads {} "
            "num_key_value_heads {} vocab_size {} max_position_embeddings {}, {} embeddings (model.safetensors F32 + "
            "config.json{})\n",
            o.hf, l.n_embd, l.ffn_hidden, l.n_layer, l.n_head, l.n_kv_head, l.vocab, l.block,
            l.tied_embeddings ? "tied" : "untied", with_tokenizer ? " + tokenizer.json" : "");
        return 0;
    }
    const auto* bpe = dynamic_cast<const nn::BpeTokenizer*>(trained.tokenizer.get());
    if (!o.hf.empty() && !bpe)
        train_progress::note(
            fmt::format("note: {} has {}, which Hugging Face's folder cannot hold: {} gets no vocab.json and "
                        "merges.txt, and reads and writes token ids\n",
                        path, nn::as_ids_only(*trained.tokenizer) ? "no tokenizer" : "a character tokenizer", o.hf));
    if (!o.hf.empty()) {
        nn::write_hf_gpt2(o.hf, trained.config, weights, bpe);
        for (const char* stale : {"tokenizer.json", "model.safetensors.index.json"}) {  // a llama's, before
            std::error_code failed;
            std::filesystem::remove(std::filesystem::path(o.hf) / stale, failed);
            if (failed)
                throw std::runtime_error(fmt::format("{}: cannot remove another model's file ({})",
                                                     nn::printable_name((std::filesystem::path(o.hf) / stale).string()),
                                                     failed.message()));
        }
    } else nn::write_llmc_gpt2(o.llmc, trained.config, weights);
    if (made) made->keep();
    if (announced) train_progress::note(fmt::format("export: done in {:.1f} s\n", seconds()));
    const nn::ModelConfig& c = trained.config;
    fmt::print("{}: GPT-2 n_layer {} n_head {} n_embd {} vocab {} n_ctx {}{} ({})\n", out, c.n_layer, c.n_head,
               c.n_embd, c.vocab, c.block, c.scaled ? "" : " without the divisor",
               !o.hf.empty() ? (bpe ? "model.safetensors + config.json + vocab.json + merges.txt"
                                    : "model.safetensors + config.json")
                             : "llm.c version 3, fp32");
    return 0;
}

cli::Parser make_parser(Options& o) {
    cli::Parser p("export", "CKPT (--hf DIR | --llmc FILE | --llama2c FILE) [options]",
                  "A gpt2 model to Hugging Face's folder (model.safetensors, config.json and the tokenizer's\n"
                  "vocab.json + merges.txt) or llm.c's model file; a llama model to llama2.c's model file\n"
                  "or Hugging Face's folder (config.json, model.safetensors and its tokenizer.json).");
    cli::checkpoint_argument(p, o.checkpoint, o.tokenizer, o.n_head,
                             "a gpt2 checkpoint, or GPT-2 weights (Hugging Face's or llm.c's)", true);
    p.option("--hf", "DIR",
             "write DIR/model.safetensors, DIR/config.json, and the BPE tokenizer's\n"
             "DIR/vocab.json + DIR/merges.txt (gpt2), or DIR/tokenizer.json (llama)",
             [&o](const cli::Value& v) { o.hf = v.nonempty(); });
    p.option("--llmc", "FILE", "write llm.c's version-3 (fp32) model file",
             [&o](const cli::Value& v) { o.llmc = v.file(); });
    p.option("--llama2c", "FILE", "write llama2.c's legacy model file (what run.c reads) of a llama model",
             [&o](const cli::Value& v) { o.llama2c = v.file(); });
    p.flag("--force", cli::kForceHelp, [&o] { o.force = true; });
    return p;
}

}  // namespace

int main(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
