// GPT-2 (the registry's `gpt2` kind): Hugging Face's GPT2LMHeadModel layer for layer, with its names.
//
//     nn::GPT2 model({.vocab = 50257, .n_embd = 768, .n_head = 12, .n_layer = 12, .block = 1024});  // 124,439,808
//     Tensor logits = model.forward(ids, B, T);  // (B, T, V)
//
// Where it differs from the ladder's GPT (nn/models.h): one c_attn projection (C, 3C) with a bias makes q,
// k and v of every head (heads of C / n_head); every Linear has a bias; GELU is the tanh approximation
// (gelu_exact: the erf one, as nanoGPT's model); there is no lm_head: the logits are x @ wte^T, one gemm
// (autograd::matmul_transposed) with the token table.
//
// Parameters, in Hugging Face's order and under its names (without the "transformer." prefix):
//   wte.weight (V, C), wpe.weight (block, C),
//   h.N.ln_1.{gain,bias} (C), h.N.attn.c_attn.{weight (C, 3C), bias (3C)}, h.N.attn.c_proj.{weight (C, C), bias (C)},
//   h.N.ln_2.{gain,bias} (C), h.N.mlp.c_fc.{weight (C, 4C), bias (4C)}, h.N.mlp.c_proj.{weight (4C, C), bias (C)},
//   ln_f.{gain,bias} (C).
// A Linear's weight is (in, out), the layout of Hugging Face's Conv1D (so its c_attn.weight is (C, 3C) as
// here; torch.nn.Linear's is the transpose); a LayerNorm's scale is "gain" here, "weight" there. c_attn's
// columns are q, then k, then v, each C wide and split into heads of C / n_head in order.
//
// Dropout (0 by default): on the embeddings and on each residual branch (after c_proj), in training mode,
// drawn from the model's own generator ("dropout"); GPT-2's dropout on the attention weights is left out.
// Shape legend: B batch, T time, C n_embd, H head width (C / n_head), V vocab.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include <autograd/random.h>

#include "nn/attention.h"
#include "nn/layers.h"
#include "nn/models.h"

namespace nn {

struct GPT2Options {
    int64_t vocab = 50257;
    int64_t n_embd = 768;  // C
    int64_t n_head = 12;   // heads of C / n_head
    int64_t n_layer = 12;
    int64_t block = 1024;  // n_ctx: the positions learned
    float dropout = 0.0f;
    uint64_t dropout_seed = 0;
    bool gelu_exact = false;  // the erf GELU instead of GPT-2's tanh approximation
    bool scaled = true;  // divide the scores by sqrt(H); false drops the divisor (Hugging Face's scale_attn_weights)
};

class GPT2Attention;

// One head of a GPT2Attention as the inspect tools read it (nn::InspectableHead: heatmap, figure, the
// report page, head_scores): its slice of c_attn's q, k and v, and the weights of the attention's last
// forward, made from that forward's q and k when first asked (nn::SlicedHead). No parameters of its own.
class GPT2Head : public SlicedHead {
public:
    GPT2Head(const GPT2Attention& attention, int64_t index);
    Tensor queries(const Tensor& x) const override;  // x: (B, T, C) -> (B, T, H), each
    Tensor keys(const Tensor& x) const override;
    Tensor values(const Tensor& x) const override;
    float divisor() const override;  // sqrt(H), or 1 unscaled

private:
    const GPT2Attention& attention_;
};

// q, k, v from one c_attn projection, causal attention per head, c_proj: (B, T, C) -> (B, T, C). With a
// cache (nn/kv_cache.h): B = 1, x the next T positions, which read every position cached before them.
// Hook points: AttentionHookPoints ("hook_q" ... "hook_z"), on the T positions computed.
class GPT2Attention : public Callable<GPT2Attention>, public CachingModule {
public:
    GPT2Attention(const GPT2Options& options, autograd::Generator& gen);
    Tensor forward(const Tensor& x, autograd::Generator& dropout_gen);

    int64_t n_head;
    bool scaled;                                   // GPT2Options::scaled
    float dropout_p;                               // on the output, in training mode
    Linear c_attn, c_proj;                         // (C, 3C), (C, C)
    std::vector<std::unique_ptr<GPT2Head>> heads;  // "heads.N": views for the inspect tools
    AttentionHookPoints hooks;

private:
    friend class GPT2Head;
    AttentionRecord record_;       // the last forward's input, q and k: what the heads show
    std::vector<Tensor> outputs_;  // the heads' (B, T, H), reused from forward to forward (no allocation)
    KVCache* cache_ = nullptr;     // while decoding: n_head heads
    void use_cache(KVCache* cache) override { cache_ = cache; }
};

// c_fc, GELU (tanh, or exact), c_proj: (B, T, C) -> (B, T, C).
class GPT2MLP : public Callable<GPT2MLP> {
public:
    GPT2MLP(const GPT2Options& options, autograd::Generator& gen);
    Tensor forward(const Tensor& x, autograd::Generator& dropout_gen);

    float dropout_p;  // on the output, in training mode
    bool gelu_exact;
    Linear c_fc, c_proj;  // (C, 4C), (4C, C)
    HookPoint hook_post;  // "hook_post": the hidden activation, after the GELU (B, T, 4C)
};

// x + attn(ln_1(x)), then x + mlp(ln_2(x)). Hook points: ResidualHookPoints ("hook_resid_pre" ...
// "hook_resid_post"); its children's hook names are ln1, attn, ln2, mlp.
class GPT2Block : public Callable<GPT2Block> {
public:
    GPT2Block(const GPT2Options& options, autograd::Generator& gen);
    // last_row: the last position's output alone (nn::Transformer::run_block)
    Tensor forward(const Tensor& x, autograd::Generator& dropout_gen, bool last_row = false);

    LayerNorm ln_1;
    GPT2Attention attn;
    LayerNorm ln_2;
    GPT2MLP mlp;
    ResidualHookPoints residual;
};

// GPT-2's initialization: weights and tables N(0, 0.02), the residual projections (attn.c_proj, mlp.c_proj)
// N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorms 1 and 0. Hook points, TransformerLens's names:
// hook_embed (B, T, C), hook_pos_embed (T, C), blocks.N.* (GPT2Block's), ln_final.hook_normalized, logits.
// An nn::Transformer: its forward is embed_stream, run_block for each block, then ln_f and the tied unembedding.
class GPT2 : public LanguageModel, public Transformer {
public:
    explicit GPT2(GPT2Options options, autograd::Generator& gen = autograd::default_generator());
    Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    int64_t block_size() const override { return options.block; }
    int64_t vocab_size() const override { return options.vocab; }
    bool can_cache() const override { return true; }
    int64_t n_blocks() const override { return options.n_layer; }
    int64_t heads_per_block() const override { return options.n_head; }
    Tensor embed_stream(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    Tensor run_block(int64_t layer, const Tensor& x, bool last_row) override;
    Tensor normalize_stream(const Tensor& x) override { return ln_f(x); }
    Tensor unembed_stream(const Tensor& x) override;
    StreamNorm stream_norm() const override;
    Tensor unembedding_direction(int64_t token) const override;
    const Linear& heads_projection(int64_t layer) const override;

    GPT2Options options;
    Embedding wte, wpe;  // (V, C), (block, C)
    std::vector<std::unique_ptr<GPT2Block>> h;
    LayerNorm ln_f;
    HookPoint hook_embed, hook_pos_embed;  // (B, T, C) each: the token rows, the position rows

private:
    autograd::Generator dropout_gen_;
};

}  // namespace nn
