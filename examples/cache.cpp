// A model's activations on a prompt, every hook point's (docs/hooks.md) or those matching --names, written
// as one safetensors file named by hook name (nn::run_with_cache): what TransformerLens's run_with_cache
// returns, for numpy or PyTorch to read (`safetensors.numpy.load_file`).
//
//   cache run.safetensors --prompt "the cat sat" --out acts.safetensors
//   cache gpt2/model.safetensors --prompt "When Mary and John" --out a.st --names "blocks.*.attn.hook_pattern,logits"
//
// Each tensor is F32 with the batch of 1 leading, as cached: blocks.L.attn.hook_pattern (1, n_head, T, T),
// logits (1, T, V), ...; the metadata holds the prompt's ids ("ids", a JSON list). The file is written
// whole or not at all (a temporary file renamed over it); an existing one needs --force.
// Exit status: 0 written, 1 a bad checkpoint or a failed write, 2 bad arguments (a glob matching no hook
// point among them).
//
// Shape legend: T time (the prompt's tokens), V vocab.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <autograd/autograd.h>
#include <cli.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <nn/interpret/cache.h>
#include <nn/model_files/safetensors.h>

#include "interpret_args.h"
#include "tools.h"

namespace {

struct Options {
    interpret_args::Common common;
    std::optional<std::string> prompt, out;
    std::string names = "*";
    bool force = false;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("cache", "CKPT --prompt P --out FILE [options]",
                  "A model's activations on a prompt, by hook name, written as one safetensors file.");
    interpret_args::add_checkpoint(p, o.common);
    p.option("--prompt", "P", "the text (or token ids, for a model without a tokenizer) the model reads",
             [&o](const cli::Value& v) { o.prompt = v.nonempty(); });
    p.option("--out", "FILE", "the safetensors file to write", [&o](const cli::Value& v) { o.out = v.file(); });
    p.option("--names", "GLOBS",
             "hook points to keep: globs separated by commas, '*' any run of characters\n"
             "(\"blocks.*.attn.hook_pattern,logits\")                (default *, every one)",
             [&o](const cli::Value& v) { o.names = v.nonempty(); });
    p.flag("--force", cli::kForceHelp, [&o] { o.force = true; });
    interpret_args::add_run_flags(p, o.common, "{\"file\",\"ids\",\"tokens\",\"tensors\",\"bytes\"}");
    return p;
}

// Each glob of `names` must match a hook point of the model: a usage error naming the first that does not,
// with a few of the model's names (all of them would be hundreds of lines for GPT-2). The model's own
// matcher decides (Module::add_hook), so the glob means here what it means to run_with_cache.
void check_names(nn::Module& model, std::string_view names) {
    const std::vector<std::string> all = model.hook_point_names();
    size_t begin = 0;
    while (begin <= names.size()) {
        const size_t end = std::min(names.find(',', begin), names.size());
        const std::string glob(names.substr(begin, end - begin));
        bool matched = !glob.empty();
        if (matched) try {
                model.add_hook(glob, [](autograd::Tensor&, const std::string&) {}).remove();
            } catch (const std::invalid_argument&) {
                matched = false;
            }
        if (!matched) {
            const std::vector<std::string> few(all.begin(), all.begin() + std::min<ptrdiff_t>(6, std::ssize(all)));
            throw cli::UsageError(fmt::format("--names: '{}' matches no hook point of the model (it has {}: {}{})",
                                              glob, all.size(), fmt::join(few, ", "),
                                              all.size() > few.size() ? ", ..." : ""));
        }
        begin = end + 1;
    }
}

int run(const Options& o) {
    if (!o.prompt) throw cli::UsageError("--prompt P is required: what the model reads");
    if (!o.out) throw cli::UsageError("--out FILE is required: the safetensors file to write");
    // before any work: --out is not the checkpoint, its directory exists and is writable, no other run writes it
    const cli::OutputLocks locks =
        cli::claim_outputs({*o.common.checkpoint}, {{.flag = "--out", .path = *o.out}}, o.force);
    nn::TrainedModel trained = interpret_args::load_model(o.common);
    check_names(*trained.model, o.names);
    const std::vector<int64_t> ids = interpret_args::prompt_ids(trained, "--prompt", *o.prompt);  // (T)
    const nn::ActivationCache cache = nn::run_with_cache(*trained.model, ids, o.names);
    nn::NamedTensors tensors(cache.entries().begin(), cache.entries().end());  // each (1, ...)
    nn::save_safetensors(*o.out, tensors, {{"ids", nlohmann::json(ids).dump()}});

    const std::vector<std::string> tokens = interpret_args::token_texts(*trained.tokenizer, ids);
    const auto bytes = static_cast<int64_t>(std::filesystem::file_size(*o.out));
    if (o.common.json) {
        fmt::print(
            "{}\n",
            nlohmann::ordered_json{
                {"file", *o.out}, {"ids", ids}, {"tokens", tokens}, {"tensors", tensors.size()}, {"bytes", bytes}}
                .dump());
        return 0;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& [name, value] : tensors)
        rows.push_back({name, fmt::format("({})", fmt::join(value.shape(), ", "))});
    interpret_args::print_table({"hook point", "shape"}, rows);
    fmt::print("{} written: {} tensors, {} bytes, the activations of {} tokens\n", *o.out, tensors.size(), bytes,
               ids.size());
    return 0;
}

}  // namespace

int tools::cache(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
