// Attention: the causal self-attention head, and the uniform average it improves on.
//
// Shape legend: B batch, T time (window length), C channels (embedding width), H head width.
//
//     nn::Head head({.n_embd = 32, .head_size = 16});
//     Tensor out = head.forward(x);          // x: (B, T, C) -> (B, T, H)
//     head.last_attention();                 // (B, T, T): row i = how position i shared its attention
#pragma once

#include <array>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "nn/kv_cache.h"
#include "nn/layers.h"

namespace nn {

struct HeadOptions {
    int64_t n_embd = 0;        // C, width of the rows coming in
    int64_t head_size = 0;     // H, width of queries, keys and values
    bool scaled = true;        // divide the scores by sqrt(width of the vectors compared)
    bool compare_raw = false;  // "compare x with x": scores = x x^T, no query/key matrices
    bool causal = true;        // -inf above the diagonal: position i never sees j > i
    // Keep last_scores(): run the composition op by op, so the scaled and masked scores exist as a tensor
    // in the graph. Off (the models' setting), a causal head runs the fused
    // autograd::causal_attention_weights instead: the same weights and gradients to float rounding,
    // without the (B, T, T) scores and the transposed K nobody reads in training; last_scores() is then
    // undefined.
    bool record_scores = true;
    // With record_scores off, a causal head over windows of at least this many positions runs the whole
    // head, weights and weights @ V, as the one op autograd::causal_attention, which keeps no (B, T, T)
    // weights for backward (last_attention() makes them when asked). Shorter windows run
    // causal_attention_weights and matmul, faster there: see kFlashFrom.
    int64_t flash_from = kFlashFrom;
    // The fused op recomputes the weights in backward, which costs more than it saves while there are at
    // most two 64-query blocks; from 160 on it is faster and leaner (bench/README.md, "One attention head
    // as one op").
    static constexpr int64_t kFlashFrom = 160;
};

// What the inspect tools read from a head, whatever its maths: heatmap, the report page, induction and
// study read last_attention(); the tutorial's figure rebuilds the head's journey from its parts,
// weights = softmax(causal_mask(Q K^T / divisor)), out = weights V. nn::Head is one; a head of your own
// (one that learns its divisor, say) derives from this, and nn::attention_heads() finds it
// in any model, so the tools show it as they show the built-in heads.
class InspectableHead : public Module {
public:
    // The attention weights of the last forward, (B, T, T), detached from the graph; rows sum to 1.
    // Undefined before the first forward.
    virtual const Tensor& last_attention() const = 0;
    // The rows the last forward read, (B, T, C), detached from the graph.
    virtual const Tensor& last_input() const = 0;
    // The head's parts, applied to rows x: (B, T, C) -> (B, T, H) each, and what it divides Q K^T by.
    virtual Tensor queries(const Tensor& x) const = 0;
    virtual Tensor keys(const Tensor& x) const = 0;
    virtual Tensor values(const Tensor& x) const = 0;
    virtual float divisor() const = 0;
};

// What an attention layer that projects all its heads at once (nn::GPT2Attention, nn::LlamaAttention) keeps
// of its last forward for its heads to show: handles on storage the step holds anyway, detached. Nothing
// is kept while decoding (the keys are then the cache's).
struct AttentionRecord {
    Tensor input;          // (B, T, C): what reached the layer
    Tensor queries, keys;  // (B, T, n_head * H), (B, T, n_kv_head * H): as the heads compared them
    int64_t n_head = 1, n_kv_head = 1;
    int64_t forwards = 0;  // forwards seen: a head's weights made from an older one are stale
    void record(const Tensor& x, const Tensor& q, const Tensor& k, bool decoding) {
        input = decoding ? Tensor() : x.detach();
        queries = decoding ? Tensor() : q.detach();
        keys = decoding ? Tensor() : k.detach();
        ++forwards;
    }
};

// One query head of such a layer as the inspect tools read it: head `index` of the record's n_head, reading
// key-value head index / (n_head / n_kv_head). Its weights are made from the last forward's queries and keys
// when first asked, by the op the forward's weights path runs (the same bits). The layer's own head class
// derives from it and gives the parts (queries, keys, values, divisor). No parameters.
class SlicedHead : public InspectableHead {
public:
    const Tensor& last_attention() const override;  // (B, T, T)
    const Tensor& last_input() const override { return record_.input; }

protected:
    SlicedHead(const AttentionRecord& record, int64_t index) : record_(record), index_(index) {}
    Tensor query_part(const Tensor& q) const;  // q: (B, T, n_head * H) -> this head's (B, T, H)
    Tensor key_part(const Tensor& kv) const;   // k or v: (B, T, n_kv_head * H) -> its key-value head's (B, T, H)
    const AttentionRecord& record_;
    int64_t index_;

private:
    mutable Tensor weights_;        // made by last_attention()
    mutable int64_t made_at_ = -1;  // the record's forward count they were made from
};

// One head, exactly the tutorial's composition of ops:
//   Q = x Wq, K = x Wk, V = x Wv;  scores = Q K^T;  scale by 1/sqrt(H);  causal mask;  softmax;  out = w V
// (with record_scores off, Q K^T, scale, mask and softmax are the one fused op causal_attention_weights,
// and from flash_from positions on, everything after Q, K and V is the one op causal_attention).
// With compare_raw, Q = K = x (the self-matching failure) and the divisor is 1/sqrt(C).
class Head : public Callable<Head, InspectableHead>, public CachingModule {
public:
    explicit Head(HeadOptions options, autograd::Generator& gen = autograd::default_generator());
    // x: (B, T, C) -> (B, T, H). With a cache (nn/kv_cache.h): B = 1, x the next T positions, which
    // attend to every position cached before them and are cached in turn (the fused ops, whatever
    // record_scores says; last_attention(), last_scores() and last_input() are not kept).
    Tensor forward(const Tensor& x);

    // The attention weights of the last forward, (B, T, T), detached from the graph; rows sum to 1.
    // After a forward through causal_attention (see flash_from), made on the first call from that
    // forward's queries and keys (the same bits as the path that keeps them).
    const Tensor& last_attention() const override;
    // The scores of the last forward as softmax received them (scaled and masked), (B, T, T), still in
    // the graph: after backward(), last_scores().grad() is the gradient that came back through the softmax.
    // Undefined when options.record_scores is off and the head is causal (the fused path).
    const Tensor& last_scores() const { return scores_; }
    // The rows the last forward read, (B, T, C), detached from the graph (the same storage): inside a
    // model, what reached this head (for a GPT, the block's LayerNorm of the residual stream).
    const Tensor& last_input() const override { return input_; }
    // x itself with compare_raw, else x Wq and x Wk; x Wv; sqrt of the compared width, or 1 unscaled.
    Tensor queries(const Tensor& x) const override;
    Tensor keys(const Tensor& x) const override;
    Tensor values(const Tensor& x) const override;
    float divisor() const override;

    HeadOptions options;
    Linear query, key, value;  // each (C, H), no bias; query and key unused with compare_raw

private:
    friend class MultiHeadAttention;  // runs the steps below itself when its hook points need the heads' parts
    // forward after the projections: x (B, T, C) and its q (B, T, H) (or (B, T, C) raw), k, v -> (B, T, H)
    Tensor attend(const Tensor& x, const Tensor& q, const Tensor& k, const Tensor& v);
    // attend's steps. read: remembers x (or, decoding, caches k and v) -> the keys and values to attend to,
    // (B, Tk, H) each; scores: q against them, scaled and masked -> (B, T, Tk); weigh: weights (B, T, Tk)
    // (rows sum to 1) times the values -> (B, T, H), remembering the weights
    std::pair<Tensor, Tensor> read(const Tensor& x, const Tensor& k, const Tensor& v);
    Tensor scores(const Tensor& q, const Tensor& keys) const;
    Tensor weigh(const Tensor& weights, const Tensor& values);
    mutable Tensor attention_;  // made by last_attention() after a causal_attention forward
    Tensor input_;
    Tensor scores_;
    Tensor queries_, keys_;  // (B, T, H) of a causal_attention forward, for last_attention()
    float factor_ = 1.0f;
    KVCache* cache_ = nullptr;
    void use_cache(KVCache* cache) override;
};

// --- hook points of attention layers (nn::MultiHeadAttention, nn::GPT2Attention, nn::LlamaAttention) ---------
// Named as TransformerLens names them, n_head heads of width H, Tk the positions attended to (T, or L + T
// while decoding with a cache).
struct AttentionHookPoints {
    HookPoint q, k, v;  // "hook_q", "hook_k", "hook_v": (B, T, n_head, H)
    HookPoint scores;   // "hook_attn_scores": (B, n_head, T, Tk), scaled and masked (-inf), before the softmax
    HookPoint pattern;  // "hook_pattern": (B, n_head, T, Tk), the softmax of the scores; rows sum to 1
    HookPoint z;        // "hook_z": (B, T, n_head, H), each head's output before the output projection
    // The fused attention ops make neither scores nor pattern: with a hook on either, the heads run the
    // tutorial's composition (matmul, scale, mask, softmax, matmul).
    bool composed() const { return scores.hooked() || pattern.hooked(); }
    bool any_inside_heads() const { return q.hooked() || k.hooked() || v.hooked() || composed(); }
    // Each point with its name, for the attention module to register (Module::register_hook_point).
    std::array<std::pair<const char*, HookPoint*>, 6> named() {
        return {{{"hook_q", &q},
                 {"hook_k", &k},
                 {"hook_v", &v},
                 {"hook_attn_scores", &scores},
                 {"hook_pattern", &pattern},
                 {"hook_z", &z}}};
    }
};
// x: (B, T, n_head * X), the heads side by side -> the same, after point's hooks saw (and may have replaced)
// it as (B, T, n_head, X). x itself when no hook is registered.
Tensor hook_heads(HookPoint& point, const Tensor& x, int64_t n_head);
// maps: n_head of (B, T, Tk) -> the same, after point's hooks saw them as one (B, n_head, T, Tk).
void hook_head_maps(HookPoint& point, std::vector<Tensor>& maps);

// The causal heads of an attention layer after its projections (nn::GPT2Attention, nn::LlamaAttention):
// q (B, T, n_head * H) and k, v (B, T, n_kv_head * H), the heads side by side; query head h reads key-value
// head h / (n_head / n_kv_head) (grouped-query attention; n_kv_head = n_head: a pair each; 1: multi-query),
// the scores scaled by `factor` -> the heads' outputs after hooks.z, (B, T, n_head * H). Each head runs the
// fused ops (causal_attention_weights, or causal_attention from HeadOptions::kFlashFrom keys on), or, when
// hooks.composed(), the tutorial's composition with its scores and pattern passed through those points.
// With a cache: B = 1, each key-value head's T rows are appended to it (it holds n_kv_head heads) and read
// with the L before them, and it advances by T. `outputs`: the caller's room for the heads' outputs, kept so
// that decoding allocates nothing; empty on return.
Tensor causal_heads(const Tensor& q, const Tensor& k, const Tensor& v, int64_t n_head, int64_t n_kv_head, float factor,
                    KVCache* cache, AttentionHookPoints& hooks, std::vector<Tensor>& outputs);

// How spread attention is: the entropy (nats) of the shares and the largest share. A row that looks
// at one position has entropy 0 and largest share 1; one spread evenly over n positions, ln n and 1/n.
struct AttentionStats {
    double entropy = 0;
    double largest_share = 0;
};
// One row of shares (summing to 1; masked positions are 0 or left out).
AttentionStats attention_row_stats(std::span<const float> row);
// The means over every row of (..., T, T) weights (Head::last_attention()).
AttentionStats attention_stats(const Tensor& weights);

// Every attention head of a model (every InspectableHead in it), whatever its kind, in registration
// order: a layer is the module that holds heads side by side (a MultiHeadAttention; the model itself for a SingleHead), numbered
// from 0 in the order they appear, and `head` counts within it. `name` is the head's dotted module
// name ("blocks.1.attention.heads.0"). The model must outlive the references.
struct AttentionHead {
    int64_t layer = 0, head = 0;
    std::string name;
    const InspectableHead& module;
};
std::vector<AttentionHead> attention_heads(const Module& model);

// "Just average them": position i takes the plain mean of positions 0..i. No parameters.
class Average : public Callable<Average>, public CachingModule {
public:
    // x: (B, T, C) -> (B, T, C). With a cache: B = 1, x the next T positions, averaged with every row
    // cached before them.
    Tensor forward(const Tensor& x);

private:
    KVCache* rows_ = nullptr;  // the rows seen (as keys; no values are read)
    void use_cache(KVCache* cache) override { rows_ = cache; }
};

}  // namespace nn
