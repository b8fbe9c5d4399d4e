// What every tokenizer does, so the trainer, the programs and checkpoints take either kind: the character
// tokenizer (nn/train/char_tokenizer.h) and GPT-2's byte-level BPE (nn/train/bpe.h).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nn {

class TokenIds;  // nn/train/token_ids.h

class Tokenizer {
public:
    virtual ~Tokenizer();  // defined in tokenizer.cpp: the one unit that holds the vtable

    virtual int64_t vocab_size() const = 0;
    // Ids in [0, vocab_size()) of UTF-8 text; text that is not UTF-8 throws std::invalid_argument naming
    // the byte offset.
    virtual std::vector<int64_t> encode(std::string_view text) const = 0;
    // The same ids, stored as narrow as the vocabulary allows.
    virtual TokenIds encode_ids(std::string_view text) const = 0;
    // Text of `ids`; an id outside [0, vocab_size()) throws naming it and its position.
    virtual std::string decode(std::span<const int64_t> ids) const = 0;
    // What a checkpoint keeps to rebuild the tokenizer with no other file (keys begin "tokenizer.").
    virtual std::map<std::string, std::string> checkpoint_metadata() const = 0;
};

}  // namespace nn
