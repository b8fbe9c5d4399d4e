// Train a character-level language model, from the bigram to a small GPT.
//
//   train --model head                                  the offline demo: the built-in copy task
//   train --model gpt --data ../shared/data/tinyshakespeare.txt --steps 2000 --out run.safetensors
//   train --resume run.safetensors --data ../shared/data/tinyshakespeare.txt
//
// Progress goes to stderr (a bar on a terminal, plain lines otherwise); results to stdout, or one
// JSON line with --json. Exit status: 0 done, 1 failed (message on stderr), 2 bad arguments.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <autograd/tensor.h>
#include <nn/sample.h>
#include <nn/tasks.h>
#include <nn/trainer.h>

using namespace autograd;
using Clock = std::chrono::steady_clock;

namespace {

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
  --steps N            optimizer steps                                    (default 2000)
  --batch B            windows per step                                   (default 32)
  --lr X               peak learning rate (AdamW)                         (default 1e-3)
  --min-lr X           end of the cosine decay                            (default lr/10)
  --warmup N           linear warmup steps                                (default 0)
  --weight-decay X     decoupled weight decay on Linear weights           (default 0.1)
  --grad-clip X        clip the global gradient norm; 0 = off             (default 1)
  --seed S             initialization, batches and dropout                (default 1337)
  --threads N          threads for the kernels                            (default 1)
  --detect-anomaly     check every op for NaN/Inf and name the first one (slower)
evaluation, logs, checkpoints
  --eval-every N       evaluate (and save) every N steps                  (default 500)
  --eval-iters N       batches per evaluation                             (default 200)
  --csv FILE           log step, train loss, val loss, lr, grad norm, tokens/s
  --grad-report N      print the gradient-flow report every N steps
  --grad-csv FILE      and log it to FILE (step, kind, name, norms, update ratio, head stats)
  --out CKPT           save a checkpoint at every evaluation and at the end
  --resume CKPT        continue a saved run exactly where it stopped
  --until STEP         stop after this step (the run's schedule still spans --steps)
  --json               print one JSON line with the final figures on stdout
sampling
  --sample N           characters to sample at the end                   (default 200)
  --prompt TEXT        what the sample starts from                        (default a newline)
  --temperature X      sampling temperature                               (default 1)
  --top-k K            sample from the K most likely characters; 0 = all  (default 0)
  --help               this text
)";

[[noreturn]] void usage_error(const std::string& problem) {
    fmt::print(stderr, "train: {}\n\n{}", problem, kUsage);
    std::exit(2);
}

struct Options {
    nn::TrainConfig config;
    std::optional<std::string> data, csv, grad_csv, out, resume;
    int64_t eval_every = 500, eval_iters = 200, sample = 200, top_k = 0, threads = 1, grad_report = 0;
    std::optional<int64_t> until;
    std::optional<std::string> prompt;
    float temperature = 1.0f;
    bool json = false, detect_anomaly = false;
    std::vector<std::string> model_flags;  // given explicitly: an error with --resume
};

int64_t parse_int(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
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

float parse_float(const std::string& flag, const std::string& text, double min, double max, bool min_open = false) {
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        usage_error(fmt::format("{} needs a number, got '{}'", flag, text));
    }
    if (used != text.size() || !std::isfinite(v)) usage_error(fmt::format("{} needs a number, got '{}'", flag, text));
    if (v < min || v > max || (min_open && v == min))
        usage_error(fmt::format("{} must be {} {} and at most {}, got {}", flag, min_open ? "above" : "at least", min, max, text));
    return static_cast<float>(v);
}

Options parse(int argc, char** argv) {
    Options o;
    nn::TrainConfig& c = o.config;
    c.model.kind = "head";
    constexpr int64_t kBig = int64_t{1} << 40;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "--help" || flag == "-h") {
            fmt::print("{}", kUsage);
            std::exit(0);
        }
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
            if (value != "bigram" && value != "average" && value != "head" && value != "multihead" && value != "gpt")
                usage_error(fmt::format("--model must be bigram, average, head, multihead or gpt, got '{}'", value));
            c.model.kind = value;
            model_flag();
        } else if (flag == "--init") {
            if (value != "gpt2" && value != "default") usage_error(fmt::format("--init must be gpt2 or default, got '{}'", value));
            c.model.gpt2_init = value == "gpt2";
            model_flag();
        } else if (flag == "--data") o.data = value;
        else if (flag == "--steps") { c.steps = parse_int(flag, value, 1, kBig); model_flag(); }
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
        else if (flag == "--csv") o.csv = value;
        else if (flag == "--grad-report") o.grad_report = parse_int(flag, value, 1, kBig);
        else if (flag == "--grad-csv") o.grad_csv = value;
        else if (flag == "--out") o.out = value;
        else if (flag == "--resume") o.resume = value;
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
    if (o.resume && !o.model_flags.empty())
        usage_error(fmt::format("{} cannot change a resumed run: the checkpoint fixes the model and the training settings",
                                o.model_flags.front()));
    if (!o.resume && c.model.kind != "multihead" && c.model.feed_forward)
        usage_error("--feed-forward applies to --model multihead only");
    if (!o.resume && (c.model.kind == "multihead" || c.model.kind == "gpt") && c.model.n_embd % c.model.n_head != 0)
        usage_error(fmt::format("--n-head {} must divide --n-embd {}", c.model.n_head, c.model.n_embd));
    return o;
}

// The text to train on: the file, or the copy task (always the same text, so a resume finds it again).
std::string training_text(const Options& o) {
    if (o.data) return nn::read_text_file(*o.data);
    Generator gen(20260);
    return nn::copy_task_text(5000, gen);
}

std::string duration(double seconds) {
    const auto s = static_cast<int64_t>(std::lround(seconds));
    return s >= 3600 ? fmt::format("{}h{:02}m", s / 3600, s / 60 % 60) : fmt::format("{}m{:02}s", s / 60, s % 60);
}

// A progress bar on a terminal; on anything else a plain line now and then.
class Progress {
public:
    Progress(int64_t total, int64_t first) : total_(total), first_(first), tty_(isatty(STDERR_FILENO) == 1) {}

    void update(const nn::StepStats& s, double train_seconds, int64_t tokens) {
        smoothed_ = seen_ ? 0.9 * smoothed_ + 0.1 * s.loss : s.loss;
        seen_ = true;
        const double tokens_per_s = train_seconds > 0 ? double(tokens) / train_seconds : 0.0;
        const double eta = s.step > first_ ? train_seconds / double(s.step - first_) * double(total_ - s.step) : 0.0;
        if (tty_) {
            const int width = 30;
            const auto filled = static_cast<int>(width * s.step / total_);
            fmt::print(stderr, "\r[{}{}] {}/{} loss {:.4f} {:.0f} tok/s ETA {}   ", std::string(filled, '#'),
                       std::string(width - filled, '.'), s.step, total_, smoothed_, tokens_per_s, duration(eta));
        } else if (s.step == total_ || s.step % std::max<int64_t>(1, total_ / 20) == 0) {
            fmt::print(stderr, "step {}/{} loss {:.4f} lr {:.3g} {:.0f} tok/s ETA {}\n", s.step, total_, smoothed_, s.lr,
                       tokens_per_s, duration(eta));
        }
    }
    void message(const std::string& line) {
        if (tty_) fmt::print(stderr, "\r\x1b[2K");
        fmt::print(stderr, "{}\n", line);
    }
    void finish() {
        if (tty_ && seen_) fmt::print(stderr, "\n");
    }

private:
    int64_t total_, first_;
    bool tty_;
    bool seen_ = false;
    double smoothed_ = 0;
};

int run(const Options& o) {
    set_num_threads(static_cast<int>(o.threads));
    // A NaN then stops the run naming the op and where it was called, before any parameter changes;
    // the last checkpoint written stays as it was.
    set_anomaly_mode(o.detect_anomaly);
    const std::string text = training_text(o);
    std::optional<nn::Trainer> trainer;
    if (o.resume) {
        trainer.emplace(nn::Trainer::resume(*o.resume, text));
    } else {
        auto tokenizer = nn::CharTokenizer::from_text(text);
        nn::TrainConfig config = o.config;
        config.model.vocab = tokenizer.vocab_size();
        auto tokens = tokenizer.encode(text);
        trainer.emplace(config, std::move(tokenizer), std::move(tokens));
    }
    const nn::TrainConfig& config = trainer->config();
    // The prompt is checked now, not after hours of training.
    const std::string prompt = o.prompt.value_or(nn::default_prompt(trainer->tokenizer()));
    const std::vector<int64_t> prompt_ids = trainer->tokenizer().encode(prompt);
    if (o.sample > 0 && o.top_k > config.model.vocab)
        throw std::runtime_error(fmt::format("--top-k {} is more than the vocabulary of {} characters", o.top_k, config.model.vocab));
    const int64_t last = std::min(config.steps, o.until.value_or(config.steps));

    // A resumed run appends to its logs; a fresh one starts them with their header.
    const auto open_log = [&](const std::optional<std::string>& path, const char* flag, std::string_view header) -> std::FILE* {
        if (!path) return nullptr;
        const bool fresh = !o.resume || !std::ifstream(*path).good();
        std::FILE* f = std::fopen(path->c_str(), fresh ? "w" : "a");
        if (!f) throw std::runtime_error(fmt::format("{} {}: cannot open for writing: {}", flag, *path, std::strerror(errno)));
        if (fresh) fmt::print(f, "{}", header);
        return f;
    };
    std::FILE* csv = open_log(o.csv, "--csv", "step,train_loss,val_loss,lr,grad_norm,tokens_per_s\n");
    std::FILE* grad_csv = open_log(o.grad_csv, "--grad-csv", nn::GradientReport::csv_header());

    fmt::print(stderr, "{} model, {} parameters, vocabulary {}, {} training / {} validation tokens{}\n", config.model.kind,
               trainer->model().parameter_count(), config.model.vocab, trainer->data().size(nn::Split::train),
               trainer->data().size(nn::Split::validation),
               o.resume ? fmt::format(", resuming at step {}", trainer->step_count()) : std::string());

    Progress progress(config.steps, trainer->step_count());
    double train_seconds = 0.0;
    int64_t tokens = 0;
    nn::StepStats stats;
    double train_loss = NAN, val_loss = NAN;
    const auto start = Clock::now();
    const auto evaluate_and_save = [&] {
        train_loss = trainer->evaluate(nn::Split::train, o.eval_iters);
        val_loss = trainer->evaluate(nn::Split::validation, o.eval_iters);
        const double tps = train_seconds > 0 ? double(tokens) / train_seconds : 0.0;
        progress.message(fmt::format("step {}: train loss {:.4f}, val loss {:.4f}", stats.step, train_loss, val_loss));
        if (csv) {
            fmt::print(csv, "{},{:.6f},{:.6f},{:.6g},{:.6g},{:.1f}\n", stats.step, train_loss, val_loss, stats.lr, stats.grad_norm, tps);
            std::fflush(csv);
        }
        if (o.out) trainer->save(*o.out);
    };
    while (trainer->step_count() < last) {
        const auto t0 = Clock::now();
        const bool reporting = o.grad_report > 0 && (trainer->step_count() + 1) % o.grad_report == 0;
        nn::GradientReport report;
        stats = trainer->step(reporting ? &report : nullptr);
        train_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        tokens += stats.tokens;
        progress.update(stats, train_seconds, tokens);
        if (reporting) {
            progress.message(report.table());
            if (grad_csv) {
                fmt::print(grad_csv, "{}", report.csv_rows());
                std::fflush(grad_csv);
            }
        }
        if (stats.step % o.eval_every == 0 && stats.step != last) evaluate_and_save();
    }
    stats.step = trainer->step_count();
    evaluate_and_save();
    progress.finish();
    for (std::FILE* f : {csv, grad_csv})
        if (f) std::fclose(f);

    std::string sample;
    if (o.sample > 0) {
        Generator gen(config.seed + 3);
        const auto produced = nn::generate(trainer->model(), prompt_ids, o.sample,
                                           {.temperature = o.temperature, .top_k = o.top_k}, gen);
        sample = prompt + trainer->tokenizer().decode(produced);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double tokens_per_s = train_seconds > 0 ? double(tokens) / train_seconds : 0.0;
    if (o.json) {
        fmt::print("{{\"model\": \"{}\", \"params\": {}, \"steps\": {}, \"train_loss\": {:.6f}, \"val_loss\": {:.6f}, "
                   "\"tokens_per_s\": {:.1f}, \"seconds\": {:.2f}}}\n",
                   config.model.kind, trainer->model().parameter_count(), trainer->step_count(), train_loss, val_loss,
                   tokens_per_s, seconds);
        if (!sample.empty()) fmt::print(stderr, "sample:\n{}\n", sample);
    } else {
        fmt::print("{} after {} steps: train loss {:.4f}, val loss {:.4f} ({:.0f} tokens/s, {:.1f} s)\n", config.model.kind,
                   trainer->step_count(), train_loss, val_loss, tokens_per_s, seconds);
        if (!sample.empty()) fmt::print("sample:\n{}\n", sample);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse(argc, argv);
    try {
        return run(options);
    } catch (const std::exception& e) {
        fmt::print(stderr, "\ntrain: {}\n", e.what());
        return 1;
    }
}
