#include "train_logs.h"

#include <cmath>
#include <filesystem>
#include <random>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include <autograd/precision.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <nn/files/file_names.h>
#include <nn/train/settings.h>

#include "train_progress.h"

namespace train_logs {

namespace {

using train_args::Options;

// The --csv and --grad-csv logs: each flag, its file, and its first line (the columns).
constexpr std::string_view kCsvHeader = "step,batch_loss,train_loss,val_loss,lr,grad_norm,tokens_per_s\n";
run_logs::Log log_at(const train_args::OutputFile& f, const std::string& path) {
    static const std::string grad_header = nn::GradientReport::csv_header();  // (a Log holds a view of it)
    return run_logs::Log{f.flag, path, f.path == &Options::csv ? kCsvHeader : std::string_view(grad_header)};
}
std::optional<run_logs::Log> csv_log(const Options& o) {
    if (!o.csv) return std::nullopt;
    return log_at(train_args::output_file("--csv"), *o.csv);
}
std::optional<run_logs::Log> grad_csv_log(const Options& o) {
    if (!o.grad_csv) return std::nullopt;
    return log_at(train_args::output_file("--grad-csv"), *o.grad_csv);
}

// Why the resumed checkpoint's output `f` at `path` is not continued, or "" when it is: it must be there and
// still this run's (a log with its header, the page of the checkpoint's run id).
std::string not_continued(const train_args::OutputFile& f, const std::string& path, const std::string& run_id) {
    std::error_code error;
    if (!std::filesystem::exists(path, error)) return "it is missing";
    if (f.path != &Options::report)
        return run_logs::continues(log_at(f, path), /*force=*/true)
                   ? ""
                   : fmt::format("it is no longer a train {} log", f.flag);
    std::string page_id;
    try {
        page_id = report::RunReport::read(path, {}).run_id();
    } catch (const std::runtime_error&) {
        return "it is no longer a report page";
    }
    return !run_id.empty() && page_id == run_id ? "" : "it is the page of another run now";
}

// The last step whose rows a resumed run's logs keep: the checkpoint's (its rows are written before it
// is saved, and the resumed run starts after it), but none for a run stopped at step 0, which logs
// step 0 again.
int64_t logged_through(const nn::Trainer& trainer) { return trainer.step_count() > 0 ? trainer.step_count() : -1; }

// The run's settings as the report page lists them: the model's that its kind reads (nn::model_settings()),
// then every training setting (nn::train_settings()) by its name; floats to 6 digits (0.001, not
// 0.0010000000474974513), a special value by its meaning ("lr/10", "off").
double six_digits(float v) { return std::stod(fmt::format("{:.6g}", v)); }
template <class Config>
void add_setting(nlohmann::ordered_json& settings, const nn::Setting<Config>& s, const Config& config) {
    const std::string name(s.name());
    std::visit(
        [&](auto* v) {
            using T = std::remove_pointer_t<decltype(v)>;
            if (s.special && double(*v) == *s.special) settings[name] = s.text(config);
            else if constexpr (std::is_same_v<T, float>) settings[name] = six_digits(*v);
            else settings[name] = *v;
        },
        s.ref(config));
}
nlohmann::ordered_json settings_of(const nn::TrainConfig& c, const Options& o, int64_t parameters) {
    nlohmann::ordered_json settings = {{"model", std::string(nn::model_kind_info(c.model.kind).name)},
                                       {"parameters", parameters}};
    for (const nn::ModelSetting& s : nn::model_settings())
        if (s.option == 0 || nn::model_kind_info(c.model.kind).reads(s.option))
            add_setting(settings, s, c.model);  // what the kind reads
    settings["data"] = o.data.value_or("(the built-in copy task)");
    for (const nn::TrainSetting& s : nn::train_settings()) add_setting(settings, s, c);
    if (c.bf16) settings["bf16_kernel"] = std::string(autograd::bf16_kernel_in_use());  // which kernel multiplied
    return settings;
}

// 64 random bits in hex: the id of a run that writes a report page.
std::string new_run_id() {
    std::random_device device;
    return fmt::format("{:08x}{:08x}", device(), device());
}

}  // namespace

void continue_checkpoint_outputs(Options& o) {
    if (!o.saved) return;
    const nn::RunFiles& saved = o.saved->files;
    const std::string checkpoint = nn::printable_name(*o.resume);
    // The files the command line names: one of them is that, not the checkpoint's output too.
    const Files named = files_of(o);
    const auto named_as = [&](const std::string& path) -> std::string {
        for (const cli::Input& in : named.inputs)
            if (cli::same_file(path, in.path)) return in.flag;
        for (const cli::Output& out : named.outputs)
            if (cli::same_file(path, out.path)) return out.flag;
        return "";
    };
    std::string continued;
    const char* first = nullptr;  // its flag, the example of how to change one
    for (const train_args::OutputFile& f : train_args::kOutputFiles) {
        const auto kept = saved.outputs.find(f.name);
        if (o.*f.path || o.outputs_off.contains(f.flag) || kept == saved.outputs.end()) continue;
        const std::string path = kept->second.string();
        const std::string as = named_as(path);
        if (const std::string why =
                as.empty() ? not_continued(f, path, o.saved->run_id) : "the command line gives it as " + as;
            !why.empty()) {
            train_progress::note(fmt::format("--resume {}: not continuing its {} {}: {}\n", checkpoint, f.flag,
                                             nn::printable_name(path), why));
            continue;
        }
        o.*f.path = path;
        continued += fmt::format("{}{} {}", first ? ", " : "", f.flag, nn::printable_name(path));
        first = first ? first : f.flag;
    }
    if (first)
        train_progress::note(fmt::format("--resume {}: continuing its {}; give {} FILE or {} none to change that\n",
                                         checkpoint, continued, first, first));
}

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

LogsContinued logs_continued(const Options& o) {
    const auto continues = [&](const std::optional<run_logs::Log>& log) {
        return o.resume && log && run_logs::continues(*log, o.force);
    };
    return {continues(csv_log(o)), continues(grad_csv_log(o))};
}

Logs open_logs(const Options& o, LogsContinued continued, const nn::Trainer& trainer) {
    Logs logs;
    if (const auto log = csv_log(o)) logs.csv.emplace(*log, continued.csv, logged_through(trainer));
    if (const auto log = grad_csv_log(o)) logs.grad_csv.emplace(*log, continued.grad_csv, logged_through(trainer));
    return logs;
}

std::string csv_row(const nn::StepStats& s, double train, double val, double lr, double tokens_per_s) {
    const bool stepped = s.step > 0;
    const auto field = [](bool present, double v, const char* format) {
        return present ? fmt::format(fmt::runtime(format), v) : std::string();
    };
    return fmt::format("{},{},{},{},{:.6g},{},{}\n", s.step, field(stepped, s.loss, "{:.6f}"),
                       field(!std::isnan(train), train, "{:.6f}"), field(!std::isnan(val), val, "{:.6f}"), lr,
                       field(stepped, s.grad_norm, "{:.6g}"), field(stepped, tokens_per_s, "{:.1f}"));
}

report::RunReport open_page(nn::Trainer& trainer, const Options& o) {
    nlohmann::ordered_json settings = settings_of(trainer.config(), o, trainer.model().parameter_count());
    const std::string& path = *o.report;
    std::error_code error;
    if (o.resume && std::filesystem::exists(path, error)) {
        const char* const advice =
            "a resumed run continues only its own page: name another file, or add --force to start a new page";
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
            throw std::runtime_error(
                fmt::format("--report {} is {}, and --resume {} is {}; {}", path,
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

}  // namespace train_logs
