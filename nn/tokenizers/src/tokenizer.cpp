#include "nn/tokenizers/tokenizer.h"

#include <charconv>
#include <stdexcept>

#include <fmt/format.h>

#include "nn/tokenizers/token_ids.h"

namespace nn {

namespace {

constexpr const char* kIdsKind = "token-ids";
constexpr int64_t kMaxVocab = int64_t{1} << 31;  // TokenIds' limit

}  // namespace

Tokenizer::~Tokenizer() = default;

IdTokenizer::IdTokenizer(int64_t vocab_size, std::string origin) : vocab_size_(vocab_size), origin_(std::move(origin)) {
    if (vocab_size < 1 || vocab_size > kMaxVocab)
        throw std::invalid_argument(
            fmt::format("a vocabulary of {} token ids is outside 1 to {}", vocab_size, kMaxVocab));
}

std::vector<int64_t> IdTokenizer::encode(std::string_view text) const {
    std::vector<int64_t> ids;
    const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    for (size_t i = 0; i < text.size();) {
        if (is_space(text[i])) {
            ++i;
            continue;
        }
        size_t end = i;
        while (end < text.size() && !is_space(text[end])) ++end;
        const std::string_view word = text.substr(i, end - i);
        int64_t id = -1;
        const auto [stop, error] = std::from_chars(word.data(), word.data() + word.size(), id);
        if (error != std::errc() || stop != word.data() + word.size() || id < 0 || id >= vocab_size_)
            throw std::invalid_argument(fmt::format(
                "{} has no tokenizer, only token ids: text for it is ids from 0 to {} separated by spaces, and '{}' is "
                "not one "
                "(GPT-2 weights read text with a tokenizer directory given, or vocab.json and merges.txt beside them)",
                origin_, vocab_size_ - 1, word.substr(0, 40)));
        ids.push_back(id);
        i = end;
    }
    return ids;
}

TokenIds IdTokenizer::encode_ids(std::string_view text) const {
    const std::vector<int64_t> ids = encode(text);
    return TokenIds(std::span<const int64_t>(ids));
}

std::string IdTokenizer::decode(std::span<const int64_t> ids) const {
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= vocab_size_)
            throw std::invalid_argument(fmt::format("{}: token id {} at position {} is outside the vocabulary [0, {})",
                                                    origin_, ids[i], i, vocab_size_));
        text += fmt::format(" {}", ids[i]);
    }
    return text;
}

std::map<std::string, std::string> IdTokenizer::checkpoint_metadata() const {
    return {{"tokenizer.kind", kIdsKind}, {"tokenizer.vocab_size", std::to_string(vocab_size_)}};
}

bool IdTokenizer::in_checkpoint_metadata(const std::map<std::string, std::string>& metadata) {
    const auto it = metadata.find("tokenizer.kind");
    return it != metadata.end() && it->second == kIdsKind;
}

IdTokenizer IdTokenizer::from_checkpoint_metadata(const std::map<std::string, std::string>& metadata,
                                                  std::string origin) {
    const auto it = metadata.find("tokenizer.vocab_size");
    int64_t size = 0;
    const bool whole =
        it != metadata.end() && std::from_chars(it->second.data(), it->second.data() + it->second.size(), size).ptr ==
                                    it->second.data() + it->second.size();
    if (!in_checkpoint_metadata(metadata) || !whole || it->second.empty())
        throw std::invalid_argument(fmt::format("tokenizer.kind is {} but tokenizer.vocab_size is {}", kIdsKind,
                                                it == metadata.end() ? "missing" : fmt::format("'{}'", it->second)));
    return IdTokenizer(size, std::move(origin));
}

const IdTokenizer* as_ids_only(const Tokenizer& tokenizer) { return dynamic_cast<const IdTokenizer*>(&tokenizer); }

std::string_view token_unit(const Tokenizer& tokenizer) { return tokenizer.unit(); }

}  // namespace nn
