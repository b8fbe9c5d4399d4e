// GPT-2's byte-level BPE tokenizer, exact to OpenAI's encoder (and tiktoken's "gpt2", and the npm package
// gpt-3-encoder): 50,257 tokens, <|endoftext|> = 50256.
//
//     const auto bpe = nn::BpeTokenizer::from_directory("gpt2");     // encoder.json + vocab.bpe, or
//                                                                   // vocab.json + merges.txt
//     std::vector<int64_t> ids = bpe.encode("Hello world");        // {15496, 995}
//     std::string text = bpe.decode(ids);                          // "Hello world"
//
// Text is split into pre-tokens by GPT-2's pattern
//     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// run by PCRE2 (UTF, UCP, JIT), so letters and numbers are Unicode's classes, not tables of ours.
// Whitespace (\s) is Unicode's White_Space property, as in OpenAI's Python encoder and tiktoken: U+FEFF
// is not whitespace (JavaScript's \s, and so gpt-3-encoder, count it), U+0085 is (JavaScript does not).
// Each pre-token's UTF-8 bytes start as one token each and are merged in the merges' rank order.
//
// encode() is tiktoken's encode_ordinary: "<|endoftext|>" in the text is ordinary text. A token stream
// may hold 50256 between documents, and decode() writes it as "<|endoftext|>".
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nn/tokenizers/token_ids.h>
#include <nn/tokenizers/tokenizer.h>

namespace nn {

class BpeTokenizer final : public Tokenizer {
public:
    // `vocabulary` is the text of encoder.json / vocab.json (a JSON object: token -> id, the token's bytes
    // written with GPT-2's byte-to-character map); `merges` the text of vocab.bpe / merges.txt (a
    // "#version" line, then one "left right" pair a line, highest priority first). Throws
    // std::invalid_argument naming `source` and what is wrong (bad JSON, ids not 0..n-1, a merge whose
    // parts or result are not tokens, ...).
    BpeTokenizer(std::string_view vocabulary, std::string_view merges, std::string_view source = "BPE files");
    // The directory's encoder.json + vocab.bpe (OpenAI's names) or vocab.json + merges.txt (Hugging
    // Face's); std::runtime_error naming the directory when neither pair is there.
    static BpeTokenizer from_directory(const std::filesystem::path& directory);
    // From what checkpoint_metadata() stored; std::invalid_argument when it is not a BPE tokenizer's.
    static BpeTokenizer from_checkpoint_metadata(const std::map<std::string, std::string>& metadata);
    // Whether metadata (a checkpoint's) holds a BPE tokenizer.
    static bool in_checkpoint_metadata(const std::map<std::string, std::string>& metadata);

    BpeTokenizer(const BpeTokenizer&);
    BpeTokenizer(BpeTokenizer&&) noexcept;
    BpeTokenizer& operator=(const BpeTokenizer&);
    BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
    ~BpeTokenizer() override;

    int64_t vocab_size() const override;
    std::vector<int64_t> encode(std::string_view text) const override;
    TokenIds encode_ids(std::string_view text) const override;
    std::string decode(std::span<const int64_t> ids) const override;
    std::map<std::string, std::string> checkpoint_metadata() const override;

    // A text file's ids, read and encoded a piece at a time (never the whole text in memory). Invalid
    // UTF-8 is refused with its byte offset in the file; errors name the path (std::runtime_error), and
    // a file that is not a regular file (a named pipe, a directory) is refused unread.
    // progress(bytes read so far), if given, after each piece.
    TokenIds encode_file(const std::filesystem::path& path, const std::function<void(uint64_t)>& progress = {}) const;
    // The same, the ids not kept: on_ids(the piece's ids, bytes read so far) after each piece, in order
    // (the file's ids are the pieces' ids one after another), for a program that writes them as they come.
    void encode_file_pieces(const std::filesystem::path& path,
                            const std::function<void(std::span<const int64_t> ids, uint64_t bytes)>& on_ids) const;

    // The pre-tokens of `text` (GPT-2's pattern), as views into it; for tests and tools. ASCII goes by a
    // hand-written fast path, the rest by PCRE2; `pcre2_only` takes PCRE2 for all (the reference the
    // fast path is tested against).
    std::vector<std::string_view> pre_tokenize(std::string_view text, bool pcre2_only = false) const;
    // How one pre-token's merges are found, all three giving the same ids. rounds: OpenAI's encoder (each
    // round looks at every adjacent pair for the lowest rank, so a long word of varied letters costs the
    // square of its length); heap: each adjacent pair that is a merge listed under its rank, a min-heap of
    // the ranks, so each merge touches only its neighbours (n log n, as tiktoken and Hugging Face do it);
    // automatic (encode's): rounds while they cost at most a few lookups a byte, then the heap.
    enum class Merging { automatic, rounds, heap };
    // The ids of one pre-token (any bytes) by the merges alone, without encode's cache; for tests and
    // tools. `lookups`, if given, is increased by the pairs looked up in the merge table, the measure of
    // the work (the heap's operations and the places it sorts are at most as many).
    std::vector<int64_t> merge_piece(std::string_view piece, Merging how = Merging::automatic,
                                     uint64_t* lookups = nullptr) const;
    // A token's bytes (not necessarily UTF-8 on its own: a token may hold part of a character).
    std::string_view token_bytes(int64_t id) const;
    // The id of the token spelled by `bytes`, or -1.
    int64_t token_id(std::string_view bytes) const;
    // Bytes the tables take in memory (vocabulary, merge ranks, decode table), for the benchmark.
    uint64_t table_bytes() const;
    // The texts it was made from: a vocab.json and a merges.txt of Hugging Face's folder (encoder.json and
    // vocab.bpe are the same formats), as a Hugging Face folder holds them.
    std::string_view vocabulary_text() const;
    std::string_view merges_text() const;
    // The same vocabulary and merges (what a checkpoint and a tokenizer given with it must agree on).
    bool operator==(const BpeTokenizer& other) const;

private:
    struct Tables;
    struct Scratch;
    std::shared_ptr<const Tables> tables_;  // immutable once built; copies share them
};

}  // namespace nn
