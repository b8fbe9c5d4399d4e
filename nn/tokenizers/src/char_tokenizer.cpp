#include "nn/tokenizers/char_tokenizer.h"
#include "char_encoding.h"
#include "utf8.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <autograd/check.h>
#include <fmt/format.h>

namespace nn {

using autograd::check;
using detail::append_utf8;
using detail::count_characters;
using detail::decode_utf8;
using detail::describe;
using detail::encode_into;
using detail::is_scalar_value;
using detail::UnknownCharacters;
using detail::VocabularyBuilder;

namespace detail {

// A character as an error message shows it: 'é' (U+00E9), '\n' (U+000A), '\x07' (U+0007). Control
// and invisible characters are escaped so the message stays on one line and shows something.
std::string describe(char32_t c) {
    const auto u = static_cast<uint32_t>(c);
    std::string shown;
    switch (c) {
        case U'\n':
            shown = "\\n";
            break;
        case U'\t':
            shown = "\\t";
            break;
        case U'\r':
            shown = "\\r";
            break;
        case U'\'':
            shown = "\\'";
            break;
        case U'\\':
            shown = "\\\\";
            break;
        default:
            if (u < 0x20 || u == 0x7F) shown = fmt::format("\\x{:02X}", u);
            else if ((u >= 0x80 && u < 0xA0) || u == 0xA0 || u == 0xAD || (u >= 0x200B && u <= 0x200F) ||
                     (u >= 0x2028 && u <= 0x202E) || (u >= 0x2060 && u <= 0x2064) || u == 0xFEFF)
                shown = fmt::format("\\u{:04X}", u);
            else append_utf8(shown, c);
    }
    return fmt::format("'{}' (U+{:04X})", shown, u);
}

std::string UnknownCharacters::message(size_t vocab_size) const {
    constexpr size_t kMaxListed = 20;  // unknown characters named in one error message
    std::string listed;
    for (size_t i = 0; i < found.size() && i < kMaxListed; ++i) listed += (i ? ", " : "") + describe(found[i]);
    if (found.size() > kMaxListed) listed += fmt::format(", and {} more", found.size() - kMaxListed);
    return fmt::format("encode: {} character{} not in the vocabulary of {}: {}", found.size(),
                       found.size() == 1 ? " is" : "s are", vocab_size, listed);
}

}  // namespace detail

CharTokenizer::CharTokenizer(std::vector<char32_t> vocabulary) : vocab_(std::move(vocabulary)) {
    check(!vocab_.empty(), "CharTokenizer: the vocabulary is empty");
    for (size_t i = 0; i < vocab_.size(); ++i) {
        check(is_scalar_value(vocab_[i]), "CharTokenizer: vocabulary entry {} is U+{:04X}, not a Unicode character", i,
              static_cast<uint32_t>(vocab_[i]));
        if (i > 0 && !(vocab_[i - 1] < vocab_[i]))  // (check() would evaluate vocab_[i - 1] at i = 0)
            throw std::invalid_argument(
                fmt::format("CharTokenizer: the vocabulary must be sorted without repeats, but entry {} {} follows {}",
                            i, describe(vocab_[i]), describe(vocab_[i - 1])));
    }
}

CharTokenizer CharTokenizer::from_text(std::string_view corpus) {
    check(!corpus.empty(), "CharTokenizer::from_text: the corpus is empty");
    VocabularyBuilder vocabulary;
    decode_utf8(corpus, "CharTokenizer::from_text", [&](char32_t c) { vocabulary.add(c); });
    return CharTokenizer(vocabulary.sorted());
}

std::vector<int64_t> CharTokenizer::encode(std::string_view text, Unknown policy) const {
    std::vector<int64_t> ids;
    ids.reserve(count_characters(text));
    UnknownCharacters unknown;
    encode_into(vocab_, text, policy == Unknown::skip, ids, unknown);
    if (!unknown.found.empty()) throw std::invalid_argument(unknown.message(vocab_.size()));
    return ids;
}

TokenIds CharTokenizer::encode_ids(std::string_view text, Unknown policy) const {
    TokenIds ids(vocab_size());
    UnknownCharacters unknown;
    ids.visit([&](auto& v) {
        v.reserve(count_characters(text));
        encode_into(vocab_, text, policy == Unknown::skip, v, unknown);
    });
    if (!unknown.found.empty()) throw std::invalid_argument(unknown.message(vocab_.size()));
    return ids;
}

TokenIds CharTokenizer::encode_ids(std::string_view text) const { return encode_ids(text, Unknown::error); }

std::map<std::string, std::string> CharTokenizer::checkpoint_metadata() const {
    return {{"tokenizer.vocabulary", vocabulary_utf8()}};
}

std::string CharTokenizer::decode(std::span<const int64_t> ids) const {
    std::string out;
    out.reserve(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
        check(ids[i] >= 0 && ids[i] < vocab_size(), "decode: id {} at position {} is outside the vocabulary [0, {})",
              ids[i], i, vocab_size());
        append_utf8(out, vocab_[static_cast<size_t>(ids[i])]);
    }
    return out;
}

std::string CharTokenizer::vocabulary_utf8() const {
    std::string out;
    for (char32_t c : vocab_) append_utf8(out, c);
    return out;
}

CharTokenizer CharTokenizer::from_vocabulary_utf8(std::string_view vocabulary) {
    std::vector<char32_t> chars;
    decode_utf8(vocabulary, "CharTokenizer::from_vocabulary_utf8", [&](char32_t c) { chars.push_back(c); });
    return CharTokenizer(std::move(chars));
}

TokenizedText tokenize(std::string_view text) {
    CharTokenizer tokenizer = CharTokenizer::from_text(text);
    TokenIds ids = tokenizer.encode_ids(text);
    return {std::move(tokenizer), std::move(ids)};
}

}  // namespace nn
