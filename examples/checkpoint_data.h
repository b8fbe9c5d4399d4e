// The data a checkpoint is measured on, for the programs that read one with --data (evaluate, gradflow):
// --data's ids for the checkpoint's tokenizer, cut into the first consecutive windows of B x T tokens
// (nn::consecutive_window), checked against the model and the file with messages that name the flags.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nn/train/text_data.h>
#include <nn/train/data_file.h>
#include <nn/train/trainer.h>

struct CheckpointData {
    nn::TokenIds ids;
    int64_t B = 0, T = 0, windows = 0;  // the windows to read, from the start
};

// T defaults to the model's block, the windows to every whole one in the file.
inline CheckpointData checkpoint_data(const nn::TrainedModel& trained, const std::string& checkpoint, const std::string& data,
                                      int64_t batch, std::optional<int64_t> block, std::optional<int64_t> windows) {
    // the windows it trained on (a bigram reads one token at a time from windows of any length)
    const int64_t limit = std::max(trained.config.block, trained.model->block_size());
    const int64_t B = batch, T = block.value_or(limit);
    if (T > limit) throw std::runtime_error(fmt::format("--block {} is longer than the model's block of {} ({})", T, limit, checkpoint));
    nn::TokenIds ids = nn::read_token_ids(data, *trained.tokenizer);
    const int64_t whole = nn::consecutive_windows(ids, B, T);  // each needs B T + 1 tokens
    if (whole == 0)
        throw std::runtime_error(fmt::format("--data {} has {} tokens: one window of --batch {} x --block {} needs {}", data,
                                             ids.size(), B, T, B * T + 1));
    if (windows && *windows > whole)
        throw std::runtime_error(fmt::format("--data {} holds {} whole window{} of {} x {} tokens ({} tokens), fewer than --batches {}",
                                             data, whole, whole == 1 ? "" : "s", B, T, ids.size(), *windows));
    return {std::move(ids), B, T, windows.value_or(whole)};
}
