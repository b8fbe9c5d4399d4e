// Small helpers for the messages of the nn functions that read and write files (private to nn/train/src).
#pragma once

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nn/train/files.h>

namespace nn::detail {

using nn::file_kind;

// A path as messages show it: in quotes ('run.st'; one with a newline or another control character in
// printable_name's double quotes, escaped).
inline std::string path_str(const std::filesystem::path& path) {
    const std::string shown = printable_name(path.string());
    return shown == path.string() ? fmt::format("'{}'", shown) : shown;
}

}  // namespace nn::detail
