// train's command line on the shared layer (support/cli.h), parsed in-process without exiting, so
// fuzz/train_args.cpp can call it too. A bad command line is cli::UsageError, --help cli::HelpRequested.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <cli.h>
#include <fmt/format.h>
#include <autograd/precision.h>
#include <fmt/ranges.h>
#include <nn/files/file_names.h>
#include <nn/model_files/safetensors.h>
#include <nn/train/settings.h>
#include <nn/train/trainer.h>

namespace train_args {

struct Options {
    nn::TrainConfig config;
    std::optional<std::string> data, csv, grad_csv, report, out, resume, init_from;
    std::optional<nn::DataFile>
        data_file;                         // --data's size and checksum, once read (train_start::with_checkpoint_files)
    std::optional<nn::SavedRun> saved;     // with --resume: what its checkpoint says of its run (the same)
    std::set<std::string> outputs_off;     // "--csv none", ...: no such file, not even a resumed checkpoint's
    std::optional<std::string> tokenizer;  // --tokenizer DIR: GPT-2's BPE files
    int64_t threads = 1;
    std::optional<int64_t> until;
    std::optional<std::string> prompt;
    bool json = false, detect_anomaly = false, force = false;
    std::vector<std::string> model_flags;  // given explicitly: an error with --resume
    bool steps_given = false;              // with --resume: extends the run to --steps
    // The settings given on the command line (nn::train_settings()), in `config`: with --resume, those the
    // checkpoint lets change (evaluation, logs, the sample: nn::RunSettings) replace its values.
    std::vector<const nn::TrainSetting*> settings_given;
    nn::RunSettings run_settings(nn::RunSettings base) const;
};

// --- the library's settings as train's flags ----------------------------------------------------------
// The library's rows (nn::model_settings(), nn::train_settings()) hold keys, types, limits and a line of
// meaning; how train shows them is here. A setting's flag is its key's name with '-' for '_'
// ("train.min_lr": --min-lr), but for these five.
inline constexpr std::pair<std::string_view, std::string_view> kRenamedFlags[] = {
    {"model.gpt2_init", "--init"},
    {"model.gelu_exact", "--gelu"},
    {"model.scaled", "--divisor"},
    {"model.tied_embeddings", "--unembedding"},
    {"train.bf16", "--precision"}};
inline std::string flag_of(std::string_view key) {
    for (const auto& [renamed, flag] : kRenamedFlags)
        if (renamed == key) return std::string(flag);
    std::string flag = "--" + std::string(key.substr(key.find('.') + 1));
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

// What --help shows beyond the row: the value's name (N for a whole number, X for a float, KIND for a
// word, unless named here), the largest value a model size's flag takes (the library bounds none: the
// memory estimate does), and a help of train's own where the meaning names other flags.
struct FlagLook {
    std::string_view key, value_name;
    double max = 0;
    std::string_view help = "";
};
inline constexpr FlagLook kFlagLooks[] = {
    {"model.n_embd", "C", 1 << 16},
    {"model.n_head", "N", 1 << 12},
    {"model.n_layer", "L", 1 << 10},
    {"model.block", "T", 1 << 20},
    {"model.dropout", "P", 0.99},
    {"model.n_kv_head", "N", 1 << 12},
    {"model.ffn_hidden", "F", 1 << 20},
    {"model.rope_theta", "X", 1e12},
    {"model.norm_eps", "X", 1},
    {"train.steps", "N", 0, "optimizer steps; with --resume, a larger N extends the run"},
    {"train.batch", "B"},
    {"train.seed", "S"},
    {"train.bf16", "P", 0,
     "float32 or bf16: bf16 rounds both inputs of the products with weights\nto bfloat16 and sums in float32; kept on "
     "resume"},
    {"run.log_every", "N", 0,
     "log the step's batch loss, lr and grad norm every N steps\n(to --csv or --report); auto: min(--eval-every, "
     "--steps) / 20"},
    {"run.top_k", "K"},
};
inline const FlagLook* flag_look(std::string_view key) {
    for (const FlagLook& look : kFlagLooks)
        if (look.key == key) return &look;
    return nullptr;
}
template <class Config>
std::string value_name(const nn::Setting<Config>& s) {
    if (const FlagLook* look = flag_look(s.key); look && !look->value_name.empty())
        return std::string(look->value_name);
    if (s.on_off()) return s.words[0].empty() ? "" : "KIND";
    return s.whole() ? "N" : "X";
}

// Where --help lists a training setting.
enum class Section { training, evaluation, sampling };
inline Section section_of(const nn::TrainSetting& s) {
    if (!s.key.starts_with("run.")) return Section::training;
    for (const std::string_view sampling : {"run.sample", "run.temperature", "run.top_k"})
        if (s.key == sampling) return Section::sampling;
    return Section::evaluation;
}
// Given with --resume: a "run." setting replaces the checkpoint's (nn::RunSettings); a larger --steps
// extends the run; --precision must be the checkpoint's, which a resume without it keeps (refused when
// it differs, naming both: train_start::with_checkpoint_files); the others are refused, as the
// checkpoint fixes them.
enum class OnResume { fixed, extends, changes, kept };
inline OnResume on_resume(const nn::TrainSetting& s) {
    if (s.key == "train.steps") return OnResume::extends;
    if (s.key == "train.bf16") return OnResume::kept;
    return s.key.starts_with("run.") ? OnResume::changes : OnResume::fixed;
}

inline nn::RunSettings Options::run_settings(nn::RunSettings base) const {
    nn::TrainConfig changed;
    changed.run = base;
    for (const nn::TrainSetting* s : settings_given)
        if (on_resume(*s) == OnResume::changes)
            std::visit([&](auto* to) { *to = *std::get<decltype(to)>(s->ref(config)); }, s->value(changed));
    return changed.run;
}

// The files a run writes besides its checkpoints, which the checkpoints keep by `name` (nn::RunFiles) so
// that a resumed run continues them.
struct OutputFile {
    const char* flag;  // "--csv"
    const char* name;  // in nn::RunFiles::outputs: "csv"
    std::optional<std::string> Options::*path;
};
inline constexpr OutputFile kOutputFiles[] = {{"--csv", "csv", &Options::csv},
                                              {"--grad-csv", "grad_csv", &Options::grad_csv},
                                              {"--report", "report", &Options::report}};
inline const OutputFile& output_file(std::string_view flag) {
    return *std::find_if(std::begin(kOutputFiles), std::end(kOutputFiles),
                         [&](const OutputFile& f) { return f.flag == flag; });
}

// An output's flag: a file, or `none` for no such file (with --resume: not the checkpoint's either).
inline std::function<void(const cli::Value&)> output_setter(Options& o, const OutputFile& f) {
    return [&o, &f](const cli::Value& v) {
        const bool off = v.text() == "none";
        o.*f.path = off ? std::nullopt : std::optional<std::string>(v.file());
        if (off) o.outputs_off.insert(f.flag);
        else o.outputs_off.erase(f.flag);
    };
}

// The model setting a flag sets, or null.
inline const nn::ModelSetting* model_setting_of(std::string_view flag) {
    for (const nn::ModelSetting& s : nn::model_settings())
        if (s.key != "model.vocab" && flag_of(s.key) == flag) return &s;  // (the vocabulary comes from the data)
    return nullptr;
}

// Given for a kind that does not read its ModelConfig setting, a model flag is refused rather than
// ignored. (--block is the training window too: every kind takes it.)
inline bool applies(std::string_view flag, nn::ModelKind kind) {
    const nn::ModelSetting* s = model_setting_of(flag);
    return !s || s->key == "model.block" || nn::model_kind_info(kind).reads(s->option);
}

// A model flag's handler: its value, from the setting's least one to the flag's largest, or one of
// its two words, into the config.
inline std::function<void(const cli::Value&)> model_setter(const nn::ModelSetting& s, nn::ModelConfig& m) {
    return [&s, &m](const cli::Value& v) {
        const FlagLook* look = flag_look(s.key);  // (every size and float has one)
        const double max = look ? look->max : 0;
        std::visit(
            [&](auto* value) {
                using T = std::remove_pointer_t<decltype(value)>;
                if constexpr (std::is_same_v<T, bool>)
                    *value = v.choice({std::string(s.words[0]), std::string(s.words[1])}) == s.words[1];
                else if constexpr (std::is_same_v<T, float>) *value = v.number(s.low, max, s.low_open);
                else *value = static_cast<T>(v.integer(s.min, static_cast<int64_t>(max)));
            },
            s.value(m));
    };
}

// The kinds that read a ModelOption, for --help: "multihead, gpt", or "not bigram" when fewer do not.
inline std::string kinds_reading(unsigned option) {
    const std::vector<std::string_view> reading = nn::model_kinds_reading(option),
                                        not_reading = nn::model_kinds_reading(option, false);
    if (reading.size() > not_reading.size()) return fmt::format("not {}", fmt::join(not_reading, ", "));
    return fmt::format("{}", fmt::join(reading, ", "));
}

// A flag's --help text and its default ("(default 32)"), which lines up in one column where the help's
// last line allows.
inline std::string with_default(std::string_view help, const auto& value) {
    constexpr size_t kDefaultColumn = 51;
    const size_t newline = help.rfind('\n');
    const size_t last_line = help.size() - (newline == std::string_view::npos ? 0 : newline + 1);
    const std::string gap = last_line < kDefaultColumn ? std::string(kDefaultColumn - last_line, ' ') : " ";
    return fmt::format("{}{}(default {})", help, gap, value);
}

// `text` broken at spaces into lines of at most `width` characters, for --help.
inline std::string wrapped(std::string text, size_t width = 78) {
    for (size_t line = 0, space = text.find(' '); space != std::string::npos; space = text.find(' ', space + 1)) {
        const size_t next = text.find(' ', space + 1);
        if ((next == std::string::npos ? text.size() : next) - line > width) {
            text[space] = '\n';
            line = space + 1;
        }
    }
    return text;
}

// A model flag's help: the setting's meaning, the range of a float, the kinds that read it, and its
// default (a word's inside the parentheses).
inline std::string model_help(const nn::ModelSetting& s) {
    std::string help(s.meaning);
    if (!s.on_off() && !s.whole())
        help += fmt::format(" in {}{}, {}]", s.low_open ? '(' : '[', s.low, flag_look(s.key)->max);
    const nn::ModelConfig defaults;
    const bool every_kind = s.key == "model.block";
    if (s.on_off() && !s.words[0].empty())
        return wrapped(fmt::format("{} ({}; default {})", help, kinds_reading(s.option), s.text(defaults)));
    if (!every_kind) help += fmt::format(" ({})", kinds_reading(s.option));
    return s.on_off() ? wrapped(help) : with_default(wrapped(help), s.text(defaults));
}

// The flags refused with --init-from, whose checkpoint fixes the model: its kind, sizes and the rest,
// but --block (which may shorten the window) and --dropout (which may change on a model already made).
inline bool fixed_by_init_from(std::string_view flag) {
    if (flag == "--model") return true;
    const nn::ModelSetting* s = model_setting_of(flag);
    return s && s->key != "model.block" && s->key != "model.dropout";  // (a training setting: not fixed)
}

// `s`'s value from `v`, within the limits nn::train_settings() gives it (which a checkpoint's value gets
// too), written into `config`. A value out of them is cli::UsageError "--beta1 needs a number at least 0
// and below 1, got '1'".
inline void set_value(const nn::TrainSetting& s, const cli::Value& v, nn::TrainConfig& config) {
    std::visit(
        [&](auto* value) {
            using T = std::remove_pointer_t<decltype(value)>;
            if constexpr (std::is_same_v<T, float>) {
                const auto refuse = [&]() { v.fail(fmt::format("needs {}, got '{}'", s.limits(), v.text())); };
                float x = 0;
                try {
                    x = v.number(s.low, s.high, s.low_open);
                } catch (const cli::UsageError&) {
                    refuse();
                }
                if (s.high_open && !(x < static_cast<float>(s.high))) refuse();
                *value = x;
            } else if constexpr (std::is_same_v<T, bool>) {  // one of its two words: --precision bf16
                if (v.text() != s.words[0] && v.text() != s.words[1])
                    v.fail(fmt::format("needs {}, got '{}'", s.limits(), v.text()));
                *value = v.text() == s.words[1];
            } else {
                *value = static_cast<T>(v.integer(s.min, s.max));
            }
        },
        s.value(config));
}

// The --help line of a setting: its help (train's own, or the meaning) and its default, from TrainConfig{};
// --precision's then says what bf16 costs on this CPU (autograd::bf16_speed_note).
inline std::string help_line(const nn::TrainSetting& s) {
    const FlagLook* look = flag_look(s.key);
    const std::string help = look && !look->help.empty() ? std::string(look->help) : wrapped(std::string(s.meaning));
    const std::string line = with_default(help, s.text(nn::TrainConfig{}));
    if (s.key != "train.bf16") return line;
    return fmt::format("{}\n{}", line, wrapped(std::string(autograd::bf16_speed_note())));
}

// train's flags for the settings of `section`, made from nn::train_settings(). A setting the checkpoint
// fixes is also a model flag (refused with --resume).
inline void add_settings(cli::Parser& p, Options& o, Section section) {
    for (const nn::TrainSetting& s : nn::train_settings()) {
        if (section_of(s) != section) continue;
        p.option(flag_of(s.key), value_name(s), help_line(s), [&o, &s](const cli::Value& v) {
            set_value(s, v, o.config);
            o.settings_given.push_back(&s);
            if (on_resume(s) == OnResume::fixed) o.model_flags.push_back(v.flag());
            if (on_resume(s) == OnResume::extends) o.steps_given = true;
        });
    }
}

// The evaluation section's title in --help, naming the settings a resume may change (nn::RunSettings),
// wrapped at 100 columns.
inline std::string evaluation_title() {
    std::vector<std::string> flags;
    for (const nn::TrainSetting& s : nn::train_settings())
        if (on_resume(s) == OnResume::changes) flags.push_back(flag_of(s.key));
    std::string text = "evaluation, logs, checkpoints (the checkpoint keeps";
    for (size_t i = 0; i < flags.size(); ++i)
        text += fmt::format("{}{}", i == 0 ? " " : i + 1 == flags.size() ? " and " : ", ", flags[i]);
    text += "; given with --resume, they change)";
    return wrapped(text, 100);
}

// What an argument without a flag may have meant: train takes a checkpoint only as --resume or --init-from.
inline std::string checkpoint_hint(const std::string& argument) {
    try {
        const nn::SafetensorsReader file(argument);
        const std::string shown = nn::printable_name(argument);
        if (file.metadata().contains("train.step"))
            return fmt::format(
                "a checkpoint: --resume {} continues its run, --init-from {} starts a new run from its weights", shown,
                shown);
        return fmt::format("weights: --init-from {} starts a run from them", shown);
    } catch (const std::exception&) {
        return "";  // not a safetensors file (or none at all)
    }
}

// The parser, its handlers writing into `o` (which must outlive it).
inline cli::Parser make_parser(Options& o) {
    nn::TrainConfig& c = o.config;
    c.model.kind = nn::ModelKind::head;
    cli::Parser p("train", "[options]",
                  "Train a language model, from the bigram to GPT-2, on characters, GPT-2's BPE or a token file.");
    p.argument_hint(checkpoint_hint);
    // A flag that fixes the model or the training: refused with --resume (the checkpoint fixes them).
    const auto fixed = [&o](std::function<void(const cli::Value&)> on) {
        return [&o, on = std::move(on)](const cli::Value& v) {
            on(v);
            o.model_flags.push_back(v.flag());
        };
    };
    p.section("model (a fresh run; fixed by the checkpoint with --resume)");
    p.option("--model", "KIND", with_default(nn::model_kind_names(" | ", " | "), c.model.kind),
             fixed([&c](const cli::Value& v) {
                 std::vector<std::string> names;
                 for (const nn::ModelKindInfo& kind : nn::model_kinds()) names.emplace_back(kind.name);
                 c.model.kind = *nn::parse_model_kind(v.choice(names));
             }));
    for (const nn::ModelSetting& s : nn::model_settings()) {  // every setting but the vocabulary, from its row
        const std::string flag = flag_of(s.key);
        if (model_setting_of(flag) == nullptr) continue;
        if (s.on_off() && s.words[0].empty())  // a switch
            p.flag(flag, model_help(s), [&o, &s, flag] {
                *std::get<bool*>(s.value(o.config.model)) = true;
                o.model_flags.push_back(flag);
            });
        else p.option(flag, value_name(s), model_help(s), fixed(model_setter(s, c.model)));
    }
    p.option("--init-from", "CKPT",
             "a fresh run (step 0, a new optimizer) from a checkpoint's weights: its\n"
             "model kind, sizes and vocabulary (--block may shorten its window);\n"
             "--data may use only its characters.\n"
             "Or GPT-2 weights: Hugging Face's model.safetensors or llm.c's .bin\n"
             "(with --tokenizer DIR unless its BPE files are beside it; with neither,\n"
             "token ids only: --data a token file, the sample printed as ids),\n"
             "or llama2.c's model .bin (--tokenizer FILE a tokenizer.bin, or one beside it)",
             [&o](const cli::Value& v) { o.init_from = v.file(); });
    p.section("training");
    p.option("--data", "FILE",
             "text to train on (90% train, 10% validation); without it, the built-in\n"
             "copy task that only attention can solve. A .bin token file (nanoGPT's\n"
             "train.bin, val.bin beside it the validation; llm.c's) is read mapped;\n"
             "without --tokenizer, the vocabulary is its largest id + 1 (--init-from:\n"
             "the weights') and the sample token ids",
             [&o](const cli::Value& v) { o.data = v.file(); });
    p.option("--tokenizer", "DIR",
             "GPT-2's BPE (encoder.json + vocab.bpe, or vocab.json + merges.txt) instead\n"
             "of characters; --data may then be a token file (.bin: nanoGPT's or llm.c's)",
             [&o](const cli::Value& v) { o.tokenizer = v.nonempty(); });
    add_settings(p, o, Section::training);
    p.option("--threads", "N", with_default("threads for the kernels", Options{}.threads),
             [&o](const cli::Value& v) { o.threads = v.integer(1, 256); });
    p.flag("--detect-anomaly", "check every op for NaN/Inf and name the first one (slower)",
           [&o] { o.detect_anomaly = true; });
    p.section(evaluation_title());
    add_settings(p, o, Section::evaluation);
    p.option("--csv", "FILE",
             "log step, batch loss, train loss, val loss, lr, grad norm, tokens/s at\n"
             "step 0, every --log-every steps and every evaluation; none: no log",
             output_setter(o, output_file("--csv")));
    p.option("--report", "HTML",
             "write a self-contained report page (losses, lr, gradient norms, attention\n"
             "maps and head statistics, settings), rewritten at every evaluation",
             output_setter(o, output_file("--report")));
    p.option("--grad-csv", "FILE",
             "log the gradient-flow report (--grad-report) to FILE (step, kind, name,\n"
             "norms, update ratio, head stats)",
             output_setter(o, output_file("--grad-csv")));
    p.option("--out", "CKPT", "save a checkpoint at every evaluation and at the end",
             [&o](const cli::Value& v) { o.out = v.file(); });
    p.option("--resume", "CKPT",
             "continue a saved run exactly where it stopped, saving back to CKPT\n"
             "unless --out names another file; on the --data file it names, and\n"
             "continuing its --csv, --grad-csv and --report, unless given (or none)",
             [&o](const cli::Value& v) { o.resume = v.file(); });
    p.option("--until", "STEP", "stop after this step, past the checkpoint's (the schedule still spans --steps)",
             [&o](const cli::Value& v) {
                 o.until = v.integer(1, nn::train_setting("train.steps").max);
             });  // past a resumed checkpoint's step
    p.flag("--force", cli::kForceHelp, [&o] { o.force = true; });
    p.flag("--json", "print one JSON line with the final figures on stdout", [&o] { o.json = true; });
    p.section("sampling");
    add_settings(p, o, Section::sampling);
    p.option("--prompt", "TEXT", with_default("what the sample starts from", "a newline"),  // nn::default_prompt
             [&o](const cli::Value& v) { o.prompt = v.nonempty(); });
    return p;
}

// --log-every given writes rows to --csv or --report: refused without either (after a resumed run's are
// known: train_start::with_checkpoint_files).
inline void check_log_outputs(const Options& o) {
    const auto given = [&](const char* flag) {
        return std::find(o.settings_given.begin(), o.settings_given.end(), &nn::train_setting(flag)) !=
               o.settings_given.end();
    };
    if (given("run.log_every") && !o.csv && !o.report)
        throw cli::UsageError("--log-every needs --csv or --report: it writes rows to those");
}

// The checks across flags, after parsing. Throws cli::UsageError.
inline void check_options(Options& o) {
    const nn::TrainConfig& c = o.config;
    if (o.resume && !o.out) o.out = o.resume;  // a resumed run keeps saving where it was saved
    if (o.resume && !o.model_flags.empty())
        throw cli::UsageError(
            fmt::format("{} cannot change a resumed run: the checkpoint fixes the model and the training settings",
                        o.model_flags.front()));
    if (o.init_from && o.resume)
        throw cli::UsageError("--init-from starts a new run and --resume continues one: give one of them");
    // --init-from: the checkpoint fixes the model (its kind and sizes); --dropout may still change, and
    // --n-head gives the head count that Hugging Face's weights without config.json lack
    for (const std::string& flag : o.model_flags)
        if (o.init_from && fixed_by_init_from(flag) && flag != "--n-head")
            throw cli::UsageError(fmt::format(
                "{} cannot change a model started --init-from: the checkpoint fixes its kind and sizes", flag));
    try {
        nn::check_min_lr(c, flag_of);
    } catch (const std::invalid_argument& e) {
        throw cli::UsageError(e.what());
    }
    for (const std::string& flag : o.model_flags)
        if (!o.init_from &&
            !applies(flag, c.model.kind))  // with --init-from, train checks it against the checkpoint's kind
            throw cli::UsageError(fmt::format("{} does not apply to --model {}", flag, c.model.kind));
    if (!o.init_from && nn::model_kind_info(c.model.kind).reads(nn::option_n_head) &&
        c.model.n_embd % c.model.n_head != 0)
        throw cli::UsageError(fmt::format("--n-head {} must divide --n-embd {}", c.model.n_head, c.model.n_embd));
}

// --precision with --resume (once o.saved is read: train_start::with_checkpoint_files): the checkpoint's
// precision, or cli::UsageError naming both (a run keeps the precision it was trained in; a checkpoint
// saved before it was kept was trained in float32).
inline void check_precision_kept(const Options& o) {
    const nn::TrainSetting& precision = nn::train_setting("train.bf16");
    const bool given =
        std::find(o.settings_given.begin(), o.settings_given.end(), &precision) != o.settings_given.end();
    if (!given || !o.saved || o.saved->bf16 == o.config.bf16) return;
    nn::TrainConfig saved;
    saved.bf16 = o.saved->bf16;
    const std::string checkpoint = nn::printable_name(*o.resume);
    throw cli::UsageError(fmt::format(
        "--precision {} cannot change a resumed run: --resume {} was trained in {}, which it keeps (resume without "
        "--precision, or start a new run from its weights: --init-from {} --precision {})",
        precision.text(o.config), checkpoint, precision.text(saved), checkpoint, precision.text(o.config)));
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
