// What the character tokenizer shares with the streaming text-file reader (private to nn/tokenizers/src):
// collecting a vocabulary, encoding characters into ids of any width, listing unknown characters.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "utf8.h"

namespace nn::detail {

// A character as an error message shows it: 'é' (U+00E9), '\n' (U+000A), '\x07' (U+0007).
std::string describe(char32_t c);

// The distinct characters of a text, collected piece by piece without sorting it: a table for ASCII, a
// set for the rest. Also counts the characters.
class VocabularyBuilder {
public:
    void add(char32_t c) {
        ++characters_;
        if (c < 128) ascii_[c] = true;
        else others_.insert(c);
    }
    uint64_t characters() const { return characters_; }
    std::vector<char32_t> sorted() const {
        std::vector<char32_t> vocabulary;
        for (char32_t c = 0; c < 128; ++c)
            if (ascii_[c]) vocabulary.push_back(c);
        const size_t n_ascii = vocabulary.size();
        vocabulary.insert(vocabulary.end(), others_.begin(), others_.end());
        std::sort(vocabulary.begin() + static_cast<std::ptrdiff_t>(n_ascii), vocabulary.end());
        return vocabulary;
    }

private:
    std::array<bool, 128> ascii_{};
    std::unordered_set<char32_t> others_;
    uint64_t characters_ = 0;
};

// Characters met that are not in the vocabulary: distinct, in order of first appearance.
struct UnknownCharacters {
    std::vector<char32_t> found;
    std::unordered_set<char32_t> seen;

    void add(char32_t c) {
        if (seen.insert(c).second) found.push_back(c);
    }
    // "encode: 2 characters are not in the vocabulary of 5: 'x' (U+0078), ..."
    std::string message(size_t vocab_size) const;
};

// Appends the id of each character of `text` to `ids` (a vector of an integer type wide enough for the
// vocabulary); characters outside it go to `unknown`, or are dropped when `skip_unknown` (Unknown::skip).
template <typename Ids>
void encode_into(const std::vector<char32_t>& vocab, std::string_view text, bool skip_unknown, Ids& ids,
                 UnknownCharacters& unknown, uint64_t base = 0) {
    std::array<int32_t, 128> ascii_id;  // ASCII without a binary search: most text is mostly ASCII
    ascii_id.fill(-1);
    for (size_t i = 0; i < vocab.size() && vocab[i] < 128; ++i) ascii_id[vocab[i]] = static_cast<int32_t>(i);
    decode_utf8(
        text, "encode",
        [&](char32_t c) {
            int64_t id = -1;
            if (c < 128) {
                id = ascii_id[c];
            } else if (const auto it = std::lower_bound(vocab.begin(), vocab.end(), c); it != vocab.end() && *it == c) {
                id = it - vocab.begin();
            }
            if (id >= 0) ids.push_back(static_cast<typename Ids::value_type>(id));
            else if (!skip_unknown) unknown.add(c);
        },
        base);
}

}  // namespace nn::detail
