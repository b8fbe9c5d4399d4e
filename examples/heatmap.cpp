// An attention heatmap in the terminal: the prompt's characters along both axes, each cell the share of
// attention the row's position gives the column's, as a background colour; an ASCII shade ramp instead
// when stdout is not a terminal or NO_COLOR is set.
//
//   heatmap --prompt "the cat sat"                        an untrained head on random embeddings (seeded)
//   heatmap run.safetensors --prompt "abcd abcd" [--layer L] [--head N]   (or --checkpoint run.safetensors)
//
// With a checkpoint the whole model runs on the prompt (in eval mode, without a graph) and the chosen
// head's last_attention() is shown: what that head saw is exactly what it sees inside the model (for a
// GPT, layer L's LayerNorm of the residual stream after the blocks before it).
// Exit status: 0 shown, 1 failed (message on stderr), 2 bad arguments.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/color.h>

#include <autograd/autograd.h>
#include <cli.h>
#include <nn/attention.h>
#include <nn/models.h>
#include <nn/train/text.h>
#include <nn/train/trainer.h>

#include "chosen_head.h"
#include "load_checkpoint.h"
#include "token_text.h"
#include "tools.h"

using namespace autograd;

namespace {

constexpr int64_t kUntrainedBlock = 64;           // the longest prompt an untrained head is shown for
constexpr std::string_view kRamp = " .:-=+*#%@";  // ASCII shades; ' ' is kept for masked cells

struct Options {
    std::optional<std::string> prompt;
    std::optional<cli::Input> checkpoint;
    std::optional<std::string> tokenizer;
    std::optional<int64_t> n_head;
    int64_t layer = 0, head = 0, width = 16;
    uint64_t seed = 1;
    std::string color = "auto";
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("heatmap", "[CKPT] --prompt TEXT [options]", "An attention heatmap in the terminal.");
    p.option("--prompt", "TEXT", "the characters to look at (both axes)",
             [&o](const cli::Value& v) { o.prompt = v.nonempty(); });
    cli::checkpoint_argument(p, o.checkpoint, o.tokenizer, o.n_head,
                             "a trained model (from train --out, or GPT-2 weights); without it, an\nuntrained head",
                             false);
    p.option("--layer", "L", "which block, for a GPT                                   (default 0)",
             [&o](const cli::Value& v) { o.layer = v.integer(0, 1 << 20); });
    p.option("--head", "N", "which head of that layer                                 (default 0)",
             [&o](const cli::Value& v) { o.head = v.integer(0, 1 << 20); });
    p.option("--width", "H", "untrained head: width of the embeddings and the head     (default 16)",
             [&o](const cli::Value& v) { o.width = v.integer(1, 4096); });
    p.option("--seed", "S", "untrained head: seed for the embeddings and the weights  (default 1)",
             [&o](const cli::Value& v) { o.seed = static_cast<uint64_t>(v.integer(0, INT64_MAX)); });
    p.option("--color", "WHEN", "auto (colour on a terminal unless NO_COLOR is set), always or never",
             [&o](const cli::Value& v) {
                 o.color = v.choice({"auto", "always", "never"});
             });
    return p;
}

// What the heatmap shows: (T, T) shares, the characters, and a line saying whose attention it is.
struct Map {
    std::vector<std::string> labels;  // one per position: a character, or a BPE token's text
    std::vector<float> shares;        // (T, T) row-major
    int64_t T = 0;
    std::string title;
};

// Terminal columns of a label: one a code point.
size_t columns(const std::string& label) {
    return static_cast<size_t>(std::count_if(label.begin(), label.end(),
                                             [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::vector<std::string> labels_of(const nn::Tokenizer& tokenizer, const std::vector<int64_t>& ids) {
    std::vector<std::string> out;
    for (int64_t id : ids) out.push_back(visible_token(tokenizer.decode(std::vector<int64_t>{id})));
    return out;
}

Map from_attention(const Tensor& w, std::vector<std::string> labels, std::string title) {  // w: (1, T, T)
    Map m{.labels = std::move(labels), .shares = w.to_vector(), .T = w.size(1), .title = std::move(title)};
    return m;
}

Map untrained(const Options& o) {
    const std::string& prompt = *o.prompt;
    const auto tokenizer = nn::CharTokenizer::from_text(prompt);
    const auto ids = tokenizer.encode(prompt);
    const auto T = static_cast<int64_t>(ids.size());
    if (T > kUntrainedBlock)
        throw std::runtime_error(
            fmt::format("the prompt has {} characters, more than the block of {} an untrained head is shown for", T,
                        kUntrainedBlock));
    Generator gen(o.seed);
    const int64_t C = o.width;
    // Everyday-size rows (N(0, 1)) per distinct character, and weights N(0, 1/C) so q and k are everyday-size
    // too, as in nn::study: the shares are then as spread as the tutorial's untrained figure.
    const Tensor table = randn({tokenizer.vocab_size(), C}, gen);  // (V, C)
    nn::Head head({.n_embd = C, .head_size = C}, gen);
    for (nn::Linear* layer : {&head.query, &head.key, &head.value})
        for (float& v : layer->weight.data()) v = gen.normal(0.0f, 1.0f / std::sqrt(static_cast<float>(C)));
    NoGradGuard no_grad;
    head.forward(embedding(table, ids, {1, T}));  // (1, T, C) -> (1, T, H)
    return from_attention(head.last_attention(), labels_of(tokenizer, ids),
                          fmt::format("an untrained head (width {}, random embeddings, seed {})", C, o.seed));
}

Map trained(const Options& o) {
    nn::TrainedModel loaded = load_checkpoint(o.checkpoint->path, {o.tokenizer, o.n_head});
    const nn::ModelConfig& config = loaded.config;
    const auto ids = loaded.tokenizer->encode(*o.prompt);  // unknown characters throw, listing them
    const auto T = static_cast<int64_t>(ids.size());
    const std::vector<nn::AttentionHead> heads = nn::attention_heads(*loaded.model);
    const nn::InspectableHead* head =
        &tools::chosen_head(heads, o.layer, o.head, o.checkpoint->path, config.kind).module;
    if (T > loaded.model->block_size())
        throw std::runtime_error(fmt::format("the prompt has {} {}, more than the model's block of {} ({})", T,
                                             nn::token_unit(*loaded.tokenizer), loaded.model->block_size(),
                                             o.checkpoint->path));
    NoGradGuard no_grad;
    (*loaded.model)(ids, 1, T);
    return from_attention(head->last_attention(), labels_of(*loaded.tokenizer, ids),
                          fmt::format("head {} of layer {} of the trained {} model in {}", o.head, o.layer, config.kind,
                                      o.checkpoint->path));
}

// A blue-green-yellow ramp (viridis' stops), dark for a small share, bright for a large one.
fmt::rgb ramp_colour(double share) {
    static constexpr int stops[][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    const double t = std::clamp(share, 0.0, 1.0) * 4.0;
    const int k = std::min(3, static_cast<int>(t));
    const double f = t - k;
    const auto mix = [&](int c) {
        return static_cast<uint8_t>(std::lround(stops[k][c] + f * (stops[k + 1][c] - stops[k][c])));
    };
    return fmt::rgb(mix(0), mix(1), mix(2));
}

// Shade 1..9 of the ramp: share in ((k-1)/9, k/9] is shade k; a share of exactly 0 that is not masked is shade 1.
char shade(double share) {
    const int k = std::clamp(static_cast<int>(std::ceil(share * 9.0 - 1e-9)), 1, 9);
    return kRamp[static_cast<size_t>(k)];
}

void show(const Map& m, bool colour) {
    fmt::print("attention of {}\nrow = the position looking, column = the position looked at; each row sums to 1\n\n",
               m.title);
    // A column is as wide as the longest label and a space: two for characters, more for BPE tokens.
    size_t label_width = 1;
    for (const auto& l : m.labels) label_width = std::max(label_width, columns(l));
    const size_t cell = label_width + 1;
    std::string header(label_width + 3, ' ');
    for (const auto& l : m.labels) header += l + std::string(cell - columns(l), ' ');
    while (!header.empty() && header.back() == ' ') header.pop_back();
    fmt::print("{}\n", header);
    for (int64_t i = 0; i < m.T; ++i) {
        const std::string& l = m.labels[static_cast<size_t>(i)];
        fmt::print("  {}{} ", std::string(label_width - columns(l), ' '), l);
        for (int64_t j = 0; j < m.T; ++j) {
            const double p = m.shares[i * m.T + j];
            if (j > i) fmt::print("{}", std::string(cell, ' '));  // masked: the future
            else if (colour) fmt::print(fmt::bg(ramp_colour(p)), "{}", std::string(cell, ' '));
            else fmt::print("{}", std::string(cell, shade(p)));
        }
        fmt::print("\n");
    }
    fmt::print("\n");
    if (colour) {
        fmt::print("share 0 ");
        for (int k = 0; k <= 10; ++k) fmt::print(fmt::bg(ramp_colour(k / 10.0)), "  ");
        fmt::print(" 1    blank: masked (the future)\n");
    } else {
        fmt::print("shade:");
        for (int k = 1; k <= 9; ++k) fmt::print(" {} <={:.2f}", kRamp[static_cast<size_t>(k)], k / 9.0);
        fmt::print("   blank: masked (the future)\n");
    }
}

int run(const Options& o, const cli::Parser& parser) {
    if (!o.prompt) throw cli::UsageError("--prompt is required");
    if (o.checkpoint && parser.given("--width"))
        throw cli::UsageError("--width applies to the untrained head only (a checkpoint fixes it)");
    for (const char* flag : {"--layer", "--head", "--tokenizer", "--n-head"})
        if (!o.checkpoint && parser.given(flag))
            throw cli::UsageError(fmt::format("{} applies to a checkpoint's heads (give CKPT)", flag));
    const Map m = o.checkpoint ? trained(o) : untrained(o);
    const char* no_colour = std::getenv("NO_COLOR");
    const bool colour =
        o.color == "always" || (o.color == "auto" && isatty(STDOUT_FILENO) == 1 && !(no_colour && *no_colour));
    show(m, colour);
    return 0;
}

}  // namespace

int tools::heatmap(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
