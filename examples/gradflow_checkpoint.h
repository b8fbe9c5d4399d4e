// gradflow CKPT --data FILE: how much gradient reaches every parameter of a trained model on the user's
// own data (any model kind), and what its heads' attention looks like there: how spread it is, and how
// much gradient its rows can pass back (the saturation study's measure, on the model's own rows).
// examples/gradflow.cpp parses the command line; this is the run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gradflow {

struct CheckpointOptions {
    std::string checkpoint, data;
    std::optional<std::string> tokenizer;  // for GPT-2 weights (nn::load_trained_model)
    std::optional<int64_t> n_head;         // the same
    int64_t batch = 4, batches = 1;        // the first `batches` consecutive windows of batch x block tokens
    std::optional<int64_t> block;          // default: the model's block
    std::optional<std::string> csv;        // the report as train --grad-csv writes it (step 0 for weights without one)
    bool json = false;
};

// The gradient of the mean loss over the windows (eval mode: no dropout), a backward for each part of a
// window that fits kPartBytes (checkpoint_data.h), as nn::gradient_report sees it; and per head,
// over every part, its attention's entropy and largest share and the saturation study's row gradient of
// each looking row (nn::study::passed_back): their median and the share of flat rows. Printed as tables
// naming the checkpoint's training step, or as one JSON line. Returns the exit status.
int checkpoint_flow(const CheckpointOptions& o);

}  // namespace gradflow
