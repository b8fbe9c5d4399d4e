#include "train_logs.h"

#include <cmath>
#include <filesystem>
#include <random>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <nn/train/settings.h>

namespace train_logs {

namespace {

using train_args::Options;

// The --csv and --grad-csv logs: each flag, its file, and its first line (the columns).
constexpr std::string_view kCsvHeader = "step,batch_loss,train_loss,val_loss,lr,grad_norm,tokens_per_s\n";
std::optional<run_logs::Log> csv_log(const Options& o) {
    if (!o.csv) return std::nullopt;
    return run_logs::Log{"--csv", *o.csv, kCsvHeader};
}
std::optional<run_logs::Log> grad_csv_log(const Options& o) {
    static const std::string header = nn::GradientReport::csv_header();  // (a Log holds a view of it)
    if (!o.grad_csv) return std::nullopt;
    return run_logs::Log{"--grad-csv", *o.grad_csv, header};
}

// The last step whose rows a resumed run's logs keep: the checkpoint's (its rows are written before it
// is saved, and the resumed run starts after it), but none for a run stopped at step 0, which logs
// step 0 again.
int64_t logged_through(const nn::Trainer& trainer) { return trainer.step_count() > 0 ? trainer.step_count() : -1; }

// The run's settings as the report page lists them: the model's that its kind reads (nn::model_fields()),
// then every training setting (nn::settings()) by its name; floats to 6 digits (0.001, not
// 0.0010000000474974513), a special value by its meaning ("lr/10", "off").
double six_digits(float v) { return std::stod(fmt::format("{:.6g}", v)); }
nlohmann::ordered_json settings_of(const nn::TrainConfig& c, const Options& o, int64_t parameters) {
    nlohmann::ordered_json settings = {{"model", std::string(nn::model_kind_info(c.model.kind).name)},
                                       {"parameters", parameters}};
    for (const nn::ModelField& f : nn::model_fields()) {
        if (f.option != 0 && !nn::model_kind_info(c.model.kind).reads(f.option)) continue;  // only what the kind reads
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

// 64 random bits in hex: the id of a run that writes a report page.
std::string new_run_id() {
    std::random_device device;
    return fmt::format("{:08x}{:08x}", device(), device());
}

}  // namespace

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

}  // namespace train_logs
