#include "run_logs.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nn/train/files.h>

#include "cli.h"

namespace run_logs {

namespace {

std::string read_all(const Log& log) {
    std::ifstream in(log.path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    if (!in)
        throw std::runtime_error(fmt::format("{} {}: cannot read the log to continue: {}", log.flag, log.path, std::strerror(errno)));
    return buffer.str();
}

std::string_view first_line(std::string_view header) { return header.substr(0, header.find('\n')); }

}  // namespace

bool continues(const Log& log, bool force) {
    std::ifstream in(log.path, std::ios::binary);
    if (!in) return false;  // (check_outputs has refused what exists and cannot be read as a file)
    std::string start(log.header.size(), '\0');
    in.read(start.data(), static_cast<std::streamsize>(start.size()));
    if (in.gcount() == static_cast<std::streamsize>(start.size()) && start == log.header) return true;
    if (force) return false;
    throw cli::UsageError(fmt::format("{} {} exists and is not a train {} log (its first line is not \"{}\"); a resumed "
                                      "run appends only to its own log: name another file, or add --force to replace it",
                                      log.flag, log.path, log.flag, first_line(log.header)));
}

int64_t drop_rows_after(const Log& log, int64_t step) {
    const std::string text = read_all(log);
    std::string kept(log.header);
    int64_t dropped = 0, line_number = 1;
    for (size_t at = log.header.size(); at < text.size(); ++line_number) {
        const size_t end = text.find('\n', at);
        if (end == std::string::npos) {  // cut short: never a whole row
            ++dropped;
            break;
        }
        const std::string_view row(text.data() + at, end - at);
        int64_t row_step = -1;
        const auto [stop, error] = std::from_chars(row.data(), row.data() + row.size(), row_step);
        if (error != std::errc() || stop == row.data() + row.size() || *stop != ',' || row_step < 0)
            throw std::runtime_error(fmt::format("{} {}: line {} is not a row of the log (it does not start with a step)",
                                                 log.flag, log.path, line_number + 1));
        if (row_step <= step) {
            kept += row;
            kept += '\n';
        } else {
            ++dropped;
        }
        at = end + 1;
    }
    if (dropped > 0) nn::write_file_atomically(log.path, kept, log.flag);
    return dropped;
}

}  // namespace run_logs
