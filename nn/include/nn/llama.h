// Llama (Touvron et al. 2023) and the parts it is built from: Hugging Face's LlamaForCausalLM layer for
// layer, under its names without the "model." prefix; llama2.c's models are the same network.
//
//     nn::Llama model({.vocab = 512, .n_embd = 64, .n_head = 8, .n_kv_head = 4, .n_layer = 5,
//                      .ffn_hidden = 172, .block = 512});                       // llama2.c's stories260K
//     Tensor logits = model(ids, B, T);  // (B, T, V)
//
// Where it differs from GPT-2 (nn/gpt2.h): no position table; instead q and k are rotated by their
// position (autograd::rotary, Hugging Face's halves layout: a file in llama2.c's interleaved layout is
// carried over by autograd::rotary_permute on q_proj's and k_proj's columns). RMSNorm instead of LayerNorm,
// with no bias. The MLP is gated, SwiGLU: down(silu(gate(x)) * up(x)). Grouped-query attention: n_kv_head
// key-value heads, each read by n_head / n_kv_head query heads (1: multi-query). No Linear has a bias.
// The output is lm_head, or, tied, x @ embed_tokens^T (autograd::matmul_transposed), as GPT-2's.
//
// Parameters, in Hugging Face's order and under its names:
//   embed_tokens.weight (V, C),
//   layers.N.self_attn.q_proj.weight (C, n_head H), layers.N.self_attn.{k,v}_proj.weight (C, n_kv_head H),
//   layers.N.self_attn.o_proj.weight (n_head H, C), layers.N.mlp.{gate,up}_proj.weight (C, F),
//   layers.N.mlp.down_proj.weight (F, C), layers.N.input_layernorm.weight (C),
//   layers.N.post_attention_layernorm.weight (C), norm.weight (C), lm_head.weight (C, V) unless tied.
// A Linear's weight is (in, out) (nn/layers.h): torch.nn.Linear's transpose, so file readers transpose.
//
// Initialization: GPT-2's (nn::init_gpt2_style): every weight and the token table N(0, 0.02), the
// projections into the residual stream (o_proj, down_proj) N(0, 0.02 / sqrt(2 n_layer)), the norms 1.
// (Hugging Face's LlamaPreTrainedModel draws all of them N(0, 0.02); llama2.c's train.py scales wo and w3.)
//
// Shape legend: B batch, T time, C n_embd, H head width (C / n_head), F ffn_hidden, V vocab.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include <autograd/random.h>

#include "nn/attention.h"
#include "nn/layers.h"
#include "nn/models.h"
#include "nn/transformer.h"

namespace nn {

struct LlamaOptions {  // the defaults: llama2.c's stories15M
    int64_t vocab = 32000;
    int64_t n_embd = 288;   // C ("dim")
    int64_t n_head = 6;     // query heads of H = C / n_head (even: rotary turns pairs)
    int64_t n_kv_head = 6;  // key-value heads; divides n_head (n_head: one each; 1: multi-query)
    int64_t n_layer = 6;
    int64_t ffn_hidden = 768;  // F, the MLP's hidden width ("hidden_dim", "intermediate_size")
    int64_t block = 256;       // the longest window ("max_seq_len", "max_position_embeddings")
    float rope_theta = 10000.0f;
    float norm_eps = 1e-5f;
    bool tied_embeddings = true;  // no lm_head: the logits are x @ embed_tokens^T
};

struct RMSNormOptions {
    int64_t dim = 0;  // C, the normalized (last) dim
    float eps = 1e-5f;
};

// x / sqrt(mean(x^2) + eps) * weight over the last dim (autograd::rms_norm): Llama's norm, no centering
// and no bias.
class RMSNorm : public Callable<RMSNorm> {
public:
    explicit RMSNorm(RMSNormOptions options);
    Tensor forward(const Tensor& x);  // x: (..., C) -> (..., C)

    RMSNormOptions options;
    Tensor weight;              // (C), ones
    HookPoint hook_normalized;  // (..., C): the output, scaled (TransformerLens's name)
};

struct SwiGLUOptions {
    int64_t n_embd = 0;  // C
    int64_t hidden = 0;  // F
};

// The gated MLP: down_proj(silu(gate_proj(x)) * up_proj(x)), no biases: (B, T, C) -> (B, T, C).
class SwiGLU : public Callable<SwiGLU> {
public:
    SwiGLU(SwiGLUOptions options, autograd::Generator& gen);
    Tensor forward(const Tensor& x);

    SwiGLUOptions options;
    Linear gate_proj, up_proj, down_proj;  // (C, F), (C, F), (F, C)
    HookPoint hook_post;                   // "hook_post": the hidden activation silu(gate) * up, (B, T, F)
};

class LlamaAttention;

// One query head of a LlamaAttention as the inspect tools read it (nn::InspectableHead, through
// nn::SlicedHead): its columns of q_proj and its key-value head's of k_proj and v_proj, q and k rotated
// to positions 0 .. T - 1, so that softmax(causal_mask(Q K^T / sqrt(H))) V is what the forward computed.
class LlamaHead : public SlicedHead {
public:
    LlamaHead(const LlamaAttention& attention, int64_t index);
    Tensor queries(const Tensor& x) const override;  // x: (B, T, C) -> (B, T, H), each
    Tensor keys(const Tensor& x) const override;
    Tensor values(const Tensor& x) const override;
    float divisor() const override;  // sqrt(H)

private:
    const LlamaAttention& attention_;
};

// Grouped-query causal attention: q, k, v projections, rotary positions on q and k, the causal heads
// (nn::causal_heads: query head h reads key-value head h / (n_head / n_kv_head)), o_proj:
// (B, T, C) -> (B, T, C). With a cache (nn/kv_cache.h): B = 1, x the next T positions, which are rotated
// from the cache's length on and read every position cached before them; the cache holds n_kv_head heads.
// Hook points: AttentionHookPoints ("hook_q", "hook_k", "hook_v", with n_kv_head heads for k and v; q and k
// before the rotation), then "hook_rot_q" (B, T, n_head, H) and "hook_rot_k" (B, T, n_kv_head, H) after it,
// as TransformerLens names them.
class LlamaAttention : public Callable<LlamaAttention>, public CachingModule {
public:
    LlamaAttention(const LlamaOptions& options, autograd::Generator& gen);
    Tensor forward(const Tensor& x);
    int64_t head_width() const { return q_proj.options.out / n_head; }  // H
    // x: (B, T, heads * H), heads side by side -> the same, each head rotated (autograd::rotary, halves
    // layout, theta rope_theta) as positions start .. start + T - 1
    Tensor rotate(const Tensor& x, int64_t heads, int64_t start) const;

    int64_t n_head, n_kv_head;
    float rope_theta;
    Linear q_proj, k_proj, v_proj, o_proj;          // (C, n_head H), (C, n_kv_head H) twice, (n_head H, C)
    std::vector<std::unique_ptr<LlamaHead>> heads;  // "heads.N": views for the inspect tools
    AttentionHookPoints hooks;
    HookPoint hook_rot_q, hook_rot_k;

private:
    friend class LlamaHead;
    AttentionRecord record_;       // the last forward's input, q and k (rotated): what the heads show
    std::vector<Tensor> outputs_;  // the heads' (B, T, H), reused from forward to forward (no allocation)
    KVCache* cache_ = nullptr;     // while decoding: n_kv_head heads
    void use_cache(KVCache* cache) override { cache_ = cache; }
};

// x + self_attn(input_layernorm(x)), then x + mlp(post_attention_layernorm(x)). Hook points:
// ResidualHookPoints ("hook_resid_pre" ... "hook_resid_post"); its children's hook names are ln1, attn,
// ln2, mlp, as GPT-2's blocks'.
class LlamaBlock : public Callable<LlamaBlock> {
public:
    LlamaBlock(const LlamaOptions& options, autograd::Generator& gen);
    // last_row: the last position's output alone (nn::Transformer::run_block)
    Tensor forward(const Tensor& x, bool last_row = false);

    LlamaAttention self_attn;
    SwiGLU mlp;
    RMSNorm input_layernorm, post_attention_layernorm;
    ResidualHookPoints residual;
};

// The model: embed_tokens, n_layer LlamaBlocks, norm, the output. Hook points, TransformerLens's names:
// hook_embed (B, T, C), blocks.N.* (LlamaBlock's), ln_final.hook_normalized (B, T, C), logits.
// std::invalid_argument naming the field for options that cannot make a Llama.
// An nn::Transformer: its forward is embed_stream, run_block for each block, then norm and the output.
class Llama : public LanguageModel, public Transformer {
public:
    explicit Llama(LlamaOptions options, autograd::Generator& gen = autograd::default_generator());
    Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    int64_t block_size() const override { return options.block; }
    int64_t vocab_size() const override { return options.vocab; }
    bool can_cache() const override { return true; }
    int64_t n_blocks() const override { return options.n_layer; }
    int64_t heads_per_block() const override { return options.n_head; }
    Tensor embed_stream(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    Tensor run_block(int64_t layer, const Tensor& x, bool last_row) override {
        return (*layers.at(size_t(layer)))(x, last_row);
    }
    Tensor normalize_stream(const Tensor& x) override { return norm(x); }
    Tensor unembed_stream(const Tensor& x) override;
    StreamNorm stream_norm() const override;
    Tensor unembedding_direction(int64_t token) const override;
    const Linear& heads_projection(int64_t layer) const override { return layers.at(size_t(layer))->self_attn.o_proj; }

    LlamaOptions options;
    Embedding embed_tokens;  // (V, C)
    std::vector<std::unique_ptr<LlamaBlock>> layers;
    RMSNorm norm;
    std::unique_ptr<Linear> lm_head;  // (C, V); null when tied_embeddings
    HookPoint hook_embed;             // (B, T, C): the token rows
};

}  // namespace nn
