// An attention-only transformer: token and position embeddings, a residual stream that each layer of
// attention heads adds to, and an unembedding to logits. No MLP, no LayerNorm: the smallest model in
// which heads of one layer can read what heads of an earlier layer wrote, the setting of Elhage et al.,
// "A Mathematical Framework for Transformer Circuits" (2021).
//
// Shape legend: B batch, T time, C n_embd (the residual stream), V vocab.
//
//     nn::AttentionOnly model({.vocab = 24, .n_embd = 32, .n_head = 4, .n_layer = 2, .block = 48});
//     Tensor logits = model.forward(ids, B, T);            // (B, T, V)
//     model.blocks[1]->attn.heads[0]->last_attention();    // (B, T, T) of that head's last forward
//
// The registry's `attn_only` kind (its checkpoints, and `induction --out`); an nn::Transformer. Hook
// points, TransformerLens's names for an attention-only model: hook_embed, hook_pos_embed,
// blocks.L.hook_resid_pre, blocks.L.attn.* (MultiHeadAttention's), blocks.L.hook_attn_out,
// blocks.L.hook_resid_post, logits.
#pragma once

#include <memory>
#include <vector>

#include "nn/models.h"
#include "nn/transformer.h"

namespace nn {

struct AttentionOnlyOptions {
    int64_t vocab = 0;
    int64_t n_embd = 32;  // C, the residual stream's width
    int64_t n_head = 4;   // heads per layer, each C / n_head wide
    int64_t n_layer = 2;
    int64_t block = 64;  // longest window
};

// x + attn(x), no norm: (B, T, C) -> (B, T, C).
class AttentionOnlyBlock : public Callable<AttentionOnlyBlock> {
public:
    AttentionOnlyBlock(const AttentionOnlyOptions& options, autograd::Generator& gen);
    // last_row: the last position's output alone (nn::Transformer::run_block)
    Tensor forward(const Tensor& x, bool last_row = false);

    MultiHeadAttention attn;                                   // "attn": heads and projection
    HookPoint hook_resid_pre, hook_attn_out, hook_resid_post;  // (B, T, C) each

private:
    autograd::Generator no_dropout_;  // MultiHeadAttention's dropout generator; the dropout is 0
};

class AttentionOnly : public PositionalModel, public Transformer {
public:
    explicit AttentionOnly(AttentionOnlyOptions options, autograd::Generator& gen = autograd::default_generator());
    // x = embed(ids); for each layer x = x + layer(x); logits = unembed(x)
    Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    bool can_cache() const override { return true; }

    // nn::Transformer: no MLP, no final norm
    int64_t n_blocks() const override { return options.n_layer; }
    int64_t heads_per_block() const override { return options.n_head; }
    bool has_mlp() const override { return false; }
    Tensor embed_stream(std::span<const int64_t> ids, int64_t B, int64_t T) override { return embed(ids, B, T); }
    Tensor run_block(int64_t layer, const Tensor& x, bool last_row) override;
    Tensor normalize_stream(const Tensor& x) override { return x; }
    Tensor unembed_stream(const Tensor& x) override { return unembed(x); }
    StreamNorm stream_norm() const override { return {}; }
    Tensor unembedding_direction(int64_t id) const override;
    float unembedding_bias(int64_t id) const override;
    const Linear& heads_projection(int64_t layer) const override;

    AttentionOnlyOptions options;
    std::vector<std::unique_ptr<AttentionOnlyBlock>> blocks;  // "blocks.0", ...
    Linear unembed;                                           // (C, V)
};

}  // namespace nn
