#include "nn/tutorial/induction.h"

#include <algorithm>
#include <cmath>

#include <autograd/check.h>
#include <nn/attention.h>

namespace nn {

using autograd::check;
using autograd::Tensor;

bool InductionBatch::repeated(int64_t b, int64_t t) const {
    const int64_t* row = source.data() + b * (T + 1);
    return row[t] >= 0 && row[t + 1] >= 0;
}

InductionBatch make_induction_batch(const InductionDataOptions& o, int64_t B, autograd::Generator& gen) {
    check(o.vocab > 1 && B > 0, "make_induction_batch: vocab ({}) must be above 1 and B ({}) positive", o.vocab, B);
    check(o.min_segment >= 2 && o.min_segment <= o.max_segment && 2 * o.max_segment <= o.block + 1,
          "make_induction_batch: segments of {} to {} tokens need 2 <= min <= max and two of the longest in block + 1 "
          "= {} tokens",
          o.min_segment, o.max_segment, o.block + 1);
    const int64_t T = o.block, N = T + 1;
    InductionBatch batch{.B = B, .T = T};
    batch.inputs.resize(static_cast<size_t>(B * T));
    batch.targets.resize(static_cast<size_t>(B * T));
    batch.source.assign(static_cast<size_t>(B * N), -1);
    std::vector<int64_t> seq(static_cast<size_t>(N));
    for (int64_t b = 0; b < B; ++b) {
        for (auto& token : seq) token = gen.randint(o.vocab);
        const int64_t L = o.min_segment + gen.randint(o.max_segment - o.min_segment + 1);
        const int64_t s = gen.randint(N - 2 * L + 1);                // room for the segment and its copy after it
        const int64_t d = s + L + gen.randint(N - L - (s + L) + 1);  // d in [s + L, N - L]
        for (int64_t k = 0; k < L; ++k) {
            seq[d + k] = seq[s + k];
            batch.source[b * N + d + k] = s + k;
        }
        std::copy(seq.begin(), seq.end() - 1, batch.inputs.begin() + b * T);
        std::copy(seq.begin() + 1, seq.end(), batch.targets.begin() + b * T);
        batch.segment_start.push_back(s);
        batch.copy_start.push_back(d);
        batch.segment_length.push_back(L);
    }
    return batch;
}

std::vector<double> token_losses(const Tensor& logits, std::span<const int64_t> targets) {
    const int64_t V = logits.shape().back(), rows = logits.numel() / V;
    check(rows == static_cast<int64_t>(targets.size()), "token_losses: {} rows of logits but {} targets", rows,
          targets.size());
    const auto z = logits.data();
    std::vector<double> losses(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = z.data() + r * V;
        const double top = *std::max_element(row, row + V);
        double total = 0.0;
        for (int64_t v = 0; v < V; ++v) total += std::exp(double(row[v]) - top);
        check(targets[r] >= 0 && targets[r] < V, "token_losses: target {} outside the vocabulary of {}", targets[r], V);
        losses[r] = top + std::log(total) - double(row[targets[r]]);
    }
    return losses;
}

InductionLosses induction_losses(std::span<const double> losses, const InductionBatch& batch) {
    const int64_t B = batch.B, T = batch.T;
    check(static_cast<int64_t>(losses.size()) == B * T, "induction_losses: {} losses for a batch of {} x {}",
          losses.size(), B, T);
    double sums[4] = {}, counts[4] = {};
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
            const double loss = losses[b * T + t];
            const bool in[4] = {batch.repeated(b, t), batch.first_occurrence(b, t), t < T / 4, t >= T - T / 4};
            for (int k = 0; k < 4; ++k)
                if (in[k]) sums[k] += loss, counts[k] += 1;
        }
    const auto mean = [&](int k) { return counts[k] > 0 ? sums[k] / counts[k] : NAN; };
    return {.repeated = mean(0), .first = mean(1), .early = mean(2), .late = mean(3)};
}

namespace {
void check_attention(const Tensor& a, const char* what) {
    check(a.defined() && a.dim() == 3 && a.size(1) == a.size(2), "{}: needs (B, T, T) attention weights, got {}", what,
          a.defined() ? std::string(autograd::shape_str(a.shape())) : std::string("an undefined tensor"));
}
}  // namespace

double previous_token_score(const Tensor& attention) {
    check_attention(attention, "previous_token_score");
    const int64_t B = attention.size(0), T = attention.size(1);
    check(T >= 2, "previous_token_score: needs at least 2 positions, got {}", T);
    const auto w = attention.data();
    double total = 0.0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 1; i < T; ++i) total += w[(b * T + i) * T + i - 1];
    return total / double(B * (T - 1));
}

double prefix_matching_score(const Tensor& attention, const InductionBatch& batch) {
    check_attention(attention, "prefix_matching_score");
    const int64_t B = attention.size(0), T = attention.size(1);
    check(B == batch.B && T == batch.T,
          "prefix_matching_score: attention over {} x {} positions for a batch of {} x {}", B, T, batch.B, batch.T);
    const auto w = attention.data();
    double total = 0.0;
    int64_t count = 0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i)
            if (const int64_t src = batch.source[b * (T + 1) + i]; src >= 0) {  // input i repeats input src < i
                total += w[(b * T + i) * T + src + 1];
                ++count;
            }
    return count > 0 ? total / double(count) : NAN;
}

RepeatedTokens make_repeated_tokens(int64_t vocab, int64_t half, int64_t B, autograd::Generator& gen) {
    check(vocab > 0 && half > 0 && B > 0, "make_repeated_tokens: vocab ({}), half ({}) and B ({}) must be positive",
          vocab, half, B);
    RepeatedTokens probe{.B = B, .half = half};
    probe.ids.resize(static_cast<size_t>(B * 2 * half));
    for (int64_t b = 0; b < B; ++b) {
        int64_t* row = probe.ids.data() + b * 2 * half;
        for (int64_t i = 0; i < half; ++i) row[i] = row[half + i] = gen.randint(vocab);
    }
    return probe;
}

namespace {

// Mean attention from each position i of the second half to i - back.
double second_half_score(const Tensor& attention, int64_t half, int64_t back, const char* op) {
    check_attention(attention, op);
    const int64_t B = attention.size(0), T = attention.size(1);
    check(half > 0 && T == 2 * half, "{}: attention over {} positions is not a probe of 2 x {} tokens", op, T, half);
    const auto w = attention.data();
    double total = 0.0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = half; i < T; ++i) total += w[(b * T + i) * T + i - back];
    return total / double(B * half);
}

}  // namespace

double duplicate_token_score(const Tensor& attention, int64_t half) {
    return second_half_score(attention, half, half, "duplicate_token_score");
}
double induction_score(const Tensor& attention, int64_t half) {
    return second_half_score(attention, half, half - 1, "induction_score");
}

std::vector<HeadScores> head_scores(LanguageModel& model, const RepeatedTokens& probe) {
    check(probe.T() <= model.block_size(),
          "head_scores: a probe of 2 x {} tokens is longer than the model's block of {}", probe.half,
          model.block_size());
    autograd::NoGradGuard no_grad;
    model.eval();
    (void)model(probe.ids, probe.B, probe.T());
    std::vector<HeadScores> scores;
    for (const AttentionHead& head : attention_heads(model)) {
        const Tensor& w = head.module.last_attention();  // (B, 2 half, 2 half)
        scores.push_back({.layer = head.layer,
                          .head = head.head,
                          .name = head.name,
                          .previous_token = previous_token_score(w),
                          .duplicate_token = duplicate_token_score(w, probe.half),
                          .induction = induction_score(w, probe.half)});
    }
    return scores;
}

std::optional<int64_t> phase_change_step(std::span<const int64_t> steps, std::span<const double> losses,
                                         double min_drop) {
    check(steps.size() == losses.size(), "phase_change_step: {} steps but {} losses", steps.size(), losses.size());
    if (losses.size() < 2 || !(losses.front() - losses.back() >= min_drop)) return std::nullopt;
    const double halfway = 0.5 * (losses.front() + losses.back());
    for (size_t k = 0; k < losses.size(); ++k)
        if (losses[k] <= halfway) return steps[k];
    return std::nullopt;
}

}  // namespace nn
