// Loss curves from a training log: reads the CSV that `train --csv` writes (header
// step,batch_loss,train_loss,val_loss,lr,grad_norm,tokens_per_s; columns found by name, extra ones ignored;
// batch_loss optional) and draws train and validation loss against step as an SVG chart, with the batch
// loss beneath them where the log has it (train --log-every).
//
//   plot_loss run.csv                       writes run.svg
//   plot_loss run.csv --out loss.svg --title "copy task, one head" [--log-y]
//
// Exit status: 0 written, 1 failed (a missing or malformed CSV names the file and the line), 2 bad arguments.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <cli.h>
#include <fmt/format.h>
#include <nn/files/file_names.h>

#include "svg_chart.h"

namespace {

struct Options {
    std::string csv;
    std::optional<std::string> out, title;
    bool log_y = false, force = false;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("plot_loss", "CSV [options]", "Loss curves from a training log, as an SVG chart.");
    p.positional("CSV", "a training log from `train --csv` (columns step, train_loss, val_loss, ...)",
                 [&o](const cli::Value& v) { o.csv = v.file(); });
    p.option("--out", "SVG", "where to write the chart                    (default: CSV with .svg instead)",
             [&o](const cli::Value& v) { o.out = v.file(); });
    p.option("--title", "TEXT", "the chart's title                           (default: \"Loss: \" and the CSV's name)",
             [&o](const cli::Value& v) { o.title = v.text(); });
    p.flag("--log-y", "a logarithmic loss axis", [&o] { o.log_y = true; });
    p.flag("--force", cli::kForceHelp, [&o] { o.force = true; });
    return p;
}

// One curve: the steps where its column has a value (a row may leave it empty: train --csv logs the batch
// loss every --log-every steps and the evaluated losses only at evaluations).
struct Curve {
    std::vector<double> step, loss;
};
struct Log {
    std::vector<double> step;        // every row's
    Curve train, validation, batch;  // batch: empty for a log without a batch_loss column
};

std::vector<std::string> split_fields(const std::string& line) {
    std::vector<std::string> fields;
    size_t start = 0;
    while (true) {
        const size_t comma = line.find(',', start);
        fields.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) return fields;
        start = comma + 1;
    }
}

Log read_log(const std::string& path) {
    if (std::filesystem::is_directory(path))
        throw std::runtime_error(fmt::format("{}: is a directory, not a CSV file", path));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    std::string line;
    int64_t number = 0;
    const auto where = [&] { return fmt::format("{}:{}", path, number); };
    const auto next_line = [&] {
        if (!std::getline(in, line)) return false;
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return true;
    };
    if (!next_line())
        throw std::runtime_error(
            fmt::format("{}: empty; expected a header line like step,train_loss,val_loss,...", path));
    const std::vector<std::string> header = split_fields(line);
    const auto column = [&](const std::string& name) {
        for (size_t i = 0; i < header.size(); ++i)
            if (header[i] == name) return i;
        // (the line quoted escaped and cut: a checkpoint's first line is binary, NUL bytes and all)
        throw std::runtime_error(
            fmt::format("{}: the header has no '{}' column (it is {}; `train --csv` writes "
                        "step,batch_loss,train_loss,val_loss,lr,grad_norm,tokens_per_s)",
                        where(), name, nn::quoted_text(line, 60)));
    };
    const size_t c_step = column("step"), c_train = column("train_loss"), c_val = column("val_loss");
    std::optional<size_t> c_batch;
    for (size_t i = 0; i < header.size(); ++i)
        if (header[i] == "batch_loss") c_batch = i;
    Log log;
    while (next_line()) {
        if (line.empty()) continue;
        const std::vector<std::string> fields = split_fields(line);
        if (fields.size() != header.size())
            throw std::runtime_error(fmt::format("{}: {}, but the header has {}", where(),
                                                 cli::counted(fields.size(), "field"), header.size()));
        const auto number_in = [&](size_t c) {
            const std::string& text = fields[c];
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || std::isinf(v))
                throw std::runtime_error(fmt::format("{}: {} is '{}', not a number", where(), header[c], text));
            return v;  // NaN is kept (a diverged run): the line breaks there
        };
        const double step = number_in(c_step);
        if (!log.step.empty() && !(step > log.step.back()))
            throw std::runtime_error(
                fmt::format("{}: step {} does not follow step {}", where(), step, log.step.back()));
        log.step.push_back(step);
        const auto add = [&](Curve& curve, size_t c) {  // an empty field: no point on this curve at this step
            if (fields[c].empty()) return;
            curve.step.push_back(step);
            curve.loss.push_back(number_in(c));
        };
        add(log.train, c_train);
        add(log.validation, c_val);
        if (c_batch) add(log.batch, *c_batch);
    }
    if (log.step.empty()) throw std::runtime_error(fmt::format("{}: a header but no rows: nothing to plot", path));
    if (log.train.step.empty() && log.validation.step.empty() && log.batch.step.empty())
        throw std::runtime_error(
            fmt::format("{}: {} but no losses in them: nothing to plot", path, cli::counted(log.step.size(), "row")));
    return log;
}

int run(const Options& o) {
    const std::string out = o.out.value_or(std::filesystem::path(o.csv).replace_extension(".svg").string());
    const Log log = read_log(o.csv);  // a missing or malformed log is the first thing to hear about
    const std::vector<cli::Output> outputs = {{.flag = o.out ? "--out" : "", .path = out}};
    const cli::OutputLocks locks = cli::claim_outputs({{"CSV", o.csv}}, outputs, o.force);
    chart::LineChart c{
        .title = o.title.value_or("Loss: " + std::filesystem::path(o.csv).filename().string()),
        .x = {.label = "step"},
        .y = {.label = "loss (nats per token)", .scale = o.log_y ? chart::Scale::log : chart::Scale::linear},
        .note = fmt::format("{}, steps {:g} to {:g}", cli::counted(log.validation.step.size(), "evaluation"),
                            log.step.front(), log.step.back())};
    if (!o.log_y) c.y.min = 0.0;
    const bool markers = log.validation.step.size() <= 40;
    if (!log.batch.step.empty())  // beneath the evaluated curves: noisy, one batch per point
        c.series.push_back({.name = "train (batch)", .x = log.batch.step, .y = log.batch.loss, .color = "#aec7e8"});
    if (!log.train.step.empty())
        c.series.push_back(
            {.name = "train", .x = log.train.step, .y = log.train.loss, .color = "#1f77b4", .markers = markers});
    if (!log.validation.step.empty())
        c.series.push_back({.name = "validation",
                            .x = log.validation.step,
                            .y = log.validation.loss,
                            .color = "#ff7f0e",
                            .dashed = true,
                            .markers = markers});
    chart::write_svg(c, out);
    const auto last = [](const Curve& curve) { return curve.loss.empty() ? NAN : curve.loss.back(); };
    fmt::print("wrote {}: {}, steps {:g} to {:g}, last train loss {:.4f}, val loss {:.4f}\n", out,
               cli::counted(log.step.size(), "point"), log.step.front(), log.step.back(), last(log.train),
               last(log.validation));
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
