// Train a language model, from the bigram to GPT-2, on characters, GPT-2's BPE or a token file.
//
//   train --model head                                  the offline demo: the built-in copy task
//   train --model gpt --data ../shared/data/tinyshakespeare.txt --steps 2000 --out run.safetensors
//   train --resume run.safetensors                      on its data, into its --csv/--report (kept in it)
//   train --init-from run.safetensors --data other.txt --steps 500 --out tuned.safetensors   (a fresh run)
//   train --init-from gpt2_124M.bin --data train.bin --out tuned.st   (no tokenizer: the sample is token ids)
//
// Progress goes to stderr (a bar on a terminal, plain lines otherwise); results to stdout, or one
// JSON line with --json. Exit status: 0 done, 1 failed (message on stderr), 2 bad arguments,
// 130 interrupted by SIGINT (143 by SIGTERM, 129 by SIGHUP) after saving a checkpoint to --out. SIGPIPE
// is ignored: a closed stderr only silences the progress, a closed stdout is an error at the end.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <nlohmann/json.hpp>
#include <nn/files/file_names.h>
#include <nn/generate/sample.h>
#include <nn/train/trainer.h>

#include "run_report.h"
#include "stop_signals.h"
#include "tools.h"
#include "train_args.h"
#include "train_logs.h"
#include "train_progress.h"
#include "train_start.h"

using namespace autograd;
using Clock = std::chrono::steady_clock;

namespace {

using train_args::Options;
using train_progress::note;

// One run, from its outputs to its results, in steps: the constructor checks the prompt and opens the
// page and the logs; run() trains (train: evaluate_untrained, take_step, evaluate_and_save), then
// samples and prints the results. A signal stops the training through interrupted(), which saves.
class Training {
public:
    Training(const Options& o, nn::Trainer trainer, train_logs::LogsContinued continued);
    int run();

private:
    const nn::TrainConfig& config() const { return trainer_.config(); }
    double tokens_per_s() const { return train_seconds_ > 0 ? double(tokens_) / train_seconds_ : 0.0; }
    void open_report();
    bool train();
    void evaluate_untrained();
    void take_step();
    void evaluate_and_save();
    bool is_log_step(int64_t step) const;
    void log_row(double train, double val);
    template <typename F>
    void at_step(const F& log);
    template <typename F>
    void log_then_save(const F& log);
    void write_page(int64_t step);
    int interrupted();
    std::string draw_sample();
    void print_results(const std::string& sample);

    const Options& o_;
    nn::Trainer trainer_;
    const std::optional<int64_t> bos_;  // a sample starts from it and stops at it (llama2.c's tokenizer)
    const std::optional<int64_t> eos_;  // and stops at it too (a Hugging Face model's eos_token_id)
    const nn::SampleStart prompt_;
    const int64_t last_;  // the step the run stops after
    // The rows of the log and the page (and the page's gradient norms): every --log-every steps, by default
    // about 20 times over the run or between two evaluations, whichever is shorter, so that the learning
    // rate's schedule and the batch loss's curve show.
    const int64_t log_every_;
    std::optional<report::RunReport> page_;
    std::vector<int64_t> sample_ids_;  // the page's attention maps are of this fixed sample
    std::string sample_text_;
    std::vector<std::string> sample_tokens_;  // each token's text, the maps' labels
    train_logs::Logs logs_;
    train_progress::Progress progress_;
    std::optional<cli::StopSignals> stop_signals_;  // SIGINT, SIGTERM and SIGHUP while training and sampling
    Clock::time_point start_;
    double train_seconds_ = 0.0;
    int64_t tokens_ = 0;
    nn::StepStats stats_;
    double train_loss_ = NAN, val_loss_ = NAN;
    int64_t saved_step_ = -1;   // the step of the last checkpoint written to --out
    int64_t logged_step_ = -1;  // the step of the last row written to the logs
};

// Evaluations and the sample ask for the signal flag as they go: a Ctrl-C never waits for them. The training
// loop reads it after each step, saves and stops; a second signal while saving changes nothing.
bool stop_requested() { return cli::stop_signal() != 0; }

Training::Training(const Options& o, nn::Trainer trainer, train_logs::LogsContinued continued)
    : o_(o),
      trainer_(std::move(trainer)),
      // The prompt is checked now, not after hours of training.
      bos_(nn::sample_bos(trainer_.tokenizer())),
      eos_(nn::sample_eos(trainer_.tokenizer())),
      prompt_(nn::sample_start(trainer_.tokenizer(), bos_, o.prompt)),
      last_(train_start::naming_flag("--until", o.until, [&] { return trainer_.stop_step(o.until); })),
      log_every_(config().run.log_every > 0
                     ? config().run.log_every
                     : std::max<int64_t>(1, std::min(config().run.eval_every, config().steps) / 20)),
      progress_(config().steps, trainer_.step_count()) {
    // The report page first (refusing another run's page changes no file), then the logs; a resumed
    // run's logs lose the rows a killed run wrote past its checkpoint.
    if (o.report) open_report();
    logs_ = train_logs::open_logs(o, continued, trainer_);
    note(fmt::format("{} model{}, {}, vocabulary {}, {} training / {}{}{}\n", config().model.kind,
                     config().model.scaled ? "" : " without the divisor (--divisor none)",
                     cli::counted(trainer_.model().parameter_count(), "parameter"), config().model.vocab,
                     trainer_.data().size(nn::Split::train),
                     cli::counted(trainer_.data().size(nn::Split::validation), "validation token"),
                     config().bf16 ? fmt::format(", bf16 products ({})", bf16_kernel_in_use()) : std::string(),
                     o.resume      ? fmt::format(", resuming at step {}", trainer_.step_count())
                     : o.init_from ? fmt::format(", starting from {}", *o.init_from)
                                   : std::string()));
    if (o.resume && trainer_.step_count() >= config().steps)  // (it trains nothing, then evaluates and saves)
        note(fmt::format("the run ended at its last step, {}: nothing to train (a larger --steps extends it)\n",
                         config().steps));
    start_ = Clock::now();
}

// The page and its sample: the validation split's first tokens (at most a window, 32), each token's text its label.
void Training::open_report() {
    page_.emplace(train_logs::open_page(trainer_, o_));
    const nn::TextData& data = trainer_.data();
    const int64_t n = std::min({config().model.block, int64_t{32}, data.size(nn::Split::validation)});
    sample_ids_.resize(static_cast<size_t>(n));
    data.copy(nn::Split::validation, 0, n, sample_ids_.data());
    sample_text_ = trainer_.tokenizer().decode(sample_ids_);
    for (const int64_t id : sample_ids_) sample_tokens_.push_back(trainer_.tokenizer().decode(std::span(&id, 1)));
}

int Training::run() {
    stop_signals_.emplace();
    if (!train()) return interrupted();
    progress_.finish();
    logs_.close();  // the logs are complete: closed before the sample
    const std::string sample = draw_sample();
    const int stopped_by = cli::stop_signal();
    stop_signals_.reset();
    print_results(sample);
    if (stopped_by != 0) {
        note(o_.out ? fmt::format("the sample was interrupted; {} holds step {}\n", nn::printable_name(*o_.out),
                                  trainer_.step_count())
                    : std::string("the sample was interrupted\n"));
        return 128 + stopped_by;
    }
    return 0;
}

// The untrained model's evaluation (where the curves start), the steps with their evaluations and log
// rows, and the last evaluation. False when a signal stopped the run (interrupted() then saves).
bool Training::train() {
    if ((logs_.csv || page_) && trainer_.step_count() == 0) evaluate_untrained();
    if (cli::stop_signal() != 0) return false;
    while (trainer_.step_count() < last_ && cli::stop_signal() == 0) {
        take_step();
        if (cli::stop_signal() != 0) break;  // no evaluation: save and stop as soon as possible
        if (stats_.step % config().run.eval_every == 0 && stats_.step != last_) evaluate_and_save();
        else if (is_log_step(stats_.step)) at_step([&] { log_row(NAN, NAN); });
    }
    if (cli::stop_signal() != 0) return false;
    stats_.step = trainer_.step_count();
    evaluate_and_save();
    return cli::stop_signal() == 0;  // (a signal during the last evaluation: saved already)
}

// Step 0's row and page: the untrained model (nothing to save).
void Training::evaluate_untrained() {
    const double train0 = trainer_.evaluate(nn::Split::train, config().run.eval_iters, stop_requested);
    const double val0 = trainer_.evaluate(nn::Split::validation, config().run.eval_iters, stop_requested);
    if (cli::stop_signal() != 0) return;
    progress_.message(fmt::format("step 0: train loss {:.4f}, val loss {:.4f}", train0, val0));
    at_step([&] {
        log_row(train0, val0);
        write_page(0);
    });
}

// One training step, with its gradient report when one is printed (--grad-report) or drawn on the page.
void Training::take_step() {
    const auto t0 = Clock::now();
    const int64_t next = trainer_.step_count() + 1;
    const bool printing = config().run.grad_report > 0 && next % config().run.grad_report == 0;
    const bool reporting = printing || (page_ && next % log_every_ == 0);
    nn::GradientReport report;
    stats_ = trainer_.step(reporting ? &report : nullptr);
    train_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
    tokens_ += stats_.tokens;
    progress_.update(stats_, train_seconds_, tokens_);
    if (page_ && reporting && next % log_every_ == 0) page_->add_gradients(report);
    if (printing) {
        progress_.message(report.table());
        if (logs_.grad_csv) at_step([&] { logs_.grad_csv->append(report.csv_rows()); });
    }
}

void Training::evaluate_and_save() {
    train_loss_ = trainer_.evaluate(nn::Split::train, config().run.eval_iters, stop_requested);
    val_loss_ = trainer_.evaluate(nn::Split::validation, config().run.eval_iters, stop_requested);
    if (cli::stop_signal() != 0) return;  // the caller saves and stops
    progress_.message(fmt::format("step {}: train loss {:.4f}, val loss {:.4f}", stats_.step, train_loss_, val_loss_));
    // Weights that evaluate to NaN (only a checkpoint saved with them can bring them here: a step
    // stops before applying a NaN) are not saved over a good checkpoint.
    if (!std::isfinite(train_loss_) || !std::isfinite(val_loss_))
        throw std::runtime_error(
            fmt::format("at step {} the evaluation loss is {} (train) and {} (validation); "
                        "stopped without saving",
                        stats_.step, train_loss_, val_loss_));
    log_then_save([&] {
        log_row(train_loss_, val_loss_);
        write_page(stats_.step);
    });
}

// A step between evaluations that the --csv log and the page have a row for.
bool Training::is_log_step(int64_t step) const {
    return (logs_.csv || page_) && step % log_every_ == 0 && step % config().run.eval_every != 0 && step != last_;
}

// One row of the --csv log and the page: the step's batch loss, lr and gradient norm (empty at step 0,
// before any step) and, at an evaluation, the evaluated losses (empty between evaluations).
void Training::log_row(double train, double val) {
    const bool stepped = stats_.step > 0;
    const double lr = stepped ? stats_.lr : double(trainer_.lr_at(0));
    logged_step_ = stats_.step;
    if (page_) page_->add_log(stats_.step, stepped ? stats_.loss : NAN, train, val, lr);
    if (logs_.csv) logs_.csv->append(train_logs::csv_row(stats_, train, val, lr, tokens_per_s()));
}

// A failure to log stops the run naming the step.
template <typename F>
void Training::at_step(const F& log) {
    try {
        log();
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(fmt::format("{} at step {}", e.what(), stats_.step));
    }
}

// The logs and the page reach the disk before the checkpoint of their step: a run killed between the
// two is ahead in its logs, never behind, and its resume drops the rows past the checkpoint's step
// (run_logs::drop_rows_after, RunReport::drop_after), so the logs equal a straight run's. A log that
// cannot be written still lets the checkpoint be saved, then stops the run saying so.
template <typename F>
void Training::log_then_save(const F& log) {
    std::optional<std::string> failure;
    try {
        log();
        logs_.flush(true);
    } catch (const std::runtime_error& e) {
        failure = e.what();
    }
    if (o_.out) {
        trainer_.save(*o_.out);
        saved_step_ = trainer_.step_count();
    }
    if (failure)
        throw std::runtime_error(o_.out ? fmt::format("{}; the checkpoint of step {} is saved", *failure, stats_.step)
                                        : fmt::format("{} at step {}", *failure, stats_.step));
}

// At step 0 and every evaluation: the attention maps on the sample, and the page rewritten.
void Training::write_page(int64_t step) {
    if (!page_) return;
    page_->add_attention(step, trainer_.model(), sample_ids_, sample_text_, sample_tokens_);
    page_->write(*o_.report, "--report");
}

// Stopped by a signal: save unless this step is saved already, say where, exit 128 + the signal. What
// the logs have of this step goes first, as at an evaluation: a log step's row (the loop breaks
// before writing it), and the page with the rows since the last evaluation.
int Training::interrupted() {
    const int signal = cli::stop_signal();
    progress_.finish();
    const int64_t step = trainer_.step_count();
    if (saved_step_ != step)
        log_then_save([&] {
            if (stats_.step == step && logged_step_ != step && is_log_step(step)) log_row(NAN, NAN);
            if (page_) page_->write(*o_.report, "--report");
        });
    progress_.message(o_.out ? fmt::format("interrupted at step {}; saved {}", step, *o_.out)
                             : fmt::format("interrupted at step {}; nothing saved (no --out)", step));
    return 128 + signal;
}

// The sample: a signal stops it where it is; what was drawn is printed, then the exit says which signal.
std::string Training::draw_sample() {
    if (config().run.sample <= 0) return {};
    // in the run's precision, each weight rounded once for the whole sample (bf16)
    const MatmulPrecisionGuard precision(config().precision());
    const Bf16WeightScope weight_copies;
    Generator gen(config().seed + 3);
    auto produced = nn::generate(trainer_.model(), prompt_.ids, config().run.sample,
                                 {.temperature = config().run.temperature, .top_k = config().run.top_k}, gen,
                                 [&](int64_t id) { return id != bos_ && id != eos_ && cli::stop_signal() == 0; });
    // run.c's end: BOS; transformers': EOS; neither printed
    if (!produced.empty() && (produced.back() == bos_ || produced.back() == eos_)) produced.pop_back();
    return prompt_.text + trainer_.tokenizer().decode(produced);  // token ids without a tokenizer: " 464 3290"
}

// What the results call the sample: the model's text, or its token ids when it has no tokenizer.
std::string sample_title(const nn::Tokenizer& tokenizer) {
    return nn::as_ids_only(tokenizer) ? "sample (token ids; no tokenizer)" : "sample";
}

// The losses, the speed and the sample on stdout, or one JSON line with --json (the sample then on stderr).
void Training::print_results(const std::string& sample) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    if (o_.json) {
        // rounded as they always were (losses to 6 decimals, tokens/s to 0.1, seconds to 0.01); not finite: null
        const auto rounded = [](double v, double per_unit) { return std::round(v * per_unit) / per_unit; };
        nlohmann::ordered_json figures = {{"model", std::string(nn::model_kind_info(config().model.kind).name)},
                                          {"params", trainer_.model().parameter_count()},
                                          {"steps", trainer_.step_count()},
                                          {"precision", std::string(precision_name(config().precision()))},
                                          {"train_loss", rounded(train_loss_, 1e6)},
                                          {"val_loss", rounded(val_loss_, 1e6)},
                                          {"tokens_per_s", rounded(tokens_per_s(), 10)},
                                          {"seconds", rounded(seconds, 100)}};
        if (config().bf16) figures["bf16_kernel"] = std::string(bf16_kernel_in_use());
        fmt::print("{}\n", figures.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
        if (!sample.empty()) note(fmt::format("{}:\n{}\n", sample_title(trainer_.tokenizer()), sample));
    } else {
        fmt::print("{} after {}: train loss {:.4f}, val loss {:.4f} ({:.0f} tokens/s, {:.1f} s)\n", config().model.kind,
                   cli::counted(trainer_.step_count(), "step"), train_loss_, val_loss_, tokens_per_s(), seconds);
        if (!sample.empty()) fmt::print("{}:\n{}\n", sample_title(trainer_.tokenizer()), sample);
    }
    // stdout is buffered: a full disk or a closed pipe shows only here (the checkpoint is saved by now)
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
        throw std::runtime_error(fmt::format("cannot write the results to standard output ({})", std::strerror(errno)));
}

int run(const Options& given) {
    Options checked = given;
    train_args::check_options(checked);
    const Options o = train_start::with_checkpoint_files(checked);
    set_num_threads(static_cast<int>(o.threads));
    // A NaN then stops the run naming the op and where it was called, before any parameter changes;
    // the last checkpoint written stays as it was.
    set_anomaly_mode(o.detect_anomaly);
    const train_logs::Files files = train_logs::files_of(o);
    const cli::OutputLocks locks = cli::claim_outputs(files.inputs, files.outputs, o.force);  // one run per output
    const train_logs::LogsContinued continued = train_logs::logs_continued(o);
    Training training(o, train_start::new_trainer(o), continued);
    return training.run();
}

}  // namespace

int tools::train(int argc, char** argv) { return cli::program<Options>(argc, argv, train_args::make_parser, run); }
