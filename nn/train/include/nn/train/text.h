// Text for character-level language models: a tokenizer over Unicode code points, a checked text-file
// reader, and random (B, T) training batches with next-character targets.
//
//     const std::string text = nn::read_text_file("tinyshakespeare.txt");
//     const auto tok = nn::CharTokenizer::from_text(text);        // 65 distinct characters
//     const nn::TextData data(tok.encode(text));                    // first 90% train, last 10% validation
//     autograd::Generator gen(1337);
//     const nn::Batch batch = data.batch(nn::Split::train, 32, 8, gen);  // inputs, targets: (32, 8)
//
// Characters are code points decoded from UTF-8, so "é" is one token, not two bytes. Every input is
// checked: invalid UTF-8 names its byte offset, characters outside the vocabulary are listed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <autograd/random.h>

namespace nn {

// What encode() does with a character that is not in the vocabulary.
enum class Unknown { error, skip };

class CharTokenizer {
public:
    // The vocabulary is the sorted distinct code points of `corpus` (which must be non-empty UTF-8).
    static CharTokenizer from_text(std::string_view corpus);
    // `vocabulary` must be non-empty, sorted, without repeats, and hold only Unicode scalar values.
    explicit CharTokenizer(std::vector<char32_t> vocabulary);

    int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
    const std::vector<char32_t>& vocabulary() const { return vocab_; }

    // One id per character, in [0, vocab_size()). Unknown characters throw std::invalid_argument listing
    // them (Unknown::error) or are dropped (Unknown::skip).
    std::vector<int64_t> encode(std::string_view text, Unknown policy = Unknown::error) const;
    // UTF-8 text of `ids`; an id outside [0, vocab_size()) throws naming it and its position.
    std::string decode(std::span<const int64_t> ids) const;

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

enum class Split { train, validation };

// One batch, row-major (B, T): targets[b * T + t] is the token that follows inputs[b * T + t].
struct Batch {
    std::vector<int64_t> inputs, targets;  // each (B, T)
    int64_t B = 0, T = 0;
};

// A token stream split in two: the first `train_fraction` (floor) for training, the rest for
// validation, as in Karpathy's "Let's build GPT" lecture.
class TextData {
public:
    explicit TextData(std::vector<int64_t> tokens, double train_fraction = 0.9);

    int64_t size(Split split) const;  // tokens in the split
    // B windows of T tokens at start positions drawn uniformly with gen.randint (one draw per row, in
    // row order), each with its T next-token targets. Needs T + 1 tokens in the split.
    Batch batch(Split split, int64_t B, int64_t T, autograd::Generator& gen) const;

private:
    // one of the two holds the ids: 2 bytes each when they fit (a 1 MB text is 2 MB, not 8), else 4
    std::vector<uint16_t> narrow_tokens_;
    std::vector<int32_t> wide_tokens_;
    int64_t n_train_ = 0;
};

}  // namespace nn
