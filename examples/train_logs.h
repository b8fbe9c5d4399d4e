// What a train run writes besides its checkpoint: the CSV logs (--csv, --grad-csv) and the report page
// (--report), and the checks of its files before any work. A resumed run continues only its own logs and
// page, without what they hold past its checkpoint's step, so that the logs of a run killed and resumed
// are a straight run's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <cli.h>
#include <nn/train/trainer.h>

#include "run_logs.h"
#include "run_report.h"
#include "train_args.h"

namespace train_logs {

// What the run reads and writes, for the checks before any work (support/cli.h): no output may be an
// input or another output; --out may be the checkpoint it resumes; a resumed run continues its own logs
// and page (logs_continued, open_page).
struct Files {
    std::vector<cli::Input> inputs;
    std::vector<cli::Output> outputs;
};
Files files_of(const train_args::Options& o);

// With --resume, the --csv, --grad-csv and --report its checkpoint names (o.saved), where the
// command line gives none and does not turn it off (`none`): each continued when it is there and still
// this run's (a log with its header, the page of the checkpoint's run id), else left, saying why. The
// ones continued are said on stderr.
void continue_checkpoint_outputs(train_args::Options& o);

// Which logs a resumed run continues: only its own, checked before any work (run_logs::continues).
struct LogsContinued {
    bool csv = false, grad_csv = false;
};
LogsContinued logs_continued(const train_args::Options& o);

// The run's CSV logs, each open when its flag is given, closed when destroyed (or by close()).
struct Logs {
    std::optional<run_logs::Writer> csv, grad_csv;
    void flush(bool durable) {
        if (csv) csv->flush(durable);
        if (grad_csv) grad_csv->flush(durable);
    }
    void close() {
        csv.reset();
        grad_csv.reset();
    }
};
// A continued log first loses the rows past the resumed checkpoint's step (logged_through).
Logs open_logs(const train_args::Options& o, LogsContinued continued, const nn::Trainer& trainer);

// One row of the --csv log at step s.step: the step's batch loss, gradient norm and tokens/s (empty at
// step 0, before any step), the evaluated losses (empty when NaN: between evaluations), the lr.
std::string csv_row(const nn::StepStats& s, double train, double val, double lr, double tokens_per_s);

// The report page of this run. A resumed run continues the page at --report only if it is its own (the
// page holds the run id its checkpoint holds), without what the page has past the checkpoint's step (a
// run killed after writing it). A page of another run, one without an id, or a file that is no page is
// refused, naming both runs; with --force a new page replaces it. A run without an id gets one here,
// saved with its checkpoints from now on.
report::RunReport open_page(nn::Trainer& trainer, const train_args::Options& o);

}  // namespace train_logs
