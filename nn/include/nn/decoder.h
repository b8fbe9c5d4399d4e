// Generating one token at a time: a Decoder appends tokens to a window and returns the logits of the
// next one. Both run the model's own forward, in eval mode without a graph. The cached decoder hands the
// model a ModelCache (nn/kv_cache.h): every attention module keeps the keys and values of the positions
// already seen, so a new token costs one row of attention instead of a T x T window. The window decoder
// is the reference that runs the whole window through model.forward() again.
//
// Shape legend: T time (tokens in the window), C n_embd, H head width, V vocab.
//
//     auto decoder = model.cached_decoder();             // or nn::window_decoder(model), the reference
//     std::span<const float> logits = decoder->append(prompt_ids);  // (V), after the last prompt id
//     logits = decoder->append(next_id);                 // one more row of attention per head
//
// Why the cache is exact: the causal mask. Row i of a head's attention reads positions <= i only, so
// the keys, values and outputs of positions already seen never change when more tokens follow.
//
// The full window, one policy for both decoders (GenerationWindow): learned position embeddings tie a
// token to its position, and nanoGPT's "crop to the last block at every step" shifts every position by
// one, which no cache survives. So when the window holds `block` tokens and another comes, the window
// keeps its last block / 2 tokens (at positions 0 .. block/2 - 1), refills the decoder from them once,
// then appends the new token. Cached and uncached read the same windows and give the same logits.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace nn {

class LanguageModel;

class Decoder {
public:
    virtual ~Decoder() = default;
    // Appends ids at positions length() .. length() + ids.size() - 1 (at least one id; the window must
    // stay within capacity()) and returns the logits of the token after the last one: (V), valid until
    // the next call. Records no graph, and leaves the model's parameters and mode alone.
    virtual std::span<const float> append(std::span<const int64_t> ids) = 0;
    std::span<const float> append(int64_t id) { return append(std::span<const int64_t>(&id, 1)); }
    // Empties the window: the next id goes to position 0.
    virtual void clear() = 0;
    virtual int64_t length() const = 0;
    virtual int64_t capacity() const = 0;  // the model's block size
    virtual bool cached() const = 0;       // keeps keys and values (false: reruns the window)
};

// The reference: each append runs model.forward() on the whole window, in eval mode without a graph,
// and keeps the last row. Works for any LanguageModel.
std::unique_ptr<Decoder> window_decoder(LanguageModel& model);

// The window the model reads while generating, under the full-window policy above, over a Decoder.
// No allocation after construction.
class GenerationWindow {
public:
    explicit GenerationWindow(std::unique_ptr<Decoder> decoder);
    // Starts over from `context` (its last block tokens, at least one) -> logits of the next token (V).
    std::span<const float> start(std::span<const int64_t> context);
    // Adds the token just sampled; a full window first keeps its last half -> logits of the next (V).
    std::span<const float> push(int64_t id);
    std::span<const int64_t> window() const { return tokens_; }
    int64_t refills() const { return refills_; }  // how often the window was full
    Decoder& decoder() { return *decoder_; }

private:
    std::unique_ptr<Decoder> decoder_;
    std::vector<int64_t> tokens_;  // the ids the decoder holds, reserved to its capacity
    int64_t refills_ = 0;
};

}  // namespace nn
