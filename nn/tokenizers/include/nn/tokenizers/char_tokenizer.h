// The character tokenizer: one token per Unicode code point decoded from UTF-8, so "é" is one token, not
// two bytes, over the sorted distinct characters of a text. Every input is checked: invalid UTF-8 names
// its byte offset, characters outside the vocabulary are listed. GPT-2's BPE (nn/tokenizers/bpe.h) is its
// sibling behind nn/tokenizers/tokenizer.h.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nn/tokenizers/token_ids.h>
#include <nn/tokenizers/tokenizer.h>

namespace nn {

// What encode() does with a character that is not in the vocabulary.
enum class Unknown { error, skip };

class CharTokenizer final : public Tokenizer {
public:
    // The vocabulary is the sorted distinct code points of `corpus` (which must be non-empty UTF-8).
    static CharTokenizer from_text(std::string_view corpus);
    // `vocabulary` must be non-empty, sorted, without repeats, and hold only Unicode scalar values.
    explicit CharTokenizer(std::vector<char32_t> vocabulary);

    int64_t vocab_size() const override { return static_cast<int64_t>(vocab_.size()); }
    const std::vector<char32_t>& vocabulary() const { return vocab_; }

    // One id per character, in [0, vocab_size()). Unknown characters throw std::invalid_argument listing
    // them (Unknown::error) or are dropped (Unknown::skip).
    std::vector<int64_t> encode(std::string_view text, Unknown policy) const;
    std::vector<int64_t> encode(std::string_view text) const override { return encode(text, Unknown::error); }
    // The same ids, stored as narrow as the vocabulary allows (1 byte each for up to 256 characters).
    TokenIds encode_ids(std::string_view text, Unknown policy) const;
    TokenIds encode_ids(std::string_view text) const override;
    // UTF-8 text of `ids`; an id outside [0, vocab_size()) throws naming it and its position.
    std::string decode(std::span<const int64_t> ids) const override;
    // {"tokenizer.vocabulary": vocabulary_utf8()}, what character checkpoints have always kept.
    std::map<std::string, std::string> checkpoint_metadata() const override;
    std::string_view unit() const override { return "characters"; }

    // The vocabulary as one UTF-8 string (for checkpoint metadata), and back.
    std::string vocabulary_utf8() const;
    static CharTokenizer from_vocabulary_utf8(std::string_view vocabulary);

private:
    std::vector<char32_t> vocab_;  // sorted; id = position
};

// A text as token ids with the vocabulary of its own characters.
struct TokenizedText {
    CharTokenizer tokenizer;
    TokenIds ids;
};
TokenizedText tokenize(std::string_view text);

}  // namespace nn
