// Text files read with checks: a missing, non-regular, empty, binary or non-UTF-8 file is an error naming
// the path (and the byte offset). A large training file is read with read_tokenized_text, which never
// holds the text itself: its token ids take 1 byte per character with up to 256 distinct characters (2
// with up to 65,536), so a 300 MB file takes about 300 MB.
#pragma once

#include <filesystem>
#include <string>

#include <nn/tokenizers/char_tokenizer.h>

namespace nn {

// The whole file as UTF-8 text. Throws std::runtime_error naming the path when it is missing, a
// directory or another non-regular file, unreadable, empty, binary (a NUL byte, with its offset) or
// not valid UTF-8 (with the offset).
std::string read_text_file(const std::filesystem::path& path);

// The file's text tokenized, without ever holding the text: one pass reads it in pieces with
// read_text_file's checks (and its messages) and collects the vocabulary, a second encodes it. The
// memory is the ids alone, bytes_per_id() per character. A file whose ids would not fit in this
// machine's physical memory is refused before it is read, and an allocation that fails says what it
// was for and how large (std::runtime_error naming the path in both cases).
TokenizedText read_tokenized_text(const std::filesystem::path& path);

}  // namespace nn
