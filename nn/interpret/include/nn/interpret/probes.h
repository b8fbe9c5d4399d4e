// Asking a model why it predicts what it does (docs/interpret.md): the logit lens, direct logit
// attribution, activation and attribution patching, and head ablation, each on nn::LanguageModel, as
// TransformerLens's tutorials do them in Python. Each runs the model in the mode it is in (call
// model.eval() first) and leaves no hook behind.
//
// What each needs of the model:
//   - patch and ablate_heads: the hook points of the site (blocks.L.hook_resid_pre, hook_attn_out,
//     hook_mlp_out, blocks.L.attn.hook_z), any kind; on an nn::Transformer (nn/transformer.h) a patched
//     run restarts at the patched block from the stream cached before it, and only the last position
//     is read out (the last block's MLP runs on it alone, and the metric reads two directions of the
//     unembedding);
//   - logit_lens and direct_logit_attribution: an nn::Transformer (std::invalid_argument otherwise).
//
// ids are one sequence (1, T) in every call but ablate_heads. Shape legend: L blocks, T time, V vocab.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nn/models.h>

namespace nn {

// The metric of patching and of direct logit attribution: logit(answer) - logit(wrong) at the last
// position, or logit(answer) alone without `wrong`.
struct LogitDiff {
    int64_t answer = 0;
    std::optional<int64_t> wrong;
};

// For l = 0 .. L: the stream before block l (l = L: after the last block) through the final norm and the
// unembedding (nostalgebraist's logit lens). logprob_next[l][p]: the log-probability of ids[p + 1] at
// position p (T - 1 of them); top[l][p]: the most likely token at p (T of them; the first on ties).
struct LogitLens {
    std::vector<std::vector<double>> logprob_next;  // (L + 1, T - 1)
    std::vector<std::vector<int64_t>> top;          // (L + 1, T)
};
LogitLens logit_lens(LanguageModel& model, std::span<const int64_t> ids);

// Direct logit attribution at the last position: each part of the stream there (the embeddings; each
// head through its rows of the output projection; each MLP's output) through the final norm with the
// whole stream's scale frozen (TransformerLens's apply_ln_to_stack), dotted with the unembedding's
// answer direction minus the wrong one's. `bias` is what is left: the norm's bias, the output
// projections' biases and the unembedding's; the parts and it sum to logit_diff (up to rounding).
struct LogitAttribution {
    double embed = 0;
    std::vector<std::vector<double>> heads;  // (L, n_head)
    std::vector<double> mlps;                // (L); empty for a model without MLPs
    double bias = 0;
    double logit_diff = 0;  // the model's own logits
};
LogitAttribution direct_logit_attribution(LanguageModel& model, std::span<const int64_t> ids, const LogitDiff& metric);

// Where a patch goes: for resid_pre, attn_out and mlp_out one (block, position), that point's row; for
// head one (block, head), that head's slice of hook_z at every position.
enum class PatchSite { resid_pre, attn_out, mlp_out, head };
const char* patch_site_name(PatchSite site);  // "resid_pre", ...
enum class PatchMethod { activation, attribution };

// effects[l][p] (or [l][h] for head): the metric of the corrupt run with that site's value taken from the
// clean run (activation), or its first-order estimate from one clean forward, one corrupt forward and one
// backward: metric(corrupt) + (a_clean - a_corrupt) . d metric / d a at the corrupt run (attribution).
// clean and corrupt: the same number of ids; std::invalid_argument otherwise, or for a site the model
// lacks (an attn_only model's mlp_out).
struct Patching {
    double clean = 0, corrupt = 0;
    std::vector<std::vector<double>> effects;  // (L, T) or (L, n_head)
};
Patching patch(LanguageModel& model, std::span<const int64_t> clean, std::span<const int64_t> corrupt,
               const LogitDiff& metric, PatchSite site, PatchMethod method = PatchMethod::activation);

// The mean cross-entropy over windows, as evaluate measures it, with no head touched and with each head's
// hook_z zeroed (zero) or replaced by its mean over the window's B x T positions (mean), one head at a
// time. inputs and targets: `windows` windows of (B, T) ids one after another; a target of -1 is left out
// of the mean (the loss of the repeated half of a sequence alone, say).
enum class AblationMode { zero, mean };
struct HeadAblation {
    double loss = 0;                         // nothing ablated
    std::vector<std::vector<double>> heads;  // (L, n_head)
};
HeadAblation ablate_heads(LanguageModel& model, std::span<const int64_t> inputs, std::span<const int64_t> targets,
                          int64_t windows, int64_t B, int64_t T, AblationMode mode = AblationMode::zero);

}  // namespace nn
