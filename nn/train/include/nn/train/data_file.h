// A data file's token ids for any tokenizer, whatever the file holds: what a program evaluating a
// checkpoint on a data file reads.
#pragma once

#include <filesystem>
#include <stdexcept>

#include <nn/tokenizers/token_ids.h>
#include <nn/tokenizers/tokenizer.h>

namespace nn {

// A token file (.bin, nanoGPT's or llm.c's) mapped in place, each id checked below vocab_size(); a text
// file encoded (by a BPE tokenizer as it is read, never held whole). Throws std::runtime_error naming the
// path when it cannot be read or holds what the tokenizer cannot encode (a character outside a character
// vocabulary, listed), or when it is text and the tokenizer an IdTokenizer (text_without_tokenizer).
TokenIds read_token_ids(const std::filesystem::path& path, const Tokenizer& tokenizer);

// "FILE is text, but MODEL has no tokenizer (token ids only): give it a tokenizer directory ..., or a token file".
std::runtime_error text_without_tokenizer(const std::filesystem::path& data, const IdTokenizer& ids);

}  // namespace nn
