// The induction-head lab's data and measurements: sequences of random tokens in
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
//
// And for any model, TransformerLens's probe (random tokens repeated twice) and its three head scores:
//
//     nn::RepeatedTokens probe = nn::make_repeated_tokens(model.vocab_size(), 20, 16, gen);
//     for (const nn::HeadScores& h : nn::head_scores(model, probe)) ...   // previous-token, duplicate, induction
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <autograd/random.h>
#include <autograd/tensor.h>
#include <nn/models.h>

namespace nn {

struct InductionDataOptions {
    int64_t vocab = 24;       // V, tokens drawn uniformly
    int64_t block = 48;       // T, the window (each sequence has T + 1 tokens: inputs and the next-token targets)
    int64_t min_segment = 6;  // the repeated segment's length, uniform in [min_segment, max_segment]
    int64_t max_segment = 16;
};

// B sequences of T + 1 random tokens. In each, one segment of tokens [s, s + L) reappears at [d, d + L)
// with s + L <= d: both the segment's place and the gap before its copy are random, so only looking back
// for the earlier occurrence predicts the copy, not a position. source[b * (T + 1) + j] is the position
// that token j copies (j - d + s), or -1 for a token drawn fresh.
struct InductionBatch {
    int64_t B = 0, T = 0;
    std::vector<int64_t> inputs = {}, targets = {};  // (B, T): tokens 0..T-1 and 1..T of each sequence
    std::vector<int64_t> source = {};                // (B, T + 1)
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
    double repeated = 0;                               // mean loss on targets that continue a repeat
    double first = 0;                                  // mean loss on tokens drawn fresh
    double early = 0;                                  // mean loss on positions [0, T / 4)
    double late = 0;                                   // mean loss on positions [3T / 4, T)
    double icl_score() const { return late - early; }  // negative: the model predicts better later in the context
};
InductionLosses induction_losses(std::span<const double> losses, const InductionBatch& batch);

// Mean attention from each position i >= 1 to i - 1, over a head's (B, T, T) attention weights:
// 1 for a head that always looks one step back, about 1 / (i + 1) on average for a uniform one.
double previous_token_score(const autograd::Tensor& attention);
// Mean attention from each copied input token i to the token after its earlier occurrence
// (source[i] + 1): 1 for an induction head, which finds [A] earlier and looks at the [B] that followed.
double prefix_matching_score(const autograd::Tensor& attention, const InductionBatch& batch);

// --- any model's heads: TransformerLens's probe ---------------------------------------------------------

// The standard probe of what a head does: B sequences of `half` tokens drawn uniformly from [0, vocab),
// each followed by itself again: ids (B, 2 half), row-major.
struct RepeatedTokens {
    int64_t B = 0, half = 0;
    std::vector<int64_t> ids = {};
    int64_t T() const { return 2 * half; }
};
RepeatedTokens make_repeated_tokens(int64_t vocab, int64_t half, int64_t B, autograd::Generator& gen);

// Over a head's (B, 2 half, 2 half) attention on that probe, the mean attention from each position i of
// the second half (i >= half) to its token's earlier occurrence, i - half (duplicate-token), and to the
// token after it, i - half + 1 (induction: [A][B] ... [A] looks at [B]). 1 for a head that always does.
double duplicate_token_score(const autograd::Tensor& attention, int64_t half);
double induction_score(const autograd::Tensor& attention, int64_t half);

// The three scores of every head of a model (nn::attention_heads), in its order; previous-token as
// previous_token_score over the whole probe.
struct HeadScores {
    int64_t layer = 0, head = 0;
    std::string name;
    double previous_token = 0, duplicate_token = 0, induction = 0;
};
// Runs the model on the probe (eval mode, no graph; it is left in eval mode). The probe's 2 half
// positions must fit the model's block.
std::vector<HeadScores> head_scores(LanguageModel& model, const RepeatedTokens& probe);

// The step of the phase change: the first evaluation at which the repeated-token loss has fallen below
// halfway between its starting value and its last, if it fell by at least `min_drop` nats in all;
// nothing when it did not fall that much. steps and losses are the evaluations in order.
std::optional<int64_t> phase_change_step(std::span<const int64_t> steps, std::span<const double> losses,
                                         double min_drop = 1.0);

}  // namespace nn
