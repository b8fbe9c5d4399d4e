// Train a character-level language model, from the bigram to a small GPT.
//
//   train --model head                                  the offline demo: the built-in copy task
//   train --model gpt --data ../shared/data/tinyshakespeare.txt --steps 2000 --out run.safetensors
//   train --resume run.safetensors --data ../shared/data/tinyshakespeare.txt
//   train --init-from run.safetensors --data other.txt --steps 500 --out tuned.safetensors   (a fresh run)
//
// Progress goes to stderr (a bar on a terminal, plain lines otherwise); results to stdout, or one
// JSON line with --json. Exit status: 0 done, 1 failed (message on stderr), 2 bad arguments,
// 130 interrupted by SIGINT (143 by SIGTERM, 129 by SIGHUP) after saving a checkpoint to --out. SIGPIPE
// is ignored: a closed stderr only silences the progress, a closed stdout is an error at the end.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <autograd/autograd.h>
#include <nn/train/safetensors.h>
#include <nn/files/atomic_file.h>
#include <nn/train/bpe.h>
#include <nn/train/sample.h>
#include <nn/train/token_file.h>
#include <nn/tutorial/tasks.h>
#include <nn/train/trainer.h>
#include <nlohmann/json.hpp>

#include "run_logs.h"
#include "run_report.h"
#include "train_args.h"
#include "tools.h"

using namespace autograd;
using Clock = std::chrono::steady_clock;

namespace {

using train_args::Options;

// Progress and notes on stderr. A failed write is ignored: with SIGPIPE ignored (main), a closed pipe
// (stderr piped into `head -n 1`, say) only stops the notes; training goes on and saves.
void note(const std::string& text) { (void)!std::fwrite(text.data(), 1, text.size(), stderr); }

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
            line_open_ = true;
            const int width = 30;
            const auto filled = static_cast<int>(width * s.step / total_);
            note(fmt::format("\r[{}{}] {}/{} loss {:.4f} {:.0f} tok/s ETA {}   ", std::string(filled, '#'),
                             std::string(width - filled, '.'), s.step, total_, smoothed_, tokens_per_s, duration(eta)));
        } else if (s.step == total_ || s.step % std::max<int64_t>(1, total_ / 20) == 0) {
            note(fmt::format("step {}/{} loss {:.4f} lr {:.3g} {:.0f} tok/s ETA {}\n", s.step, total_, smoothed_, s.lr,
                             tokens_per_s, duration(eta)));
        }
    }
    void message(const std::string& line) {
        note((tty_ ? "\r\x1b[2K" : "") + line + "\n");  // over the bar, which the next update redraws
        line_open_ = false;
    }
    // Ends the bar's line, once; also when an error unwinds past it, so its message starts a line.
    void finish() {
        if (line_open_) note("\n");
        line_open_ = false;
    }
    ~Progress() { finish(); }

private:
    int64_t total_, first_;
    bool tty_;
    bool seen_ = false;
    bool line_open_ = false;  // the bar is on the terminal's current line
    double smoothed_ = 0;
};

// SIGINT and SIGTERM only set this flag; the training loop reads it after each step, saves and stops.
// A second signal while saving sets it again and changes nothing: the save always completes.
volatile sig_atomic_t g_stop_signal = 0;

extern "C" void on_train_stop_signal(int signal) { g_stop_signal = signal; }

// Installs the handler (SA_RESTART: reads and writes in progress carry on) for the training loop;
// the destructor restores the previous dispositions, so a Ctrl-C while sampling ends the program.
class StopSignals {
public:
    StopSignals() {
        struct sigaction action {};
        action.sa_handler = on_train_stop_signal;
        sigemptyset(&action.sa_mask);
        action.sa_flags = SA_RESTART;
        ::sigaction(SIGINT, &action, &old_int_);
        ::sigaction(SIGTERM, &action, &old_term_);
        ::sigaction(SIGHUP, &action, &old_hup_);  // a closed terminal or ssh session
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;
    ~StopSignals() {
        ::sigaction(SIGINT, &old_int_, nullptr);
        ::sigaction(SIGTERM, &old_term_, nullptr);
        ::sigaction(SIGHUP, &old_hup_, nullptr);
    }

private:
    struct sigaction old_int_ {}, old_term_ {}, old_hup_ {};
};

// What the run reads and writes, for the checks before any work (support/cli.h): no output may be an
// input or another output; --out may be the checkpoint it resumes; a resumed run continues its own logs
// and page (run_logs::continues, open_page).
struct Files {
    std::vector<cli::Input> inputs;
    std::vector<cli::Output> outputs;
};
Files files_of(const Options& o) {
    Files f;
    if (o.data) f.inputs.push_back({"--data", *o.data});
    if (o.resume) f.inputs.push_back({"--resume", *o.resume});
    if (o.init_from) f.inputs.push_back({"--init-from", *o.init_from});
    if (o.out) f.outputs.push_back({.flag = "--out", .path = *o.out, .may_replace = "--resume"});
    if (o.csv) f.outputs.push_back({.flag = "--csv", .path = *o.csv, .continues = o.resume.has_value()});
    if (o.grad_csv) f.outputs.push_back({.flag = "--grad-csv", .path = *o.grad_csv, .continues = o.resume.has_value()});
    if (o.report) f.outputs.push_back({.flag = "--report", .path = *o.report, .continues = o.resume.has_value()});
    return f;
}

// An std::invalid_argument from the library about a flag's value, as "FLAG VALUE: problem".
template <typename F>
auto naming_flag(const char* flag, const std::optional<int64_t>& value, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const std::invalid_argument& e) {
        if (!value) throw;
        throw std::runtime_error(fmt::format("{} {}: {}", flag, *value, e.what()));
    }
}

// What the command line changes in a run. A fresh run takes everything from it. A resumed one keeps
// the checkpoint's settings (the parser refuses the flags that would change the run's identity) except
// the evaluation, log and sample flags given explicitly, and a --steps, which extends the run (the
// learning-rate schedule is recomputed over the new total: nn::Trainer::extend_to).
void apply_command_line(nn::Trainer& trainer, const Options& o) {
    trainer.set_run(o.run_settings(trainer.config().run));
    if (o.resume && o.steps_given)
        naming_flag("--steps", std::optional<int64_t>(o.config.steps), [&] { trainer.extend_to(o.config.steps); });
}

// GPT-2's BPE (--tokenizer) or a token file (--data *.bin): the data the tokenizer reads (and not the
// character path, which makes its vocabulary from the text).
bool uses_tokens(const Options& o) { return o.tokenizer || (o.data && nn::is_token_file(*o.data)); }

// --data for a token-id model: a token file mapped (its validation from the val.bin beside a train.bin,
// or *_val.bin beside *_train.bin, as nanoGPT and llm.c name them; else its last 10%), or a text file
// tokenized as it is read.
nn::TextData token_data(const Options& o, const nn::Tokenizer& tokenizer) {
    if (!o.data) throw cli::UsageError("--tokenizer needs --data (a text file or a .bin token file)");
    const std::filesystem::path path = *o.data;
    if (!nn::is_token_file(path)) {
        const auto* bpe = dynamic_cast<const nn::BpeTokenizer*>(&tokenizer);
        return nn::TextData(bpe ? bpe->encode_file(path) : tokenizer.encode_ids(nn::read_text_file(path)));
    }
    nn::TokenIds train = nn::map_token_file(path, tokenizer.vocab_size());
    std::string name = path.filename().string();
    if (const auto at = name.rfind("train"); at != std::string::npos) {
        const std::filesystem::path val = path.parent_path() / name.replace(at, 5, "val");
        if (std::filesystem::exists(val)) return nn::TextData(std::move(train), nn::map_token_file(val, tokenizer.vocab_size()));
    }
    return nn::TextData(std::move(train));
}

// The tokenizer of a checkpoint, checked against --tokenizer when both are given (they must be the
// same vocabulary and merges); a token file needs a BPE tokenizer from one of them.
void check_tokenizer(const Options& o, const nn::Tokenizer& saved, const std::string& checkpoint) {
    const auto* bpe = dynamic_cast<const nn::BpeTokenizer*>(&saved);
    if (o.tokenizer) {
        const nn::BpeTokenizer given = nn::BpeTokenizer::from_directory(*o.tokenizer);
        if (!bpe || !(*bpe == given))
            throw std::runtime_error(fmt::format("--tokenizer {} and the checkpoint {} disagree: the checkpoint's tokenizer is {}",
                                                 *o.tokenizer, checkpoint,
                                                 bpe ? "another BPE vocabulary or merges" : "characters"));
    } else if (!bpe) {
        throw std::runtime_error(fmt::format("--data {} is a token file but the checkpoint {} has a character tokenizer",
                                             o.data.value_or(""), checkpoint));
    }
}

// --init-from: a fresh run (step 0, a new AdamW, the command line's training settings) whose model is
// the checkpoint's: its kind, sizes and dropout (unless --dropout is given), and its weights. The
// checkpoint's vocabulary stays, since the model's rows are its ids: the text is encoded with it, and a
// character outside it is refused, naming the characters and both files.
nn::Trainer start_from_checkpoint(const Options& o) {
    const std::string& path = *o.init_from;
    nn::TrainedModel start = nn::load_trained_model(path);
    nn::TrainConfig config = o.config;
    const bool dropout_given = std::find(o.model_flags.begin(), o.model_flags.end(), "--dropout") != o.model_flags.end();
    if (dropout_given && !train_args::applies("--dropout", start.config.kind))
        throw cli::UsageError(fmt::format("--dropout does not apply to the --init-from checkpoint's model {}", start.config.kind));
    config.model = start.config;
    if (dropout_given) config.model.dropout = o.config.model.dropout;
    if (uses_tokens(o)) {
        check_tokenizer(o, *start.tokenizer, path);
        nn::Trainer trainer(config, start.tokenizer, token_data(o, *start.tokenizer));
        nn::load_parameters(trainer.model(), start.model->named_parameters());
        return trainer;
    }
    nn::TokenIds tokens = [&] {
        try {
            return start.tokenizer->encode_ids(training_text(o));
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(fmt::format("--init-from {}: the text to train on ({}) has characters outside the "
                                                 "checkpoint's vocabulary: {}",
                                                 path, o.data.value_or("the built-in copy task"), e.what()));
        }
    }();
    nn::Trainer trainer(config, start.tokenizer, nn::TextData(std::move(tokens)));
    nn::load_parameters(trainer.model(), start.model->named_parameters());
    return trainer;
}

// The run's settings as the report page lists them: the model's (nn::model_fields()), then every training setting
// (nn::settings()) by its name; floats to 6 digits (0.001, not 0.0010000000474974513), a special value
// by its meaning ("lr/10", "off").
double six_digits(float v) { return std::stod(fmt::format("{:.6g}", v)); }
nlohmann::ordered_json settings_of(const nn::TrainConfig& c, const Options& o, int64_t parameters) {
    nlohmann::ordered_json settings = {{"model", std::string(nn::model_kind_info(c.model.kind).name)},
                                       {"parameters", parameters}};
    for (const nn::ModelField& f : nn::model_fields()) {
        if (f.only_when_read && !nn::model_kind_info(c.model.kind).reads(f.option)) continue;  // (as in the checkpoint)
        const std::string name(f.name());
        std::visit(
            [&](auto member) {
                if constexpr (std::is_same_v<std::remove_cvref_t<decltype(c.model.*member)>, float>)
                    settings[name] = six_digits(c.model.*member);
                else settings[name] = c.model.*member;
            },
            f.member);
    }
    settings["data"] = o.data.value_or("(the built-in copy task)");
    nn::TrainConfig copy = c;  // the table's accessors take a mutable config
    for (const nn::Setting& s : nn::settings()) {
        const std::string name(s.name());
        std::visit(
            [&](auto* v) {
                if (s.special && double(*v) == *s.special) settings[name] = s.text(c);
                else if constexpr (std::is_same_v<std::remove_pointer_t<decltype(v)>, float>) settings[name] = six_digits(*v);
                else settings[name] = *v;
            },
            s.value(copy));
    }
    return settings;
}

constexpr std::string_view kCsvHeader = "step,batch_loss,train_loss,val_loss,lr,grad_norm,tokens_per_s\n";

// 64 random bits in hex: the id of a run that writes a report page.
std::string new_run_id() {
    std::random_device device;
    return fmt::format("{:08x}{:08x}", device(), device());
}

// The last step whose rows a resumed run's logs keep: the checkpoint's (its rows are written before it
// is saved, and the resumed run starts after it), but none for a run stopped at step 0, which logs
// step 0 again.
int64_t logged_through(const nn::Trainer& trainer) { return trainer.step_count() > 0 ? trainer.step_count() : -1; }

// The report page of this run. A resumed run continues the page at --report only if it is its own (the
// page holds the run id its checkpoint holds), without what the page has past the checkpoint's step (a
// run killed after writing it). A page of another run, one without an id, or a file that is no page is
// refused, naming both runs; with --force a new page replaces it. A run without an id gets one here,
// saved with its checkpoints from now on.
report::RunReport open_page(nn::Trainer& trainer, const Options& o, nlohmann::ordered_json settings) {
    const std::string& path = *o.report;
    std::error_code error;
    if (o.resume && std::filesystem::exists(path, error)) {
        const char* const advice = "a resumed run continues only its own page: name another file, or add --force to start a new page";
        std::optional<report::RunReport> old;
        try {
            old.emplace(report::RunReport::read(path, settings));
        } catch (const std::runtime_error& e) {
            if (!o.force) throw std::runtime_error(fmt::format("{}; {}", e.what(), advice));
        }
        const std::string& own = trainer.run_id();
        if (old && !own.empty() && old->run_id() == own) {
            old->drop_after(logged_through(trainer));
            return std::move(*old);
        }
        if (old && !o.force) {
            const std::string theirs = old->run_id();  // (RunReport::read refuses one that is not a run id)
            throw std::runtime_error(fmt::format("--report {} is {}, and --resume {} is {}; {}", path,
                                                 theirs.empty() ? "a page without a run id" : "the page of run " + theirs, *o.resume,
                                                 own.empty() ? "a run without one (it wrote no page)" : "run " + own, advice));
        }
    }
    report::RunReport page(std::move(settings));
    if (trainer.run_id().empty()) {
        trainer.set_run_id(new_run_id());
        // A resumed run's checkpoint gets its id at once, then the page is written: killed at any point
        // after, the two agree (otherwise a kill before the first save would leave a page of an id no
        // checkpoint holds, and the next resume would refuse it).
        if (o.resume) trainer.save(*o.out);
    }
    page.set_run_id(trainer.run_id());
    if (o.resume) page.write(path, "--report");
    return page;
}

// Which logs a resumed run continues: only its own, checked before any work (run_logs::continues).
struct LogsContinued {
    bool csv = false, grad_csv = false;
};
LogsContinued logs_continued(const Options& o) {
    const auto continues = [&](const std::optional<std::string>& path, const char* flag, std::string_view header) {
        return o.resume && path && run_logs::continues({flag, *path, header}, o.force);
    };
    return {continues(o.csv, "--csv", kCsvHeader), continues(o.grad_csv, "--grad-csv", nn::GradientReport::csv_header())};
}

// The trainer the command line asks for: resumed from a checkpoint, started from one's weights, or fresh
// on GPT-2's BPE or on characters.
nn::Trainer new_trainer(const Options& o) {
    if (o.resume) {  // the text is needed only until it is tokens
        if (uses_tokens(o))
            return nn::Trainer::resume(*o.resume, [&](const nn::Tokenizer& saved) {
                check_tokenizer(o, saved, *o.resume);
                return token_data(o, saved);
            });
        return nn::Trainer::resume(*o.resume, training_text(o));
    }
    if (o.init_from) return start_from_checkpoint(o);
    nn::TrainConfig config = o.config;
    if (uses_tokens(o)) {
        if (!o.tokenizer)
            throw cli::UsageError(fmt::format("--data {} is a token file: give --tokenizer DIR, the BPE files its ids are of", *o.data));
        auto tokenizer = std::make_shared<const nn::BpeTokenizer>(nn::BpeTokenizer::from_directory(*o.tokenizer));
        config.model.vocab = tokenizer->vocab_size();
        nn::TextData data = token_data(o, *tokenizer);
        return nn::Trainer(config, std::move(tokenizer), std::move(data));
    }
    // a file is read as token ids alone, never held as text
    auto [tokenizer, tokens] = o.data ? nn::read_tokenized_text(*o.data) : nn::tokenize(training_text(o));
    config.model.vocab = tokenizer.vocab_size();
    return nn::Trainer(config, std::move(tokenizer), std::move(tokens));
}

// One run, from its outputs to its results, in steps: the constructor checks the prompt and opens the
// page and the logs; run() trains (train: evaluate_untrained, take_step, evaluate_and_save), then
// samples and prints the results. A signal stops the training through interrupted(), which saves.
class Training {
public:
    Training(const Options& o, nn::Trainer trainer, LogsContinued continued);
    int run();

private:
    const nn::TrainConfig& config() const { return trainer_.config(); }
    void open_report();
    bool train();
    void evaluate_untrained();
    void take_step();
    void evaluate_and_save();
    bool is_log_step(int64_t step) const;
    void log_row(double train, double val);
    template <typename F> void at_step(const F& log);
    template <typename F> void log_then_save(const F& log);
    void write_page(int64_t step);
    int interrupted();
    std::string draw_sample();
    void print_results(const std::string& sample);

    const Options& o_;
    nn::Trainer trainer_;
    const std::string prompt_;
    const std::vector<int64_t> prompt_ids_;
    const int64_t last_;             // the step the run stops after
    const int64_t page_grad_every_;  // gradient norms for the page: every logged step, or ten times between evaluations
    std::optional<report::RunReport> page_;
    std::vector<int64_t> sample_ids_;  // the page's attention maps are of this fixed sample
    std::string sample_text_;
    std::optional<run_logs::Writer> csv_, grad_csv_;
    Progress progress_;
    std::optional<StopSignals> stop_signals_;
    Clock::time_point start_;
    double train_seconds_ = 0.0;
    int64_t tokens_ = 0;
    nn::StepStats stats_;
    double train_loss_ = NAN, val_loss_ = NAN;
    int64_t saved_step_ = -1;   // the step of the last checkpoint written to --out
    int64_t logged_step_ = -1;  // the step of the last row written to the logs
};

// Evaluations and the sample ask for the signal flag as they go: a Ctrl-C never waits for them.
bool stop_requested() { return g_stop_signal != 0; }

Training::Training(const Options& o, nn::Trainer trainer, LogsContinued continued)
    : o_(o),
      trainer_(std::move(trainer)),
      // The prompt is checked now, not after hours of training.
      prompt_(o.prompt.value_or(nn::default_prompt(trainer_.tokenizer()))),
      prompt_ids_(trainer_.tokenizer().encode(prompt_)),
      last_(naming_flag("--until", o.until, [&] { return trainer_.stop_step(o.until); })),
      page_grad_every_(config().run.log_every > 0 ? config().run.log_every : std::max<int64_t>(1, config().run.eval_every / 10)),
      progress_(config().steps, trainer_.step_count()) {
    // The report page first (refusing another run's page changes no file), then the logs; a resumed
    // run's logs lose the rows a killed run wrote past its checkpoint.
    if (o.report) open_report();
    if (o.csv) csv_.emplace(run_logs::Log{"--csv", *o.csv, kCsvHeader}, continued.csv, logged_through(trainer_));
    if (o.grad_csv)
        grad_csv_.emplace(run_logs::Log{"--grad-csv", *o.grad_csv, nn::GradientReport::csv_header()}, continued.grad_csv,
                          logged_through(trainer_));
    note(fmt::format("{} model, {} parameters, vocabulary {}, {} training / {} validation tokens{}\n", config().model.kind,
                     trainer_.model().parameter_count(), config().model.vocab, trainer_.data().size(nn::Split::train),
                     trainer_.data().size(nn::Split::validation),
                     o.resume      ? fmt::format(", resuming at step {}", trainer_.step_count())
                     : o.init_from ? fmt::format(", starting from {}", *o.init_from)
                                   : std::string()));
    start_ = Clock::now();
}

// The page and its sample: the validation split's first characters (at most a window, 32).
void Training::open_report() {
    page_.emplace(open_page(trainer_, o_, settings_of(config(), o_, trainer_.model().parameter_count())));
    const nn::TextData& data = trainer_.data();
    const int64_t n = std::min({config().model.block, int64_t{32}, data.size(nn::Split::validation)});
    sample_ids_.resize(static_cast<size_t>(n));
    data.copy(nn::Split::validation, 0, n, sample_ids_.data());
    sample_text_ = trainer_.tokenizer().decode(sample_ids_);
}

int Training::run() {
    stop_signals_.emplace();
    if (!train()) return interrupted();
    progress_.finish();
    csv_.reset();  // the logs are complete: closed before the sample
    grad_csv_.reset();
    const std::string sample = draw_sample();
    const int stopped_by = g_stop_signal;
    stop_signals_.reset();
    print_results(sample);
    if (stopped_by != 0) {
        note(o_.out ? fmt::format("the sample was interrupted; {} holds step {}\n", nn::printable_name(*o_.out), trainer_.step_count())
                    : std::string("the sample was interrupted\n"));
        return 128 + stopped_by;
    }
    return 0;
}

// The untrained model's evaluation (where the curves start), the steps with their evaluations and log
// rows, and the last evaluation. False when a signal stopped the run (interrupted() then saves).
bool Training::train() {
    if ((csv_ || page_) && trainer_.step_count() == 0) evaluate_untrained();
    if (g_stop_signal != 0) return false;
    while (trainer_.step_count() < last_ && g_stop_signal == 0) {
        take_step();
        if (g_stop_signal != 0) break;  // no evaluation: save and stop as soon as possible
        if (stats_.step % config().run.eval_every == 0 && stats_.step != last_)
            evaluate_and_save();
        else if (is_log_step(stats_.step))
            at_step([&] { log_row(NAN, NAN); });
    }
    if (g_stop_signal != 0) return false;
    stats_.step = trainer_.step_count();
    evaluate_and_save();
    return g_stop_signal == 0;  // (a signal during the last evaluation: saved already)
}

// Step 0's row and page: the untrained model (nothing to save).
void Training::evaluate_untrained() {
    const double train0 = trainer_.evaluate(nn::Split::train, config().run.eval_iters, stop_requested);
    const double val0 = trainer_.evaluate(nn::Split::validation, config().run.eval_iters, stop_requested);
    if (g_stop_signal != 0) return;
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
    const bool reporting = printing || (page_ && next % page_grad_every_ == 0);
    nn::GradientReport report;
    stats_ = trainer_.step(reporting ? &report : nullptr);
    train_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
    tokens_ += stats_.tokens;
    progress_.update(stats_, train_seconds_, tokens_);
    if (page_ && reporting && next % page_grad_every_ == 0) page_->add_gradients(report);
    if (printing) {
        progress_.message(report.table());
        if (grad_csv_) at_step([&] { grad_csv_->append(report.csv_rows()); });
    }
}

void Training::evaluate_and_save() {
    train_loss_ = trainer_.evaluate(nn::Split::train, config().run.eval_iters, stop_requested);
    val_loss_ = trainer_.evaluate(nn::Split::validation, config().run.eval_iters, stop_requested);
    if (g_stop_signal != 0) return;  // the caller saves and stops
    progress_.message(fmt::format("step {}: train loss {:.4f}, val loss {:.4f}", stats_.step, train_loss_, val_loss_));
    // Weights that evaluate to NaN (only a checkpoint saved with them can bring them here: a step
    // stops before applying a NaN) are not saved over a good checkpoint.
    if (!std::isfinite(train_loss_) || !std::isfinite(val_loss_))
        throw std::runtime_error(fmt::format("at step {} the evaluation loss is {} (train) and {} (validation); "
                                             "stopped without saving", stats_.step, train_loss_, val_loss_));
    log_then_save([&] {
        log_row(train_loss_, val_loss_);
        write_page(stats_.step);
    });
}

// A step between evaluations that the --csv log has a row for.
bool Training::is_log_step(int64_t step) const {
    const nn::RunSettings& run = config().run;
    return run.log_every > 0 && step % run.log_every == 0 && step % run.eval_every != 0 && step != last_;
}

// One row of the --csv log: the step's batch loss, lr and gradient norm (empty at step 0, before any
// step) and, at an evaluation, the evaluated losses (empty between evaluations).
void Training::log_row(double train, double val) {
    const bool stepped = stats_.step > 0;
    const double lr = stepped ? stats_.lr : double(trainer_.lr_at(0));
    logged_step_ = stats_.step;
    if (page_) page_->add_log(stats_.step, stepped ? stats_.loss : NAN, train, val, lr);
    if (!csv_) return;
    const auto field = [](bool present, double v, const char* format) {
        return present ? fmt::format(fmt::runtime(format), v) : std::string();
    };
    const double tps = train_seconds_ > 0 ? double(tokens_) / train_seconds_ : 0.0;
    csv_->append(fmt::format("{},{},{},{},{:.6g},{},{}\n", stats_.step, field(stepped, stats_.loss, "{:.6f}"),
                             field(!std::isnan(train), train, "{:.6f}"), field(!std::isnan(val), val, "{:.6f}"), lr,
                             field(stepped, stats_.grad_norm, "{:.6g}"), field(stepped, tps, "{:.1f}")));
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
        if (csv_) csv_->flush(true);
        if (grad_csv_) grad_csv_->flush(true);
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
    page_->add_attention(step, trainer_.model(), sample_ids_, sample_text_);
    page_->write(*o_.report, "--report");
}

// Stopped by a signal: save unless this step is saved already, say where, exit 128 + the signal. What
// the logs have of this step goes first, as at an evaluation: a log step's row (the loop breaks
// before writing it), and the page with the rows since the last evaluation.
int Training::interrupted() {
    const int signal = g_stop_signal;
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
    Generator gen(config().seed + 3);
    const auto produced = nn::generate(trainer_.model(), prompt_ids_, config().run.sample,
                                       {.temperature = config().run.temperature, .top_k = config().run.top_k}, gen,
                                       [](int64_t) { return g_stop_signal == 0; });
    return prompt_ + trainer_.tokenizer().decode(produced);
}

// The losses, the speed and the sample on stdout, or one JSON line with --json (the sample then on stderr).
void Training::print_results(const std::string& sample) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    const double tokens_per_s = train_seconds_ > 0 ? double(tokens_) / train_seconds_ : 0.0;
    if (o_.json) {
        // rounded as they always were (losses to 6 decimals, tokens/s to 0.1, seconds to 0.01); not finite: null
        const auto rounded = [](double v, double per_unit) { return std::round(v * per_unit) / per_unit; };
        const nlohmann::ordered_json figures = {{"model", std::string(nn::model_kind_info(config().model.kind).name)},
                                                {"params", trainer_.model().parameter_count()},
                                                {"steps", trainer_.step_count()},
                                                {"train_loss", rounded(train_loss_, 1e6)},
                                                {"val_loss", rounded(val_loss_, 1e6)},
                                                {"tokens_per_s", rounded(tokens_per_s, 10)},
                                                {"seconds", rounded(seconds, 100)}};
        fmt::print("{}\n", figures.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
        if (!sample.empty()) note(fmt::format("sample:\n{}\n", sample));
    } else {
        fmt::print("{} after {} steps: train loss {:.4f}, val loss {:.4f} ({:.0f} tokens/s, {:.1f} s)\n", config().model.kind,
                   trainer_.step_count(), train_loss_, val_loss_, tokens_per_s, seconds);
        if (!sample.empty()) fmt::print("sample:\n{}\n", sample);
    }
    // stdout is buffered: a full disk or a closed pipe shows only here (the checkpoint is saved by now)
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
        throw std::runtime_error(fmt::format("cannot write the results to standard output ({})", std::strerror(errno)));
}

int run(const Options& o) {
    set_num_threads(static_cast<int>(o.threads));
    // A NaN then stops the run naming the op and where it was called, before any parameter changes;
    // the last checkpoint written stays as it was.
    set_anomaly_mode(o.detect_anomaly);
    const Files files = files_of(o);
    const cli::OutputLocks locks = cli::claim_outputs(files.inputs, files.outputs, o.force);  // one run per output
    const LogsContinued continued = logs_continued(o);
    nn::Trainer trainer = new_trainer(o);
    apply_command_line(trainer, o);
    Training training(o, std::move(trainer), continued);
    return training.run();
}

}  // namespace

int tools::train(int argc, char** argv) {
    Options options;
    cli::Parser parser = train_args::make_parser(options);
    return cli::run(parser, argc, argv, [&] {
        train_args::check_options(options);
        return run(options);
    });
}
