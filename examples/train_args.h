// train's command line, parsed in-process without exiting, so fuzz/train_args.cpp can call it too.
// examples/train.cpp turns UsageError into "train: <problem>" and the usage on stderr, exit status 2.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nn/train/trainer.h>

namespace train_args {

constexpr const char* kUsage = R"(usage: train [options]

model (a fresh run; fixed by the checkpoint with --resume)
  --model KIND         bigram | average | head | multihead | gpt          (default head)
  --block T            window length                                      (default 8)
  --n-embd C           embedding width                                    (default 32)
  --n-head N           attention heads (multihead, gpt); must divide C    (default 4)
  --n-layer L          transformer blocks (gpt)                           (default 4)
  --feed-forward       add a feed-forward layer (multihead)
  --dropout P          dropout probability in [0, 1) (gpt)                (default 0)
  --init KIND          gpt2 (normal, std 0.02) or default (the layers' own) (default gpt2)
training
  --data FILE          text to train on (90% train, 10% validation); without it, the built-in
                       copy task that only attention can solve
  --steps N            optimizer steps; with --resume, a larger N extends the run (default 2000)
  --batch B            windows per step                                   (default 32)
  --lr X               peak learning rate (AdamW)                         (default 1e-3)
  --min-lr X           end of the cosine decay                            (default lr/10)
  --warmup N           linear warmup steps                                (default 0)
  --weight-decay X     decoupled weight decay on Linear weights           (default 0.1)
  --grad-clip X        clip the global gradient norm; 0 = off             (default 1)
  --seed S             initialization, batches and dropout                (default 1337)
  --threads N          threads for the kernels                            (default 1)
  --detect-anomaly     check every op for NaN/Inf and name the first one (slower)
evaluation, logs, checkpoints (--eval-every, --eval-iters, --grad-report and the sampling flags
are kept in the checkpoint; given with --resume, they change)
  --eval-every N       evaluate (and save) every N steps                  (default 500)
  --eval-iters N       batches per evaluation                             (default 200)
  --csv FILE           log step, train loss, val loss, lr, grad norm, tokens/s
  --grad-report N      print the gradient-flow report every N steps
  --grad-csv FILE      and log it to FILE (step, kind, name, norms, update ratio, head stats)
  --out CKPT           save a checkpoint at every evaluation and at the end
  --resume CKPT        continue a saved run exactly where it stopped, saving back to CKPT
                       unless --out names another file
  --until STEP         stop after this step, past the checkpoint's (the schedule still spans --steps)
  --json               print one JSON line with the final figures on stdout
sampling
  --sample N           characters to sample at the end                   (default 200)
  --prompt TEXT        what the sample starts from                        (default a newline)
  --temperature X      sampling temperature                               (default 1)
  --top-k K            sample from the K most likely characters; 0 = all  (default 0)
  --help               this text
)";

// A bad command line: the problem, for "train: <problem>" above the usage and exit status 2.
struct UsageError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};
// --help or -h: print the usage and exit 0.
struct HelpRequested {};

[[noreturn]] inline void usage_error(const std::string& problem) { throw UsageError(problem); }

struct Options {
    nn::TrainConfig config;
    std::optional<std::string> data, csv, grad_csv, out, resume;
    int64_t threads = 1;
    std::optional<int64_t> until;
    std::optional<std::string> prompt;
    bool json = false, detect_anomaly = false;
    std::vector<std::string> model_flags;  // given explicitly: an error with --resume
    bool steps_given = false;              // with --resume: extends the run to --steps

    // Evaluation, logs and the sample (nn::RunSettings). A checkpoint keeps them: what is not given
    // comes from it with --resume, and from RunSettings' defaults otherwise.
    std::optional<int64_t> eval_every, eval_iters, grad_report, sample, top_k;
    std::optional<float> temperature;
    nn::RunSettings run_settings(nn::RunSettings base) const {
        base.eval_every = eval_every.value_or(base.eval_every);
        base.eval_iters = eval_iters.value_or(base.eval_iters);
        base.grad_report = grad_report.value_or(base.grad_report);
        base.sample = sample.value_or(base.sample);
        base.temperature = temperature.value_or(base.temperature);
        base.top_k = top_k.value_or(base.top_k);
        return base;
    }
};

inline int64_t parse_int(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
    size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(text, &used);
    } catch (const std::exception&) {
        usage_error(fmt::format("{} needs a whole number, got '{}'", flag, text));
    }
    if (used != text.size()) usage_error(fmt::format("{} needs a whole number, got '{}'", flag, text));
    if (v < min || v > max) usage_error(fmt::format("{} must be between {} and {}, got {}", flag, min, max, v));
    return v;
}

inline float parse_float(const std::string& flag, const std::string& text, double min, double max, bool min_open = false) {
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        usage_error(fmt::format("{} needs a number, got '{}'", flag, text));
    }
    if (used != text.size() || !std::isfinite(v)) usage_error(fmt::format("{} needs a number, got '{}'", flag, text));
    // The bounds hold for the float that is kept: 1e-50 is above 0 as a double but 0 as a float.
    const auto kept = static_cast<float>(v);
    if (v < min || v > max || (min_open && !(kept > static_cast<float>(min))))
        usage_error(fmt::format("{} must be {} {} and at most {}, got {}", flag, min_open ? "above" : "at least", min, max, text));
    return kept;
}

// A file name flag's value: an empty one would pass every check until the first save, and lose the steps
// before it.
inline std::string path(const std::string& flag, const std::string& text) {
    if (text.empty()) usage_error(fmt::format("{} needs a file name, got ''", flag));
    return text;
}

// Throws UsageError for a bad command line and HelpRequested for --help; nothing else is expected.
inline Options parse_args(int argc, const char* const* argv) {
    Options o;
    nn::TrainConfig& c = o.config;
    c.model.kind = nn::ModelKind::head;
    constexpr int64_t kBig = int64_t{1} << 40;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "--help" || flag == "-h") throw HelpRequested{};
        if (flag == "--json") { o.json = true; continue; }
        if (flag == "--detect-anomaly") { o.detect_anomaly = true; continue; }
        if (flag == "--feed-forward") { c.model.feed_forward = true; o.model_flags.push_back(flag); continue; }
        if (!flag.starts_with("--")) usage_error(fmt::format("unexpected argument '{}'", flag));
        if (i + 1 >= argc) {  // the usage lists every flag, each on a line of its own: "  --steps N ..."
            const bool known = std::string_view(kUsage).find("\n  " + flag + " ") != std::string_view::npos;
            usage_error(known ? fmt::format("{} needs a value", flag) : fmt::format("unknown flag '{}'", flag));
        }
        const std::string value = argv[++i];
        const auto model_flag = [&] { o.model_flags.push_back(flag); };
        if (flag == "--model") {
            const std::optional<nn::ModelKind> kind = nn::parse_model_kind(value);
            if (!kind) usage_error(fmt::format("--model must be {}, got '{}'", nn::model_kind_names(", ", " or "), value));
            c.model.kind = *kind;
            model_flag();
        } else if (flag == "--init") {
            if (value != "gpt2" && value != "default") usage_error(fmt::format("--init must be gpt2 or default, got '{}'", value));
            c.model.gpt2_init = value == "gpt2";
            model_flag();
        } else if (flag == "--data") o.data = value;
        else if (flag == "--steps") { c.steps = parse_int(flag, value, 1, kBig); o.steps_given = true; }
        else if (flag == "--batch") { c.batch = parse_int(flag, value, 1, 1 << 20); model_flag(); }
        else if (flag == "--block") { c.model.block = parse_int(flag, value, 1, 1 << 20); model_flag(); }
        else if (flag == "--n-embd") { c.model.n_embd = parse_int(flag, value, 1, 1 << 16); model_flag(); }
        else if (flag == "--n-head") { c.model.n_head = parse_int(flag, value, 1, 1 << 12); model_flag(); }
        else if (flag == "--n-layer") { c.model.n_layer = parse_int(flag, value, 1, 1 << 10); model_flag(); }
        else if (flag == "--dropout") { c.model.dropout = parse_float(flag, value, 0.0, 0.99); model_flag(); }
        else if (flag == "--lr") { c.lr = parse_float(flag, value, 0.0, 10.0, true); model_flag(); }
        else if (flag == "--min-lr") { c.min_lr = parse_float(flag, value, 0.0, 10.0); model_flag(); }
        else if (flag == "--warmup") { c.warmup = parse_int(flag, value, 0, kBig); model_flag(); }
        else if (flag == "--weight-decay") { c.weight_decay = parse_float(flag, value, 0.0, 10.0); model_flag(); }
        else if (flag == "--grad-clip") { c.grad_clip = parse_float(flag, value, 0.0, 1e6); model_flag(); }
        else if (flag == "--seed") { c.seed = static_cast<uint64_t>(parse_int(flag, value, 0, INT64_MAX)); model_flag(); }
        else if (flag == "--threads") o.threads = parse_int(flag, value, 1, 256);
        else if (flag == "--eval-every") o.eval_every = parse_int(flag, value, 1, kBig);
        else if (flag == "--eval-iters") o.eval_iters = parse_int(flag, value, 1, 1 << 20);
        else if (flag == "--csv") o.csv = path(flag, value);
        else if (flag == "--grad-report") o.grad_report = parse_int(flag, value, 1, kBig);
        else if (flag == "--grad-csv") o.grad_csv = path(flag, value);
        else if (flag == "--out") o.out = path(flag, value);
        else if (flag == "--resume") o.resume = path(flag, value);
        else if (flag == "--until") o.until = parse_int(flag, value, 1, kBig);
        else if (flag == "--sample") o.sample = parse_int(flag, value, 0, 1 << 24);
        else if (flag == "--prompt") {
            if (value.empty()) usage_error("--prompt needs at least one character");
            o.prompt = value;
        }
        else if (flag == "--temperature") o.temperature = parse_float(flag, value, 0.0, 100.0, true);
        else if (flag == "--top-k") o.top_k = parse_int(flag, value, 0, 1 << 24);
        else usage_error(fmt::format("unknown flag '{}'", flag));
    }
    if (o.resume && !o.out) o.out = o.resume;  // a resumed run keeps saving where it was saved
    if (o.resume && !o.model_flags.empty())
        usage_error(fmt::format("{} cannot change a resumed run: the checkpoint fixes the model and the training settings",
                                o.model_flags.front()));
    if (c.min_lr >= 0.0f && c.min_lr > c.lr)
        usage_error(fmt::format("--min-lr {} is above --lr {}: the rate would rise instead of decaying", c.min_lr, c.lr));
    const nn::ModelKindInfo& kind = nn::model_kind_info(c.model.kind);
    if (!o.resume && !kind.reads(nn::option_feed_forward) && c.model.feed_forward)
        usage_error("--feed-forward applies to --model multihead only");
    if (!o.resume && kind.reads(nn::option_n_head) && c.model.n_embd % c.model.n_head != 0)
        usage_error(fmt::format("--n-head {} must divide --n-embd {}", c.model.n_head, c.model.n_embd));
    return o;
}

}  // namespace train_args
