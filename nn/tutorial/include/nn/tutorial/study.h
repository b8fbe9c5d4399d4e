// The tutorial's measurements, as functions: the lab prints them, the tests assert them, and the
// inspection tools reuse them. Every number comes out of the library's own ops and graph.
//
// Shape legend: B batch (here: independent windows), T window length, C row width, H head width.
// "Everyday size" rows have entries drawn from N(0, 1), as the tutorial assumes.
#pragma once

#include <vector>

#include <autograd/random.h>

#include "nn/attention.h"

namespace nn::study {

// Summary of a set of numbers.
struct Spread {
    double min = 0, median = 0, max = 0, mean = 0;
};
Spread summarize(std::vector<double> values);

// How much attention each looking row (every row but the first, which can only see itself) keeps
// for its own position, over `windows` random windows of T everyday-size rows of width C passed
// through a head built from `options`. `advantage` is self-share times the number of visible
// positions: 1 means no preference for itself (an even split), large means self-matching.
struct SelfShare {
    Spread share;
    Spread advantage;
    std::vector<double> shares;  // every looking row's self-share
};
SelfShare self_share(const HeadOptions& options, int64_t T, int64_t windows, autograd::Generator& gen);

// Standard deviation of q . k over `pairs` random pairs of everyday-size vectors of the given
// width, raw or divided by sqrt(width). Theory: sqrt(width) raw, 1 divided.
double score_spread(int64_t width, int64_t pairs, bool divided, autograd::Generator& gen);

// What the divisor does to a head of width H (C = H) on a window of T rows, over `trials` random
// heads: everyday-size rows, and query/key/value weights drawn N(0, 1/C) so that q, k and v entries
// are everyday-size too, as the tutorial assumes. The upstream gradient on the head's output is
// random with std 1/sqrt(H), which makes the gradient arriving at the shares unit-variance at every
// width: what changes with width is then the softmax alone.
struct Saturation {
    int64_t width = 0;
    bool divided = true;
    Spread largest_share;   // largest share of each looking row
    double entropy = 0;     // mean row entropy (nats) over looking rows
    Spread row_gradient;    // per looking row, ||dL/d scores|| of that row: what came back through the softmax
    double flat_rows = 0;   // fraction of looking rows whose gradient is under kFlatRowGradient
    double grad_query = 0;  // median over trials of ||dL/dWq||
    double grad_key = 0;    // median over trials of ||dL/dWk||
};
// A row whose softmax passes back less than this is flat: healthy rows pass about 0.3.
inline constexpr double kFlatRowGradient = 1e-3;
Saturation saturation(int64_t width, bool divided, int64_t T, int64_t trials, autograd::Generator& gen);

// The row gradients of causal attention scores' gradient dL/dscores, (B, T, T): per looking row (every
// row but each window's first, which sees only itself), ||dL/dscores|| over the positions it sees.
std::vector<double> row_gradients(const autograd::Tensor& dscores);
// The fraction of them under kFlatRowGradient.
double flat_share(const std::vector<double>& row_gradients);
// What the softmax of causal attention weights (B, T, T) (any head's last_attention()) passes back to
// its scores, dL/dscores, for a gradient drawn N(0, 1) at the shares: saturation's upstream, so that
// row_gradients of it measure a trained head's own rows as the study measures random heads (gradflow
// CKPT). Runs the library's softmax backward on scores log(weights); needs grad mode on.
autograd::Tensor passed_back(const autograd::Tensor& weights, autograd::Generator& gen);

// The L2 norm of a tensor's values (0 for an undefined tensor).
double norm(const autograd::Tensor& t);

// --- the key-value cache (nn/decoder.h) ---------------------------------------------------------------

// Why a cache is exact: one window of T everyday-size rows through a head built from `options`, and the
// same window cut to its first `prefix` rows. With the causal mask, the prefix's attention rows and
// outputs are the same in both (so its keys and values need never be recomputed); without it, every row
// also reads the positions that came later, and they change.
struct PrefixStability {
    double attention_change = 0;  // max |w_long[i][j] - w_prefix[i][j]| over i, j < prefix
    double output_change = 0;     // max |out_long[i] - out_prefix[i]| over i < prefix
    double weight_on_later = 0;   // the largest share a prefix row gives to a position >= prefix
};
PrefixStability prefix_stability(const HeadOptions& options, int64_t prefix, int64_t T, autograd::Generator& gen);

// The multiply-adds that produce the next character's logits from a window of T characters, for a GPT of
// n_layer blocks of width C (n_embd) and vocabulary V: without the cache, forward() on the whole window
// (per block and position, 12 C^2 for the query, key, value and output projections and the feed-forward,
// and 2 C (i + 1) at position i for the causal scores and the weighted values; C V per position for the
// logits); with it, the same for position T - 1 alone.
struct CacheCost {
    int64_t window = 0;   // T
    double uncached = 0;  // L (12 C^2 T + C T (T + 1)) + C V T
    double cached = 0;    // L (12 C^2 + 2 C T) + C V
    double saving() const { return uncached / cached; }
};
CacheCost cache_cost(int64_t n_embd, int64_t n_layer, int64_t vocab, int64_t T);

}  // namespace nn::study
