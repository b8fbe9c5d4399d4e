#include "stop_signals.h"

namespace cli {

namespace {
volatile sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int signal) { g_stop_signal = signal; }
}  // namespace

StopSignals::StopSignals() {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
    ::sigaction(SIGHUP, &action, &old_hup_);
}

StopSignals::~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::sigaction(SIGHUP, &old_hup_, nullptr);
}

int stop_signal() { return g_stop_signal; }

}  // namespace cli
