// JSON read from files a user hands over (a model's config.json, a vocabulary), with the bounds a hostile
// file needs: its kind and size checked before it is read, its nesting bounded while it is parsed (a
// value nested 100,000 deep would otherwise exhaust the stack of whatever walks it), and its parse errors
// quoted short and escaped. Errors are std::runtime_error naming the file, one line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nn::detail {

struct JsonLimits {
    uint64_t max_bytes;  // the file's size, checked before it is read
    int max_depth;       // arrays and objects inside each other: GPT-2's config.json is 3 deep, encoder.json 1
};

// The whole of a regular file of at most `max_bytes`, checked before it is read: a missing or unreadable
// file, a named pipe (refused at once, never waited on) or another non-regular one, or a larger one is
// std::runtime_error "WHO: PATH ..." ("PATH ..." when `who` is empty), `kind` saying what it should be
// ("is a named pipe (FIFO), not a BPE file", "over the limit ... for a BPE file").
std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, std::string_view who,
                              std::string_view kind);

// nlohmann's message without its tag ("[json.exception.parse_error.101] "), and with the text it last
// read (a whole string, however long, raw bytes) quoted short and escaped.
std::string json_error_text(const nlohmann::json::exception& e);

// The file's JSON. Refuses (naming the path) a missing, unreadable or non-regular file (a named pipe is
// refused at once, never waited on), one over limits.max_bytes, text that is not JSON (the parser's
// message, escaped and cut to a line) and nesting deeper than limits.max_depth.
nlohmann::json read_json_file(const std::filesystem::path& path, JsonLimits limits);

// `text` parsed as read_json_file parses a file's; `source` starts the messages, "SOURCE is not valid
// JSON: ...", "SOURCE nests ..." (a path as path_str shows it, or "NAME: the vocabulary").
nlohmann::json parse_json(std::string_view text, int max_depth, const std::string& source);

}  // namespace nn::detail
