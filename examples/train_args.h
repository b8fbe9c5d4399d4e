// train's command line on the shared layer (support/cli.h), parsed in-process without exiting, so
// fuzz/train_args.cpp can call it too. A bad command line is cli::UsageError, --help cli::HelpRequested.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <cli.h>
#include <fmt/format.h>
#include <nn/train/trainer.h>

namespace train_args {

struct Options {
    nn::TrainConfig config;
    std::optional<std::string> data, csv, grad_csv, out, resume;
    int64_t eval_every = 500, eval_iters = 200, sample = 200, top_k = 0, threads = 1, grad_report = 0;
    std::optional<int64_t> until;
    std::optional<std::string> prompt;
    float temperature = 1.0f;
    bool json = false, detect_anomaly = false, force = false;
    std::vector<std::string> model_flags;  // given explicitly: an error with --resume
};

// The flags that shape a model, and the kinds each applies to: given for another kind, a flag is refused
// rather than ignored.
inline bool applies(std::string_view flag, const std::string& kind) {
    if (flag == "--n-embd") return kind != "bigram";
    if (flag == "--n-head") return kind == "multihead" || kind == "gpt";
    if (flag == "--feed-forward") return kind == "multihead";
    if (flag == "--n-layer" || flag == "--dropout" || flag == "--init") return kind == "gpt";
    return true;
}

// The parser, its handlers writing into `o` (which must outlive it).
inline cli::Parser make_parser(Options& o) {
    nn::TrainConfig& c = o.config;
    c.model.kind = "head";
    constexpr int64_t kBig = int64_t{1} << 40;
    cli::Parser p("train", "[options]", "Train a character-level language model, from the bigram to a small GPT.");
    // A flag that fixes the model or the training: refused with --resume (the checkpoint fixes them).
    const auto fixed = [&o](std::function<void(const cli::Value&)> on) {
        return [&o, on = std::move(on)](const cli::Value& v) {
            on(v);
            o.model_flags.push_back(v.flag());
        };
    };
    p.section("model (a fresh run; fixed by the checkpoint with --resume)");
    p.option("--model", "KIND", "bigram | average | head | multihead | gpt          (default head)",
             fixed([&c](const cli::Value& v) { c.model.kind = v.choice({"bigram", "average", "head", "multihead", "gpt"}); }));
    p.option("--block", "T", "window length                                      (default 8)",
             fixed([&c](const cli::Value& v) { c.model.block = v.integer(1, 1 << 20); }));
    p.option("--n-embd", "C", "embedding width (not bigram)                       (default 32)",
             fixed([&c](const cli::Value& v) { c.model.n_embd = v.integer(1, 1 << 16); }));
    p.option("--n-head", "N", "attention heads (multihead, gpt); must divide C    (default 4)",
             fixed([&c](const cli::Value& v) { c.model.n_head = v.integer(1, 1 << 12); }));
    p.option("--n-layer", "L", "transformer blocks (gpt)                           (default 4)",
             fixed([&c](const cli::Value& v) { c.model.n_layer = v.integer(1, 1 << 10); }));
    p.flag("--feed-forward", "add a feed-forward layer (multihead)", [&o] {
        o.config.model.feed_forward = true;
        o.model_flags.push_back("--feed-forward");
    });
    p.option("--dropout", "P", "dropout probability in [0, 0.99] (gpt)             (default 0)",
             fixed([&c](const cli::Value& v) { c.model.dropout = v.number(0.0, 0.99); }));
    p.option("--init", "KIND", "gpt2 (normal, std 0.02) or default (the layers' own) (gpt; default gpt2)",
             fixed([&c](const cli::Value& v) { c.model.gpt2_init = v.choice({"gpt2", "default"}) == "gpt2"; }));
    p.section("training");
    p.option("--data", "FILE", "text to train on (90% train, 10% validation); without it, the built-in\n"
                               "copy task that only attention can solve",
             [&o](const cli::Value& v) { o.data = v.file(); });
    p.option("--steps", "N", "optimizer steps                                    (default 2000)",
             fixed([&c](const cli::Value& v) { c.steps = v.integer(1, kBig); }));
    p.option("--batch", "B", "windows per step                                   (default 32)",
             fixed([&c](const cli::Value& v) { c.batch = v.integer(1, 1 << 20); }));
    p.option("--lr", "X", "peak learning rate (AdamW)                         (default 1e-3)",
             fixed([&c](const cli::Value& v) { c.lr = v.number(0.0, 10.0, true); }));
    p.option("--min-lr", "X", "end of the cosine decay                            (default lr/10)",
             fixed([&c](const cli::Value& v) { c.min_lr = v.number(0.0, 10.0); }));
    p.option("--warmup", "N", "linear warmup steps                                (default 0)",
             fixed([&c](const cli::Value& v) { c.warmup = v.integer(0, kBig); }));
    p.option("--weight-decay", "X", "decoupled weight decay on Linear weights           (default 0.1)",
             fixed([&c](const cli::Value& v) { c.weight_decay = v.number(0.0, 10.0); }));
    p.option("--grad-clip", "X", "clip the global gradient norm; 0 = off             (default 1)",
             fixed([&c](const cli::Value& v) { c.grad_clip = v.number(0.0, 1e6); }));
    p.option("--seed", "S", "initialization, batches and dropout                (default 1337)",
             fixed([&c](const cli::Value& v) { c.seed = static_cast<uint64_t>(v.integer(0, INT64_MAX)); }));
    p.option("--threads", "N", "threads for the kernels                            (default 1)",
             [&o](const cli::Value& v) { o.threads = v.integer(1, 256); });
    p.flag("--detect-anomaly", "check every op for NaN/Inf and name the first one (slower)", [&o] { o.detect_anomaly = true; });
    p.section("evaluation, logs, checkpoints");
    p.option("--eval-every", "N", "evaluate (and save) every N steps                  (default 500)",
             [&o](const cli::Value& v) { o.eval_every = v.integer(1, kBig); });
    p.option("--eval-iters", "N", "batches per evaluation                             (default 200)",
             [&o](const cli::Value& v) { o.eval_iters = v.integer(1, 1 << 20); });
    p.option("--csv", "FILE", "log step, train loss, val loss, lr, grad norm, tokens/s",
             [&o](const cli::Value& v) { o.csv = v.file(); });
    p.option("--grad-report", "N", "print the gradient-flow report every N steps",
             [&o](const cli::Value& v) { o.grad_report = v.integer(1, kBig); });
    p.option("--grad-csv", "FILE", "and log it to FILE (step, kind, name, norms, update ratio, head stats)",
             [&o](const cli::Value& v) { o.grad_csv = v.file(); });
    p.option("--out", "CKPT", "save a checkpoint at every evaluation and at the end",
             [&o](const cli::Value& v) { o.out = v.file(); });
    p.option("--resume", "CKPT", "continue a saved run exactly where it stopped, saving back to CKPT\n"
                                 "unless --out names another file",
             [&o](const cli::Value& v) { o.resume = v.file(); });
    p.option("--until", "STEP", "stop after this step (the run's schedule still spans --steps)",
             [&o](const cli::Value& v) { o.until = v.integer(1, kBig); });
    p.flag("--force", cli::kForceHelp, [&o] { o.force = true; });
    p.flag("--json", "print one JSON line with the final figures on stdout", [&o] { o.json = true; });
    p.section("sampling");
    p.option("--sample", "N", "characters to sample at the end                   (default 200)",
             [&o](const cli::Value& v) { o.sample = v.integer(0, 1 << 24); });
    p.option("--prompt", "TEXT", "what the sample starts from                        (default a newline)",
             [&o](const cli::Value& v) { o.prompt = v.nonempty(); });
    p.option("--temperature", "X", "sampling temperature                               (default 1)",
             [&o](const cli::Value& v) { o.temperature = v.number(0.0, 100.0, true); });
    p.option("--top-k", "K", "sample from the K most likely characters; 0 = all  (default 0)",
             [&o](const cli::Value& v) { o.top_k = v.integer(0, 1 << 24); });
    return p;
}

// The checks across flags, after parsing. Throws cli::UsageError.
inline void check_options(Options& o) {
    const nn::TrainConfig& c = o.config;
    if (o.resume && !o.out) o.out = o.resume;  // a resumed run keeps saving where it was saved
    if (o.resume && !o.model_flags.empty())
        throw cli::UsageError(fmt::format("{} cannot change a resumed run: the checkpoint fixes the model and the training settings",
                                          o.model_flags.front()));
    if (c.min_lr >= 0.0f && c.min_lr > c.lr)
        throw cli::UsageError(fmt::format("--min-lr {} is above --lr {}: the rate would rise instead of decaying", c.min_lr, c.lr));
    for (const std::string& flag : o.model_flags)
        if (!applies(flag, c.model.kind))
            throw cli::UsageError(fmt::format("{} does not apply to --model {}", flag, c.model.kind));
    if ((c.model.kind == "multihead" || c.model.kind == "gpt") && c.model.n_embd % c.model.n_head != 0)
        throw cli::UsageError(fmt::format("--n-head {} must divide --n-embd {}", c.model.n_head, c.model.n_embd));
}

// Throws cli::UsageError for a bad command line and cli::HelpRequested for --help.
inline Options parse_args(int argc, const char* const* argv) {
    Options o;
    cli::Parser p = make_parser(o);
    p.parse(argc, argv);
    check_options(o);
    return o;
}

}  // namespace train_args
