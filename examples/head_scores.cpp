// What every head of a checkpoint does, by TransformerLens's standard probe: sequences of random tokens,
// each followed by itself again. Per layer and head, the mean attention
//   previous-token   from each position to the one before it;
//   duplicate-token  from each position of the second half to its token's earlier occurrence;
//   induction        from each position of the second half to the token after that occurrence
//                    ([A][B] ... [A] looks at [B]: the head that continues a repeat).
// Any model kind; its heads are the ones nn::attention_heads finds.
//
//   head_scores run.safetensors                    the 10 highest-scoring heads, then per score in words
//   head_scores gpt2/model.safetensors --top 0     all 144 heads of GPT-2 small, highest first
//   head_scores run.safetensors --length 20 --batch 32 --seed 3 --json     every head, in layer order
//
// A --batch whose activations pass kPartBytes (256 MiB, checkpoint_data.h) runs in parts of that
// size: the same means, in bounded memory.
//
// Exit status: 0 done, 1 a bad checkpoint, a model without heads or with a block too short for the probe, or
// a probe sequence this machine's memory cannot hold; 2 bad arguments.
//
// Shape legend: B batch (probe sequences), T = 2 x length positions.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <cli.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <nn/train/trainer.h>
#include <nn/tutorial/induction.h>

#include "checkpoint_data.h"
#include "load_checkpoint.h"
#include "progress.h"
#include "tools.h"

namespace {

constexpr int64_t kLength = 50;  // TransformerLens's probe: 50 random tokens, then the same 50

struct Options {
    std::optional<cli::Input> checkpoint;  // given: the parser requires it
    std::optional<std::string> tokenizer;
    std::optional<int64_t> n_head;
    std::optional<int64_t> length, top;
    int64_t batch = 16, seed = 1, threads = 1;
    bool json = false;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("head_scores", "CKPT [options]",
                  "Previous-token, duplicate-token and induction scores of every head, on random tokens repeated.");
    cli::checkpoint_argument(p, o.checkpoint, o.tokenizer, o.n_head,
                             "a checkpoint saved by train --out, or GPT-2 weights", true);
    p.option("--length", "N", "random tokens before their repeat             (default 50, or half the block)",
             [&o](const cli::Value& v) { o.length = v.integer(1, 1 << 20); });
    p.option("--batch", "B", "probe sequences                                (default 16)",
             [&o](const cli::Value& v) { o.batch = v.integer(1, 1 << 16); });
    p.option("--seed", "S", "the random tokens                              (default 1)",
             [&o](const cli::Value& v) { o.seed = v.integer(0, INT64_MAX); });
    p.option("--threads", "N", "threads for the kernels                        (default 1)",
             [&o](const cli::Value& v) { o.threads = v.integer(1, 256); });
    p.option("--top", "N", "rows of the table, the highest-scoring heads first;\n0 shows every head (default 10)",
             [&o](const cli::Value& v) { o.top = v.integer(0, INT64_MAX); });
    p.flag("--json", "print one JSON line instead, every head with its three scores", [&o] { o.json = true; });
    return p;
}

// The three scores, each with what it measures in words.
struct Score {
    double nn::HeadScores::*value;
    const char* name;  // as the table's column
    const char* looks_at;
};
constexpr Score kScores[] = {
    {&nn::HeadScores::previous_token, "previous-token", "on the token before"},
    {&nn::HeadScores::duplicate_token, "duplicate-token", "on the earlier occurrence of the same token"},
    {&nn::HeadScores::induction, "induction", "on the token after the earlier occurrence of the same token"},
};

double highest(const nn::HeadScores& h) { return std::max({h.previous_token, h.duplicate_token, h.induction}); }

std::string head_name(const nn::HeadScores& h) { return fmt::format("layer {} head {}", h.layer, h.head); }
// 2 significant digits below 10%: random weights score a few percent
std::string percent(double share) { return fmt::format("{:.{}f}%", 100 * share, 100 * share < 9.95 ? 1 : 0); }

// The table: the heads by their highest score, highest first, `top` of them (0: all).
void print_table(std::vector<nn::HeadScores> heads, int64_t top) {
    std::ranges::stable_sort(heads, [](const auto& a, const auto& b) { return highest(a) > highest(b); });
    const size_t shown = top == 0 ? heads.size() : std::min(heads.size(), size_t(top));
    fmt::print("layer  head  previous-token  duplicate-token  induction  highest\n");
    for (size_t i = 0; i < shown; ++i) {
        const nn::HeadScores& h = heads[i];
        const auto best = std::ranges::max_element(kScores, {}, [&](const Score& s) { return h.*s.value; });
        fmt::print("{:>5}  {:>4}  {:>14.3f}  {:>15.3f}  {:>9.3f}  {}\n", h.layer, h.head, h.previous_token,
                   h.duplicate_token, h.induction, best->name);
    }
    if (shown < heads.size())
        fmt::print("({} of {} heads, by their highest score; --top 0 shows every one)\n", shown, heads.size());
}

// Per score, in words: the head that scores highest, then the two after it.
void print_words(const std::vector<nn::HeadScores>& heads) {
    fmt::print("\nA score is the head's mean share of attention there (1: all of it, every time).\n");
    for (const Score& s : kScores) {
        std::vector<const nn::HeadScores*> order;
        for (const nn::HeadScores& h : heads) order.push_back(&h);
        std::ranges::stable_sort(order, [&](const auto* a, const auto* b) { return a->*s.value > b->*s.value; });
        fmt::print("The strongest {} head is {}: {} of its attention {}.\n", s.name, head_name(*order[0]),
                   percent(order[0]->*s.value), s.looks_at);
        std::vector<std::string> next;
        for (size_t i = 1; i < std::min<size_t>(order.size(), 3); ++i)
            next.push_back(fmt::format("{} ({})", head_name(*order[i]), percent(order[i]->*s.value)));
        if (!next.empty()) fmt::print("  Next: {}.\n", fmt::join(next, ", "));
    }
}

int run(const Options& o) {
    if (o.json && o.top) throw cli::UsageError("--top applies to the table: --json lists every head");
    autograd::set_num_threads(static_cast<int>(o.threads));
    const std::string& path = o.checkpoint->path;
    nn::TrainedModel trained = load_checkpoint(path, {o.tokenizer, o.n_head});
    nn::LanguageModel& model = *trained.model;
    const std::string kind = fmt::format("{}", trained.config.kind);
    if (nn::attention_heads(model).empty())
        throw std::runtime_error(fmt::format("{}: a {} model has no attention head to score", path, kind));
    if (model.block_size() < 2)
        throw std::runtime_error(
            fmt::format("{}: its block of {} token is too short for the repeated-token probe, which needs at "
                        "least 2 (a random token and its repeat)",
                        path, model.block_size()));
    const int64_t length = o.length.value_or(std::min(kLength, model.block_size() / 2));
    if (2 * length > model.block_size())
        throw std::runtime_error(
            fmt::format("--length {}: the probe's 2 x {} tokens are longer than the model's block of {} ({})", length,
                        length, model.block_size(), path));
    const int64_t T = 2 * length;
    const int64_t rows = rows_at_once(
        trained.config, path, o.batch, T, nn::Pass::forward_heads,
        fmt::format("one probe sequence of --length {} ({} tokens, every head's attention kept)", length, T),
        "choose a shorter --length");
    autograd::Generator gen(static_cast<uint64_t>(o.seed));
    const nn::RepeatedTokens probe = nn::make_repeated_tokens(model.vocab_size(), length, o.batch, gen);
    // In parts of `rows` sequences (bounded memory); each score is a mean over its part's sequences, all of
    // one length, so the parts weighed by their sequences give the whole probe's.
    std::vector<nn::HeadScores> scores;
    progress::Bar bar("head_scores", "sequences");
    for (int64_t first = 0; first < o.batch; first += rows) {
        const int64_t n = std::min(rows, o.batch - first);
        const auto ids = probe.ids.begin() + first * T;
        const std::vector<nn::HeadScores> part =
            nn::head_scores(model, {.B = n, .half = length, .ids = {ids, ids + n * T}});
        if (scores.empty())
            for (const nn::HeadScores& h : part) scores.push_back({.layer = h.layer, .head = h.head, .name = h.name});
        const double weight = double(n) / double(o.batch);  // 1 (exactly the score) for a probe in one part
        for (size_t h = 0; h < part.size(); ++h) {
            scores[h].previous_token += weight * part[h].previous_token;
            scores[h].duplicate_token += weight * part[h].duplicate_token;
            scores[h].induction += weight * part[h].induction;
        }
        bar.update(uint64_t(first + n), uint64_t(o.batch));
    }

    const auto round = [](double v) { return std::round(v * 1e4) / 1e4; };
    if (o.json) {
        nlohmann::ordered_json heads = nlohmann::ordered_json::array();
        for (const nn::HeadScores& s : scores)
            heads.push_back({{"layer", s.layer},
                             {"head", s.head},
                             {"name", s.name},
                             {"previous_token", round(s.previous_token)},
                             {"duplicate_token", round(s.duplicate_token)},
                             {"induction", round(s.induction)}});
        fmt::print("{}\n", nlohmann::ordered_json{{"checkpoint", path},
                                                  {"model", kind},
                                                  {"length", length},
                                                  {"batch", o.batch},
                                                  {"seed", o.seed},
                                                  {"heads", heads}}
                               .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
        return 0;
    }
    fmt::print("heads of {} ({} model), on {} sequences of {} random tokens, each followed by itself again\n", path,
               kind, o.batch, length);
    print_table(scores, o.top.value_or(10));
    print_words(scores);
    return 0;
}

}  // namespace

int tools::head_scores(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
