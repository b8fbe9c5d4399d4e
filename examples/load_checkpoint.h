// A checkpoint read with the programs' bar on a terminal (progress.h), for each program that reads one:
//   loading c124.safetensors [###########...................] 540/1485 MB  61.2 MB/s  ETA 0m15s
// (a training checkpoint of GPT-2 small's size holds 1.5 GB: weights and AdamW's two moments).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nn/files/file_names.h>
#include <nn/train/trainer.h>

#include "progress.h"

inline nn::TrainedModel load_checkpoint(const std::string& path, nn::LoadOptions options = {}) {
    progress::Bar bar(fmt::format("loading {}", nn::printable_name(std::filesystem::path(path).filename().string())),
                      "MB", 1e6);
    options.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
    return nn::load_trained_model(path, options);
}
