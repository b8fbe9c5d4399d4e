#include "progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

namespace progress {

void note(const std::string& text) { (void)!std::fwrite(text.data(), 1, text.size(), stderr); }

std::string duration(double seconds) {
    const auto s = static_cast<int64_t>(std::lround(seconds));
    return s >= 3600 ? fmt::format("{}h{:02}m", s / 3600, s / 60 % 60) : fmt::format("{}m{:02}s", s / 60, s % 60);
}

namespace {

constexpr size_t kBarWidth = 30;
constexpr double kRedrawSeconds = 0.1;

// Three significant digits, whole numbers from 100 on: 0.0234, 5.5, 612, 1485.
std::string amount(double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v); }

// Code points: a terminal's columns.
size_t columns(const std::string& text) {
    return size_t(std::ranges::count_if(text, [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// The terminal's width less one column (a full line would wrap, and \r would then redraw only its last
// row); 0 when it has none.
size_t usable_columns() {
    winsize size{};
    return ::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 ? size.ws_col - 1u : 0;
}

// `line` cut to `width` columns.
std::string cut(std::string line, size_t width) {
    size_t seen = 0;
    for (size_t i = 0; i < line.size(); ++i)
        if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80 && ++seen > width) {
            line.resize(i);
            break;
        }
    return line;
}

}  // namespace

bool stderr_on_terminal() { return isatty(STDERR_FILENO) == 1; }

Bar::Bar(std::string label, std::string unit, double per_unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      per_unit_(per_unit),
      terminal_(stderr_on_terminal()),
      start_(Clock::now()),
      drawn_(start_) {}

void Bar::draw(double fraction, const std::string& text, bool now) {
    if (!terminal_) return;
    const Clock::time_point t = Clock::now();
    if (!now && drawn_once_ && std::chrono::duration<double>(t - drawn_).count() < kRedrawSeconds) return;
    drawn_ = t;
    drawn_once_ = true;
    // On a narrow terminal the bar shrinks first (to 10), then the line is cut.
    const std::string head = label_.empty() ? "" : label_ + " ";
    const size_t width = usable_columns(), around = columns(head) + columns(text) + 3;
    const size_t bar_width =
        width == 0 ? kBarWidth : std::clamp<size_t>(width > around ? width - around : 0, 10, kBarWidth);
    const auto filled = static_cast<size_t>(double(bar_width) * std::clamp(fraction, 0.0, 1.0));
    std::string line =
        fmt::format("{}[{}{}] {}", head, std::string(filled, '#'), std::string(bar_width - filled, '.'), text);
    if (width > 0) line = cut(std::move(line), width);
    note(fmt::format("\r{}\x1b[K",
                     line));  // \r, and clear to the end of the line: the last drawing may have been longer
    line_open_ = true;
}

void Bar::update(uint64_t done, uint64_t total) {
    if (!terminal_ || completed_) return;
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    const bool complete = done >= total;
    std::string text =
        fmt::format("{}/{} {}", amount(double(done) / per_unit_), amount(double(total) / per_unit_), unit_);
    if (done > 0 && seconds > 0) {
        const double rate = double(done) / seconds;
        text += fmt::format("  {} {}/s  ", amount(rate / per_unit_), unit_);
        text += complete ? "in " + duration(seconds) : "ETA " + duration(double(total - done) / rate);
    }
    draw(total > 0 ? double(done) / double(total) : 1.0, text, complete);
    if (complete) {
        completed_ = true;
        finish();
    }
}

void Bar::message(const std::string& line) {
    note(fmt::format("{}{}\n", line_open_ ? "\r\x1b[2K" : "", line));
    line_open_ = false;
}

void Bar::finish() {
    if (line_open_) note("\n");
    line_open_ = false;
}

}  // namespace progress
