// Progress on stderr, for the programs' work that runs for seconds or more (loading a checkpoint,
// evaluating, scoring heads, training): a bar on a terminal, redrawn over itself, and nothing at all when
// stderr is not a terminal, so a log or a pipe gets the program's results and messages, never its bars.
//
//   progress::Bar bar("evaluate", "tokens");
//   for (...) bar.update(done, total);  // evaluate [#########.....................] 40960/339968 tokens  5512 tokens/s  ETA 0m54s
//   bar.message("a note");              // a line of its own, over the bar
//                                       // at done == total: "... in 1m02s", and the line ends
//
// A write that fails is ignored: a closed stderr only silences the progress.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace progress {

// `text` on stderr as it is.
void note(const std::string& text);
// Whether stderr is a terminal: where bars and a program's announcements of long work go.
bool stderr_on_terminal();
// 0m13s; from an hour on 1h02m.
std::string duration(double seconds);

class Bar {
public:
    // `label` starts the line; `unit` names what is counted ("tokens", "MB"), each `per_unit` of the counts
    // given to update (1e6: bytes shown as MB).
    Bar(std::string label, std::string unit, double per_unit = 1);
    Bar(const Bar&) = delete;
    Bar& operator=(const Bar&) = delete;
    ~Bar() { finish(); }

    bool on_terminal() const { return terminal_; }
    // done of total: the bar, the counts, the rate and the time left, both measured since the bar was
    // made. Drawn at most ten times a second; at done == total always, with the time it took, and the
    // line is ended there (later updates draw nothing).
    void update(uint64_t done, uint64_t total);
    // The bar at `fraction` followed by `text`, for a caller with figures of its own (train: the loss and
    // tokens/s); at most ten times a second unless `now`.
    void draw(double fraction, const std::string& text, bool now = false);
    // A line of its own, written over the bar (the next draw puts the bar back under it).
    void message(const std::string& line);
    // Ends the bar's line, once (also when an error unwinds past the bar, so its message starts a line).
    void finish();

private:
    using Clock = std::chrono::steady_clock;
    std::string label_, unit_;
    double per_unit_;
    bool terminal_;
    bool line_open_ = false;  // the bar is on the terminal's current line
    Clock::time_point start_, drawn_;
    bool drawn_once_ = false;
    bool completed_ = false;  // update reached the total: the bar is drawn and done
};

}  // namespace progress
