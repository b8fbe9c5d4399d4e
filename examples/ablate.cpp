// Head ablation (nn::ablate_heads): the model's mean loss on a data file with nothing touched, then with
// each head's output (blocks.L.attn.hook_z's slice) zeroed, or replaced by its mean over the window's
// positions, one head at a time: the heads the loss needs most are those whose ablation raises it most.
//
//   ablate run.safetensors --data ../shared/data/tinyshakespeare.txt --batch 4 --block 64 --batches 10
//   ablate induction.safetensors --data repeats.txt --batches 4 --mode mean --json
//
// The windows are evaluate's (window i is tokens [iBT, (i+1)BT + 1), inputs the first BT, targets the same
// shifted by one), so "loss" is what `evaluate` prints for the same flags. Each window runs L x n_head + 1
// times; --batches is required, as every window of a file would be many. --json prints one line:
// {"mode","loss","heads" (L x n_head, the loss with that head ablated),"tokens","batches"}.
// Exit status: 0 done, 1 a bad checkpoint or data file, 2 bad arguments.
//
// Shape legend: B batch (rows of a window), T time (tokens of a row), L blocks.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <cli.h>
#include <nlohmann/json.hpp>
#include <nn/interpret/probes.h>
#include <nn/train/text_data.h>

#include "checkpoint_data.h"
#include "interpret_args.h"
#include "tools.h"

namespace {

struct Options {
    interpret_args::Common common;
    WindowFlags window;
    nn::AblationMode mode = nn::AblationMode::zero;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("ablate", "CKPT --data FILE --batches N [options]",
                  "The model's loss on a data file with each head ablated in turn.");
    interpret_args::add_checkpoint(p, o.common);
    add_window_flags(p, o.window, "(required)");
    p.option("--mode", "M", "zero (the head's output zeroed) or mean (its mean over the window) (default zero)",
             [&o](const cli::Value& v) {
                 o.mode = v.choice({"zero", "mean"}) == "zero" ? nn::AblationMode::zero : nn::AblationMode::mean;
             });
    interpret_args::add_run_flags(p, o.common, "{\"mode\",\"loss\",\"heads\",\"tokens\",\"batches\"}");
    return p;
}

int run(const Options& o) {
    if (!o.window.data) throw cli::UsageError("--data FILE is required: the text or token file to measure");
    if (!o.window.batches)
        throw cli::UsageError("--batches N is required: the windows measured, from the start of the file");
    nn::TrainedModel trained = interpret_args::load_model(o.common);
    // the memory of a forward on one row is checked here; ablate_heads runs each window whole
    const CheckpointData d = checkpoint_data(trained, o.common.checkpoint->path, o.window, nn::Pass::forward);
    std::vector<int64_t> inputs, targets;  // (N, B, T) each
    for (int64_t i = 0; i < d.windows; ++i) {
        const nn::Batch w = nn::consecutive_window(d.ids, i, d.B, d.T);
        inputs.insert(inputs.end(), w.inputs.begin(), w.inputs.end());
        targets.insert(targets.end(), w.targets.begin(), w.targets.end());
    }
    const nn::HeadAblation r = nn::ablate_heads(*trained.model, inputs, targets, d.windows, d.B, d.T, o.mode);
    const char* mode = o.mode == nn::AblationMode::zero ? "zero" : "mean";
    const int64_t tokens = d.windows * d.B * d.T;
    if (o.common.json) {
        fmt::print("{}\n",
                   nlohmann::ordered_json{
                       {"mode", mode}, {"loss", r.loss}, {"heads", r.heads}, {"tokens", tokens}, {"batches", d.windows}}
                       .dump());
        return 0;
    }
    fmt::print("loss {:.4f} with every head, over {} tokens (the first {} window{} of {} x {} in {});\n", r.loss,
               tokens, d.windows, d.windows == 1 ? "" : "s", d.B, d.T, *o.window.data);
    fmt::print("the loss with one head's output {}:\n",
               o.mode == nn::AblationMode::zero ? "zeroed" : "replaced by its mean");
    interpret_args::print_grid("block", interpret_args::head_columns(r.heads.empty() ? 0 : r.heads[0].size()), r.heads,
                               [](size_t l) { return fmt::format("{}", l); });
    return 0;
}

}  // namespace

int tools::ablate(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
