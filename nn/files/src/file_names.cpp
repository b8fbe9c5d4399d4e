#include "nn/files/file_names.h"

#include <sys/stat.h>

#include <fmt/format.h>

namespace nn {

const char* file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

std::string escape_controls(std::string_view text, bool quotes) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (quotes && (c == '"' || c == '\\')) (out += '\\') += c;
        else if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
        else out += c;  // bytes of UTF-8 characters stay as they are
    }
    return out;
}

std::string printable_name(std::string_view name) {
    const std::string escaped = escape_controls(name, true);
    return escaped == name ? escaped : '"' + escaped + '"';
}

namespace detail {

std::string path_str(const std::filesystem::path& path) {
    const std::string shown = printable_name(path.string());
    return shown == path.string() ? fmt::format("'{}'", shown) : shown;
}

}  // namespace detail

}  // namespace nn
