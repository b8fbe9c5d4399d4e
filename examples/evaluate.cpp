// A checkpoint's loss on a data file: the mean cross-entropy over the first N consecutive windows of B x T
// tokens, window i being tokens [iBT, (i+1)BT + 1) (inputs the first BT, targets the same shifted by one),
// as llm.c measures its validation loss, and the perplexity exp(loss). Any model kind.
//
//   evaluate run.safetensors --data ../shared/data/tinyshakespeare.txt
//   evaluate run.safetensors --data val.bin --batch 4 --block 64 --batches 20 --json
//   evaluate gpt2.safetensors --data input.txt --tokenizer gpt2/    (a checkpoint's BPE checked against DIR)
//
// --data is a text file, encoded with the checkpoint's tokenizer (GPT-2's BPE as it is read), or a token
// file (.bin, nanoGPT's or llm.c's) whose ids must be below the model's vocabulary. The whole file is
// read: it is the text to measure, not split. --json prints one line: {"loss","perplexity","tokens","batches"}.
// A window of more rows than kPartBytes of activations (checkpoint_data.h) runs in parts of that
// many: memory for a part, whatever --batch, and the same mean.
//
// A bar on a terminal (loading, then the tokens measured); Ctrl-C stops at the next part of a window and
// prints the mean of the windows done (the interrupted one left out).
//
// Exit status: 0 done, 1 a bad checkpoint or data file, a loss that is not finite, or a row of --block
// tokens this machine's memory cannot hold; 2 bad arguments; 130 interrupted by SIGINT (Ctrl-C; 143
// SIGTERM, 129 SIGHUP) after printing the mean of the windows measured.
//
// Shape legend: B batch (rows of a window), T time (tokens per row), V vocab.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <cli.h>
#include <nlohmann/json.hpp>
#include <nn/generate/sample.h>
#include <nn/train/text_data.h>
#include <nn/tokenizers/token_ids.h>
#include <nn/tokenizers/tokenizer.h>
#include <nn/train/trainer.h>

#include "checkpoint_data.h"
#include "load_checkpoint.h"
#include "precision_flag.h"
#include "progress.h"
#include "stop_signals.h"
#include "tools.h"

namespace {

struct Options {
    std::optional<cli::Input> checkpoint;  // given: the parser requires it
    WindowFlags window;
    std::optional<std::string> tokenizer;
    std::optional<int64_t> n_head;
    int64_t threads = 1;
    bool json = false;
    autograd::Precision precision = autograd::Precision::float32;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("evaluate", "CKPT --data FILE [options]",
                  "A checkpoint's mean loss and perplexity over the first consecutive windows of a data file.");
    cli::checkpoint_argument(p, o.checkpoint, o.tokenizer, o.n_head,
                             "a checkpoint saved by train --out, or GPT-2 weights", true);
    add_window_flags(p, o.window, "(default every whole one)");
    p.option("--threads", "N", "threads for the kernels                           (default 1)",
             [&o](const cli::Value& v) { o.threads = v.integer(1, 256); });
    precision_flag::add(p, o.precision);
    p.flag("--json", "print one JSON line instead: {\"loss\",\"perplexity\",\"tokens\",\"batches\"}",
           [&o] { o.json = true; });
    return p;
}

struct Result {
    double loss = 0;
    int64_t tokens = 0, batches = 0;
};

// The mean of the windows' mean losses (every window has B x T targets: the mean over all of them). A
// window of more than `rows` rows runs in parts of `rows` (memory for that many, whatever --batch), each
// part's mean weighed by its rows: the same mean. A stop signal (Ctrl-C) ends it before the next part:
// the mean is then of the windows done (none: batches 0).
Result evaluate(nn::LanguageModel& model, const nn::TokenIds& ids, int64_t B, int64_t T, int64_t rows, int64_t batches,
                const std::string& checkpoint) {
    autograd::NoGradGuard no_grad;
    model.eval();
    const int64_t window = B * T;
    progress::Bar bar("evaluate", "tokens");
    double sum = 0;
    int64_t done = 0;  // windows
    for (; done < batches; ++done) {
        const nn::Batch batch = nn::consecutive_window(ids, done, B, T);
        double loss = 0;
        int64_t first = 0;
        for (; first < B && cli::stop_signal() == 0; first += rows) {
            const int64_t n = std::min(rows, B - first);
            const std::span<const int64_t> inputs(batch.inputs.data() + first * T, n * T),
                targets(batch.targets.data() + first * T, n * T);
            const double part = autograd::cross_entropy(model(inputs, n, T), targets).item();  // (n, T, V) -> ()
            loss += part * (double(n) / double(B));  // exactly `part` for a window in one part
            bar.update(uint64_t(done * window + (first + n) * T), uint64_t(batches * window));
        }
        if (first < B) break;  // stopped within the window: left out
        nn::check_finite_output(
            checkpoint,
            fmt::format("the loss of window {} (tokens {} to {})", done, done * window, (done + 1) * window), loss);
        sum += loss;
    }
    return {done > 0 ? sum / double(done) : NAN, done * window, done};
}

int run(const Options& o) {
    autograd::set_num_threads(static_cast<int>(o.threads));
    nn::TrainedModel trained = load_checkpoint(o.checkpoint->path, {o.tokenizer, o.n_head});
    const CheckpointData d = checkpoint_data(trained, o.checkpoint->path, o.window, nn::Pass::forward);
    const int64_t B = d.B, T = d.T;
    const cli::StopSignals stop;
    const precision_flag::Scope precision(o.precision);
    const Result r = evaluate(*trained.model, d.ids, B, T, d.rows, d.windows, o.checkpoint->path);
    if (cli::stop_signal() != 0) {
        progress::note(r.batches == 0
                           ? "evaluate: interrupted before the first window was measured: no loss to show\n"
                           : fmt::format("evaluate: interrupted after {} of {} windows: the loss shown is their mean\n",
                                         r.batches, d.windows));
        if (r.batches == 0) return 128 + cli::stop_signal();
    }
    const double perplexity = std::exp(r.loss);
    if (o.json)
        fmt::print("{}\n",
                   nlohmann::ordered_json{
                       {"loss", r.loss}, {"perplexity", perplexity}, {"tokens", r.tokens}, {"batches", r.batches}}
                       .dump());
    else
        fmt::print("loss {:.4f}, perplexity {:.2f}: {} tokens, the first {} window{} of {} x {} in {} ({} tokens){}\n",
                   r.loss, perplexity, r.tokens, r.batches, r.batches == 1 ? "" : "s", B, T, *o.window.data,
                   d.ids.size(),
                   o.precision == autograd::Precision::bf16
                       ? fmt::format(", bf16 products ({})", autograd::bf16_kernel_in_use())
                       : std::string());
    return cli::stop_signal() != 0 ? 128 + cli::stop_signal() : 0;
}

}  // namespace

int tools::evaluate(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
