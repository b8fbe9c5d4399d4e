#include "nn/gpt2.h"

#include <autograd/ops.h>

#include <cmath>

#include "nn/attention.h"  // causal_heads

namespace nn {

using namespace autograd;

GPT2Attention::GPT2Attention(const GPT2Options& opts, Generator& gen)
    : n_head(opts.n_head),
      scaled(opts.scaled),
      dropout_p(opts.dropout),
      c_attn({.in = opts.n_embd, .out = 3 * opts.n_embd}, gen),
      c_proj({.in = opts.n_embd, .out = opts.n_embd}, gen) {
    check(opts.n_head > 0 && opts.n_embd % opts.n_head == 0, "GPT2: n_head {} must divide n_embd {}", opts.n_head,
          opts.n_embd);
    register_module("c_attn", c_attn);
    register_module("c_proj", c_proj);
    record_.n_head = record_.n_kv_head = opts.n_head;
    for (int64_t h = 0; h < opts.n_head; ++h) {  // no parameters: checkpoints are unchanged
        heads.push_back(std::make_unique<GPT2Head>(*this, h));
        register_module(fmt::format("heads.{}", h), *heads.back());
    }
    for (auto [name, point] : hooks.named()) register_hook_point(name, *point);
}

Tensor GPT2Attention::forward(const Tensor& x, Generator& dropout_gen) {
    const int64_t C = c_proj.options.in;
    const Tensor all = c_attn(x);  // (B, T, 3C)
    const Tensor qkv[3] = {hook_heads(hooks.q, slice(all, 2, 0, C), n_head),
                           hook_heads(hooks.k, slice(all, 2, C, 2 * C), n_head),
                           hook_heads(hooks.v, slice(all, 2, 2 * C, 3 * C), n_head)};  // q, k, v: (B, T, C)
    record_.record(x, qkv[0], qkv[1], cache_ != nullptr);                              // what the heads show
    const Tensor heads_out = causal_heads(qkv[0], qkv[1], qkv[2], n_head, n_head, 1.0f / heads[0]->divisor(), cache_,
                                          hooks, outputs_);                    // (B, T, C)
    return dropout(c_proj(heads_out), dropout_p, is_training(), dropout_gen);  // (B, T, C)
}

GPT2Head::GPT2Head(const GPT2Attention& attention, int64_t index)
    : SlicedHead(attention.record_, index), attention_(attention) {}
Tensor GPT2Head::queries(const Tensor& x) const { return query_part(split(attention_.c_attn(x), x.size(2), 2)[0]); }
Tensor GPT2Head::keys(const Tensor& x) const { return key_part(split(attention_.c_attn(x), x.size(2), 2)[1]); }
Tensor GPT2Head::values(const Tensor& x) const { return key_part(split(attention_.c_attn(x), x.size(2), 2)[2]); }
float GPT2Head::divisor() const {
    return attention_.scaled ? std::sqrt(static_cast<float>(attention_.c_proj.options.in / attention_.n_head)) : 1.0f;
}

GPT2MLP::GPT2MLP(const GPT2Options& opts, Generator& gen)
    : dropout_p(opts.dropout),
      gelu_exact(opts.gelu_exact),
      c_fc({.in = opts.n_embd, .out = 4 * opts.n_embd}, gen),
      c_proj({.in = 4 * opts.n_embd, .out = opts.n_embd}, gen) {
    register_module("c_fc", c_fc);
    register_module("c_proj", c_proj);
    register_hook_point("hook_post", hook_post);
}

Tensor GPT2MLP::forward(const Tensor& x, Generator& dropout_gen) {
    // c_fc and the GELU as one op, unless a forward hook on c_fc must be shown its output (as nn::FeedForward)
    Tensor hidden;  // (B, T, 4C)
    if (c_fc.has_forward_hooks()) hidden = gelu_exact ? gelu(c_fc(x)) : gelu_tanh(c_fc(x));
    else hidden = gelu_exact ? linear_gelu(x, c_fc.weight, c_fc.bias) : linear_gelu_tanh(x, c_fc.weight, c_fc.bias);
    return dropout(c_proj(hook_post(hidden)), dropout_p, is_training(), dropout_gen);  // (B, T, C)
}

GPT2Block::GPT2Block(const GPT2Options& opts, Generator& gen)
    : ln_1({.dim = opts.n_embd}), attn(opts, gen), ln_2({.dim = opts.n_embd}), mlp(opts, gen) {
    register_module("ln_1", ln_1, "ln1");
    register_module("attn", attn);
    register_module("ln_2", ln_2, "ln2");
    register_module("mlp", mlp);
    for (auto [name, point] : residual.named()) register_hook_point(name, *point);
}

Tensor GPT2Block::forward(const Tensor& input, Generator& dropout_gen, bool last_row) {
    return residual.flow(
        input, [&](const Tensor& x) { return attn(ln_1(x), dropout_gen); },
        [&](const Tensor& x) { return mlp(ln_2(x), dropout_gen); }, last_row);
}

GPT2::GPT2(GPT2Options opts, Generator& gen)
    : options(opts),
      wte({.num = opts.vocab, .dim = opts.n_embd}, gen),
      wpe({.num = opts.block, .dim = opts.n_embd}, gen),
      ln_f({.dim = opts.n_embd}),
      dropout_gen_(opts.dropout_seed) {
    check(opts.n_layer > 0, "GPT2: n_layer must be positive, got {}", opts.n_layer);
    register_module("wte", wte);
    register_module("wpe", wpe);
    register_hook_point("hook_embed", hook_embed);
    register_hook_point("hook_pos_embed", hook_pos_embed);
    for (int64_t l = 0; l < opts.n_layer; ++l) {
        h.push_back(std::make_unique<GPT2Block>(opts, gen));
        register_module(fmt::format("h.{}", l), *h.back(), fmt::format("blocks.{}", l));
    }
    register_module("ln_f", ln_f, "ln_final");
    register_generator("dropout", dropout_gen_);  // checkpoints save it as "train.rng.dropout"

    // GPT-2's initialization (Hugging Face's _init_weights, nanoGPT's): N(0, 0.02) for the weights and both
    // tables, the projections into the residual stream scaled by 1 / sqrt(2 n_layer), biases 0; norms stay 1, 0
    const auto residual = [](const std::string& name) { return name.ends_with("c_proj.weight"); };
    const auto norm = [](const std::string& name) {
        return name.find(".ln_") != std::string::npos || name.starts_with("ln_f.");
    };
    init_gpt2_style(*this, gen, opts.n_layer, residual, norm);
}

Tensor GPT2::forward(std::span<const int64_t> ids, int64_t B, int64_t T) {
    check_ids(ids, B, T, "GPT2");
    return transformer_forward(*this, ids, B, T);
}

Tensor GPT2::embed_stream(std::span<const int64_t> ids, int64_t B, int64_t T) {
    Tensor rows = wpe(positions(first_position(), T), Shape{T});  // (T, C)
    // the hook sees them as TransformerLens shows them, (B, T, C): each batch row's, the same bits
    if (hook_pos_embed.hooked()) rows = hook_pos_embed(rows + zeros({B, T, options.n_embd}));
    const Tensor x = hook_embed(wte(ids, Shape{B, T})) + rows;  // (B, T, C) + (T, C)
    return dropout(x, options.dropout, is_training(), dropout_gen_);
}
Tensor GPT2::run_block(int64_t layer, const Tensor& x, bool last_row) {
    return (*h.at(size_t(layer)))(x, dropout_gen_, last_row);
}
Tensor GPT2::unembed_stream(const Tensor& x) {
    return matmul_transposed(x, wte.weight);  // (B, T, C) @ (V, C)^T -> (B, T, V)
}
StreamNorm GPT2::stream_norm() const {
    return {.kind = StreamNorm::Kind::layer, .gain = ln_f.gain, .bias = ln_f.bias, .eps = ln_f.options.eps};
}
Tensor GPT2::unembedding_direction(int64_t id) const {
    return slice(wte.weight, 0, id, id + 1).reshape({options.n_embd});  // row of the (V, C) table
}
const Linear& GPT2::heads_projection(int64_t layer) const { return h.at(size_t(layer))->attn.c_proj; }

}  // namespace nn
