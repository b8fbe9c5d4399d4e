// An attention-only transformer: token and position embeddings, a residual stream that each layer of
// attention heads adds to, and an unembedding to logits. No MLP, no LayerNorm: the smallest model in
// which heads of one layer can read what heads of an earlier layer wrote, the setting of Elhage et al.,
// "A Mathematical Framework for Transformer Circuits" (2021).
//
// Shape legend: B batch, T time, C n_embd (the residual stream), V vocab.
//
//     nn::AttentionOnly model({.vocab = 24, .n_embd = 32, .n_head = 4, .n_layer = 2, .block = 48});
//     Tensor logits = model.forward(ids, B, T);            // (B, T, V)
//     model.layers[1]->heads[0]->last_attention();         // (B, T, T) of that head's last forward
#pragma once

#include <memory>
#include <vector>

#include "nn/models.h"

namespace nn {

struct AttentionOnlyOptions {
    int64_t vocab = 0;
    int64_t n_embd = 32;  // C, the residual stream's width
    int64_t n_head = 4;   // heads per layer, each C / n_head wide
    int64_t n_layer = 2;
    int64_t block = 64;  // longest window
};

class AttentionOnly : public PositionalModel {
public:
    explicit AttentionOnly(AttentionOnlyOptions options, autograd::Generator& gen = autograd::default_generator());
    // x = embed(ids); for each layer x = x + layer(x); logits = unembed(x)
    Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    bool can_cache() const override { return true; }

    AttentionOnlyOptions options;
    std::vector<std::unique_ptr<MultiHeadAttention>> layers;  // "layers.0", ...: heads and projection
    Linear unembed;                                           // (C, V)

private:
    autograd::Generator no_dropout_;  // MultiHeadAttention's dropout generator; the dropout is 0
};

}  // namespace nn
