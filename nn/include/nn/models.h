// The model ladder, from the one-character model to a small GPT. Each is a Module with one options
// struct; all map a (B, T) window of token ids to (B, T, V) logits for the next token.
//
// Shape legend: B batch, T time (window), C n_embd, H head width, V vocab.
//
//     nn::GPT model({.vocab = 65, .n_embd = 128, .n_head = 4, .n_layer = 4, .block = 64});
//     Tensor logits = model.forward(ids, B, T);                    // (B, T, V)
//     Tensor loss = cross_entropy(logits, targets);                // mean over B * T rows
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <autograd/random.h>

#include "nn/attention.h"
#include "nn/decoder.h"
#include "nn/kv_cache.h"
#include "nn/layers.h"
#include "nn/model_registry.h"  // ModelConfig, ModelKind, make_model
#include "nn/transformer.h"

namespace nn {

// What every model of the ladder is: ids in, next-token logits out.
class LanguageModel : public Module {
public:
    // The one path a model is called through: forward, then the "logits" hook point and the forward hooks.
    Tensor operator()(std::span<const int64_t> ids, int64_t B, int64_t T) {
        return run_forward_hooks(hook_logits(forward(ids, B, T)));
    }
    bool runs_forward_hooks() const override { return true; }
    // ids: (B, T) row-major, each in [0, V), T <= block_size()  ->  logits (B, T, V). While caching
    // (below): B = 1, the ids are the positions cache_length() .. cache_length() + T - 1, and the logits
    // are the last position's alone, (1, 1, V).
    virtual Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) = 0;
    virtual int64_t block_size() const = 0;  // the longest window the model reads
    virtual int64_t vocab_size() const = 0;
    // Generates one token at a time (nn/decoder.h): with the model's own caches when it can_cache(),
    // else by running the whole window again (window_decoder). The model must outlive it.
    std::unique_ptr<Decoder> cached_decoder();

    // --- decoding with a cache (nn/kv_cache.h) ------------------------------------------------------
    // Whether every module of the model that mixes positions keeps what it read (a CachingModule), so
    // that a forward can continue a sequence from a ModelCache: the built-in kinds can; a model of your
    // own says so.
    virtual bool can_cache() const { return false; }
    // The forwards from now on continue `cache`'s sequence (one of this model's; nullptr: none, each
    // forward reads its whole window). nn::UsingCache does this for a scope.
    void use_cache(ModelCache* cache);
    bool caching() const { return cache_ != nullptr; }
    int64_t cache_length() const { return cache_ ? cache_->length() : 0; }

    HookPoint
        hook_logits;  // "logits": what forward returned, (B, T, V), seen when the model is called as model(ids, B, T)

protected:
    LanguageModel() { register_hook_point("logits", hook_logits); }
    void check_ids(std::span<const int64_t> ids, int64_t B, int64_t T, const char* model) const;
    // first, first + 1, ..., first + T - 1, in a buffer of the model's (reused: no allocation per call)
    std::span<const int64_t> positions(int64_t first, int64_t T) const;
    // The position of a forward's first id: cache_length() while caching, else 0. A model's forward
    // calls advance_cache(T) once every module has read the ids, and gives the logits of last_rows(x)
    // only (the last position while caching: the others' are never read).
    int64_t first_position() const { return cache_length(); }
    void advance_cache(int64_t T);
    Tensor last_rows(const Tensor& x) const;  // x: (B, T, C) -> (B, 1, C) while caching, else x
    // The forward of a model that is an nn::Transformer (`self`, this model): embed_stream, every block,
    // advance_cache, then the final norm and the unembedding of last_rows. ids: (B, T) -> logits (B, T, V).
    Tensor transformer_forward(Transformer& self, std::span<const int64_t> ids, int64_t B, int64_t T);

private:
    ModelCache* cache_ = nullptr;
    mutable std::vector<int64_t> positions_;
};

// The rungs that read positions (AverageModel, SingleHead, MultiHead, GPT): token and position
// embedding tables, registered first as "token" and "position", and their sum.
class PositionalModel : public LanguageModel {
public:
    int64_t block_size() const override { return position.options.num; }
    int64_t vocab_size() const override { return token.options.num; }
    // ids: (B, T)  ->  token + position embeddings (B, T, C), the positions from first_position()
    Tensor embed(std::span<const int64_t> ids, int64_t B, int64_t T);

    Embedding token, position;             // (V, C), (block, C)
    HookPoint hook_embed, hook_pos_embed;  // (B, T, C) each: the token rows, the position rows

protected:
    PositionalModel(int64_t vocab, int64_t n_embd, int64_t block, autograd::Generator& gen);
};

// --- one model per rung ------------------------------------------------------------------------------

struct BigramOptions {
    int64_t vocab = 0;
};
// The one-character model: a table of next-character logits per character. Reads the last character only.
class Bigram : public LanguageModel {
public:
    explicit Bigram(BigramOptions options, autograd::Generator& gen = autograd::default_generator());
    Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    bool can_cache() const override { return true; }
    int64_t block_size() const override { return 1; }
    int64_t vocab_size() const override { return options.vocab; }

    BigramOptions options;
    Embedding logits_table;  // (V, V)
};

struct AverageModelOptions {
    int64_t vocab = 0;
    int64_t n_embd = 32;  // C
    int64_t block = 8;    // longest window
};
// "Just average them": token + position embeddings, the uniform causal average, a linear map to V.
class AverageModel : public PositionalModel {
public:
    explicit AverageModel(AverageModelOptions options, autograd::Generator& gen = autograd::default_generator());
    Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    bool can_cache() const override { return true; }

    AverageModelOptions options;
    Average average;
    Linear lm_head;
};

struct SingleHeadOptions {
    int64_t vocab = 0;
    int64_t n_embd = 32;    // C
    int64_t head_size = 0;  // H; 0 means n_embd
    int64_t block = 8;
    bool scaled = true;          // the head divides its scores by sqrt(H) (ModelConfig::scaled)
    bool record_scores = false;  // keep head.last_scores() (HeadOptions)
};
// Token + position embeddings, one causal attention Head, a linear map to V.
class SingleHead : public PositionalModel {
public:
    explicit SingleHead(SingleHeadOptions options, autograd::Generator& gen = autograd::default_generator());
    Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    bool can_cache() const override { return true; }

    SingleHeadOptions options;
    Head head;
    Linear lm_head;
};

struct MultiHeadAttentionOptions {
    int64_t n_embd = 0;    // C
    int64_t n_head = 1;    // heads of width C / n_head
    float dropout = 0.0f;  // on the projected output, in training mode
    bool scaled = true;    // each head divides its scores by sqrt(its width) (HeadOptions::scaled)
};
// Several Heads side by side, concatenated back to C channels, then projected: (B, T, C) -> (B, T, C).
// Its hook points (AttentionHookPoints: "hook_q" ... "hook_z") gather the heads' parts only when hooked.
class MultiHeadAttention : public Callable<MultiHeadAttention> {
public:
    explicit MultiHeadAttention(MultiHeadAttentionOptions options, autograd::Generator& gen);
    Tensor forward(const Tensor& x, autograd::Generator& dropout_gen);

    MultiHeadAttentionOptions options;
    std::vector<std::unique_ptr<Head>> heads;
    Linear projection;
    AttentionHookPoints hooks;

private:
    std::vector<Tensor> outputs_;  // the heads' outputs during a forward
};

struct FeedForwardOptions {
    int64_t n_embd = 0;  // C; the hidden layer is 4 C wide
    float dropout = 0.0f;
};
// Linear C -> 4C, GELU, Linear 4C -> C: (B, T, C) -> (B, T, C). The first two run as one op,
// autograd::linear_gelu, unless a forward hook watches `up` (then up's output must exist).
class FeedForward : public Callable<FeedForward> {
public:
    explicit FeedForward(FeedForwardOptions options, autograd::Generator& gen);
    Tensor forward(const Tensor& x, autograd::Generator& dropout_gen);

    FeedForwardOptions options;
    Linear up, down;
    HookPoint hook_post;  // "hook_post": the hidden activation, after the GELU (B, T, 4C)
};

struct MultiHeadOptions {
    int64_t vocab = 0;
    int64_t n_embd = 32;  // C
    int64_t n_head = 4;   // heads of width C / n_head
    int64_t block = 8;
    bool feed_forward = false;  // add a FeedForward after the attention (the lecture's next rung)
    bool scaled = true;         // each head divides its scores by sqrt(its width) (HeadOptions::scaled)
};
// Token + position embeddings, multi-head attention (and optionally a feed-forward), linear to V.
// No residuals or norms: those arrive with GPT.
class MultiHead : public PositionalModel {
public:
    explicit MultiHead(MultiHeadOptions options, autograd::Generator& gen = autograd::default_generator());
    Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    bool can_cache() const override { return true; }

    MultiHeadOptions options;
    MultiHeadAttention attention;
    std::unique_ptr<FeedForward> feed_forward;  // null unless options.feed_forward
    Linear lm_head;
};

struct GPTOptions {
    int64_t vocab = 0;
    int64_t n_embd = 64;  // C
    int64_t n_head = 4;
    int64_t n_layer = 4;
    int64_t block = 32;
    float dropout = 0.0f;  // on embeddings and on each residual branch, in training mode
    uint64_t dropout_seed = 0;
    bool gpt2_init = true;  // GPT-2's initialization; false keeps the layers' own (PyTorch's defaults)
    bool scaled = true;     // each head divides its scores by sqrt(its width) (HeadOptions::scaled)
};
// x + attention(LayerNorm(x)), then x + feed_forward(LayerNorm(x)): one block, (B, T, C) -> (B, T, C).
// Hook points, as GPT2Block's: ResidualHookPoints ("hook_resid_pre" ... "hook_resid_post"); its children's
// hook names are ln1, attn, ln2, mlp.
class Block : public Callable<Block> {
public:
    Block(const GPTOptions& options, autograd::Generator& gen);
    // last_row: the last position's output alone (nn::Transformer::run_block)
    Tensor forward(const Tensor& x, autograd::Generator& dropout_gen, bool last_row = false);

    LayerNorm norm1, norm2;
    MultiHeadAttention attention;
    FeedForward feed_forward;
    ResidualHookPoints residual;
};
// The small GPT: embeddings, n_layer blocks, a final LayerNorm, a linear head. Weights start as in
// GPT-2 (normal, std 0.02; residual projections 0.02 / sqrt(2 n_layer)) unless gpt2_init is false.
// An nn::Transformer: its forward is embed_stream, run_block for each block, then the final norm and lm_head.
class GPT : public PositionalModel, public Transformer {
public:
    explicit GPT(GPTOptions options, autograd::Generator& gen = autograd::default_generator());
    Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    bool can_cache() const override { return true; }
    int64_t n_blocks() const override { return options.n_layer; }
    int64_t heads_per_block() const override { return options.n_head; }
    Tensor embed_stream(std::span<const int64_t> ids, int64_t B, int64_t T) override;
    Tensor run_block(int64_t layer, const Tensor& x, bool last_row) override;
    Tensor normalize_stream(const Tensor& x) override { return final_norm(x); }
    Tensor unembed_stream(const Tensor& x) override { return lm_head(x); }
    StreamNorm stream_norm() const override;
    Tensor unembedding_direction(int64_t token) const override;
    float unembedding_bias(int64_t token) const override;
    const Linear& heads_projection(int64_t layer) const override;
    autograd::Generator& dropout_generator() { return dropout_gen_; }
    const autograd::Generator& dropout_generator() const { return dropout_gen_; }

    GPTOptions options;
    std::vector<std::unique_ptr<Block>> blocks;
    LayerNorm final_norm;
    Linear lm_head;

private:
    autograd::Generator dropout_gen_;
};

}  // namespace nn
