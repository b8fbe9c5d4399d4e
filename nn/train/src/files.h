// Small helpers for the messages of the nn functions that read and write files (private to nn/train/src).
#pragma once

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nn/train/files.h>

namespace nn::detail {

using nn::file_kind;

// A path as messages show it: in quotes.
inline std::string path_str(const std::filesystem::path& path) { return fmt::format("'{}'", path.string()); }

}  // namespace nn::detail
