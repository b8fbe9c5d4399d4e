#include "nn/tutorial/study.h"

#include <autograd/ops.h>

#include <algorithm>
#include <cmath>

namespace nn::study {

using namespace autograd;

Spread summarize(std::vector<double> values) {
    check(!values.empty(), "summarize: no values");
    std::sort(values.begin(), values.end());
    Spread s;
    s.min = values.front();
    s.max = values.back();
    const size_t n = values.size();
    s.median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
    for (double v : values) s.mean += v;
    s.mean /= static_cast<double>(n);
    return s;
}

double norm(const Tensor& t) {
    if (!t.defined()) return 0.0;
    double total = 0.0;
    for (float v : t.data()) total += double(v) * v;
    return std::sqrt(total);
}

namespace {
// Visible positions of row i: i + 1 under the causal mask, all T otherwise.
int64_t visible(int64_t i, int64_t T, bool causal) { return causal ? i + 1 : T; }
}  // namespace

SelfShare self_share(const HeadOptions& options, int64_t T, int64_t windows, Generator& gen) {
    check(T >= 2 && windows >= 1, "self_share: need T >= 2 and windows >= 1, got T {} windows {}", T, windows);
    autograd::NoGradGuard no_grad;
    Head head(options, gen);
    const Tensor x = randn({windows, T, options.n_embd}, gen);  // (B, T, C)
    head(x);
    const Tensor& w = head.last_attention();  // (B, T, T)
    std::vector<double> shares, advantages;
    for (int64_t b = 0; b < windows; ++b)
        for (int64_t i = 1; i < T; ++i) {
            const double share = w.at({b, i, i});
            shares.push_back(share);
            advantages.push_back(share * static_cast<double>(visible(i, T, options.causal)));
        }
    return {summarize(shares), summarize(advantages), shares};
}

double score_spread(int64_t width, int64_t pairs, bool divided, Generator& gen) {
    check(width >= 1 && pairs >= 2, "score_spread: need width >= 1 and pairs >= 2, got {} and {}", width, pairs);
    autograd::NoGradGuard no_grad;
    const Tensor q = randn({pairs, 1, width}, gen);  // (pairs, 1, width)
    const Tensor k = randn({pairs, width, 1}, gen);  // (pairs, width, 1)
    Tensor scores = matmul(q, k);                    // (pairs, 1, 1): one q . k per pair
    if (divided) scores = scale(scores, 1.0f / std::sqrt(static_cast<float>(width)));
    const Tensor centered = scores - mean(scores);
    return std::sqrt(static_cast<double>(sum(centered * centered).item()) / static_cast<double>(pairs - 1));
}

Saturation saturation(int64_t width, bool divided, int64_t T, int64_t trials, Generator& gen) {
    check(width >= 1 && T >= 2 && trials >= 1, "saturation: need width >= 1, T >= 2 and trials >= 1, got {}, {}, {}",
          width, T, trials);
    std::vector<double> largest, row_gradient, grad_query, grad_key;
    double entropy = 0.0;
    for (int64_t trial = 0; trial < trials; ++trial) {
        Head head({.n_embd = width, .head_size = width, .scaled = divided}, gen);
        // Weights N(0, 1/C): a row of N(0, 1) entries maps to q, k and v entries of variance 1.
        const float init_std = 1.0f / std::sqrt(static_cast<float>(width));
        for (Linear* layer : {&head.query, &head.key, &head.value})
            for (float& v : layer->weight.data()) v = gen.normal(0.0f, init_std);
        const Tensor x = randn({1, T, width}, gen);  // (1, T, C)
        const Tensor out = head(x);                  // (1, T, H)
        // Upstream std 1/sqrt(H) gives dL/d(shares) = upstream V^T unit variance at every width, so
        // what changes with width is the softmax alone.
        const Tensor upstream = randn(out.shape(), gen, 0.0f, 1.0f / std::sqrt(static_cast<float>(width)));
        sum(out * upstream).backward();
        grad_query.push_back(norm(head.query.weight.grad()));
        grad_key.push_back(norm(head.key.weight.grad()));

        const Tensor& w = head.last_attention();  // (1, T, T)
        for (int64_t i = 1; i < T; ++i) {
            const AttentionStats row =
                attention_row_stats(w.data().subspan(static_cast<size_t>(i * T), static_cast<size_t>(i + 1)));
            largest.push_back(row.largest_share);
            entropy += row.entropy;
        }
        const std::vector<double> rows = row_gradients(head.last_scores().grad());  // of (1, T, T)
        row_gradient.insert(row_gradient.end(), rows.begin(), rows.end());
    }
    Saturation result;
    result.width = width;
    result.divided = divided;
    result.largest_share = summarize(largest);
    result.entropy = entropy / static_cast<double>(largest.size());
    result.row_gradient = summarize(row_gradient);
    result.flat_rows = flat_share(row_gradient);
    result.grad_query = summarize(grad_query).median;
    result.grad_key = summarize(grad_key).median;
    return result;
}

std::vector<double> row_gradients(const Tensor& dscores) {
    check(dscores.dim() == 3 && dscores.size(1) == dscores.size(2), "row_gradients: dscores must be (B, T, T), got {}",
          shape_str(dscores.shape()));
    const int64_t B = dscores.size(0), T = dscores.size(1);
    const std::span<const float> g = dscores.data();
    std::vector<double> norms;
    norms.reserve(static_cast<size_t>(B * std::max<int64_t>(T - 1, 0)));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 1; i < T; ++i) {
            double g2 = 0.0;
            for (int64_t j = 0; j <= i; ++j) {
                const double v = g[static_cast<size_t>((b * T + i) * T + j)];
                g2 += v * v;
            }
            norms.push_back(std::sqrt(g2));
        }
    return norms;
}

double flat_share(const std::vector<double>& row_gradients) {
    check(!row_gradients.empty(), "flat_share: no rows");
    return static_cast<double>(std::ranges::count_if(row_gradients, [](double g) { return g < kFlatRowGradient; })) /
           static_cast<double>(row_gradients.size());
}

Tensor passed_back(const Tensor& weights, Generator& gen) {
    check(weights.dim() == 3 && weights.size(1) == weights.size(2), "passed_back: weights must be (B, T, T), got {}",
          shape_str(weights.shape()));
    Tensor scores = [&] {
        NoGradGuard no_grad;
        return log(weights);  // softmax(log w) = w; a weight of 0 (the mask, or one too small for a float) is -inf
    }();
    scores.requires_grad_();
    sum(softmax(scores, -1) * randn(weights.shape(), gen)).backward();
    return scores.grad();
}

// --- the key-value cache ---------------------------------------------------------------------------------

PrefixStability prefix_stability(const HeadOptions& options, int64_t prefix, int64_t T, Generator& gen) {
    check(prefix >= 1 && prefix < T, "prefix_stability: prefix {} must be in [1, {})", prefix, T);
    NoGradGuard no_grad;
    Head head(options, gen);
    const Tensor x = randn({1, T, options.n_embd}, gen);    // (1, T, C)
    const Tensor out_long = head(x);                        // (1, T, H)
    const Tensor w_long = head.last_attention();            // (1, T, T)
    const Tensor out_prefix = head(x.slice(1, 0, prefix));  // (1, P, H)
    const Tensor& w_prefix = head.last_attention();         // (1, P, P)
    PrefixStability s;
    for (int64_t i = 0; i < prefix; ++i) {
        for (int64_t j = 0; j < prefix; ++j)
            s.attention_change =
                std::max(s.attention_change, double(std::abs(w_long.at({0, i, j}) - w_prefix.at({0, i, j}))));
        for (int64_t j = prefix; j < T; ++j)
            s.weight_on_later = std::max(s.weight_on_later, double(w_long.at({0, i, j})));
        for (int64_t h = 0; h < out_long.size(2); ++h)
            s.output_change =
                std::max(s.output_change, double(std::abs(out_long.at({0, i, h}) - out_prefix.at({0, i, h}))));
    }
    return s;
}

CacheCost cache_cost(int64_t n_embd, int64_t n_layer, int64_t vocab, int64_t T) {
    check(n_embd > 0 && n_layer > 0 && vocab > 0 && T > 0,
          "cache_cost: n_embd {}, n_layer {}, vocab {} and window {} must be positive", n_embd, n_layer, vocab, T);
    const double C = double(n_embd), L = double(n_layer), V = double(vocab), t = double(T);
    return {.window = T,
            .uncached = L * (12 * C * C * t + C * t * (t + 1)) + C * V * t,
            .cached = L * (12 * C * C + 2 * C * t) + C * V};
}

}  // namespace nn::study
