// llama2.c's tokenizer.bin: reading it, run.c's encode (a heap of candidate merges, and run.c's own loop
// as the reference) and decode.
#include "nn/tokenizers/llama2c_tokenizer.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include <autograd/check.h>
#include <fmt/format.h>
#include <nn/files/file_names.h>
#include <nn/files/json_file.h>

#include "utf8.h"

namespace nn {

using autograd::check;

namespace {

constexpr const char* kKind = "llama2c";
constexpr const char* kFileKey = "tokenizer.llama2c.file";
// A tokenizer.bin over this is refused before it is read: llama2.c's is 434 kB, a 128k vocabulary's about
// 2 MB; a checkpoint keeps it, base64, in its header, which loading reads up to 100 MiB.
constexpr uint64_t kMaxFileBytes = uint64_t{32} << 20;
constexpr float kNoMerge = -1e10f;      // run.c's starting best score: a pair must score above it to merge
constexpr int64_t kFirstByteToken = 3;  // <0x00>; <unk>, BOS and EOS come first

int32_t le_i32(const unsigned char* b) {
    return static_cast<int32_t>(uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24);
}

// The byte a token "<0xNN>" stands for, or -1.
int byte_token_value(std::string_view bytes) {
    if (bytes.size() != 6 || !bytes.starts_with("<0x") || bytes[5] != '>') return -1;
    int value = 0;
    for (const char c : bytes.substr(3, 2)) {
        const int digit = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                 : -1;
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

constexpr std::string_view kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string to_base64(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t n = std::min<size_t>(3, bytes.size() - i);
        uint32_t v = 0;
        for (size_t k = 0; k < 3; ++k) v = v << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
        for (size_t k = 0; k < 4; ++k) out += k <= n ? kBase64[(v >> (18 - 6 * k)) & 63] : '=';
    }
    return out;
}

std::string from_base64(std::string_view text) {
    check(text.size() % 4 == 0, "llama2.c tokenizer: {} is not base64 ({} characters, not a multiple of 4)", kFileKey,
          text.size());
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (size_t i = 0; i < text.size(); i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (size_t k = 0; k < 4; ++k) {
            const char c = text[i + k];
            const size_t d = kBase64.find(c);
            const bool padding = c == '=' && i + 4 == text.size() && k >= 2 && (k == 3 || text[i + 3] == '=');
            check(d != std::string_view::npos || padding, "llama2.c tokenizer: {} is not base64 (character {} is {})",
                  kFileKey, i + k, quoted_text(std::string_view(&text[i + k], 1)));
            pad += padding;
            v = v << 6 | (padding ? 0u : static_cast<uint32_t>(d));
        }
        for (int k = 0; k < 3 - pad; ++k) out += static_cast<char>((v >> (16 - 8 * k)) & 0xFF);
    }
    return out;
}

}  // namespace

struct Llama2cTokenizer::Tables {
    std::string file;              // as read
    std::string blob;              // every token's bytes, one after another
    std::vector<uint32_t> offset;  // token i is blob[offset[i], offset[i + 1])
    std::vector<float> scores;
    int64_t max_length = 0;
    std::unordered_map<std::string_view, int32_t> id_of;  // bytes -> the lowest id spelled so (views into blob)
    bool byte_tokens = false;  // ids 3..258 are <0x00>..<0xFF>: the fallback for a character with no token
    int64_t space = -1;        // the dummy prefix " "

    std::string_view bytes(int64_t id) const {
        const auto i = static_cast<size_t>(id);
        return std::string_view(blob).substr(offset[i], offset[i + 1] - offset[i]);
    }
    int64_t size() const { return static_cast<int64_t>(scores.size()); }
};

Llama2cTokenizer::Llama2cTokenizer(std::string_view file, std::optional<int64_t> vocab_size, std::string_view source) {
    check(!vocab_size || (*vocab_size >= 1 && *vocab_size < (int64_t{1} << 31)),
          "{}: asked for {} tokens: the vocabulary size must be in [1, 2^31)", source, vocab_size.value_or(0));
    auto t = std::make_shared<Tables>();
    t->file = file;
    const auto* bytes = reinterpret_cast<const unsigned char*>(file.data());
    check(file.size() >= 4, "{}: the file is {} bytes, too short for its max_token_length (int32)", source,
          file.size());
    t->max_length = le_i32(bytes);
    check(t->max_length >= 0, "{}: max_token_length is {}, negative", source, t->max_length);
    const std::string wanted =
        vocab_size ? fmt::format("the {} asked (the model's vocab_size)", *vocab_size) : std::string();
    size_t at = 4;
    while (vocab_size ? t->size() < *vocab_size : at < file.size()) {
        const int64_t i = t->size();
        if (at == file.size())
            throw std::invalid_argument(fmt::format("{}: the file holds {} tokens, fewer than {}", source, i, wanted));
        check(file.size() - at >= 8,
              "{}: the file is truncated in token {}: {} bytes left where its score and length take 8", source, i,
              file.size() - at);
        const float score = std::bit_cast<float>(static_cast<uint32_t>(le_i32(bytes + at)));
        const int32_t length = le_i32(bytes + at + 4);
        check(!std::isnan(score), "{}: token {} has a NaN score", source, i);
        check(length >= 0, "{}: token {} has length {}, negative", source, i, length);
        check(length <= t->max_length, "{}: token {} has length {}, over max_token_length {}", source, i, length,
              t->max_length);
        at += 8;
        check(file.size() - at >= static_cast<size_t>(length),
              "{}: the file is truncated in token {}: its {} bytes run past the end", source, i, length);
        check(t->blob.size() + static_cast<size_t>(length) < (uint64_t{1} << 32), "{}: the tokens hold over 4 GiB",
              source);
        t->offset.push_back(static_cast<uint32_t>(t->blob.size()));
        t->blob.append(file.substr(at, static_cast<size_t>(length)));
        t->scores.push_back(score);
        at += static_cast<size_t>(length);
    }
    check(at == file.size(), "{}: {} bytes follow token {}, the last of {}", source, file.size() - at, t->size() - 1,
          wanted);
    check(t->size() >= 1, "{}: the file holds no token", source);
    t->offset.push_back(static_cast<uint32_t>(t->blob.size()));

    for (int64_t i = t->size() - 1; i >= 0; --i) t->id_of[t->bytes(i)] = static_cast<int32_t>(i);  // the lowest id wins
    t->byte_tokens = t->size() >= kFirstByteToken + 256;
    for (int b = 0; b < 256 && t->byte_tokens; ++b)
        t->byte_tokens = byte_token_value(t->bytes(kFirstByteToken + b)) == b;
    if (const auto it = t->id_of.find(" "); it != t->id_of.end()) t->space = it->second;
    tables_ = std::move(t);
}

Llama2cTokenizer Llama2cTokenizer::from_file(const std::filesystem::path& path, std::optional<int64_t> vocab_size) {
    return Llama2cTokenizer(
        detail::read_regular_file(path, kMaxFileBytes, "llama2.c tokenizer", "a llama2.c tokenizer file"), vocab_size,
        detail::path_str(path));
}

bool Llama2cTokenizer::in_checkpoint_metadata(const std::map<std::string, std::string>& metadata) {
    const auto it = metadata.find("tokenizer.kind");
    return it != metadata.end() && it->second == kKind;
}

Llama2cTokenizer Llama2cTokenizer::from_checkpoint_metadata(const std::map<std::string, std::string>& metadata) {
    check(in_checkpoint_metadata(metadata), "llama2.c tokenizer: the metadata holds no tokenizer.kind = {}", kKind);
    const auto it = metadata.find(kFileKey);
    check(it != metadata.end(), "llama2.c tokenizer: the metadata lacks {}", kFileKey);
    return Llama2cTokenizer(from_base64(it->second), std::nullopt, "the checkpoint's llama2.c tokenizer");
}

std::map<std::string, std::string> Llama2cTokenizer::checkpoint_metadata() const {
    return {{"tokenizer.kind", kKind}, {kFileKey, to_base64(tables_->file)}};
}

int64_t Llama2cTokenizer::vocab_size() const { return tables_->size(); }
int64_t Llama2cTokenizer::max_token_length() const { return tables_->max_length; }
std::string_view Llama2cTokenizer::file() const { return tables_->file; }

std::string_view Llama2cTokenizer::token_bytes(int64_t id) const {
    check(id >= 0 && id < vocab_size(), "llama2.c tokenizer: token id {} is outside the vocabulary [0, {})", id,
          vocab_size());
    return tables_->bytes(id);
}

float Llama2cTokenizer::score(int64_t id) const {
    check(id >= 0 && id < vocab_size(), "llama2.c tokenizer: token id {} is outside the vocabulary [0, {})", id,
          vocab_size());
    return tables_->scores[static_cast<size_t>(id)];
}

int64_t Llama2cTokenizer::token_id(std::string_view bytes) const {
    const auto it = tables_->id_of.find(bytes);
    return it == tables_->id_of.end() ? -1 : it->second;
}

// The ids before any merge: the dummy prefix, then each character's token or its bytes' byte tokens.
std::vector<int64_t> Llama2cTokenizer::initial_ids(std::string_view text) const {
    const Tables& t = *tables_;
    std::vector<int64_t> ids;
    if (text.empty()) return ids;  // run.c: no dummy prefix for an empty text
    ids.reserve(text.size() + 1);
    const auto add = [&](std::string_view character, size_t offset) {
        if (const auto it = t.id_of.find(character); it != t.id_of.end()) {
            ids.push_back(it->second);
            return;
        }
        check(t.byte_tokens,
              "llama2.c tokenizer: the character {} at byte offset {} is no token, and ids 3 to 258 are not "
              "the byte tokens <0x00> to <0xFF> to spell it with",
              quoted_text(character), offset);
        for (const char b : character) ids.push_back(kFirstByteToken + static_cast<unsigned char>(b));
    };
    add(" ", 0);  // the dummy prefix (SentencePiece's add_dummy_prefix)
    size_t at = 0;
    detail::decode_utf8(text, "llama2.c tokenizer", [&](char32_t c) {
        const size_t length = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        add(text.substr(at, length), at);
        at += length;
    });
    return ids;
}

std::vector<int64_t> Llama2cTokenizer::encode(std::string_view text) const { return encode_counted(text, nullptr); }

std::vector<int64_t> Llama2cTokenizer::encode_counted(std::string_view text, uint64_t* lookups) const {
    const Tables& t = *tables_;
    std::vector<int64_t> ids = initial_ids(text);
    const auto n = static_cast<int64_t>(ids.size());
    // The tokens as a doubly linked list over their first positions (which keep the text's order), and a
    // heap of candidate merges: the best score first, the leftmost of equal scores, as run.c's scan picks.
    // A candidate is stale once its left token was merged into or its right neighbour changed.
    std::vector<int64_t> prev(static_cast<size_t>(n)), next(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) prev[static_cast<size_t>(i)] = i - 1, next[static_cast<size_t>(i)] = i + 1;
    struct Candidate {
        float score;
        int64_t left, right;  // positions
        int64_t left_id, right_id, merged;
    };
    const auto later = [](const Candidate& a, const Candidate& b) {
        return a.score != b.score ? a.score < b.score : a.left > b.left;
    };
    std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> heap(later);
    std::string pair;
    const auto consider = [&](int64_t left, int64_t right) {
        if (left < 0 || right >= n) return;
        const std::string_view a = t.bytes(ids[static_cast<size_t>(left)]),
                               b = t.bytes(ids[static_cast<size_t>(right)]);
        if (static_cast<int64_t>(a.size() + b.size()) > t.max_length) return;  // no token is that long
        pair.assign(a).append(b);
        if (lookups) ++*lookups;
        const auto it = t.id_of.find(pair);
        if (it == t.id_of.end() || !(t.scores[static_cast<size_t>(it->second)] > kNoMerge)) return;
        heap.push({t.scores[static_cast<size_t>(it->second)], left, right, ids[static_cast<size_t>(left)],
                   ids[static_cast<size_t>(right)], it->second});
    };
    for (int64_t i = 0; i + 1 < n; ++i) consider(i, i + 1);
    std::vector<bool> gone(static_cast<size_t>(n), false);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        const auto l = static_cast<size_t>(c.left), r = static_cast<size_t>(c.right);
        if (gone[l] || gone[r] || next[l] != c.right || ids[l] != c.left_id || ids[r] != c.right_id) continue;  // stale
        ids[l] = c.merged;
        gone[r] = true;
        next[l] = next[r];
        if (next[r] < n) prev[static_cast<size_t>(next[r])] = c.left;
        consider(prev[l], c.left);
        consider(c.left, next[l]);
    }
    std::vector<int64_t> out;
    for (int64_t i = 0; i < n; i = next[static_cast<size_t>(i)]) out.push_back(ids[static_cast<size_t>(i)]);
    return out;
}

std::vector<int64_t> Llama2cTokenizer::encode_reference(std::string_view text, uint64_t* lookups) const {
    const Tables& t = *tables_;
    std::vector<int64_t> ids = initial_ids(text);
    std::string pair;
    while (true) {  // run.c: scan every adjacent pair for the best score, merge it, shift the rest left
        float best_score = kNoMerge;
        int64_t best_id = -1;
        size_t best_at = 0;
        for (size_t i = 0; i + 1 < ids.size(); ++i) {
            pair.assign(t.bytes(ids[i])).append(t.bytes(ids[i + 1]));
            if (lookups) ++*lookups;
            const auto it = t.id_of.find(pair);
            if (it != t.id_of.end() && t.scores[static_cast<size_t>(it->second)] > best_score) {
                best_score = t.scores[static_cast<size_t>(it->second)];
                best_id = it->second;
                best_at = i;
            }
        }
        if (best_id < 0) return ids;
        ids[best_at] = best_id;
        ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(best_at) + 1);
    }
}

TokenIds Llama2cTokenizer::encode_ids(std::string_view text) const {
    const std::vector<int64_t> ids = encode(text);
    return TokenIds(std::span<const int64_t>(ids));
}

std::string Llama2cTokenizer::piece(int64_t previous, int64_t id) const {
    check(id >= 0 && id < vocab_size(), "llama2.c tokenizer: token id {} is outside the vocabulary [0, {})", id,
          vocab_size());
    if (id == kBos) return {};  // run.c never prints it: sampling it ends the sample
    std::string_view bytes = tables_->bytes(id);
    if (previous == kBos && bytes.starts_with(' ')) bytes.remove_prefix(1);  // SentencePiece drops it after BOS
    if (const int b = byte_token_value(bytes); b >= 0) return std::string(1, static_cast<char>(b));
    return std::string(bytes);
}

std::string Llama2cTokenizer::decode(std::span<const int64_t> ids) const {
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) {
        check(ids[i] >= 0 && ids[i] < vocab_size(),
              "llama2.c tokenizer: token id {} at position {} is outside the vocabulary [0, {})", ids[i], i,
              vocab_size());
        text += piece(i ? ids[i - 1] : -1, ids[i]);
    }
    return text;
}

}  // namespace nn
