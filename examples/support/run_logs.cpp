#include "run_logs.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nn/files/atomic_file.h>

#include "cli.h"

namespace run_logs {

namespace {

std::string read_all(const Log& log) {
    std::ifstream in(log.path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    if (!in)
        throw std::runtime_error(
            fmt::format("{} {}: cannot read the log to continue: {}", log.flag, log.path, std::strerror(errno)));
    return buffer.str();
}

std::string_view first_line(std::string_view header) { return header.substr(0, header.find('\n')); }

// Calls on_row(step, row) for each whole row after the header, in order (a last line without its newline
// is no row); std::runtime_error naming the file and line for a row that does not start with a step.
template <typename OnRow>
void for_each_row(const Log& log, std::string_view text, OnRow&& on_row) {
    int64_t line = 2;
    for (size_t at = log.header.size(); at < text.size(); ++line) {
        const size_t end = text.find('\n', at);
        if (end == std::string_view::npos) break;
        const std::string_view row = text.substr(at, end - at);
        int64_t step = -1;
        const auto [stop, error] = std::from_chars(row.data(), row.data() + row.size(), step);
        if (error != std::errc() || stop == row.data() + row.size() || *stop != ',' || step < 0)
            throw std::runtime_error(fmt::format(
                "{} {}: line {} is not a row of the log (it does not start with a step)", log.flag, log.path, line));
        on_row(step, row);
        at = end + 1;
    }
}

}  // namespace

bool continues(const Log& log, bool force) {
    std::error_code error;
    if (!std::filesystem::exists(log.path, error)) return false;  // (check_outputs refused what cannot be a file)
    const std::string text = read_all(log);
    if (!text.starts_with(log.header)) {
        if (force) return false;
        throw cli::UsageError(
            fmt::format("{} {} exists and is not a train {} log (its first line is not \"{}\"); a resumed "
                        "run appends only to its own log: name another file, or add --force to replace it",
                        log.flag, log.path, log.flag, first_line(log.header)));
    }
    for_each_row(log, text, [](int64_t, std::string_view) {});  // a damaged row is refused now, not after loading
    return true;
}

bool drop_rows_after(const Log& log, int64_t step) {
    const std::string text = read_all(log);
    std::string kept(log.header);
    for_each_row(log, text, [&](int64_t row_step, std::string_view row) {
        if (row_step > step) return;
        kept += row;
        kept += '\n';
    });
    if (kept.size() == text.size()) return false;
    nn::write_file_atomically(log.path, kept, log.flag);
    return true;
}

Writer::Writer(const Log& log, bool continued, int64_t through) : flag_(log.flag), path_(log.path) {
    if (continued) drop_rows_after(log, through);
    file_.reset(std::fopen(path_.c_str(), continued ? "a" : "w"));
    if (!file_)
        throw std::runtime_error(fmt::format("{} {}: cannot open for writing: {}", flag_, path_, std::strerror(errno)));
    if (!continued) fmt::print(file_.get(), "{}", log.header);
}

void Writer::append(std::string_view rows) {
    fmt::print(file_.get(), "{}", rows);
    flush(false);
}

void Writer::flush(bool durable) {
    std::FILE* f = file_.get();
    if (std::fflush(f) != 0 || std::ferror(f) || (durable && ::fsync(fileno(f)) != 0))
        throw std::runtime_error(fmt::format("{} {}: cannot write ({})", flag_, path_, std::strerror(errno)));
}

}  // namespace run_logs
