#include "nn/models.h"

#include <autograd/ops.h>

#include <cmath>
#include <cstdlib>

namespace nn {

using namespace autograd;

void LanguageModel::check_ids(std::span<const int64_t> ids, int64_t B, int64_t T, const char* model) const {
    check(B > 0 && T > 0 && static_cast<int64_t>(ids.size()) == B * T, "{}: {} ids do not form a ({}, {}) window",
          model, ids.size(), B, T);
    check(T <= block_size(), "{}: window of {} is longer than the block size {}", model, T, block_size());
    check(!cache_ || (B == 1 && cache_->length() + T <= cache_->capacity()),
          "{}: while caching, a forward continues one sequence within the cache's {} positions; got ({}, {}) after {}",
          model, cache_ ? cache_->capacity() : 0, B, T, cache_length());
    for (size_t i = 0; i < ids.size(); ++i)
        check(ids[i] >= 0 && ids[i] < vocab_size(), "{}: id {} at position {} is outside the vocabulary of {}", model,
              ids[i], i, vocab_size());
}

// --- decoding with a cache ----------------------------------------------------------------------------

void LanguageModel::use_cache(ModelCache* cache) {
    check(!cache || cache->model_ == this, "use_cache: the cache was made for another model");
    if (cache == cache_) return;
    if (cache_)  // (the modules found when the cache was made: no walk of the model per token)
        for (CachingModule* m : cache_->modules_) m->use_cache(nullptr);
    cache_ = cache;
    if (cache)
        for (size_t i = 0; i < cache->modules_.size(); ++i) cache->modules_[i]->use_cache(&cache->caches_[i]);
}

void LanguageModel::advance_cache(int64_t T) {
    if (cache_) cache_->length_ += T;
}

std::span<const int64_t> LanguageModel::positions(int64_t first, int64_t T) const {
    if (positions_.size() < static_cast<size_t>(block_size())) {
        positions_.resize(static_cast<size_t>(block_size()));
        for (size_t t = 0; t < positions_.size(); ++t) positions_[t] = static_cast<int64_t>(t);
    }
    return std::span<const int64_t>(positions_).subspan(static_cast<size_t>(first), static_cast<size_t>(T));
}

Tensor LanguageModel::transformer_forward(Transformer& self, std::span<const int64_t> ids, int64_t B, int64_t T) {
    Tensor x = self.embed_stream(ids, B, T);  // (B, T, C)
    for (int64_t l = 0; l < self.n_blocks(); ++l) x = self.run_block(l, x, false);
    advance_cache(T);
    return self.unembed_stream(self.normalize_stream(last_rows(x)));  // (B, T, V)
}

Tensor LanguageModel::last_rows(const Tensor& x) const {
    return caching() && x.size(1) > 1 ? x.slice(1, x.size(1) - 1, x.size(1)) : x;
}

// --- PositionalModel ---------------------------------------------------------------------------------

PositionalModel::PositionalModel(int64_t vocab, int64_t n_embd, int64_t block, Generator& gen)
    : token({.num = vocab, .dim = n_embd}, gen), position({.num = block, .dim = n_embd}, gen) {
    register_module("token", token);
    register_module("position", position);
    register_hook_point("hook_embed", hook_embed);
    register_hook_point("hook_pos_embed", hook_pos_embed);
}

Tensor PositionalModel::embed(std::span<const int64_t> ids, int64_t B, int64_t T) {
    Tensor rows = position(positions(first_position(), T), Shape{T});  // (T, C)
    // the hook sees them as TransformerLens shows them, (B, T, C): each batch row's, the same bits
    if (hook_pos_embed.hooked()) rows = hook_pos_embed(rows + zeros({B, T, rows.size(1)}));
    return hook_embed(token(ids, Shape{B, T})) + rows;  // (B, T, C) + (T, C)
}

// --- Bigram ------------------------------------------------------------------------------------------

Bigram::Bigram(BigramOptions opts, Generator& gen)
    : options(opts), logits_table({.num = opts.vocab, .dim = opts.vocab}, gen) {
    register_module("logits_table", logits_table);
}

Tensor Bigram::forward(std::span<const int64_t> ids, int64_t B, int64_t T) {
    // Reads each position's own character only, so any window length works.
    check(B > 0 && T > 0 && static_cast<int64_t>(ids.size()) == B * T, "Bigram: {} ids do not form a ({}, {}) window",
          ids.size(), B, T);
    check(!caching() || B == 1, "Bigram: while caching, a forward continues one sequence; got B = {}", B);
    advance_cache(T);
    const std::span<const int64_t> read = caching() ? ids.last(1) : ids;         // (the last id's logits alone)
    return logits_table(read, Shape{B, static_cast<int64_t>(read.size()) / B});  // (B, T, V)
}

// --- AverageModel --------------------------------------------------------------------------------------

AverageModel::AverageModel(AverageModelOptions opts, Generator& gen)
    : PositionalModel(opts.vocab, opts.n_embd, opts.block, gen),
      options(opts),
      lm_head({.in = opts.n_embd, .out = opts.vocab}, gen) {
    register_module("average", average);  // (no parameters: found by the cache, and its hooks by name)
    register_module("lm_head", lm_head);
}

Tensor AverageModel::forward(std::span<const int64_t> ids, int64_t B, int64_t T) {
    check_ids(ids, B, T, "AverageModel");
    const Tensor x = average(embed(ids, B, T));  // (B, T, C)
    advance_cache(T);
    return lm_head(last_rows(x));  // (B, T, V)
}

// --- SingleHead -----------------------------------------------------------------------------------------

SingleHead::SingleHead(SingleHeadOptions opts, Generator& gen)
    : PositionalModel(opts.vocab, opts.n_embd, opts.block, gen),
      options(opts),
      head({.n_embd = opts.n_embd,
            .head_size = opts.head_size > 0 ? opts.head_size : opts.n_embd,
            .scaled = opts.scaled,
            .record_scores = opts.record_scores},
           gen),
      lm_head({.in = head.options.head_size, .out = opts.vocab}, gen) {
    register_module("head", head);
    register_module("lm_head", lm_head);
}

Tensor SingleHead::forward(std::span<const int64_t> ids, int64_t B, int64_t T) {
    check_ids(ids, B, T, "SingleHead");
    const Tensor x = head(embed(ids, B, T));  // (B, T, H)
    advance_cache(T);
    return lm_head(last_rows(x));  // (B, T, V)
}

// --- MultiHeadAttention and FeedForward ------------------------------------------------------------------

MultiHeadAttention::MultiHeadAttention(MultiHeadAttentionOptions opts, Generator& gen)
    : options(opts), projection({.in = opts.n_embd, .out = opts.n_embd}, gen) {
    check(opts.n_head > 0 && opts.n_embd > 0 && opts.n_embd % opts.n_head == 0,
          "MultiHeadAttention: n_head {} must divide n_embd {}", opts.n_head, opts.n_embd);
    for (int64_t h = 0; h < opts.n_head; ++h) {
        // record_scores off: the fused ops (causal_attention_weights, or causal_attention from
        // HeadOptions::kFlashFrom positions on); a model's heads are read through last_attention()
        heads.push_back(std::make_unique<Head>(HeadOptions{.n_embd = opts.n_embd,
                                                           .head_size = opts.n_embd / opts.n_head,
                                                           .scaled = opts.scaled,
                                                           .record_scores = false},
                                               gen));
        register_module(fmt::format("heads.{}", h), *heads.back());
    }
    register_module("projection", projection);
    for (auto [name, point] : hooks.named()) register_hook_point(name, *point);
}

Tensor MultiHeadAttention::forward(const Tensor& x, Generator& dropout_gen) {
    outputs_.clear();  // (a member: its room is reused, no allocation per forward)
    if (!hooks.any_inside_heads()) {
        for (auto& head : heads) outputs_.push_back((*head)(x));  // each (B, T, H), H = C / n_head
    } else {
        // the heads' parts gathered for the hook points, then each head's own steps on what the hooks left
        check(x.dim() == 3 && x.size(2) == options.n_embd, "MultiHeadAttention: input must be (B, T, {}), got {}",
              options.n_embd, shape_str(x.shape()));
        const int64_t n_head = options.n_head, H = options.n_embd / n_head;
        std::vector<Tensor> q, k, v;  // per head (B, T, H)
        for (auto& head : heads) {
            q.push_back(head->queries(x));
            k.push_back(head->keys(x));
            v.push_back(head->values(x));
        }
        q = split(hook_heads(hooks.q, concat(q, 2), n_head), H, 2);
        k = split(hook_heads(hooks.k, concat(k, 2), n_head), H, 2);
        v = split(hook_heads(hooks.v, concat(v, 2), n_head), H, 2);
        if (!hooks.composed()) {
            for (int64_t h = 0; h < n_head; ++h)
                outputs_.push_back(heads[h]->run_forward_hooks(heads[h]->attend(x, q[h], k[h], v[h])));
        } else {
            std::vector<Tensor> maps, values;  // per head: scores, then weights (B, T, Tk); values (B, Tk, H)
            for (int64_t h = 0; h < n_head; ++h) {
                const auto [keys, head_values] = heads[h]->read(x, k[h], v[h]);
                maps.push_back(heads[h]->scores(q[h], keys));
                values.push_back(head_values);
            }
            hook_head_maps(hooks.scores, maps);
            for (Tensor& map : maps) map = softmax(map, -1);
            hook_head_maps(hooks.pattern, maps);
            for (int64_t h = 0; h < n_head; ++h)
                outputs_.push_back(heads[h]->run_forward_hooks(heads[h]->weigh(maps[h], values[h])));
        }
    }
    const Tensor heads_out = hook_heads(hooks.z, concat(outputs_, -1), options.n_head);  // (B, T, C)
    outputs_.clear();
    return dropout(projection(heads_out), options.dropout, is_training(), dropout_gen);  // (B, T, C)
}

FeedForward::FeedForward(FeedForwardOptions opts, Generator& gen)
    : options(opts),
      up({.in = opts.n_embd, .out = 4 * opts.n_embd}, gen),
      down({.in = 4 * opts.n_embd, .out = opts.n_embd}, gen) {
    register_module("up", up);
    register_module("down", down);
    register_hook_point("hook_post", hook_post);
}

Tensor FeedForward::forward(const Tensor& x, Generator& dropout_gen) {
    // linear_gelu is up and gelu in one op, which stores no pre-activation (tested equal to the
    // composition); a forward hook on `up` is shown that pre-activation, so then they run one by one
    const bool fused = up.options.bias && !up.has_forward_hooks();
    const Tensor hidden = hook_post(fused ? linear_gelu(x, up.weight, up.bias) : gelu(up(x)));  // (B, T, 4C)
    return dropout(down(hidden), options.dropout, is_training(), dropout_gen);                  // (B, T, C)
}

// --- MultiHead -------------------------------------------------------------------------------------------

MultiHead::MultiHead(MultiHeadOptions opts, Generator& gen)
    : PositionalModel(opts.vocab, opts.n_embd, opts.block, gen),
      options(opts),
      attention({.n_embd = opts.n_embd, .n_head = opts.n_head, .scaled = opts.scaled}, gen),
      lm_head({.in = opts.n_embd, .out = opts.vocab}, gen) {
    register_module("attention", attention, "attn");
    if (opts.feed_forward) {
        feed_forward = std::make_unique<FeedForward>(FeedForwardOptions{.n_embd = opts.n_embd}, gen);
        register_module("feed_forward", *feed_forward, "mlp");
    }
    register_module("lm_head", lm_head);
}

Tensor MultiHead::forward(std::span<const int64_t> ids, int64_t B, int64_t T) {
    check_ids(ids, B, T, "MultiHead");
    Generator unused;                                           // no dropout in this model
    Tensor x = last_rows(attention(embed(ids, B, T), unused));  // (B, T, C)
    advance_cache(T);
    if (feed_forward) x = (*feed_forward)(x, unused);
    return lm_head(x);  // (B, T, V)
}

// --- GPT -----------------------------------------------------------------------------------------------

Block::Block(const GPTOptions& opts, Generator& gen)
    : norm1({.dim = opts.n_embd}),
      norm2({.dim = opts.n_embd}),
      attention({.n_embd = opts.n_embd, .n_head = opts.n_head, .dropout = opts.dropout, .scaled = opts.scaled}, gen),
      feed_forward({.n_embd = opts.n_embd, .dropout = opts.dropout}, gen) {
    register_module("norm1", norm1, "ln1");
    register_module("attention", attention, "attn");
    register_module("norm2", norm2, "ln2");
    register_module("feed_forward", feed_forward, "mlp");
    for (auto [name, point] : residual.named()) register_hook_point(name, *point);
}

Tensor Block::forward(const Tensor& input, Generator& dropout_gen, bool last_row) {
    return residual.flow(
        input, [&](const Tensor& x) { return attention(norm1(x), dropout_gen); },
        [&](const Tensor& x) { return feed_forward(norm2(x), dropout_gen); }, last_row);
}

GPT::GPT(GPTOptions opts, Generator& gen)
    : PositionalModel(opts.vocab, opts.n_embd, opts.block, gen),
      options(opts),
      final_norm({.dim = opts.n_embd}),
      lm_head({.in = opts.n_embd, .out = opts.vocab}, gen),
      dropout_gen_(opts.dropout_seed) {
    check(opts.n_layer > 0, "GPT: n_layer must be positive, got {}", opts.n_layer);
    for (int64_t l = 0; l < opts.n_layer; ++l) {
        blocks.push_back(std::make_unique<Block>(opts, gen));
        register_module(fmt::format("blocks.{}", l), *blocks.back());
    }
    register_module("final_norm", final_norm, "ln_final");
    register_module("lm_head", lm_head);
    register_generator("dropout", dropout_gen_);  // checkpoints save it as "train.rng.dropout"

    // GPT-2's initialization: weights N(0, 0.02), biases 0, and the projections that write into the
    // residual stream scaled down by sqrt(2 n_layer) so the stream's variance does not grow with depth.
    if (!opts.gpt2_init) return;
    const auto residual = [](const std::string& name) {
        return name.ends_with("projection.weight") || name.ends_with("down.weight");
    };
    const auto norm = [](const std::string& name) { return name.find("norm") != std::string::npos; };
    init_gpt2_style(*this, gen, opts.n_layer, residual, norm);
}

Tensor GPT::forward(std::span<const int64_t> ids, int64_t B, int64_t T) {
    check_ids(ids, B, T, "GPT");
    return transformer_forward(*this, ids, B, T);
}

Tensor GPT::embed_stream(std::span<const int64_t> ids, int64_t B, int64_t T) {
    return dropout(embed(ids, B, T), options.dropout, is_training(), dropout_gen_);  // (B, T, C)
}
Tensor GPT::run_block(int64_t layer, const Tensor& x, bool last_row) {
    return (*blocks.at(size_t(layer)))(x, dropout_gen_, last_row);
}
StreamNorm GPT::stream_norm() const {
    return {.kind = StreamNorm::Kind::layer,
            .gain = final_norm.gain,
            .bias = final_norm.bias,
            .eps = final_norm.options.eps};
}
Tensor GPT::unembedding_direction(int64_t id) const {
    return slice(lm_head.weight, 1, id, id + 1).reshape({options.n_embd});  // column of (C, V)
}
float GPT::unembedding_bias(int64_t id) const { return lm_head.bias.at({id}); }
const Linear& GPT::heads_projection(int64_t layer) const { return blocks.at(size_t(layer))->attention.projection; }

}  // namespace nn
