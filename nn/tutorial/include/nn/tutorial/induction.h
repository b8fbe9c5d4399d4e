// The induction-head lab's data and measurements (examples/induction): sequences of random tokens in
// which a random segment reappears later, and the scores that say what each attention head does.
// Olsson et al., "In-context Learning and Induction Heads" (2022).
//
// Shape legend: B batch, T time (window), V vocab.
//
//     autograd::Generator gen(1);
//     nn::InductionBatch batch = nn::make_induction_batch({.vocab = 24, .block = 48}, 32, gen);
//     logits = model.forward(batch.inputs, 32, 48);
//     nn::previous_token_score(head.last_attention());           // 1 for a head that looks at i - 1
//     nn::prefix_matching_score(head.last_attention(), batch);   // 1 for an induction head
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <autograd/random.h>
#include <autograd/tensor.h>

namespace nn {

struct InductionDataOptions {
    int64_t vocab = 24;        // V, tokens drawn uniformly
    int64_t block = 48;        // T, the window (each sequence has T + 1 tokens: inputs and the next-token targets)
    int64_t min_segment = 6;   // the repeated segment's length, uniform in [min_segment, max_segment]
    int64_t max_segment = 16;
};

// B sequences of T + 1 random tokens. In each, one segment of tokens [s, s + L) reappears at [d, d + L)
// with s + L <= d: both the segment's place and the gap before its copy are random, so only looking back
// for the earlier occurrence predicts the copy, not a position. source[b * (T + 1) + j] is the position
// that token j copies (j - d + s), or -1 for a token drawn fresh.
struct InductionBatch {
    int64_t B = 0, T = 0;
    std::vector<int64_t> inputs = {}, targets = {};  // (B, T): tokens 0..T-1 and 1..T of each sequence
    std::vector<int64_t> source = {};      // (B, T + 1)
    std::vector<int64_t> segment_start = {}, copy_start = {}, segment_length = {};  // s, d, L per sequence

    // The target at (b, t) continues a repeat: input t and target t + 1 are both copies, so the token
    // after input t's earlier occurrence is the answer. (A copy's first token is not: nothing predicts it.)
    bool repeated(int64_t b, int64_t t) const;
    // The target at (b, t) is a token drawn fresh: nothing in the context predicts it (chance is log V).
    bool first_occurrence(int64_t b, int64_t t) const { return source[b * (T + 1) + t + 1] < 0; }
};
InductionBatch make_induction_batch(const InductionDataOptions& options, int64_t B, autograd::Generator& gen);

// Per-target losses -log p(target) of (B, T, V) logits, row-major (B, T). NaN-free for finite logits.
std::vector<double> token_losses(const autograd::Tensor& logits, std::span<const int64_t> targets);

struct InductionLosses {
    double repeated = 0;   // mean loss on targets that continue a repeat
    double first = 0;      // mean loss on tokens drawn fresh
    double early = 0;      // mean loss on positions [0, T / 4)
    double late = 0;       // mean loss on positions [3T / 4, T)
    double icl_score() const { return late - early; }  // negative: the model predicts better later in the context
};
InductionLosses induction_losses(std::span<const double> losses, const InductionBatch& batch);

// Mean attention from each position i >= 1 to i - 1, over a head's (B, T, T) attention weights:
// 1 for a head that always looks one step back, about 1 / (i + 1) on average for a uniform one.
double previous_token_score(const autograd::Tensor& attention);
// Mean attention from each copied input token i to the token after its earlier occurrence
// (source[i] + 1): 1 for an induction head, which finds [A] earlier and looks at the [B] that followed.
double prefix_matching_score(const autograd::Tensor& attention, const InductionBatch& batch);

// The step of the phase change: the first evaluation at which the repeated-token loss has fallen below
// halfway between its starting value and its last, if it fell by at least `min_drop` nats in all;
// nothing when it did not fall that much. steps and losses are the evaluations in order.
std::optional<int64_t> phase_change_step(std::span<const int64_t> steps, std::span<const double> losses, double min_drop = 1.0);

}  // namespace nn
