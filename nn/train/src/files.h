// Small helpers for the messages of the nn functions that read and write files (private to nn/src).
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

namespace nn::detail {

// A path as messages show it: in quotes.
inline std::string path_str(const std::filesystem::path& path) { return fmt::format("'{}'", path.string()); }

// What a file that is not a regular file is, for "PATH is a named pipe, not a text file".
inline const char* file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a regular file";
}

}  // namespace nn::detail
