// train's progress on stderr: the programs' bar (progress.h) on a terminal, with the loss and tokens/s;
// plain lines now and then otherwise (a training log keeps its progress); and the notes (the model, the
// evaluations, an interruption) written over the bar.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <nn/train/trainer.h>

#include "progress.h"

namespace train_progress {

// A note on stderr. A failed write is ignored: with SIGPIPE ignored (train's main), a closed pipe (stderr
// piped into `head -n 1`, say) only stops the notes; training goes on and saves.
using progress::note;

class Progress {
public:
    Progress(int64_t total, int64_t first) : total_(total), first_(first), bar_("", "steps") {}

    void update(const nn::StepStats& s, double train_seconds, int64_t tokens) {
        smoothed_ = seen_ ? 0.9 * smoothed_ + 0.1 * s.loss : s.loss;
        seen_ = true;
        const double tokens_per_s = train_seconds > 0 ? double(tokens) / train_seconds : 0.0;
        const double eta = s.step > first_ ? train_seconds / double(s.step - first_) * double(total_ - s.step) : 0.0;
        if (bar_.on_terminal())
            bar_.draw(double(s.step) / double(total_),
                      fmt::format("{}/{} loss {:.4f} {:.0f} tok/s ETA {}", s.step, total_, smoothed_, tokens_per_s,
                                  progress::duration(eta)),
                      s.step == total_);
        else if (s.step == total_ || s.step % std::max<int64_t>(1, total_ / 20) == 0)
            note(fmt::format("step {}/{} loss {:.4f} lr {:.3g} {:.0f} tok/s ETA {}\n", s.step, total_, smoothed_, s.lr,
                             tokens_per_s, progress::duration(eta)));
    }
    void message(const std::string& line) { bar_.message(line); }
    void finish() { bar_.finish(); }

private:
    int64_t total_, first_;
    progress::Bar bar_;
    bool seen_ = false;
    double smoothed_ = 0;
};

}  // namespace train_progress
