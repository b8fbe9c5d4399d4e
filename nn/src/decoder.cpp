// The decoders of nn/decoder.h: both run the model's own forward() without a graph, in eval mode. The
// cached one hands the model its ModelCache for each forward (UsingCache), so each append reads its new
// ids only; the window decoder, the reference, runs the whole window again.
//
// Shape legend: T time (the ids appended), V vocab.
#include "nn/decoder.h"

#include <autograd/ops.h>

#include <algorithm>

#include "nn/models.h"

namespace nn {

using namespace autograd;

namespace {

// What both decoders share: the checks of an append, eval mode without a graph around the model's
// forward, and the logits of the last position, kept in a buffer of their own.
class ModelDecoder : public Decoder {
public:
    explicit ModelDecoder(LanguageModel& model) : model_(model), logits_(static_cast<size_t>(model.vocab_size())) {}

    std::span<const float> append(std::span<const int64_t> ids) override {
        check(!ids.empty(), "decoder: append needs at least one id");
        check(length() + static_cast<int64_t>(ids.size()) <= capacity(),
              "decoder: appending {} ids to a window of {} goes past the block size {}", ids.size(), length(),
              capacity());
        for (int64_t id : ids)
            check(id >= 0 && id < model_.vocab_size(), "decoder: id {} is outside the vocabulary of {}", id,
                  model_.vocab_size());
        NoGradGuard no_grad;
        const bool was_training = model_.is_training();
        model_.eval();
        try {
            const Tensor logits = read(ids);  // (1, T', V): the last row is the next token's
            const auto last = logits.data().last(logits_.size());
            std::copy(last.begin(), last.end(), logits_.begin());
        } catch (...) {
            model_.train(was_training);
            throw;
        }
        model_.train(was_training);
        return logits_;
    }
    int64_t capacity() const override { return model_.block_size(); }

protected:
    virtual Tensor read(std::span<const int64_t> ids) = 0;  // the model's logits after ids
    LanguageModel& model_;

private:
    std::vector<float> logits_;  // (V)
};

// The decoder's caches (nn/kv_cache.h) hold what the model read: each append is a forward of the new ids
// alone, continuing the cache's sequence.
class CachedDecoder final : public ModelDecoder {
public:
    explicit CachedDecoder(LanguageModel& model) : ModelDecoder(model), cache_(model, model.block_size()) {}
    void clear() override { cache_.clear(); }
    int64_t length() const override { return cache_.length(); }
    bool cached() const override { return true; }

private:
    Tensor read(std::span<const int64_t> ids) override {
        const UsingCache use(model_, cache_);
        try {
            return model_(ids, 1, static_cast<int64_t>(ids.size()));
        } catch (...) {
            cache_.clear();  // (a failed forward may have cached part of the ids in some modules)
            throw;
        }
    }
    ModelCache cache_;
};

// The reference: the whole window through forward() at every append.
class WindowDecoder final : public ModelDecoder {
public:
    explicit WindowDecoder(LanguageModel& model) : ModelDecoder(model) {
        ids_.reserve(static_cast<size_t>(model.block_size()));
    }
    void clear() override { ids_.clear(); }
    int64_t length() const override { return static_cast<int64_t>(ids_.size()); }
    bool cached() const override { return false; }

private:
    Tensor read(std::span<const int64_t> ids) override {
        ids_.insert(ids_.end(), ids.begin(), ids.end());
        try {
            return model_(ids_, 1, length());  // (1, T, V)
        } catch (...) {
            ids_.resize(ids_.size() - ids.size());
            throw;
        }
    }
    std::vector<int64_t> ids_;
};

}  // namespace

std::unique_ptr<Decoder> window_decoder(LanguageModel& model) { return std::make_unique<WindowDecoder>(model); }

std::unique_ptr<Decoder> LanguageModel::cached_decoder() {
    if (can_cache()) return std::make_unique<CachedDecoder>(*this);
    return window_decoder(*this);
}

// --- GenerationWindow ----------------------------------------------------------------------------------

GenerationWindow::GenerationWindow(std::unique_ptr<Decoder> decoder) : decoder_(std::move(decoder)) {
    check(decoder_ != nullptr, "GenerationWindow: no decoder");
    tokens_.reserve(static_cast<size_t>(decoder_->capacity()));
}

std::span<const float> GenerationWindow::start(std::span<const int64_t> context) {
    check(!context.empty(), "GenerationWindow: the context is empty; give at least one token to start from");
    const auto T = std::min<size_t>(context.size(), static_cast<size_t>(decoder_->capacity()));
    tokens_.assign(context.end() - static_cast<std::ptrdiff_t>(T), context.end());
    decoder_->clear();
    return decoder_->append(tokens_);
}

std::span<const float> GenerationWindow::push(int64_t id) {
    const int64_t block = decoder_->capacity();
    if (static_cast<int64_t>(tokens_.size()) < block) {
        tokens_.push_back(id);
        return decoder_->append(id);
    }
    // full: keep the last block / 2 tokens, now at positions 0 .., and refill the decoder from them once
    const int64_t keep = block / 2;
    std::copy(tokens_.end() - keep, tokens_.end(), tokens_.begin());
    tokens_.resize(static_cast<size_t>(keep));
    tokens_.push_back(id);
    ++refills_;
    decoder_->clear();
    return decoder_->append(tokens_);
}

}  // namespace nn
