// GPT-2's BPE tables, private to nn/tokenizers/src: what the loader (bpe_files.cpp) builds and the encoder
// (bpe.cpp) reads. Two open-addressing hash tables (a token's bytes -> its id, a pair of ids -> the merge's
// rank and result), and BpeTokenizer::Tables, which holds them with the vocabulary, the merges and GPT-2's
// compiled pattern.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "nn/tokenizers/bpe.h"

namespace nn::detail {

// GPT-2's pattern with \s spelled as Unicode's White_Space property (PCRE2's \s with UCP also takes
// U+180E; Python's regex, Rust's and so tiktoken's take White_Space exactly). Hugging Face's ByteLevel
// pre-tokenizer splits by the same pattern (hf_tokenizer.cpp).
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+)";

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes for the
// code points 256, 257, ... in byte order. Returns the code point each byte is written as.
inline std::array<char32_t, 256> gpt2_byte_to_code_point() {
    std::array<char32_t, 256> map{};
    int next = 256;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        map[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
    }
    return map;
}

// splitmix64's finalizer: every input bit moves every output bit (the tables index by the low bits)
inline uint64_t hash_u64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// 64-bit hash of a token's bytes: 8 bytes at a time, multiplied and folded (tokens are short).
inline uint64_t hash_bytes(std::string_view s) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
        uint64_t word;
        std::memcpy(&word, s.data() + i, 8);
        h = (h ^ word) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    return hash_u64(h ^ tail);
}

// Open addressing, linear probing, a power-of-two number of slots at most half full: one cache line
// read for most lookups, where std::unordered_map follows a pointer to a node.
inline size_t slots_for(size_t entries) {
    size_t slots = 16;
    while (slots < 2 * entries) slots *= 2;
    return slots;
}

// token bytes -> id; the bytes live in the decode table (blob + offsets)
class TokenTable {
public:
    void build(const std::vector<std::string>& bytes_of, const std::vector<bool>& include) {
        size_t n = 0;
        for (bool b : include) n += b;
        slots_.assign(slots_for(n), Slot{});
        mask_ = slots_.size() - 1;
        for (size_t id = 0; id < bytes_of.size(); ++id) {
            if (!include[id]) continue;
            const uint64_t h = hash_bytes(bytes_of[id]);
            size_t at = h & mask_;
            while (slots_[at].id >= 0) at = (at + 1) & mask_;
            slots_[at] = Slot{h, static_cast<int32_t>(id)};
        }
        bytes_of_ = &bytes_of;
    }
    int32_t find(std::string_view s) const {
        const uint64_t h = hash_bytes(s);
        for (size_t at = h & mask_;; at = (at + 1) & mask_) {
            const Slot& slot = slots_[at];
            if (slot.id < 0) return -1;
            if (slot.hash == h && (*bytes_of_)[static_cast<size_t>(slot.id)] == s) return slot.id;
        }
    }
    uint64_t bytes() const { return slots_.capacity() * sizeof(Slot); }

private:
    struct Slot {
        uint64_t hash = 0;
        int32_t id = -1;
    };
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    const std::vector<std::string>* bytes_of_ = nullptr;
};

// (left id, right id) -> the merge's rank and result
class MergeTable {
public:
    struct Merge {
        int32_t rank, result;
    };
    void reserve(size_t n) {
        slots_.assign(slots_for(n), Slot{});
        mask_ = slots_.size() - 1;
    }
    bool insert(uint64_t key, Merge merge) {  // false when the key is there already
        for (size_t at = hash_u64(key) & mask_;; at = (at + 1) & mask_) {
            if (slots_[at].merge.rank < 0) {
                slots_[at] = Slot{key, merge};
                return true;
            }
            if (slots_[at].key == key) return false;
        }
    }
    const Merge* find(uint64_t key) const {
        for (size_t at = hash_u64(key) & mask_;; at = (at + 1) & mask_) {
            const Slot& slot = slots_[at];
            if (slot.merge.rank < 0) return nullptr;
            if (slot.key == key) return &slot.merge;
        }
    }
    uint64_t bytes() const { return slots_.capacity() * sizeof(Slot); }

private:
    struct Slot {
        uint64_t key = 0;
        Merge merge{-1, -1};
    };
    std::vector<Slot> slots_;
    size_t mask_ = 0;
};

struct PcreCodeDeleter {
    void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};

inline uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace nn::detail

namespace nn {

struct BpeTokenizer::Tables {
    std::string vocabulary_text, merges_text;  // as given (a checkpoint keeps them)
    std::vector<std::string> bytes_of;         // id -> the token's bytes
    std::string decode_blob;                   // every token's bytes, back to back (decode's one table)
    std::vector<uint32_t> decode_offset;       // id -> [offset[id], offset[id + 1]) in decode_blob
    detail::TokenTable id_of;                  // bytes -> id (no special tokens)
    std::array<int32_t, 256> byte_id{};        // the one-byte tokens
    detail::MergeTable merges;                 // (left id, right id) -> its rank and the merged token
    struct Merge {
        int32_t left, right, result;
        bool operator==(const Merge&) const = default;
    };
    std::vector<Merge> merge_list;  // in rank order
    std::unique_ptr<pcre2_code, detail::PcreCodeDeleter> pattern;
    bool jit = false;

    // Calls piece(pre-token) for each pre-token of `text` (already checked to be UTF-8): ASCII by the
    // fast path below, every pre-token whose bounds depend on a non-ASCII character by PCRE2.
    template <typename Piece>
    void pre_tokenize(std::string_view text, Piece&& piece, bool pcre2_only = false) const;
    // Appends the ids of one pre-token.
    template <typename Out>
    void encode_piece(std::string_view piece, Out& out, Scratch& scratch) const;
    // The ids of one pre-token by the merges alone into scratch.word; `lookups`, if given, is increased by
    // the pairs looked up in the merge table (see BpeTokenizer::merge_piece).
    void bpe(std::string_view piece, Scratch& scratch, Merging how, uint64_t* lookups) const;
    // The merges of scratch.word by OpenAI's rounds; false, the word left at a round's end, when the next
    // round would take the lookups past `budget`.
    bool merge_rounds(Scratch& scratch, uint64_t budget, uint64_t* lookups) const;
    // The rest of scratch.word's merges with a heap.
    void merge_heap(Scratch& scratch, uint64_t* lookups) const;
    // Encodes a text file a piece at a time into `out`, calling after_piece(bytes of the file read so far)
    // after each.
    template <typename Out, typename AfterPiece>
    void encode_file(const std::filesystem::path& path, Out& out, AfterPiece&& after_piece) const;
};

}  // namespace nn
