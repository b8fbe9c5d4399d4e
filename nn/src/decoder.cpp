// The decoders of nn/decoder.h. The cached ones run the models' arithmetic one row at a time on raw
// float buffers made at construction (autograd::kernels' small gemm path for the products): no tensor, no graph and
// no allocation per token. Each step mirrors its model's forward() in nn/src/models.cpp (gpt2: nn/src/gpt2.cpp); the tests
// (tests/test_decoder.cpp) hold the two to float rounding at every position.
//
// Shape legend: T time (position t, window length t + 1), C n_embd, H head width, Hk query/key width
// (H, or C for a compare_raw head), V vocab.
#include "nn/decoder.h"

#include <autograd/kernels.h>
#include <autograd/ops.h>
#include <autograd/threads.h>

#include <algorithm>
#include <cmath>

#include "nn/gpt2.h"
#include "nn/models.h"

namespace nn {

using namespace autograd;

namespace {

const float* values(const Tensor& t) { return t.data().data(); }

// The exact GELU, x Phi(x), in place over n values: the FeedForward's activation, a row or a refill's rows.
void gelu_in_place(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

// GPT-2's GELU, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), in place over n values (the gpt2
// kind's MLP), written as x sigmoid(2u) = x / (1 + exp(-2u)) as autograd's gelu_tanh does: an exp is
// several times cheaper than a tanh (which took a third of a small model's token)
void gelu_tanh_in_place(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        x[i] = v / (1.0f + std::exp(-1.5957691216057308f * (v + 0.044715f * v * v * v)));
    }
}

// C (1, N) = a (1, K) @ B (K, N), or B^T when trans_b: the products of one row. gemm's automatic choice
// sends a large product to the blocked path, whose packing of B costs as much as the product itself when
// A is one row; the unpacked small path reads B once. Both give the same bits.
void row_product(bool trans_b, int64_t N, int64_t K, const float* a, const float* B, float* C) {
    kernels::gemm_with(kernels::active_isa(), false, trans_b, 1, N, K, a, B, C, false, kernels::GemmPath::small);
}

// out (N) = x (K) @ table (N, K)^T: a dot product with each row of the table, read once and in place.
// row_product(true, ...) would first copy the whole table transposed: for gpt2's tied output (V, C) that
// is GPT-2 small's 154 MB token table, every token; for a head's scores, its cached keys. Rows are split
// across threads from a quarter million floats each (two cores stream the table faster than one); each
// row's sum is the same on any thread.
struct DotRows {
    const float* x;
    const float* table;
    int64_t K;
    float* out;
    void operator()(int64_t begin, int64_t end) const {
        constexpr int64_t kLanes = 16;  // independent sums, which the compiler keeps in vector registers
        for (int64_t n = begin; n < end; ++n) {
            const float* row = table + n * K;
            float partial[kLanes] = {};
            int64_t k = 0;
            for (; k + kLanes <= K; k += kLanes)
                for (int64_t j = 0; j < kLanes; ++j) partial[j] += x[k + j] * row[k + j];
            float total = 0.0f;
            for (; k < K; ++k) total += x[k] * row[k];
            for (const float p : partial) total += p;
            out[n] = total;
        }
    }
};
void dot_rows(const float* x, const float* table, int64_t N, int64_t K, float* out) {
    const DotRows rows{x, table, K, out};
    // (the body holds one reference, so parallel_for's std::function does not allocate per token)
    autograd::parallel_for(N, autograd::rows_per_thread(K, int64_t(1) << 18), [&rows](int64_t begin, int64_t end) { rows(begin, end); });
}

// w (n) = softmax(w * factor), in place: a cached row's attention weights from its scores
void softmax_scaled_in_place(float* w, int64_t n, float factor) {
    float top = -INFINITY;
    for (int64_t j = 0; j < n; ++j) top = std::max(top, w[j] *= factor);
    double total = 0.0;
    for (int64_t j = 0; j < n; ++j) total += w[j] = std::exp(w[j] - top);
    const auto inverse = static_cast<float>(1.0 / total);
    for (int64_t j = 0; j < n; ++j) w[j] *= inverse;
}

// y (K) = x (C) @ weight (C, K) + bias
void linear_row(const Linear& layer, const float* x, float* y) {
    row_product(false, layer.options.out, layer.options.in, x, values(layer.weight), y);
    if (!layer.options.bias) return;
    const float* bias = values(layer.bias);
    for (int64_t k = 0; k < layer.options.out; ++k) y[k] += bias[k];
}

// y (M, K) = x (M, C) @ weight (C, K) + bias: the rows of a refill, in one product (gemm's blocked path)
void linear_rows(const Linear& layer, const float* x, int64_t M, float* y) {
    const int64_t K = layer.options.out;
    kernels::gemm(false, false, M, K, layer.options.in, x, values(layer.weight), y, false);
    if (!layer.options.bias) return;
    const float* bias = values(layer.bias);
    for (int64_t r = 0; r < M; ++r)
        for (int64_t k = 0; k < K; ++k) y[r * K + k] += bias[k];
}

// y (C) = (x - mean) / sqrt(biased variance + eps) * gain + bias, as autograd::layer_norm
void layer_norm_row(const LayerNorm& norm, const float* x, float* y) {
    const int64_t C = norm.options.dim;
    double mean = 0.0, variance = 0.0;
    for (int64_t c = 0; c < C; ++c) mean += x[c];
    mean /= static_cast<double>(C);
    for (int64_t c = 0; c < C; ++c) variance += (x[c] - mean) * (x[c] - mean);
    const double inverse = 1.0 / std::sqrt(variance / static_cast<double>(C) + norm.options.eps);
    const float *gain = values(norm.gain), *bias = values(norm.bias);
    for (int64_t c = 0; c < C; ++c) y[c] = static_cast<float>((x[c] - mean) * inverse) * gain[c] + bias[c];
}

// x (C) = token row + position row
void embed_row(const PositionalModel& model, int64_t id, int64_t t, float* x) {
    const int64_t C = model.token.options.dim;
    const float* token = values(model.token.weight) + id * C;
    const float* position = values(model.position.weight) + t * C;
    for (int64_t c = 0; c < C; ++c) x[c] = token[c] + position[c];
}

// One causal Head with its cache: the keys (block, Hk) and values (block, H) of positions 0 .. t.
class HeadCache {
public:
    HeadCache(const Head& head, int64_t block)
        : head_(head),
          key_width_(head.options.compare_raw ? head.options.n_embd : head.options.head_size),
          keys_(static_cast<size_t>(block * key_width_)),
          values_(static_cast<size_t>(block * head.options.head_size)),
          query_(static_cast<size_t>(block * key_width_)),
          weights_(static_cast<size_t>(block)) {
        check(head.options.causal, "cached decoder: a head without the causal mask reads later positions; no cache is exact");
    }

    // x (C) at position t -> out (H): row t of the head's attention, reading the cached rows 0 .. t - 1
    void step(const float* x, int64_t t, float* out) { rows(x, 1, t, out, 0); }

    // x (M, C) at positions t0 .. t0 + M - 1 -> out rows (M, H), `out_stride` floats apart: the keys and
    // values of all M rows in one product each, then row by row the attention, each row reading the rows
    // before it (the mask is the loop bound: positions after a row do not exist for it yet).
    void rows(const float* x, int64_t M, int64_t t0, float* out, int64_t out_stride) {
        const int64_t H = head_.options.head_size, Hk = key_width_, C = head_.options.n_embd;
        float* keys = keys_.data() + t0 * Hk;
        float* queries = query_.data();
        const auto product = [M](const Linear& layer, const float* in, float* y) {
            if (M == 1) linear_row(layer, in, y);
            else linear_rows(layer, in, M, y);
        };
        if (head_.options.compare_raw) {
            std::copy(x, x + M * C, queries);
            std::copy(x, x + M * C, keys);
        } else {
            product(head_.query, x, queries);
            product(head_.key, x, keys);
        }
        product(head_.value, x, values_.data() + t0 * H);
        const float factor = head_.options.scaled ? 1.0f / std::sqrt(static_cast<float>(Hk)) : 1.0f;
        float* w = weights_.data();
        for (int64_t r = 0; r < M; ++r) {
            const int64_t t = t0 + r;
            row_product(true, t + 1, Hk, queries + r * Hk, keys_.data(), w);  // scores (t + 1) = q K^T
            softmax_scaled_in_place(w, t + 1, factor);
            row_product(false, H, t + 1, w, values_.data(), out + r * out_stride);  // (t + 1) @ (t + 1, H)
        }
    }

private:
    const Head& head_;
    int64_t key_width_;
    std::vector<float> keys_, values_, query_, weights_;
};

// MultiHeadAttention with a HeadCache per head: x (C) at position t -> y (C)
class MultiHeadCache {
public:
    MultiHeadCache(const MultiHeadAttention& attention, int64_t block)
        : attention_(attention), concat_(static_cast<size_t>(block * attention.options.n_embd)) {
        for (const auto& head : attention.heads) heads_.emplace_back(*head, block);
    }
    void step(const float* x, int64_t t, float* y) { rows(x, 1, t, y); }
    // x (M, C) at positions t0 .. -> y (M, C)
    void rows(const float* x, int64_t M, int64_t t0, float* y) {
        const int64_t C = attention_.options.n_embd, H = C / attention_.options.n_head;
        for (size_t h = 0; h < heads_.size(); ++h) heads_[h].rows(x, M, t0, concat_.data() + static_cast<int64_t>(h) * H, C);
        if (M == 1) linear_row(attention_.projection, concat_.data(), y);  // dropout: none at inference
        else linear_rows(attention_.projection, concat_.data(), M, y);
    }

private:
    const MultiHeadAttention& attention_;
    std::vector<HeadCache> heads_;
    std::vector<float> concat_;  // (block, C), the heads side by side
};

// FeedForward on one row: x (C) -> y (C), through a hidden (4C)
class FeedForwardRow {
public:
    explicit FeedForwardRow(const FeedForward& ff) : ff_(ff), hidden_(static_cast<size_t>(ff.up.options.out)) {}
    void step(const float* x, float* y) {
        linear_row(ff_.up, x, hidden_.data());
        gelu_in_place(hidden_.data(), static_cast<int64_t>(hidden_.size()));
        linear_row(ff_.down, hidden_.data(), y);
    }

private:
    const FeedForward& ff_;
    std::vector<float> hidden_;
};

// What every cached decoder shares: the window's length, the checks, the logits buffer. A subclass
// computes one position: step(id, t, logits) fills its caches and, when logits is not null, the (V)
// logits of the next token (a refill skips them for all but its last id).
class CachedDecoder : public Decoder {
public:
    CachedDecoder(int64_t block, int64_t vocab, const char* model) : block_(block), model_(model), logits_(static_cast<size_t>(vocab)) {}

    std::span<const float> append(std::span<const int64_t> ids) override {
        check(!ids.empty(), "{} decoder: append needs at least one id", model_);
        check(length_ + static_cast<int64_t>(ids.size()) <= block_,
              "{} decoder: appending {} ids to a window of {} goes past the block size {}", model_, ids.size(), length_, block_);
        const auto V = static_cast<int64_t>(logits_.size());
        for (size_t i = 0; i < ids.size(); ++i)
            check(ids[i] >= 0 && ids[i] < V, "{} decoder: id {} is outside the vocabulary of {}", model_, ids[i], V);
        rows(ids, length_, logits_.data());
        length_ += static_cast<int64_t>(ids.size());
        return logits_;
    }
    void clear() override { length_ = 0; }
    int64_t length() const override { return length_; }
    int64_t capacity() const override { return block_; }
    bool cached() const override { return true; }

protected:
    virtual void step(int64_t id, int64_t t, float* logits) = 0;
    // ids at positions t0 .. -> the logits after the last; a model may do the rows together (GPT does)
    virtual void rows(std::span<const int64_t> ids, int64_t t0, float* logits) {
        for (size_t i = 0; i < ids.size(); ++i) step(ids[i], t0 + static_cast<int64_t>(i), i + 1 == ids.size() ? logits : nullptr);
    }

private:
    int64_t block_, length_ = 0;
    const char* model_;
    std::vector<float> logits_;  // (V)
};

class BigramDecoder final : public CachedDecoder {
public:
    explicit BigramDecoder(const Bigram& m) : CachedDecoder(m.block_size(), m.vocab_size(), "Bigram"), m_(m) {}

private:
    void step(int64_t id, int64_t, float* logits) override {
        if (!logits) return;
        const int64_t V = m_.options.vocab;
        std::copy_n(values(m_.logits_table.weight) + id * V, V, logits);  // the table's row: nothing to cache
    }
    const Bigram& m_;
};

class AverageDecoder final : public CachedDecoder {
public:
    explicit AverageDecoder(const AverageModel& m)
        : CachedDecoder(m.block_size(), m.vocab_size(), "AverageModel"), m_(m),
          x_(static_cast<size_t>(m.options.n_embd)), sum_(x_.size()), mean_(x_.size()) {}

private:
    // the cache of a uniform average is the running sum of the rows seen
    void step(int64_t id, int64_t t, float* logits) override {
        if (t == 0) std::ranges::fill(sum_, 0.0);
        embed_row(m_, id, t, x_.data());
        for (size_t c = 0; c < x_.size(); ++c) sum_[c] += x_[c];
        if (!logits) return;
        for (size_t c = 0; c < x_.size(); ++c) mean_[c] = static_cast<float>(sum_[c] / static_cast<double>(t + 1));
        linear_row(m_.lm_head, mean_.data(), logits);
    }
    const AverageModel& m_;
    std::vector<float> x_;
    std::vector<double> sum_;
    std::vector<float> mean_;
};

class SingleHeadDecoder final : public CachedDecoder {
public:
    explicit SingleHeadDecoder(const SingleHead& m)
        : CachedDecoder(m.block_size(), m.vocab_size(), "SingleHead"), m_(m), head_(m.head, m.block_size()),
          x_(static_cast<size_t>(m.options.n_embd)), out_(static_cast<size_t>(m.head.options.head_size)) {}

private:
    void step(int64_t id, int64_t t, float* logits) override {
        embed_row(m_, id, t, x_.data());
        head_.step(x_.data(), t, out_.data());
        if (logits) linear_row(m_.lm_head, out_.data(), logits);
    }
    const SingleHead& m_;
    HeadCache head_;
    std::vector<float> x_, out_;
};

class MultiHeadDecoder final : public CachedDecoder {
public:
    explicit MultiHeadDecoder(const MultiHead& m)
        : CachedDecoder(m.block_size(), m.vocab_size(), "MultiHead"), m_(m), attention_(m.attention, m.block_size()),
          x_(static_cast<size_t>(m.options.n_embd)), y_(x_.size()), z_(x_.size()) {
        if (m.feed_forward) feed_forward_.emplace_back(*m.feed_forward);
    }

private:
    void step(int64_t id, int64_t t, float* logits) override {
        embed_row(m_, id, t, x_.data());
        attention_.step(x_.data(), t, y_.data());
        if (!logits) return;  // the feed-forward and the head read this position only
        const float* last = y_.data();
        if (!feed_forward_.empty()) {
            feed_forward_[0].step(y_.data(), z_.data());
            last = z_.data();
        }
        linear_row(m_.lm_head, last, logits);
    }
    const MultiHead& m_;
    MultiHeadCache attention_;
    std::vector<FeedForwardRow> feed_forward_;  // none or one
    std::vector<float> x_, y_, z_;
};

class GPTDecoder final : public CachedDecoder {
public:
    explicit GPTDecoder(const GPT& m)
        : CachedDecoder(m.block_size(), m.vocab_size(), "GPT"), m_(m), x_(static_cast<size_t>(m.options.n_embd)),
          normed_(x_.size()), branch_(x_.size()),
          x_rows_(static_cast<size_t>(m.block_size() * m.options.n_embd)), normed_rows_(x_rows_.size()),
          branch_rows_(x_rows_.size()), hidden_rows_(4 * x_rows_.size()) {
        for (const auto& block : m.blocks) {
            attention_.emplace_back(block->attention, m.block_size());
            feed_forward_.emplace_back(block->feed_forward);
        }
    }

private:
    void step(int64_t id, int64_t t, float* logits) override {
        const auto C = static_cast<int64_t>(x_.size());
        float *x = x_.data(), *normed = normed_.data(), *branch = branch_.data();
        embed_row(m_, id, t, x);
        for (size_t l = 0; l < m_.blocks.size(); ++l) {
            const Block& block = *m_.blocks[l];
            layer_norm_row(block.norm1, x, normed);
            attention_[l].step(normed, t, branch);
            for (int64_t c = 0; c < C; ++c) x[c] += branch[c];  // x + attention(LayerNorm(x))
            // the last block's feed-forward feeds only the logits; a refill needs the caches alone
            if (!logits && l + 1 == m_.blocks.size()) return;
            layer_norm_row(block.norm2, x, normed);
            feed_forward_[l].step(normed, branch);
            for (int64_t c = 0; c < C; ++c) x[c] += branch[c];  // x + feed_forward(LayerNorm(x))
        }
        layer_norm_row(m_.final_norm, x, normed);
        linear_row(m_.lm_head, normed, logits);
    }
    // A refill (or a prompt): the rows go through each block together, so every weight matrix is read
    // once per block for all of them (gemm's blocked path) instead of once per row.
    void rows(std::span<const int64_t> ids, int64_t t0, float* logits) override {
        const auto M = static_cast<int64_t>(ids.size()), C = static_cast<int64_t>(x_.size());
        if (M == 1) return step(ids[0], t0, logits);
        float *x = x_rows_.data(), *normed = normed_rows_.data(), *branch = branch_rows_.data(), *hidden = hidden_rows_.data();
        for (int64_t r = 0; r < M; ++r) embed_row(m_, ids[static_cast<size_t>(r)], t0 + r, x + r * C);
        for (size_t l = 0; l < m_.blocks.size(); ++l) {
            const Block& block = *m_.blocks[l];
            for (int64_t r = 0; r < M; ++r) layer_norm_row(block.norm1, x + r * C, normed + r * C);
            attention_[l].rows(normed, M, t0, branch);
            for (int64_t i = 0; i < M * C; ++i) x[i] += branch[i];
            if (l + 1 == m_.blocks.size()) break;  // the last block's feed-forward: the last row only, below
            for (int64_t r = 0; r < M; ++r) layer_norm_row(block.norm2, x + r * C, normed + r * C);
            const FeedForward& ff = block.feed_forward;
            linear_rows(ff.up, normed, M, hidden);
            gelu_in_place(hidden, M * 4 * C);
            linear_rows(ff.down, hidden, M, branch);
            for (int64_t i = 0; i < M * C; ++i) x[i] += branch[i];
        }
        if (!logits) return;
        const float* last = x + (M - 1) * C;
        std::copy(last, last + C, x_.data());
        layer_norm_row(m_.blocks.back()->norm2, x_.data(), normed_.data());
        feed_forward_.back().step(normed_.data(), branch_.data());
        for (int64_t c = 0; c < C; ++c) x_[c] += branch_[c];
        layer_norm_row(m_.final_norm, x_.data(), normed_.data());
        linear_row(m_.lm_head, normed_.data(), logits);
    }

    const GPT& m_;
    std::vector<MultiHeadCache> attention_;
    std::vector<FeedForwardRow> feed_forward_;
    std::vector<float> x_, normed_, branch_;  // (C) each: the residual stream, its norm, a branch's output
    std::vector<float> x_rows_, normed_rows_, branch_rows_, hidden_rows_;  // the same for a refill's rows, (block, C or 4C)
};

// GPT-2 (nn/gpt2.h): per layer, the keys and values of every head, (block, H) each. One code path for one
// row (a new token: the products read each weight once, gemm's small path) and for M rows (a prompt or a
// refill: gemm's blocked path, every weight read once per layer for all of them).
class GPT2Decoder final : public CachedDecoder {
public:
    explicit GPT2Decoder(const GPT2& m)
        : CachedDecoder(m.block_size(), m.vocab_size(), "GPT2"), m_(m), C_(m.options.n_embd),
          H_(m.options.n_embd / m.options.n_head) {
        const auto rows = static_cast<size_t>(m.block_size() * C_);  // (block, C)
        x_.resize(rows);
        normed_.resize(rows);
        branch_.resize(rows);
        heads_out_.resize(rows);
        qkv_.resize(3 * rows);
        hidden_.resize(4 * rows);
        weights_.resize(static_cast<size_t>(m.block_size()));
        const auto cache = static_cast<size_t>(m.options.n_layer * m.block_size() * C_);  // (L, n_head, block, H)
        keys_.resize(cache);
        values_.resize(cache);
    }

private:
    void step(int64_t id, int64_t t, float* logits) override { rows(std::span<const int64_t>(&id, 1), t, logits); }

    // ids at positions t0 .. t0 + M - 1 -> the caches, and the logits after the last (when logits is not null)
    void rows(std::span<const int64_t> ids, int64_t t0, float* logits) override {
        const auto M = static_cast<int64_t>(ids.size());
        const int64_t C = C_, block = m_.block_size();
        float *x = x_.data(), *normed = normed_.data(), *branch = branch_.data();
        const float *wte = values(m_.wte.weight), *wpe = values(m_.wpe.weight);
        for (int64_t r = 0; r < M; ++r)
            for (int64_t c = 0; c < C; ++c) x[r * C + c] = wte[ids[static_cast<size_t>(r)] * C + c] + wpe[(t0 + r) * C + c];
        for (size_t l = 0; l < m_.h.size(); ++l) {
            const GPT2Block& layer = *m_.h[l];
            for (int64_t r = 0; r < M; ++r) layer_norm_row(layer.ln_1, x + r * C, normed + r * C);
            product(layer.attn.c_attn, normed, M, qkv_.data());  // (M, 3C): q, k, v
            attend(l, M, t0, block);                              // -> heads_out_ (M, C)
            product(layer.attn.c_proj, heads_out_.data(), M, branch);
            for (int64_t i = 0; i < M * C; ++i) x[i] += branch[i];  // x + attn(ln_1(x))
            for (int64_t r = 0; r < M; ++r) layer_norm_row(layer.ln_2, x + r * C, normed + r * C);
            product(layer.mlp.c_fc, normed, M, hidden_.data());  // (M, 4C)
            if (layer.mlp.gelu_exact) gelu_in_place(hidden_.data(), M * 4 * C);
            else gelu_tanh_in_place(hidden_.data(), M * 4 * C);
            product(layer.mlp.c_proj, hidden_.data(), M, branch);
            for (int64_t i = 0; i < M * C; ++i) x[i] += branch[i];  // x + mlp(ln_2(x))
        }
        if (!logits) return;
        layer_norm_row(m_.ln_f, x + (M - 1) * C, normed);
        dot_rows(normed, wte, m_.options.vocab, C, logits);  // the tied output: x @ wte^T
    }

    static void product(const Linear& layer, const float* in, int64_t M, float* out) {
        if (M == 1) linear_row(layer, in, out);
        else linear_rows(layer, in, M, out);
    }

    // Layer l's heads for rows at t0 .. t0 + M - 1: their keys and values into the cache, then row by row
    // the attention over positions 0 .. t (the causal mask is the loop bound), into heads_out_ (M, C).
    void attend(size_t l, int64_t M, int64_t t0, int64_t block) {
        const int64_t C = C_, H = H_, n_head = C / H;
        const float factor = 1.0f / m_.h[l]->attn.heads[0]->divisor();
        float* w = weights_.data();
        for (int64_t h = 0; h < n_head; ++h) {
            float* keys = keys_.data() + (static_cast<int64_t>(l) * n_head + h) * block * H;    // (block, H)
            float* vals = values_.data() + (static_cast<int64_t>(l) * n_head + h) * block * H;  // (block, H)
            for (int64_t r = 0; r < M; ++r) {
                const float* row = qkv_.data() + r * 3 * C;
                std::copy_n(row + C + h * H, H, keys + (t0 + r) * H);
                std::copy_n(row + 2 * C + h * H, H, vals + (t0 + r) * H);
            }
            for (int64_t r = 0; r < M; ++r) {
                const int64_t t = t0 + r;
                dot_rows(qkv_.data() + r * 3 * C + h * H, keys, t + 1, H, w);  // scores (t + 1) = q K^T
                softmax_scaled_in_place(w, t + 1, factor);
                row_product(false, H, t + 1, w, vals, heads_out_.data() + r * C + h * H);  // (t + 1) @ (t + 1, H)
            }
        }
    }

    const GPT2& m_;
    int64_t C_, H_;
    std::vector<float> x_, normed_, branch_, heads_out_;  // (block, C) each: the residual stream, a norm, a branch, the heads side by side
    std::vector<float> qkv_, hidden_, weights_;           // (block, 3C), (block, 4C), (block): one row's attention
    std::vector<float> keys_, values_;                    // (n_layer, n_head, block, H) each: the cache
};

// The reference: the whole window through forward() at every append.
class WindowDecoder final : public Decoder {
public:
    explicit WindowDecoder(LanguageModel& model)
        : model_(model), logits_(static_cast<size_t>(model.vocab_size())) {
        ids_.reserve(static_cast<size_t>(model.block_size()));
    }
    std::span<const float> append(std::span<const int64_t> ids) override {
        check(!ids.empty(), "window decoder: append needs at least one id");
        check(length() + static_cast<int64_t>(ids.size()) <= capacity(),
              "window decoder: appending {} ids to a window of {} goes past the block size {}", ids.size(), length(), capacity());
        for (int64_t id : ids)
            check(id >= 0 && id < model_.vocab_size(), "window decoder: id {} is outside the vocabulary of {}", id, model_.vocab_size());
        ids_.insert(ids_.end(), ids.begin(), ids.end());
        NoGradGuard no_grad;
        const bool was_training = model_.is_training();
        model_.eval();
        const int64_t T = length(), V = model_.vocab_size();
        try {
            const Tensor logits = model_.forward(ids_, 1, T);  // (1, T, V)
            std::copy_n(logits.data().begin() + (T - 1) * V, V, logits_.begin());
        } catch (...) {
            ids_.resize(ids_.size() - ids.size());
            model_.train(was_training);
            throw;
        }
        model_.train(was_training);
        return logits_;
    }
    void clear() override { ids_.clear(); }
    int64_t length() const override { return static_cast<int64_t>(ids_.size()); }
    int64_t capacity() const override { return model_.block_size(); }
    bool cached() const override { return false; }

private:
    LanguageModel& model_;
    std::vector<int64_t> ids_;
    std::vector<float> logits_;  // (V)
};

}  // namespace

std::unique_ptr<Decoder> window_decoder(LanguageModel& model) { return std::make_unique<WindowDecoder>(model); }

std::unique_ptr<Decoder> LanguageModel::cached_decoder() { return window_decoder(*this); }
std::unique_ptr<Decoder> Bigram::cached_decoder() { return std::make_unique<BigramDecoder>(*this); }
std::unique_ptr<Decoder> AverageModel::cached_decoder() { return std::make_unique<AverageDecoder>(*this); }
std::unique_ptr<Decoder> SingleHead::cached_decoder() { return std::make_unique<SingleHeadDecoder>(*this); }
std::unique_ptr<Decoder> MultiHead::cached_decoder() { return std::make_unique<MultiHeadDecoder>(*this); }
std::unique_ptr<Decoder> GPT::cached_decoder() { return std::make_unique<GPTDecoder>(*this); }
std::unique_ptr<Decoder> GPT2::cached_decoder() { return std::make_unique<GPT2Decoder>(*this); }

// --- GenerationWindow ----------------------------------------------------------------------------------

GenerationWindow::GenerationWindow(std::unique_ptr<Decoder> decoder) : decoder_(std::move(decoder)) {
    check(decoder_ != nullptr, "GenerationWindow: no decoder");
    tokens_.reserve(static_cast<size_t>(decoder_->capacity()));
}

std::span<const float> GenerationWindow::start(std::span<const int64_t> context) {
    check(!context.empty(), "GenerationWindow: the context is empty; give at least one token to start from");
    const auto T = std::min<size_t>(context.size(), static_cast<size_t>(decoder_->capacity()));
    tokens_.assign(context.end() - static_cast<std::ptrdiff_t>(T), context.end());
    decoder_->clear();
    return decoder_->append(tokens_);
}

std::span<const float> GenerationWindow::push(int64_t id) {
    const int64_t block = decoder_->capacity();
    if (static_cast<int64_t>(tokens_.size()) < block) {
        tokens_.push_back(id);
        return decoder_->append(id);
    }
    // full: keep the last block / 2 tokens, now at positions 0 .., and refill the decoder from them once
    const int64_t keep = block / 2;
    std::copy(tokens_.end() - keep, tokens_.end(), tokens_.begin());
    tokens_.resize(static_cast<size_t>(keep));
    tokens_.push_back(id);
    ++refills_;
    decoder_->clear();
    return decoder_->append(tokens_);
}

}  // namespace nn
