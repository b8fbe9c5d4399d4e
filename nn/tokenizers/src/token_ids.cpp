#include "nn/tokenizers/token_ids.h"

#include <algorithm>

#include <autograd/check.h>

namespace nn {

using autograd::check;

namespace {
constexpr int64_t kMaxIds = int64_t{1} << 31;  // ids are below 2^31
}  // namespace

TokenIds::TokenIds(int64_t vocab_size) {
    check(vocab_size >= 1 && vocab_size <= kMaxIds, "TokenIds: vocab_size must be in [1, 2^31], got {}", vocab_size);
    if (vocab_size <= 256) ids_ = std::vector<uint8_t>{};
    else if (vocab_size <= 65536) ids_ = std::vector<uint16_t>{};
    else ids_ = std::vector<int32_t>{};
}

TokenIds::TokenIds(std::span<const int64_t> ids) {
    int64_t largest = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        check(ids[i] >= 0 && ids[i] < kMaxIds, "TokenIds: token {} at position {} is outside [0, 2^31)", ids[i], i);
        largest = std::max(largest, ids[i]);
    }
    *this = TokenIds(largest + 1);
    visit([&](auto& v) { v.assign(ids.begin(), ids.end()); });
}

TokenIds::TokenIds(MappedU16 mapped) : ids_(std::move(mapped)) {}

int64_t TokenIds::size() const {
    return visit([](const auto& v) { return static_cast<int64_t>(v.size()); });
}

int64_t TokenIds::bytes_per_id() const {
    return visit([](const auto& v) { return static_cast<int64_t>(sizeof(v[0])); });
}

int64_t TokenIds::operator[](int64_t i) const {
    return visit([&](const auto& v) { return static_cast<int64_t>(v[static_cast<size_t>(i)]); });
}

void TokenIds::copy_to(int64_t first, int64_t count, int64_t* out) const {
    visit([&](const auto& v) { std::copy(v.begin() + first, v.begin() + first + count, out); });
    check_intact();
}

std::vector<int64_t> TokenIds::to_vector() const {
    std::vector<int64_t> out = visit([](const auto& v) { return std::vector<int64_t>(v.begin(), v.end()); });
    check_intact();
    return out;
}

void TokenIds::check_intact() const {
    if (const auto* mapped = std::get_if<MappedU16>(&ids_); mapped && mapped->check_intact) mapped->check_intact();
}

uint64_t TokenIds::fingerprint() const {
    uint64_t h = 1469598103934665603ull;
    visit([&](const auto& ids) {
        for (const auto t : ids) {
            h ^= static_cast<uint64_t>(static_cast<int64_t>(t));
            h *= 1099511628211ull;
        }
    });
    check_intact();
    return h;
}

}  // namespace nn
