// What every tokenizer does, so the trainer, the programs and checkpoints take any kind: the character
// tokenizer (nn/tokenizers/char_tokenizer.h), GPT-2's byte-level BPE (nn/tokenizers/bpe.h), and IdTokenizer below,
// for GPT-2 weights and token files that come without a tokenizer.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nn {

class TokenIds;  // nn/tokenizers/token_ids.h

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
    // What its ids are to its user, as a count names them (token_unit below).
    virtual std::string_view unit() const { return "tokens"; }
};

// No tokenizer, only a vocabulary size: GPT-2 weights without their BPE files, trained on a token file.
// A token's text is its decimal id after a space, so decode(a) + decode(b) == decode(a, b) as text
// printed token by token needs: decode({464, 3290}) is " 464 3290". encode reads ids separated by
// spaces (a prompt "464 3290"); anything else is std::invalid_argument naming `origin` (the weights or
// checkpoint it belongs to) and saying that text needs a tokenizer.
class IdTokenizer final : public Tokenizer {
public:
    IdTokenizer(int64_t vocab_size, std::string origin);

    int64_t vocab_size() const override { return vocab_size_; }
    std::vector<int64_t> encode(std::string_view text) const override;
    TokenIds encode_ids(std::string_view text) const override;
    std::string decode(std::span<const int64_t> ids) const override;
    // {"tokenizer.kind": "token-ids", "tokenizer.vocab_size": V}
    std::map<std::string, std::string> checkpoint_metadata() const override;
    static bool in_checkpoint_metadata(const std::map<std::string, std::string>& metadata);
    // std::invalid_argument when the size is missing or not a whole number from 1 to 2^31.
    static IdTokenizer from_checkpoint_metadata(const std::map<std::string, std::string>& metadata, std::string origin);

    const std::string& origin() const { return origin_; }

private:
    int64_t vocab_size_;
    std::string origin_;
};

// The IdTokenizer that `tokenizer` is, or null: the programs ask, to print ids and refuse text.
const IdTokenizer* as_ids_only(const Tokenizer& tokenizer);

// What the ids of `tokenizer` are to its user, as a count names them: "characters" for the character
// tokenizer, "tokens" for the rest (a BPE token is a piece of a word, an IdTokenizer's a number). Each kind
// says it (Tokenizer::unit), so this interface knows none of them.
std::string_view token_unit(const Tokenizer& tokenizer);

}  // namespace nn
