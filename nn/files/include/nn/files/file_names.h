// File names and kinds as messages show them, for every program and library that names a file in an error.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace nn {

// What a file that is not a regular file is, for messages such as "PATH is a named pipe (FIFO)".
const char* file_kind(mode_t mode);

// A file name as messages show it: as it is when it is printable, else in double quotes with C escapes
// ("a\nb", "\x01"), so that a name holding a newline or a terminal escape keeps an error on one line.
std::string printable_name(std::string_view name);
// `text` with each control character as a C escape (\n, \t, \r, \x01), and with `quotes` also `"` and `\`.
std::string escape_controls(std::string_view text, bool quotes = false);
// Part of a file's content (a line, a token) as a message quotes it: in double quotes, escaped as JSON
// escapes a string (\", \\, \n, \u001b; C1 controls too), a byte that is not UTF-8 as U+FFFD, and cut
// after `max_characters` characters with "..." and the whole length, so that a 20 MB line or a NUL
// byte leaves the message one short line.
std::string quoted_text(std::string_view text, size_t max_characters = 80);

namespace detail {

// A path as the library's messages show it: in quotes ('run.st'; one with a newline or another control
// character in printable_name's double quotes, escaped).
std::string path_str(const std::filesystem::path& path);

}  // namespace detail

}  // namespace nn
