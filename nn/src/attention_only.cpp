#include "nn/attention_only.h"

#include <autograd/ops.h>

namespace nn {

using namespace autograd;

AttentionOnlyBlock::AttentionOnlyBlock(const AttentionOnlyOptions& opts, Generator& gen)
    : attn({.n_embd = opts.n_embd, .n_head = opts.n_head}, gen) {
    register_module("attn", attn);
    register_hook_point("hook_resid_pre", hook_resid_pre);
    register_hook_point("hook_attn_out", hook_attn_out);
    register_hook_point("hook_resid_post", hook_resid_post);
}

Tensor AttentionOnlyBlock::forward(const Tensor& input, bool last_row) {
    const Tensor x = hook_resid_pre(input);                // (B, T, C)
    Tensor out = x + hook_attn_out(attn(x, no_dropout_));  // each layer adds to the stream
    if (last_row) out = out.slice(1, out.size(1) - 1, out.size(1));
    return hook_resid_post(out);  // (B, T or 1, C)
}

AttentionOnly::AttentionOnly(AttentionOnlyOptions opts, Generator& gen)
    : PositionalModel(opts.vocab, opts.n_embd, opts.block, gen),
      options(opts),
      unembed({.in = opts.n_embd, .out = opts.vocab}, gen) {
    check(opts.vocab > 0 && opts.n_layer > 0 && opts.block > 0,
          "AttentionOnly: vocab ({}), n_layer ({}) and block ({}) must be positive", opts.vocab, opts.n_layer,
          opts.block);
    for (int64_t l = 0; l < opts.n_layer; ++l) {
        blocks.push_back(std::make_unique<AttentionOnlyBlock>(opts, gen));
        register_module(fmt::format("blocks.{}", l), *blocks.back());
    }
    register_module("unembed", unembed);
}

Tensor AttentionOnly::forward(std::span<const int64_t> ids, int64_t B, int64_t T) {
    check_ids(ids, B, T, "AttentionOnly");
    return transformer_forward(*this, ids, B, T);
}

Tensor AttentionOnly::run_block(int64_t layer, const Tensor& x, bool last_row) {
    return (*blocks.at(size_t(layer)))(x, last_row);
}
Tensor AttentionOnly::unembedding_direction(int64_t id) const {
    return slice(unembed.weight, 1, id, id + 1).reshape({options.n_embd});  // column of (C, V)
}
float AttentionOnly::unembedding_bias(int64_t id) const { return unembed.bias.at({id}); }
const Linear& AttentionOnly::heads_projection(int64_t layer) const { return blocks.at(size_t(layer))->attn.projection; }

}  // namespace nn
