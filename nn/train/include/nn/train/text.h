// Text for character-level language models: a tokenizer over Unicode code points, a checked text-file
// reader, and random (B, T) training batches with next-character targets.
//
//     const std::string text = nn::read_text_file("tinyshakespeare.txt");
//     const auto tok = nn::CharTokenizer::from_text(text);        // 65 distinct characters
//     const nn::TextData data(tok.encode_ids(text));                // first 90% train, last 10% validation
//     autograd::Generator gen(1337);
//     const nn::Batch batch = data.batch(nn::Split::train, 32, 8, gen);  // inputs, targets: (32, 8)
//
// Characters are code points decoded from UTF-8, so "é" is one token, not two bytes. Every input is
// checked: invalid UTF-8 names its byte offset, characters outside the vocabulary are listed.
//
// A large training file is read with nn::read_tokenized_text, which never holds the text itself: its
// token ids take 1 byte per character with up to 256 distinct characters (2 with up to 65,536), so a
// 300 MB file takes about 300 MB.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <autograd/random.h>
#include <nn/train/tokenizer.h>

namespace nn {

// What encode() does with a character that is not in the vocabulary.
enum class Unknown { error, skip };

// uint16 ids read in place from a memory-mapped token file (nn/train/token_file.h): the pages stay the
// file's, so a file larger than memory can be trained on. Read-only; copies share the mapping.
struct MappedU16 {
    std::shared_ptr<const void> mapping;  // keeps the file mapped
    const uint16_t* ids = nullptr;
    size_t count = 0;

    size_t size() const { return count; }
    const uint16_t* data() const { return ids; }
    const uint16_t* begin() const { return ids; }
    const uint16_t* end() const { return ids + count; }
    uint16_t operator[](size_t i) const { return ids[i]; }
};

// A sequence of token ids stored as narrow as their vocabulary allows: 1 byte an id for up to 256
// symbols, 2 for up to 65,536, else 4, or in place in a mapped token file. Reads give the ids as
// int64_t, as the models take them.
class TokenIds {
public:
    using Storage = std::variant<std::vector<uint8_t>, std::vector<uint16_t>, std::vector<int32_t>, MappedU16>;

    // No ids yet, room for any id in [0, vocab_size) (vocab_size in [1, 2^31]).
    explicit TokenIds(int64_t vocab_size = 256);
    // `ids` as narrow as the largest one allows; each must be in [0, 2^31), else std::invalid_argument
    // naming the id and its position.
    explicit TokenIds(std::span<const int64_t> ids);
    // Ids read in place from a mapped file.
    explicit TokenIds(MappedU16 mapped);

    int64_t size() const;
    bool empty() const { return size() == 0; }
    int64_t bytes_per_id() const;
    uint64_t bytes() const { return static_cast<uint64_t>(size()) * static_cast<uint64_t>(bytes_per_id()); }
    // Whether the ids are a mapped file's (not held in this process's memory).
    bool mapped() const { return std::holds_alternative<MappedU16>(ids_); }
    int64_t operator[](int64_t i) const;  // unchecked, as std::vector's
    // ids [first, first + count) into out[0, count), widened; the range must be inside.
    void copy_to(int64_t first, int64_t count, int64_t* out) const;
    std::vector<int64_t> to_vector() const;
    // FNV-1a over the ids, each as a 64-bit value however narrowly it is stored (a checkpoint keeps it:
    // resuming on other data is an error, not a silent new run; files from before narrow ids still resume).
    uint64_t fingerprint() const;

    // f(the std::vector holding the ids, or the MappedU16); for loops that would pay a branch per id
    // otherwise. The non-const form is for filling fresh ids, which are never mapped.
    template <typename F>
    decltype(auto) visit(F&& f) const { return std::visit(std::forward<F>(f), ids_); }
    template <typename F>
    void visit(F&& f) {
        std::visit([&](auto& v) {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, MappedU16>) throw std::logic_error("TokenIds: mapped ids are read-only");
            else f(v);
        }, ids_);
    }

private:
    Storage ids_;
};

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

    // The vocabulary as one UTF-8 string (for checkpoint metadata), and back.
    std::string vocabulary_utf8() const;
    static CharTokenizer from_vocabulary_utf8(std::string_view vocabulary);

private:
    std::vector<char32_t> vocab_;  // sorted; id = position
};

// The whole file as UTF-8 text. Throws std::runtime_error naming the path when it is missing, a
// directory or another non-regular file, unreadable, empty, binary (a NUL byte, with its offset) or
// not valid UTF-8 (with the offset).
std::string read_text_file(const std::filesystem::path& path);

// A text as token ids with the vocabulary of its own characters.
struct TokenizedText {
    CharTokenizer tokenizer;
    TokenIds ids;
};
TokenizedText tokenize(std::string_view text);
// The file's text tokenized, without ever holding the text: one pass reads it in pieces with
// read_text_file's checks (and its messages) and collects the vocabulary, a second encodes it. The
// memory is the ids alone, bytes_per_id() per character. A file whose ids would not fit in this
// machine's physical memory is refused before it is read, and an allocation that fails says what it
// was for and how large (std::runtime_error naming the path in both cases).
TokenizedText read_tokenized_text(const std::filesystem::path& path);

enum class Split { train, validation };

// One batch, row-major (B, T): targets[b * T + t] is the token that follows inputs[b * T + t].
struct Batch {
    std::vector<int64_t> inputs, targets;  // each (B, T)
    int64_t B = 0, T = 0;
};

// A token stream split in two: the first `train_fraction` (floor) for training, the rest for
// validation, as in Karpathy's "Let's build GPT" lecture. The ids are kept as given (one copy, no
// separate split copies).
class TextData {
public:
    explicit TextData(TokenIds tokens, double train_fraction = 0.9);
    // Separate streams, as nanoGPT's train.bin and val.bin.
    TextData(TokenIds train, TokenIds validation);
    explicit TextData(const std::vector<int64_t>& tokens, double train_fraction = 0.9);

    int64_t size(Split split) const;  // tokens in the split
    // The whole stream, training split first; with a separate validation stream, the training stream.
    const TokenIds& tokens() const { return tokens_; }
    const TokenIds* separate_validation() const { return validation_ ? &*validation_ : nullptr; }
    // The split's ids [first, first + count) into out, widened; the range must be inside the split.
    void copy(Split split, int64_t first, int64_t count, int64_t* out) const;
    // B windows of T tokens at start positions drawn uniformly with gen.randint (one draw per row, in
    // row order), each with its T next-token targets. Needs T + 1 tokens in the split.
    Batch batch(Split split, int64_t B, int64_t T, autograd::Generator& gen) const;

private:
    TokenIds tokens_;
    std::optional<TokenIds> validation_;
    int64_t n_train_ = 0;
};

}  // namespace nn
