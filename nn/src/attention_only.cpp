#include "nn/attention_only.h"

#include <autograd/ops.h>

namespace nn {

using namespace autograd;

AttentionOnly::AttentionOnly(AttentionOnlyOptions opts, Generator& gen)
    : PositionalModel(opts.vocab, opts.n_embd, opts.block, gen),
      options(opts),
      unembed({.in = opts.n_embd, .out = opts.vocab}, gen) {
    check(opts.vocab > 0 && opts.n_layer > 0 && opts.block > 0,
          "AttentionOnly: vocab ({}), n_layer ({}) and block ({}) must be positive", opts.vocab, opts.n_layer,
          opts.block);
    for (int64_t l = 0; l < opts.n_layer; ++l) {
        layers.push_back(std::make_unique<MultiHeadAttention>(
            MultiHeadAttentionOptions{.n_embd = opts.n_embd, .n_head = opts.n_head}, gen));
        register_module(fmt::format("layers.{}", l), *layers.back(), fmt::format("blocks.{}.attn", l));
    }
    register_module("unembed", unembed);
}

Tensor AttentionOnly::forward(std::span<const int64_t> ids, int64_t B, int64_t T) {
    check_ids(ids, B, T, "AttentionOnly");
    Tensor x = embed(ids, B, T);                                  // (B, T, C)
    for (auto& layer : layers) x = x + (*layer)(x, no_dropout_);  // each layer adds to the residual stream
    advance_cache(T);
    return unembed(last_rows(x));  // (B, T, V)
}

}  // namespace nn
