// The signals that ask a program to stop (SIGINT: Ctrl-C; SIGTERM; SIGHUP: a closed terminal or ssh
// session), caught as a flag the program's loop reads, so that it stops where it can still say what it
// has done (train saves, generate prints what it drew, evaluate the mean of the windows it measured) and
// exits 128 + the signal.
//
//   const cli::StopSignals stop;                      // caught from here to the end of the scope
//   while (more() && cli::stop_signal() == 0) work();
//   if (cli::stop_signal() != 0) return 128 + cli::stop_signal();
#pragma once

#include <signal.h>

namespace cli {

// Catches them while it lives (SA_RESTART: reads and writes in progress carry on); the destructor
// restores what was there before, so a signal after it acts as it would have.
class StopSignals {
public:
    StopSignals();
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;
    ~StopSignals();

private:
    struct sigaction old_int_ {
    }, old_term_{}, old_hup_{};
};

// The last signal caught, 0 before any.
int stop_signal();

}  // namespace cli
