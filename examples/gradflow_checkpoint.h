// gradflow CKPT --data FILE: how much gradient reaches every parameter of a trained model on the user's
// own data (any model kind), and what its heads' attention looks like there. examples/gradflow.cpp parses
// the command line; this is the run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gradflow {

struct CheckpointOptions {
    std::string checkpoint, data;
    std::optional<std::string> tokenizer;  // for GPT-2 weights (nn::load_trained_model)
    std::optional<int64_t> n_head;         // the same
    int64_t batch = 4, batches = 1;   // the first `batches` consecutive windows of batch x block tokens
    std::optional<int64_t> block;     // default: the model's block
    std::optional<std::string> csv;   // the report as train --grad-csv writes it
    bool json = false;
};

// The gradient of the mean loss over the windows, one backward each (eval mode: no dropout), as
// nn::gradient_report sees it: printed as its table, or as one JSON line. Returns the exit status.
int checkpoint_flow(const CheckpointOptions& o);

}  // namespace gradflow
