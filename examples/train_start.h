// Where a train run starts: the trainer the command line asks for (resumed from a checkpoint, started
// from one's weights, or fresh on GPT-2's BPE or on characters), with its data and the command line's
// changes to a resumed run.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <nn/train/trainer.h>

#include "train_args.h"

namespace train_start {

// The trainer for `o`: --resume, --init-from, or a fresh run of o.config, on the text or tokens of
// --data (or the built-in copy task). A fresh run takes everything from the command line. A resumed one
// keeps the checkpoint's settings (the parser refuses the flags that would change the run's identity)
// except the evaluation, log and sample flags given explicitly, and a --steps, which extends the run (the
// learning-rate schedule is recomputed over the new total: nn::Trainer::extend_to).
nn::Trainer new_trainer(const train_args::Options& o);

// With --resume, the files the checkpoint names (nn::RunFiles) where the command line gives none, each
// said on stderr: its --data file, used when it is there and unchanged (its size and checksum; refused
// otherwise, naming it and why), and its --csv, --grad-csv and --report, continued when they are there
// and still this run's (a log with its header, the page of its run id). `none` for one of them, or
// another file, changes that; a checkpoint saved before they were kept names none. Before the checks on
// the outputs: the files it adds are checked with the others.
train_args::Options with_checkpoint_files(train_args::Options o);

// An std::invalid_argument from the library about a flag's value, as "FLAG VALUE: problem".
template <typename F>
auto naming_flag(const char* flag, const std::optional<int64_t>& value, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const std::invalid_argument& e) {
        if (!value) throw;
        throw std::runtime_error(fmt::format("{} {}: {}", flag, *value, e.what()));
    }
}

}  // namespace train_start
