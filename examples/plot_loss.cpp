// Loss curves from a training log: reads the CSV that `train --csv` writes (header
// step,train_loss,val_loss,lr,grad_norm,tokens_per_s; columns found by name, extra ones ignored) and
// draws train and validation loss against step as an SVG chart.
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

#include <fmt/format.h>

#include "svg_chart.h"

namespace {

constexpr const char* kUsage = R"(usage: plot_loss CSV [--out SVG] [--title TEXT] [--log-y]
  CSV            a training log from `train --csv` (columns step, train_loss, val_loss, ...)
  --out SVG      where to write the chart                    (default: CSV with .svg instead)
  --title TEXT   the chart's title                           (default: "Loss: " and the CSV's name)
  --log-y        a logarithmic loss axis
  --help         this text
)";

[[noreturn]] void usage(int status, std::string_view problem = "") {
    if (!problem.empty()) fmt::print(stderr, "plot_loss: {}\n\n", problem);
    fmt::print(status == 0 ? stdout : stderr, "{}", kUsage);
    std::exit(status);
}

struct Options {
    std::string csv;
    std::optional<std::string> out, title;
    bool log_y = false;
};

Options parse(int argc, char** argv) {
    Options o;
    bool have_csv = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        const auto next = [&] {
            if (i + 1 >= argc) usage(2, fmt::format("{} needs a value", arg));
            return std::string(argv[++i]);
        };
        if (arg == "--help" || arg == "-h") usage(0);
        else if (arg == "--out") o.out = next();
        else if (arg == "--title") o.title = next();
        else if (arg == "--log-y") o.log_y = true;
        else if (arg.starts_with("--")) usage(2, fmt::format("unknown flag '{}'", arg));
        else if (have_csv) usage(2, fmt::format("one CSV at a time, got '{}' and '{}'", o.csv, arg));
        else o.csv = arg, have_csv = true;
    }
    if (!have_csv) usage(2, "which CSV? (the file `train --csv` wrote)");
    return o;
}

struct Log {
    std::vector<double> step, train_loss, val_loss;
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
    if (std::filesystem::is_directory(path)) throw std::runtime_error(fmt::format("{}: is a directory, not a CSV file", path));
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
    if (!next_line()) throw std::runtime_error(fmt::format("{}: empty; expected a header line like step,train_loss,val_loss,...", path));
    const std::vector<std::string> header = split_fields(line);
    const auto column = [&](const std::string& name) {
        for (size_t i = 0; i < header.size(); ++i)
            if (header[i] == name) return i;
        throw std::runtime_error(fmt::format("{}: the header has no '{}' column (it is '{}'; `train --csv` writes "
                                             "step,train_loss,val_loss,lr,grad_norm,tokens_per_s)",
                                             where(), name, line));
    };
    const size_t c_step = column("step"), c_train = column("train_loss"), c_val = column("val_loss");
    Log log;
    while (next_line()) {
        if (line.empty()) continue;
        const std::vector<std::string> fields = split_fields(line);
        if (fields.size() != header.size())
            throw std::runtime_error(fmt::format("{}: {} fields, but the header has {}", where(), fields.size(), header.size()));
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
            throw std::runtime_error(fmt::format("{}: step {} does not follow step {}", where(), step, log.step.back()));
        log.step.push_back(step);
        log.train_loss.push_back(number_in(c_train));
        log.val_loss.push_back(number_in(c_val));
    }
    if (log.step.empty()) throw std::runtime_error(fmt::format("{}: a header but no rows: nothing to plot", path));
    return log;
}

int run(const Options& o) {
    const Log log = read_log(o.csv);
    const std::string out = o.out.value_or(std::filesystem::path(o.csv).replace_extension(".svg").string());
    chart::LineChart c{.title = o.title.value_or("Loss: " + std::filesystem::path(o.csv).filename().string()),
                       .x = {.label = "step"},
                       .y = {.label = "loss (nats per token)", .scale = o.log_y ? chart::Scale::log : chart::Scale::linear},
                       .note = fmt::format("{} evaluations, steps {:g} to {:g}", log.step.size(), log.step.front(), log.step.back())};
    if (!o.log_y) c.y.min = 0.0;
    const bool markers = log.step.size() <= 40;
    c.series.push_back({.name = "train", .x = log.step, .y = log.train_loss, .color = "#1f77b4", .markers = markers});
    c.series.push_back({.name = "validation", .x = log.step, .y = log.val_loss, .color = "#ff7f0e", .dashed = true, .markers = markers});
    chart::write_svg(c, out);
    fmt::print("wrote {}: {} points, steps {:g} to {:g}, last train loss {:.4f}, val loss {:.4f}\n", out, log.step.size(),
               log.step.front(), log.step.back(), log.train_loss.back(), log.val_loss.back());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse(argc, argv);
    try {
        return run(options);
    } catch (const std::exception& e) {
        fmt::print(stderr, "plot_loss: {}\n", e.what());
        return 1;
    }
}
