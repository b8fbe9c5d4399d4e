// The induction circuit of the induction lab's model, found, ablated and restored with nn/interpret: the
// worked example of docs/interpret.md.
//
//   induction --out induction.safetensors            (the lab's two-layer attention-only model)
//   induction_circuit induction.safetensors [--pairs N] [--seed S] [--json]
//
// 1. Found: TransformerLens's probe (random tokens, then the same again) scores every head: the
//    previous-token head of layer 0 and the strongest induction head of layer 1.
// 2. Ablated: the loss on that probe with each head's output (hook_z) zeroed. The induction head's
//    ablation costs far more than any other first-layer head's but one: the previous-token head, whose
//    note every induction head reads.
// 3. Restored: pairs of a clean repeated sequence that ends on a repeated token A (the answer: the token
//    after A's earlier occurrence) and the same with its last token another one of the first half, C
//    (wrong: the token after C's). Patching each head's hook_z from the clean run into the corrupt one
//    gives back a share of logit(answer) - logit(wrong): the induction heads restore it, the others little.
//    Attribution patching estimates the same from one backward; the two rank the heads alike.
//
// Exit status: 0 done, 1 a bad checkpoint or one that is not an induction lab's model, 2 bad arguments.
// Shape legend: B batch, T time, V vocab.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <cli.h>
#include <nn/interpret/probes.h>
#include <nn/tutorial/induction.h>
#include <nlohmann/json.hpp>

#include "load_checkpoint.h"

using namespace autograd;

namespace {

struct Options {
    std::optional<cli::Input> checkpoint;
    int64_t pairs = 16, probe = 32;
    uint64_t seed = 1;
    bool json = false;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("induction_circuit", "CKPT [options]",
                  "The induction lab's circuit found, ablated and restored (docs/interpret.md).");
    cli::checkpoint_argument(p, o.checkpoint, "the two-layer model that induction --out saved", true);
    p.option("--probe", "B", "repeated sequences the heads are scored and ablated on (default 32)",
             [&o](const cli::Value& v) { o.probe = v.integer(1, 4096); });
    p.option("--pairs", "N", "clean and corrupt pairs patched                     (default 16)",
             [&o](const cli::Value& v) { o.pairs = v.integer(1, 4096); });
    p.option("--seed", "S", "the sequences drawn                                  (default 1)",
             [&o](const cli::Value& v) { o.seed = static_cast<uint64_t>(v.integer(0, INT64_MAX)); });
    p.flag("--json", "print every figure as one JSON line", [&o] { o.json = true; });
    return p;
}

using Grid = std::vector<std::vector<double>>;  // [layer][head]

// Spearman's rank correlation of two lists (ties share their mean rank).
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
    const auto ranks = [](const std::vector<double>& v) {
        std::vector<size_t> order(v.size());
        std::iota(order.begin(), order.end(), size_t{0});
        std::ranges::sort(order, [&](size_t i, size_t j) { return v[i] < v[j]; });
        std::vector<double> r(v.size());
        for (size_t i = 0; i < order.size();) {
            size_t j = i;
            while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
            for (size_t k = i; k <= j; ++k) r[order[k]] = (double(i) + double(j)) / 2;
            i = j + 1;
        }
        return r;
    };
    const std::vector<double> ra = ranks(a), rb = ranks(b);
    const double mean = (double(a.size()) - 1) / 2;
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        ab += (ra[i] - mean) * (rb[i] - mean);
        aa += (ra[i] - mean) * (ra[i] - mean);
        bb += (rb[i] - mean) * (rb[i] - mean);
    }
    return ab / std::sqrt(aa * bb);
}

std::vector<double> flat(const Grid& g) {
    std::vector<double> out;
    for (const auto& row : g) out.insert(out.end(), row.begin(), row.end());
    return out;
}

nlohmann::ordered_json head_json(int64_t layer, int64_t head) { return {{"layer", layer}, {"head", head}}; }

int run(const Options& o) {
    nn::TrainedModel trained = load_checkpoint(o.checkpoint->path);
    nn::LanguageModel& model = *trained.model;
    if (trained.config.kind != nn::ModelKind::attn_only || trained.config.n_layer != 2)
        throw std::runtime_error(
            fmt::format("{}: a {} model of {} layers, not the induction lab's two-layer attn_only model "
                        "(induction --out saves it)",
                        o.checkpoint->path, trained.config.kind, trained.config.n_layer));
    model.eval();
    const int64_t V = model.vocab_size(), half = model.block_size() / 2, n_head = trained.config.n_head;
    Generator gen(o.seed);

    // 1. Found: the heads' scores on the probe.
    const nn::RepeatedTokens probe = nn::make_repeated_tokens(V, half, o.probe, gen);
    int64_t previous = 0, induction = 0;  // the best layer-0 previous-token head, the best layer-1 induction head
    Grid previous_scores(2, std::vector<double>(size_t(n_head))), induction_scores = previous_scores;
    for (const nn::HeadScores& h : nn::head_scores(model, probe)) {
        previous_scores[size_t(h.layer)][size_t(h.head)] = h.previous_token;
        induction_scores[size_t(h.layer)][size_t(h.head)] = h.induction;
    }
    for (int64_t h = 0; h < n_head; ++h) {
        if (previous_scores[0][size_t(h)] > previous_scores[0][size_t(previous)]) previous = h;
        if (induction_scores[1][size_t(h)] > induction_scores[1][size_t(induction)]) induction = h;
    }

    // 2. Ablated: the loss on the probe's repeated halves (the tokens after the first repeated one: what
    // only an induction head predicts; the random first halves are left out, -1) with each head zeroed.
    const int64_t T = probe.T() - 1;
    std::vector<int64_t> inputs, targets;
    for (int64_t b = 0; b < probe.B; ++b) {
        const auto row = probe.ids.begin() + b * probe.T();
        inputs.insert(inputs.end(), row, row + T);
        for (int64_t t = 0; t < T; ++t) targets.push_back(t >= half ? row[t + 1] : -1);
    }
    const nn::HeadAblation ablation = nn::ablate_heads(model, inputs, targets, 1, probe.B, T, nn::AblationMode::zero);
    double other_layer0 = 0;  // the most any first-layer head but the previous-token head raises the loss
    for (int64_t h = 0; h < n_head; ++h)
        if (h != previous) other_layer0 = std::max(other_layer0, ablation.heads[0][size_t(h)] - ablation.loss);
    const double induction_rise = ablation.heads[1][size_t(induction)] - ablation.loss;

    // 3. Restored: clean and corrupt pairs, every head patched, both ways.
    Grid restored(2, std::vector<double>(size_t(n_head))), activation = restored, attribution = restored;
    int64_t pairs = 0;
    while (pairs < o.pairs) {
        std::vector<int64_t> first(static_cast<size_t>(half));  // distinct tokens, so "the token after" is one
        std::vector<int64_t> pool(static_cast<size_t>(V));
        std::iota(pool.begin(), pool.end(), int64_t{0});
        for (int64_t i = 0; i < half; ++i)
            std::swap(pool[size_t(i)], pool[size_t(i) + size_t(gen.next_u64() % uint64_t(V - i))]);
        std::copy(pool.begin(), pool.begin() + half, first.begin());
        const auto k = static_cast<int64_t>(gen.next_u64() % uint64_t(half - 2)) + 1;  // the clean ends on first[k]
        auto j = static_cast<int64_t>(gen.next_u64() % uint64_t(half - 1));            // the corrupt on first[j]
        if (j == k) continue;
        std::vector<int64_t> clean(first);
        clean.insert(clean.end(), first.begin(), first.begin() + k + 1);
        std::vector<int64_t> corrupt(clean);
        corrupt.back() = first[size_t(j)];
        const nn::LogitDiff metric{.answer = first[size_t(k + 1)], .wrong = first[size_t(j + 1)]};
        const nn::Patching exact = nn::patch(model, clean, corrupt, metric, nn::PatchSite::head);
        const nn::Patching estimate =
            nn::patch(model, clean, corrupt, metric, nn::PatchSite::head, nn::PatchMethod::attribution);
        for (size_t l = 0; l < 2; ++l)
            for (size_t h = 0; h < size_t(n_head); ++h) {
                restored[l][h] +=
                    (exact.effects[l][h] - exact.corrupt) / (exact.clean - exact.corrupt) / double(o.pairs);
                activation[l][h] += (exact.effects[l][h] - exact.corrupt) / double(o.pairs);
                attribution[l][h] += (estimate.effects[l][h] - estimate.corrupt) / double(o.pairs);
            }
        ++pairs;
    }
    const double rank_correlation = spearman(flat(activation), flat(attribution));

    if (o.json) {
        fmt::print("{}\n", nlohmann::ordered_json{{"previous_token_head", head_json(0, previous)},
                                                  {"induction_head", head_json(1, induction)},
                                                  {"previous_token_scores", previous_scores},
                                                  {"induction_scores", induction_scores},
                                                  {"loss", ablation.loss},
                                                  {"ablated", ablation.heads},
                                                  {"induction_rise", induction_rise},
                                                  {"other_layer0_rise", other_layer0},
                                                  {"restored", restored},
                                                  {"activation", activation},
                                                  {"attribution", attribution},
                                                  {"spearman", rank_correlation}}
                               .dump());
        return 0;
    }
    fmt::print(
        "found: the previous-token head is layer 0 head {} (score {:.2f}), the strongest induction head layer 1 "
        "head {} (score {:.2f})\n",
        previous, previous_scores[0][size_t(previous)], induction, induction_scores[1][size_t(induction)]);
    fmt::print("ablated (loss {:.3f} on the repeated halves of {} sequences; each head's hook_z zeroed):\n",
               ablation.loss, probe.B);
    for (size_t l = 0; l < 2; ++l)
        for (size_t h = 0; h < size_t(n_head); ++h)
            fmt::print("  layer {} head {}: {:.3f} ({:+.3f})\n", l, h, ablation.heads[l][h],
                       ablation.heads[l][h] - ablation.loss);
    fmt::print(
        "  the induction head's ablation raises the loss {:.1f}x more than any first-layer head's but the "
        "previous-token head's\n",
        induction_rise / std::max(other_layer0, 1e-9));
    fmt::print("restored ({} pairs; the share of logit(answer) - logit(wrong) each head's clean hook_z gives back):\n",
               o.pairs);
    for (size_t l = 0; l < 2; ++l)
        for (size_t h = 0; h < size_t(n_head); ++h)
            fmt::print("  layer {} head {}: {:6.1f}%   (activation {:+.3f}, attribution {:+.3f})\n", l, h,
                       100 * restored[l][h], activation[l][h], attribution[l][h]);
    fmt::print("attribution patching ranks the heads as activation patching does: Spearman {:.3f}\n", rank_correlation);
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
