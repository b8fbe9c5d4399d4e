#include "nn/llama.h"

#include <autograd/ops.h>

#include <cmath>

namespace nn {

using namespace autograd;

namespace {

// opts, once every field can make a Llama; else std::invalid_argument naming the field.
const LlamaOptions& checked(const LlamaOptions& opts) {
    for (const auto& [field, value] : {std::pair{"vocab", opts.vocab},
                                       {"n_embd", opts.n_embd},
                                       {"n_head", opts.n_head},
                                       {"n_kv_head", opts.n_kv_head},
                                       {"n_layer", opts.n_layer},
                                       {"ffn_hidden", opts.ffn_hidden},
                                       {"block", opts.block}})
        check(value > 0, "Llama: {} must be positive, got {}", field, value);
    check(opts.n_embd % opts.n_head == 0, "Llama: n_head {} must divide n_embd {}", opts.n_head, opts.n_embd);
    check(opts.n_head % opts.n_kv_head == 0, "Llama: n_kv_head {} must divide n_head {}", opts.n_kv_head, opts.n_head);
    check((opts.n_embd / opts.n_head) % 2 == 0,
          "Llama: the head width n_embd / n_head = {} / {} = {} must be even (rotary turns pairs)", opts.n_embd,
          opts.n_head, opts.n_embd / opts.n_head);
    check(std::isfinite(opts.rope_theta) && opts.rope_theta > 0.0f, "Llama: rope_theta {} must be positive",
          opts.rope_theta);
    check(std::isfinite(opts.norm_eps) && opts.norm_eps > 0.0f, "Llama: norm_eps {} must be positive", opts.norm_eps);
    return opts;
}

}  // namespace

// --- RMSNorm and SwiGLU ------------------------------------------------------------------------------

RMSNorm::RMSNorm(RMSNormOptions opts) : options(opts) {
    check(opts.dim > 0 && opts.eps > 0.0f, "RMSNorm: dim ({}) and eps ({}) must be positive", opts.dim, opts.eps);
    weight = register_parameter("weight", ones({opts.dim}));
    register_hook_point("hook_normalized", hook_normalized);
}

Tensor RMSNorm::forward(const Tensor& x) {
    check(x.dim() >= 1 && x.size(-1) == options.dim, "RMSNorm: input of shape {} does not end in {} channels",
          shape_str(x.shape()), options.dim);
    return hook_normalized(rms_norm(x, weight, options.eps));  // (..., C)
}

SwiGLU::SwiGLU(SwiGLUOptions opts, Generator& gen)
    : options(opts),
      gate_proj({.in = opts.n_embd, .out = opts.hidden, .bias = false}, gen),
      up_proj({.in = opts.n_embd, .out = opts.hidden, .bias = false}, gen),
      down_proj({.in = opts.hidden, .out = opts.n_embd, .bias = false}, gen) {
    register_module("gate_proj", gate_proj);
    register_module("up_proj", up_proj);
    register_module("down_proj", down_proj);
    register_hook_point("hook_post", hook_post);
}

Tensor SwiGLU::forward(const Tensor& x) {
    const Tensor hidden = hook_post(silu(gate_proj(x)) * up_proj(x));  // (B, T, F)
    return down_proj(hidden);                                          // (B, T, C)
}

// --- attention ---------------------------------------------------------------------------------------

LlamaAttention::LlamaAttention(const LlamaOptions& opts, Generator& gen)
    : n_head(checked(opts).n_head),
      n_kv_head(opts.n_kv_head),
      rope_theta(opts.rope_theta),
      q_proj({.in = opts.n_embd, .out = opts.n_embd, .bias = false}, gen),
      k_proj({.in = opts.n_embd, .out = opts.n_embd / opts.n_head * opts.n_kv_head, .bias = false}, gen),
      v_proj({.in = opts.n_embd, .out = opts.n_embd / opts.n_head * opts.n_kv_head, .bias = false}, gen),
      o_proj({.in = opts.n_embd, .out = opts.n_embd, .bias = false}, gen) {
    register_module("q_proj", q_proj);
    register_module("k_proj", k_proj);
    register_module("v_proj", v_proj);
    register_module("o_proj", o_proj);
    record_.n_head = n_head;
    record_.n_kv_head = n_kv_head;
    for (int64_t h = 0; h < n_head; ++h) {  // no parameters
        heads.push_back(std::make_unique<LlamaHead>(*this, h));
        register_module(fmt::format("heads.{}", h), *heads.back());
    }
    for (auto [name, point] : hooks.named()) register_hook_point(name, *point);
    register_hook_point("hook_rot_q", hook_rot_q);
    register_hook_point("hook_rot_k", hook_rot_k);
}

Tensor LlamaAttention::rotate(const Tensor& x, int64_t heads_in_x, int64_t start) const {
    const int64_t B = x.size(0), T = x.size(1);
    return reshape(rotary(reshape(x, {B, T, heads_in_x, head_width()}), start, rope_theta, RotaryLayout::halves),
                   x.shape());
}

Tensor LlamaAttention::forward(const Tensor& x) {
    check(x.dim() == 3, "LlamaAttention: input must be (B, T, C), got {}", shape_str(x.shape()));
    // decoding: these T positions follow the L cached (the cache advances once every head has read them)
    const int64_t start = cache_ ? cache_->length() : 0;
    const Tensor q = hook_heads(hook_rot_q, rotate(hook_heads(hooks.q, q_proj(x), n_head), n_head, start), n_head);
    const Tensor k =
        hook_heads(hook_rot_k, rotate(hook_heads(hooks.k, k_proj(x), n_kv_head), n_kv_head, start), n_kv_head);
    const Tensor v = hook_heads(hooks.v, v_proj(x), n_kv_head);  // q: (B, T, n_head H); k, v: (B, T, n_kv_head H)
    record_.record(x, q, k, cache_ != nullptr);                  // what the heads show
    const float factor = 1.0f / std::sqrt(static_cast<float>(head_width()));
    return o_proj(causal_heads(q, k, v, n_head, n_kv_head, factor, cache_, hooks, outputs_));  // (B, T, C)
}

LlamaHead::LlamaHead(const LlamaAttention& attention, int64_t index)
    : SlicedHead(attention.record_, index), attention_(attention) {}
Tensor LlamaHead::queries(const Tensor& x) const {
    return query_part(attention_.rotate(attention_.q_proj(x), attention_.n_head, 0));
}
Tensor LlamaHead::keys(const Tensor& x) const {
    return key_part(attention_.rotate(attention_.k_proj(x), attention_.n_kv_head, 0));
}
Tensor LlamaHead::values(const Tensor& x) const { return key_part(attention_.v_proj(x)); }
float LlamaHead::divisor() const { return std::sqrt(static_cast<float>(attention_.head_width())); }

// --- block and model ---------------------------------------------------------------------------------

LlamaBlock::LlamaBlock(const LlamaOptions& opts, Generator& gen)
    : self_attn(opts, gen),
      mlp({.n_embd = opts.n_embd, .hidden = opts.ffn_hidden}, gen),
      input_layernorm({.dim = opts.n_embd, .eps = opts.norm_eps}),
      post_attention_layernorm({.dim = opts.n_embd, .eps = opts.norm_eps}) {
    // Hugging Face's LlamaDecoderLayer's order, so the parameters list as its state_dict does
    register_module("self_attn", self_attn, "attn");
    register_module("mlp", mlp);
    register_module("input_layernorm", input_layernorm, "ln1");
    register_module("post_attention_layernorm", post_attention_layernorm, "ln2");
    for (auto [name, point] : residual.named()) register_hook_point(name, *point);
}

Tensor LlamaBlock::forward(const Tensor& input, bool last_row) {
    return residual.flow(
        input, [&](const Tensor& x) { return self_attn(input_layernorm(x)); },
        [&](const Tensor& x) { return mlp(post_attention_layernorm(x)); }, last_row);
}

Llama::Llama(LlamaOptions opts, Generator& gen)
    : options(checked(opts)),
      embed_tokens({.num = opts.vocab, .dim = opts.n_embd}, gen),
      norm({.dim = opts.n_embd, .eps = opts.norm_eps}) {
    register_module("embed_tokens", embed_tokens);
    register_hook_point("hook_embed", hook_embed);
    for (int64_t l = 0; l < opts.n_layer; ++l) {
        layers.push_back(std::make_unique<LlamaBlock>(opts, gen));
        register_module(fmt::format("layers.{}", l), *layers.back(), fmt::format("blocks.{}", l));
    }
    register_module("norm", norm, "ln_final");
    if (!opts.tied_embeddings) {
        lm_head = std::make_unique<Linear>(LinearOptions{.in = opts.n_embd, .out = opts.vocab, .bias = false}, gen);
        register_module("lm_head", *lm_head);
    }
    init_gpt2_style(
        *this, gen, opts.n_layer,
        [](const std::string& name) { return name.ends_with("o_proj.weight") || name.ends_with("down_proj.weight"); },
        [](const std::string& name) { return name.find("norm") != std::string::npos; });
}

Tensor Llama::forward(std::span<const int64_t> ids, int64_t B, int64_t T) {
    check_ids(ids, B, T, "Llama");
    return transformer_forward(*this, ids, B, T);
}

Tensor Llama::embed_stream(std::span<const int64_t> ids, int64_t B, int64_t T) {
    return hook_embed(embed_tokens(ids, Shape{B, T}));  // (B, T, C); the positions are in the rotations
}
Tensor Llama::unembed_stream(const Tensor& x) {
    return lm_head ? (*lm_head)(x) : matmul_transposed(x, embed_tokens.weight);  // (B, T, C) -> (B, T, V)
}
StreamNorm Llama::stream_norm() const {
    return {.kind = StreamNorm::Kind::rms, .gain = norm.weight, .bias = {}, .eps = norm.options.eps};
}
Tensor Llama::unembedding_direction(int64_t id) const {
    if (lm_head) return slice(lm_head->weight, 1, id, id + 1).reshape({options.n_embd});  // column of (C, V)
    return slice(embed_tokens.weight, 0, id, id + 1).reshape({options.n_embd});           // row of (V, C)
}

}  // namespace nn
