// Token ids stored as narrow as their vocabulary allows (1 byte an id for up to 256 symbols), or read in
// place from a memory-mapped token file: what a tokenizer's encode_ids() gives and TextData batches.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <variant>
#include <vector>

namespace nn {

// uint16 ids read in place from a memory-mapped token file (nn/train/token_file.h): the pages stay the
// file's, so a file larger than memory can be trained on. Read-only; copies share the mapping.
struct MappedU16 {
    std::shared_ptr<const void> mapping;  // keeps the file mapped
    const uint16_t* ids = nullptr;
    size_t count = 0;
    // Throws std::runtime_error naming the file when it was cut short while mapped (its lost pages then
    // read as zeros instead of killing the process with SIGBUS; token_file.cpp).
    std::function<void()> check_intact;

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
    int64_t operator[](int64_t i) const;  // unchecked, as std::vector's (mapped: check_intact() after)
    // ids [first, first + count) into out[0, count), widened; the range must be inside. Mapped ids are
    // checked to be intact after the copy, as in to_vector() and fingerprint().
    void copy_to(int64_t first, int64_t count, int64_t* out) const;
    std::vector<int64_t> to_vector() const;
    // For mapped ids, throws std::runtime_error naming the file when it was cut short while mapped: the
    // ids read since then are zeros, not the file's. Nothing for ids held in memory.
    void check_intact() const;
    // FNV-1a over the ids, each as a 64-bit value however narrowly it is stored (a checkpoint keeps it:
    // resuming on other data is an error, not a silent new run; files from before narrow ids still resume).
    uint64_t fingerprint() const;

    // f(the std::vector holding the ids, or the MappedU16); for loops that would pay a branch per id
    // otherwise. The non-const form is for filling fresh ids, which are never mapped.
    template <typename F>
    decltype(auto) visit(F&& f) const {
        return std::visit(std::forward<F>(f), ids_);
    }
    template <typename F>
    void visit(F&& f) {
        std::visit(
            [&](auto& v) {
                if constexpr (std::is_same_v<std::decay_t<decltype(v)>, MappedU16>)
                    throw std::logic_error("TokenIds: mapped ids are read-only");
                else f(v);
            },
            ids_);
    }

private:
    Storage ids_;
};

}  // namespace nn
