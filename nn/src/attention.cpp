#include "nn/attention.h"

#include <autograd/ops.h>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace nn {

using namespace autograd;

Head::Head(HeadOptions opts, Generator& gen)
    : options(opts),
      query({.in = opts.n_embd, .out = opts.head_size, .bias = false}, gen),
      key({.in = opts.n_embd, .out = opts.head_size, .bias = false}, gen),
      value({.in = opts.n_embd, .out = opts.head_size, .bias = false}, gen) {
    // compare_raw has no query/key matrices: registering them would hand the optimizer dead weights
    if (!opts.compare_raw) {
        register_module("query", query);
        register_module("key", key);
    }
    register_module("value", value);
}

Tensor Head::forward(const Tensor& x) {
    check(x.dim() == 3 && x.size(2) == options.n_embd, "Head: input must be (B, T, {}), got {}", options.n_embd,
          shape_str(x.shape()));
    // q, k: (B, T, H), or (B, T, C) raw; v: (B, T, H)
    return attend(x, queries(x), keys(x), values(x));
}

Tensor Head::attend(const Tensor& x, const Tensor& q, const Tensor& k, const Tensor& v) {
    const auto [keys, values] = read(x, k, v);  // (B, Tk, H) each
    const float factor = 1.0f / divisor();
    if (cache_)  // decoding: the new positions against every one cached, themselves included
        return keys.size(1) >= options.flash_from ? causal_attention(q, keys, values, factor)
                                                  : matmul(causal_attention_weights(q, keys, factor), values);
    if (options.causal && !options.record_scores && x.size(1) >= options.flash_from) {
        // one op for the whole head that keeps no (B, T, T) weights for backward (tests/test_fused.cpp
        // proves it equal to the path below); last_attention() makes them from q and k when asked
        queries_ = q.detach();
        keys_ = k.detach();
        factor_ = factor;
        return causal_attention(q, k, v, factor);  // (B, T, H)
    }
    if (options.causal && !options.record_scores) {
        // one op instead of matmul, scale, causal_mask and softmax, which stores no scores (the memory of
        // a training step); tests/test_fused.cpp proves it equal to the composition below
        return weigh(causal_attention_weights(q, k, factor), v);
    }
    scores_ = scores(q, k);
    return weigh(softmax(scores_, -1), v);  // (B, T, H)
}

std::pair<Tensor, Tensor> Head::read(const Tensor& x, const Tensor& k, const Tensor& v) {
    attention_ = Tensor();
    scores_ = Tensor();
    queries_ = keys_ = Tensor();
    if (!cache_) {
        input_ = x.detach();  // the rows, not the graph: holding x would keep the whole forward alive
        return {k, v};
    }
    input_ = Tensor();
    auto cached = cache_->append(1, 0, k, v);  // (1, L + T, H) each
    cache_->advance(x.size(1));
    return cached;
}

Tensor Head::scores(const Tensor& q, const Tensor& keys) const {
    Tensor out = matmul(q, keys.transpose(1, 2));  // (B, T, Tk)
    if (options.scaled) out = scale(out, 1.0f / divisor());
    if (options.causal) out = causal_mask(out);  // (while decoding, the queries are the last T of Tk)
    return out;
}

Tensor Head::weigh(const Tensor& weights, const Tensor& values) {
    if (!cache_) attention_ = weights.detach();
    return matmul(weights, values);  // (B, T, Tk) @ (B, Tk, H) -> (B, T, H)
}

void Head::use_cache(KVCache* cache) {
    check(!cache || options.causal, "Head: a head without the causal mask reads later positions: no cache is exact");
    cache_ = cache;
}

Tensor Head::queries(const Tensor& x) const { return options.compare_raw ? x : query(x); }
Tensor Head::keys(const Tensor& x) const { return options.compare_raw ? x : key(x); }
Tensor Head::values(const Tensor& x) const { return value(x); }

float Head::divisor() const {
    const int64_t compared = options.compare_raw ? options.n_embd : options.head_size;  // the width of q and k
    return options.scaled ? std::sqrt(static_cast<float>(compared)) : 1.0f;
}

const Tensor& Head::last_attention() const {
    if (!attention_.defined() && queries_.defined()) {
        // made now from that forward's q and k by the op the path that keeps them runs: the same bits
        NoGradGuard no_grad;
        attention_ = causal_attention_weights(queries_, keys_, factor_);
    }
    return attention_;
}

Tensor Average::forward(const Tensor& x) {
    check(x.dim() == 3, "Average: input must be (B, T, C), got {}", shape_str(x.shape()));
    // softmax of equal (zero) scores under the causal mask: row i holds 1/(i+1) on positions 0..i
    Tensor rows = x;  // (B, Tk, C): the rows averaged, those cached before x's included
    if (rows_) {
        rows = rows_->append(1, 0, x, zeros({1, x.size(1), 1})).first;
        rows_->advance(x.size(1));
    }
    const Tensor weights = softmax(causal_mask(zeros({x.size(1), rows.size(1)})), -1);  // (T, Tk)
    return matmul(weights, rows);  // (T, Tk) @ (B, Tk, C) -> (B, T, C)
}

Tensor hook_heads(HookPoint& point, const Tensor& x, int64_t n_head) {
    if (!point.hooked()) return x;
    const int64_t B = x.size(0), T = x.size(1), width = x.size(2);
    return reshape(point(reshape(x, {B, T, n_head, width / n_head})), {B, T, width});  // (B, T, n_head, X) seen
}

void hook_head_maps(HookPoint& point, std::vector<Tensor>& maps) {
    if (!point.hooked()) return;
    const int64_t B = maps[0].size(0), T = maps[0].size(1), Tk = maps[0].size(2);
    std::vector<Tensor> stacked;
    for (const Tensor& map : maps) stacked.push_back(reshape(map, {B, 1, T, Tk}));
    const std::vector<Tensor> back = split(point(concat(stacked, 1)), 1, 1);  // (B, n_head, T, Tk) seen
    for (size_t h = 0; h < maps.size(); ++h) maps[h] = reshape(back[h], {B, T, Tk});
}

Tensor SlicedHead::query_part(const Tensor& q) const {
    const int64_t H = q.size(2) / record_.n_head;
    return slice(q, 2, index_ * H, (index_ + 1) * H);
}

Tensor SlicedHead::key_part(const Tensor& kv) const {
    const int64_t H = kv.size(2) / record_.n_kv_head, g = index_ / (record_.n_head / record_.n_kv_head);
    return slice(kv, 2, g * H, (g + 1) * H);
}

const Tensor& SlicedHead::last_attention() const {
    if (made_at_ != record_.forwards) {
        weights_ = Tensor();
        if (record_.queries.defined()) {
            // the op the forward's weights path runs, on this head's q and k: the same bits
            NoGradGuard no_grad;
            weights_ = causal_attention_weights(query_part(record_.queries), key_part(record_.keys), 1.0f / divisor());
        }
        made_at_ = record_.forwards;
    }
    return weights_;
}

Tensor causal_heads(const Tensor& q, const Tensor& k, const Tensor& v, int64_t n_head, int64_t n_kv_head, float factor,
                    KVCache* cache, AttentionHookPoints& hooks, std::vector<Tensor>& outputs) {
    check(n_head > 0 && n_kv_head > 0 && n_head % n_kv_head == 0 && q.dim() == 3 && q.size(2) % n_head == 0,
          "causal_heads: n_kv_head {} must divide n_head {}, and q {} hold n_head heads", n_kv_head, n_head,
          shape_str(q.shape()));
    const int64_t H = q.size(2) / n_head, group = n_head / n_kv_head;  // query heads per key-value head
    check(k.dim() == 3 && k.shape() == v.shape() && k.size(2) == n_kv_head * H,
          "causal_heads: k {} and v {} must be (B, T, {}): {} key-value heads of width {}", shape_str(k.shape()),
          shape_str(v.shape()), n_kv_head * H, n_kv_head, H);
    outputs.clear();
    const bool composed = hooks.composed();
    std::vector<Tensor> maps, values;  // composed: per head the scores, then the weights (B, T, Tk); values (B, Tk, H)
    for (int64_t g = 0; g < n_kv_head; ++g) {
        Tensor keys = slice(k, 2, g * H, (g + 1) * H), head_values = slice(v, 2, g * H, (g + 1) * H);  // (B, Tk, H)
        // decoding: the keys and values of every position cached, these T included (Tk = L + T)
        if (cache) std::tie(keys, head_values) = cache->append(n_kv_head, g, keys, head_values);
        for (int64_t h = g * group; h < (g + 1) * group; ++h) {
            const Tensor query = slice(q, 2, h * H, (h + 1) * H);  // (B, T, H)
            if (composed) {  // the tutorial's ops, so that scores and weights exist for the hook points
                maps.push_back(causal_mask(scale(matmul(query, keys.transpose(1, 2)), factor)));
                values.push_back(head_values);
                continue;
            }
            // as nn::Head with record_scores off: the weights op, or from kFlashFrom positions the one op
            // that keeps no (B, T, T) weights
            outputs.push_back(keys.size(1) >= HeadOptions::kFlashFrom
                                  ? causal_attention(query, keys, head_values, factor)
                                  : matmul(causal_attention_weights(query, keys, factor), head_values));
        }
    }
    if (composed) {
        hook_head_maps(hooks.scores, maps);
        for (Tensor& map : maps) map = softmax(map, -1);
        hook_head_maps(hooks.pattern, maps);
        for (int64_t h = 0; h < n_head; ++h) outputs.push_back(matmul(maps[h], values[h]));
    }
    if (cache) cache->advance(q.size(1));
    const Tensor heads_out = hook_heads(hooks.z, concat(outputs, 2), n_head);  // (B, T, n_head * H)
    outputs.clear();  // (their storage is the step's, not the caller's)
    return heads_out;
}

AttentionStats attention_row_stats(std::span<const float> row) {
    AttentionStats stats;
    for (const float share : row) {
        const double p = share;
        stats.largest_share = std::max(stats.largest_share, p);
        if (p > 0.0) stats.entropy -= p * std::log(p);
    }
    return stats;
}

AttentionStats attention_stats(const Tensor& weights) {
    const int64_t T = weights.size(-1), rows = weights.numel() / std::max<int64_t>(T, 1);
    const std::span<const float> w = weights.data();
    AttentionStats mean;
    for (int64_t r = 0; r < rows; ++r) {
        const AttentionStats row = attention_row_stats(w.subspan(static_cast<size_t>(r * T), static_cast<size_t>(T)));
        mean.entropy += row.entropy;
        mean.largest_share += row.largest_share;
    }
    mean.entropy /= double(rows);
    mean.largest_share /= double(rows);
    return mean;
}

std::vector<AttentionHead> attention_heads(const Module& model) {
    const auto modules = model.named_modules();
    std::vector<AttentionHead> out;
    std::vector<std::string> layers;  // the module holding each layer's heads, by name
    for (const auto& [name, module] : modules) {
        const auto* head = dynamic_cast<const InspectableHead*>(module);
        if (!head) continue;
        // the holder: the module with the longest name that contains this one
        std::string holder;
        for (const auto& [other, _] : modules)
            if (other.size() > holder.size() && name.size() > other.size() && name.starts_with(other) &&
                name[other.size()] == '.')
                holder = other;
        auto layer = std::find(layers.begin(), layers.end(), holder);
        if (layer == layers.end()) layer = layers.insert(layer, holder);
        const auto index = static_cast<int64_t>(layer - layers.begin());
        const auto in_layer =
            std::count_if(out.begin(), out.end(), [&](const AttentionHead& h) { return h.layer == index; });
        out.push_back({index, static_cast<int64_t>(in_layer), name, *head});
    }
    return out;
}

}  // namespace nn
