// A `gpt2` model to GPT-2's published formats (docs/gpt2_weights.md): a folder Hugging Face's
// GPT2LMHeadModel.from_pretrained reads, or llm.c's version-3 model file.
//
//   export run.safetensors --hf gpt2-mine/          (gpt2-mine/model.safetensors and config.json)
//   export run.safetensors --llmc gpt2_mine.bin     (train_gpt2.c's --load file: 256 int32, then fp32)
//   export gpt2/model.safetensors --llmc gpt2_124M.bin   (Hugging Face's file to llm.c's, or back)
//
// CKPT is a tinygpt checkpoint of a gpt2 model (train --model gpt2), or GPT-2 weights in either format.
// The values are copied bit for bit, so loading the export gives the same model. The files appear only
// when complete: every output is checked before any is written (an existing one needs --force), --hf's
// two files are renamed into place together, and a refused export leaves no folder behind.
//
// Exit status: 0 done, 1 failed (message on stderr), 2 bad arguments.
#include <optional>
#include <string>
#include <vector>

#include <cli.h>
#include <fmt/format.h>
#include <nn/files/atomic_file.h>
#include <nn/models.h>
#include <nn/train/gpt2_weights.h>
#include <nn/train/trainer.h>

namespace {

struct Options {
    std::optional<cli::Input> checkpoint;
    std::string hf, llmc;
    bool force = false;
};

int run(const Options& o) {
    const std::string& path = o.checkpoint->path;
    std::vector<cli::Output> outputs = {{"--llmc", o.llmc}};
    if (!o.hf.empty())
        outputs = {{"--hf", (std::filesystem::path(o.hf) / "model.safetensors").string()},
                   {"--hf", (std::filesystem::path(o.hf) / "config.json").string()}};
    // Every output checked before anything is written; the folder (the checks need it) is removed again
    // when the export is refused or fails. (`made` outlives the locks: their files are in it.)
    std::optional<nn::NewDirectories> made;
    if (!o.hf.empty()) made.emplace(o.hf, "export");
    const cli::OutputLocks locks = cli::claim_outputs({*o.checkpoint}, outputs, o.force);
    nn::ModelConfig config;
    nn::NamedTensors weights;
    if (nn::weights_format(path) != nn::WeightsFormat::tinygpt) {  // no tokenizer needed to convert
        nn::ForeignWeights w = nn::read_gpt2_weights(path);
        config = w.config;
        weights = std::move(w.weights);
    } else {
        nn::TrainedModel trained = nn::load_trained_model(path);
        config = trained.config;
        weights = trained.model->named_parameters();
    }
    if (!o.hf.empty()) nn::write_hf_gpt2(o.hf, config, weights);
    else nn::write_llmc_gpt2(o.llmc, config, weights);
    if (made) made->keep();
    fmt::print("{}: GPT-2 n_layer {} n_head {} n_embd {} vocab {} n_ctx {}{} ({})\n", o.hf.empty() ? o.llmc : o.hf,
               config.n_layer, config.n_head, config.n_embd, config.vocab, config.block,
               config.scaled ? "" : " without the divisor",
               o.hf.empty() ? "llm.c version 3, fp32" : "model.safetensors + config.json");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    cli::Parser p("export", "CKPT (--hf DIR | --llmc FILE) [options]",
                  "A gpt2 model to Hugging Face's folder (model.safetensors + config.json) or llm.c's model file.");
    cli::checkpoint_argument(p, o.checkpoint, "a gpt2 checkpoint, or GPT-2 weights (Hugging Face's or llm.c's)", true);
    p.option("--hf", "DIR", "write DIR/model.safetensors and DIR/config.json", [&o](const cli::Value& v) { o.hf = v.nonempty(); });
    p.option("--llmc", "FILE", "write llm.c's version-3 (fp32) model file", [&o](const cli::Value& v) { o.llmc = v.file(); });
    p.flag("--force", cli::kForceHelp, [&o] { o.force = true; });
    return cli::run(p, argc, argv, [&o] {
        if (o.hf.empty() == o.llmc.empty()) throw cli::UsageError("give one of --hf DIR and --llmc FILE");
        return run(o);
    });
}
