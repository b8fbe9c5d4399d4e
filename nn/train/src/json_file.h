// JSON read from files a user hands over (a model's config.json, a vocabulary), with the bounds a hostile
// file needs: its kind and size checked before it is read, its nesting bounded while it is parsed (a
// value nested 100,000 deep would otherwise exhaust the stack of whatever walks it), and its parse errors
// quoted short and escaped. Errors are std::runtime_error "PATH: what", one line.
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

// The file's JSON. Refuses (naming the path) a missing, unreadable or non-regular file (a named pipe is
// refused at once, never waited on), one over limits.max_bytes, text that is not JSON (the parser's
// message, escaped and cut to a line) and nesting deeper than limits.max_depth.
nlohmann::json read_json_file(const std::filesystem::path& path, JsonLimits limits);

// `text` parsed as read_json_file parses a file's; `source` starts the messages (a path as path_str
// shows it, or a description such as "the checkpoint's tokenizer").
nlohmann::json parse_json(std::string_view text, int max_depth, const std::string& source);

}  // namespace nn::detail
