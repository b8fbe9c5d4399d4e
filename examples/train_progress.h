// train's progress on stderr: a bar on a terminal, plain lines now and then otherwise, and the notes
// (the model, the evaluations, an interruption) written over it.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <nn/train/trainer.h>

namespace train_progress {

// A note on stderr. A failed write is ignored: with SIGPIPE ignored (train's main), a closed pipe (stderr
// piped into `head -n 1`, say) only stops the notes; training goes on and saves.
inline void note(const std::string& text) { (void)!std::fwrite(text.data(), 1, text.size(), stderr); }

inline std::string duration(double seconds) {
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

}  // namespace train_progress
