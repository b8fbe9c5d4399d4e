// A transformer as its residual stream, the picture TransformerLens and "A Mathematical Framework for
// Transformer Circuits" draw: the embeddings write the stream, each block reads it and adds to it (its
// heads through one output projection, its MLP), a final norm and the unembedding read it out as logits.
// The gpt, gpt2, llama and attn_only kinds are one (a kind of your own may be: derive from this beside
// nn::LanguageModel); the tools that ask a model why (nn/interpret: the logit lens, direct logit
// attribution, patching that restarts at a block) run it piece by piece through these calls. Every piece
// runs its hook points, as the model's forward does, which is made of these same calls.
//
// Shape legend: B batch, T time, C the stream's width, V vocab, H head width.
#pragma once

#include <cstdint>
#include <span>

#include <autograd/tensor.h>

namespace nn {

using autograd::Tensor;
class Linear;  // nn/layers.h

// The final norm as direct logit attribution freezes it (TransformerLens's apply_ln_to_stack): a part c
// of the stream x maps to (c - mean(c)) / scale(x) * gain for a LayerNorm, c / scale(x) * gain for an
// RMSNorm, c itself without a norm; the bias (a LayerNorm's) is added once.
struct StreamNorm {
    enum class Kind { none, layer, rms };
    Kind kind = Kind::none;
    Tensor gain, bias;  // (C) each; bias undefined for rms and none, gain for none
    float eps = 0.0f;
};

class Transformer {
public:
    virtual ~Transformer() = default;
    virtual int64_t n_blocks() const = 0;
    virtual int64_t heads_per_block() const = 0;  // the query heads of each block's attention
    virtual bool has_mlp() const { return true; }

    // ids (B, T), positions from 0 (not while caching)  ->  the stream into block 0 (B, T, C): hook_embed, ...
    virtual Tensor embed_stream(std::span<const int64_t> ids, int64_t B, int64_t T) = 0;
    // block `layer` on the stream (B, T, C) -> the stream after it (B, T, C): blocks.layer.* fire. With
    // last_row, the last position's alone (B, 1, C), what a read-out of the last position needs of the last
    // block: every position's attention still runs (the last reads them all); the points after it (ln2,
    // mlp.*, hook_mlp_out, hook_resid_post) see that row alone.
    virtual Tensor run_block(int64_t layer, const Tensor& x, bool last_row) = 0;
    // the final norm (ln_final.hook_normalized fires): (B, T, C) -> (B, T, C); x itself without one
    virtual Tensor normalize_stream(const Tensor& x) = 0;
    // the unembedding: the normalized stream (B, T, C) -> logits (B, T, V)
    virtual Tensor unembed_stream(const Tensor& x) = 0;

    // --- what direct logit attribution reads ----------------------------------------------------------
    virtual StreamNorm stream_norm() const = 0;
    // (C): the logit of token `id` is normalize_stream(x) . unembedding_direction(id) + unembedding_bias(id)
    virtual Tensor unembedding_direction(int64_t id) const = 0;
    virtual float unembedding_bias(int64_t /*id*/) const { return 0.0f; }
    // The projection from block `layer`'s heads, side by side, to the stream: weight (n_head H, C), rows
    // h H .. (h + 1) H - 1 head h's (what hook_z's head h meets), and its bias (C) or undefined.
    virtual const Linear& heads_projection(int64_t layer) const = 0;
};

}  // namespace nn
