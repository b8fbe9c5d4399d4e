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

namespace {

// The length of the UTF-8 character at s[i], or 0 when the bytes there are not one (overlong forms,
// surrogates and code points past U+10FFFF included).
size_t utf8_length(std::string_view s, size_t i) {
    const auto lead = static_cast<unsigned char>(s[i]);
    const size_t length = lead < 0x80 ? 1 : lead < 0xC2 ? 0 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : lead < 0xF5 ? 4 : 0;
    if (length == 0 || i + length > s.size()) return 0;
    for (size_t k = 1; k < length; ++k)
        if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
    const auto second = static_cast<unsigned char>(length > 1 ? s[i + 1] : 0);
    if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second >= 0xA0) || (lead == 0xF0 && second < 0x90) ||
        (lead == 0xF4 && second >= 0x90))
        return 0;
    return length;
}

}  // namespace

std::string quoted_text(std::string_view text, size_t max_characters) {
    std::string out = "\"";
    size_t i = 0;
    for (size_t characters = 0; i < text.size() && characters < max_characters; ++characters) {
        const auto b = static_cast<unsigned char>(text[i]);
        const size_t length = utf8_length(text, i);
        if (length == 0) {
            out += "\uFFFD";
            ++i;
            continue;
        }
        const auto second = static_cast<unsigned char>(length == 2 ? text[i + 1] : 0);
        if (b == '"' || b == '\\') (out += '\\') += static_cast<char>(b);
        else if (b == '\n') out += "\\n";
        else if (b == '\t') out += "\\t";
        else if (b == '\r') out += "\\r";
        else if (b < 0x20 || b == 0x7F) out += fmt::format("\\u{:04x}", b);
        else if (b == 0xC2 && second < 0xA0) out += fmt::format("\\u{:04x}", second);  // U+0080..U+009F
        else out.append(text.substr(i, length));
        i += length;
    }
    out += '"';
    if (i < text.size()) out += fmt::format("... ({} bytes)", text.size());
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
