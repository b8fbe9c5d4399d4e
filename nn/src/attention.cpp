#include "nn/attention.h"

#include <autograd/ops.h>

#include <algorithm>
#include <cmath>

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
            if (other.size() > holder.size() && name.size() > other.size() && name.starts_with(other) && name[other.size()] == '.')
                holder = other;
        auto layer = std::find(layers.begin(), layers.end(), holder);
        if (layer == layers.end()) layer = layers.insert(layer, holder);
        const auto index = static_cast<int64_t>(layer - layers.begin());
        const auto in_layer = std::count_if(out.begin(), out.end(), [&](const AttentionHead& h) { return h.layer == index; });
        out.push_back({index, static_cast<int64_t>(in_layer), name, *head});
    }
    return out;
}

}  // namespace nn
