// The data a checkpoint is measured on, for the programs that read one with --data (evaluate, ablate, gradflow):
// --data's ids for the checkpoint's tokenizer, cut into the first consecutive windows of B x T tokens
// (nn::consecutive_window), checked against the model and the file with messages that name the flags;
// and the memory a pass over them takes (nn::estimate_memory), checked against this machine's, and the
// parts a window runs in.
//
// Shape legend: B batch (rows of a window), T time (tokens of a row).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <cli.h>
#include <fmt/format.h>
#include <nn/train/text_data.h>
#include <nn/train/data_file.h>
#include <nn/train/trainer.h>

// Bytes of activations a pass (forward, or forward and backward) may take at once: a batch of more rows
// runs in parts (the same means and gradients; far less than a GPT-2 small row of 1024 tokens, 0.55 GB
// forward, is work enough for the kernels). Fixed, not the machine's: the parts, and so the last bits of
// a mean, are the same on every machine.
inline constexpr double kPartBytes = double(1 << 28);

// The rows of a pass over B rows of T tokens to run at once (a forward pass, nn::Pass::forward or
// forward_heads, or a gradient): in parts of kPartBytes of activations, at least one row. Refuses
// (std::runtime_error) a row this machine's memory cannot hold before it is allocated, naming
// `checkpoint`, what the row is (`row_is`: "one row of --block 1024 tokens") and the flag to lower (`advice`).
inline int64_t rows_at_once(const nn::ModelConfig& model, const std::string& checkpoint, int64_t B, int64_t T,
                            nn::Pass pass, const std::string& row_is, const std::string& advice) {
    const nn::MemoryEstimate need = nn::estimate_memory(model, T, pass);
    const uint64_t bytes = need.bytes(1), have = nn::physical_memory_bytes();
    if (have != 0 && bytes > have)
        throw std::runtime_error(
            fmt::format("{}: {} would need about {:.3g} GB of memory ({:.3g} GB of it the model's weights{}), "
                        "more than this machine's {:.3g} GB; {}",
                        checkpoint, row_is, double(bytes) / 1e9, need.fixed / 1e9,
                        pass == nn::Pass::gradient ? " and their gradients" : "", double(have) / 1e9, advice));
    return need.rows_within(kPartBytes, B);
}

// The flags of a program that measures a checkpoint on the first windows of a file (evaluate, ablate):
// --data FILE, --batch B, --block T and --batches N (`batches_default` says what N is without it).
struct WindowFlags {
    std::optional<std::string> data;
    int64_t batch = 4;
    std::optional<int64_t> block, batches;
};
inline void add_window_flags(cli::Parser& p, WindowFlags& w, const std::string& batches_default) {
    p.option("--data", "FILE", "text (encoded with the checkpoint's tokenizer) or a token file (.bin)",
             [&w](const cli::Value& v) { w.data = v.file(); });
    p.option("--batch", "B", "rows of a window                                  (default 4)",
             [&w](const cli::Value& v) { w.batch = v.integer(1, 1 << 16); });
    p.option("--block", "T", "tokens of a row, at most the model's block        (default its block)",
             [&w](const cli::Value& v) { w.block = v.integer(1, 1 << 20); });
    p.option("--batches", "N", "windows measured, from the start of the file      " + batches_default,
             [&w](const cli::Value& v) { w.batches = v.integer(1, int64_t{1} << 40); });
}

struct CheckpointData {
    nn::TokenIds ids;
    int64_t B = 0, T = 0, windows = 0;  // the windows to read, from the start
    int64_t rows = 0;                   // of B, run at once (rows_at_once)
};

// T defaults to the model's block, the windows to every whole one in the file. `pass`: what runs on them,
// checked against the memory before the file is read.
inline CheckpointData checkpoint_data(const nn::TrainedModel& trained, const std::string& checkpoint,
                                      const std::string& data, int64_t batch, std::optional<int64_t> block,
                                      std::optional<int64_t> windows, nn::Pass pass) {
    // the windows it trained on (a bigram reads one token at a time from windows of any length)
    const int64_t limit = std::max(trained.config.block, trained.model->block_size());
    const int64_t B = batch, T = block.value_or(limit);
    if (T > limit)
        throw std::runtime_error(
            fmt::format("--block {} is longer than the model's block of {} ({})", T, limit, checkpoint));
    const int64_t rows = rows_at_once(trained.config, checkpoint, B, T, pass,
                                      fmt::format("one row of --block {} tokens", T), "choose a shorter --block");
    nn::TokenIds ids = nn::read_token_ids(data, *trained.tokenizer);
    const int64_t whole = nn::consecutive_windows(ids, B, T);  // each needs B T + 1 tokens
    if (whole == 0)
        throw std::runtime_error(fmt::format("--data {} has {} tokens: one window of --batch {} x --block {} needs {}",
                                             data, ids.size(), B, T, B * T + 1));
    if (windows && *windows > whole)
        throw std::runtime_error(
            fmt::format("--data {} holds {} whole window{} of {} x {} tokens ({} tokens), fewer than --batches {}",
                        data, whole, whole == 1 ? "" : "s", B, T, ids.size(), *windows));
    return {std::move(ids), B, T, windows.value_or(whole), rows};
}

// The same from the flags: --data is required.
inline CheckpointData checkpoint_data(const nn::TrainedModel& trained, const std::string& checkpoint,
                                      const WindowFlags& w, nn::Pass pass) {
    if (!w.data) throw cli::UsageError("--data FILE is required: the text or token file to measure");
    return checkpoint_data(trained, checkpoint, *w.data, w.batch, w.block, w.batches, pass);
}
