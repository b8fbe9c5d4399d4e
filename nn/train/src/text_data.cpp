#include "nn/train/text_data.h"

#include <cmath>
#include <span>

#include <autograd/check.h>

namespace nn {

using autograd::check;

namespace {
const char* split_name(Split split) { return split == Split::train ? "train" : "validation"; }
constexpr int64_t kMaxBatchTokens = int64_t{1} << 28;  // 2 GiB per id vector; far beyond any real batch
}  // namespace

TextData::TextData(TokenIds tokens, double train_fraction) : tokens_(std::move(tokens)) {
    check(!tokens_.empty(), "TextData: no tokens");
    check(train_fraction > 0.0 && train_fraction <= 1.0, "TextData: train_fraction must be in (0, 1], got {}",
          train_fraction);
    // As the lecture's n = int(0.9 * len(data)).
    n_train_ = static_cast<int64_t>(std::floor(train_fraction * static_cast<double>(tokens_.size())));
}

TextData::TextData(TokenIds train, TokenIds validation)
    : tokens_(std::move(train)), validation_(std::move(validation)), n_train_(tokens_.size()) {
    check(!tokens_.empty(), "TextData: no training tokens");
    check(!validation_->empty(), "TextData: no validation tokens");
}

TextData::TextData(const std::vector<int64_t>& tokens, double train_fraction)
    : TextData(TokenIds(std::span<const int64_t>(tokens)), train_fraction) {}

int64_t TextData::size(Split split) const {
    if (split == Split::train) return n_train_;
    return validation_ ? validation_->size() : tokens_.size() - n_train_;
}

void TextData::copy(Split split, int64_t first, int64_t count, int64_t* out) const {
    check(first >= 0 && count >= 0 && first + count <= size(split),
          "TextData::copy: [{}, {}) is outside the {} split of {} tokens", first, first + count, split_name(split),
          size(split));
    if (split == Split::validation && validation_) validation_->copy_to(first, count, out);
    else tokens_.copy_to(split == Split::train ? first : n_train_ + first, count, out);
}

int64_t consecutive_windows(const TokenIds& ids, int64_t B, int64_t T) {
    check(B > 0 && T > 0 && B <= kMaxBatchTokens / T, "consecutive_windows: a window of B x T = {} x {} tokens", B, T);
    return ids.empty() ? 0 : (ids.size() - 1) / (B * T);
}

Batch consecutive_window(const TokenIds& ids, int64_t i, int64_t B, int64_t T) {
    check(i >= 0 && i < consecutive_windows(ids, B, T),
          "consecutive_window: window {} of {} x {} tokens is not inside {} tokens", i, B, T, ids.size());
    const int64_t n = B * T;
    Batch out{std::vector<int64_t>(static_cast<size_t>(n)), std::vector<int64_t>(static_cast<size_t>(n)), B, T};
    ids.copy_to(i * n, n, out.inputs.data());
    ids.copy_to(i * n + 1, n, out.targets.data());
    return out;
}

Batch TextData::batch(Split split, int64_t B, int64_t T, autograd::Generator& gen) const {
    check(B > 0, "batch: batch size B must be positive, got {}", B);
    check(T > 0, "batch: block size T must be positive, got {}", T);
    check(B <= kMaxBatchTokens / T, "batch: B * T = {} * {} tokens is more than the limit of {}", B, T,
          kMaxBatchTokens);
    const TokenIds& stream = split == Split::validation && validation_ ? *validation_ : tokens_;
    const int64_t n = size(split), first = split == Split::train || validation_ ? 0 : n_train_;
    check(T < n, "batch: block size {} is longer than the {} split ({} tokens; a window and its targets need {})", T,
          split_name(split), n, T + 1);

    Batch out{std::vector<int64_t>(static_cast<size_t>(B * T)), std::vector<int64_t>(static_cast<size_t>(B * T)), B, T};
    for (int64_t b = 0; b < B; ++b) {
        const int64_t start = first + gen.randint(n - T);  // the last target is token start + T
        stream.copy_to(start, T, out.inputs.data() + b * T);
        stream.copy_to(start + 1, T, out.targets.data() + b * T);
    }
    return out;
}

}  // namespace nn
