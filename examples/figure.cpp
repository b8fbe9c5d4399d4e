// The tutorial's figure (../shared/seed/07-attention.md) as one self-contained HTML page: the score
// grid of a short window, a ▶ button that walks one row through its journey (scores, scaled, masked,
// softmax shares, blend of values) and the two checkboxes "compare x with x" and "divide by √width".
//
//   figure                                           random rows (seed 1), width 16: figure.html
//   figure --seed 7 --window 6 --out seven.html      another draw, six positions
//   figure run.safetensors --prompt "the cat"       a trained model's head 0 of layer 0 (or --checkpoint run.safetensors)
//   figure gpt2/model.safetensors --prompt "the cat sat" --layer 5 --head 5   any head, here GPT-2's
//                                                    (--tokenizer DIR when its BPE files are not beside it)
//   figure --json                                    print the page's numbers instead
//
// Every number on the page is computed here, with the library's ops on the head's parts (its queries,
// keys, values and divisor: nn::InspectableHead), in each of the four checkbox states, and embedded as
// JSON; the page's script only displays them. With x through Wq and Wk, divided, they are the head's own
// forward (to float rounding). Any head a model holds can be shown: an nn::Head divides by sqrt(H), a
// head of your own by whatever it divides by (examples/custom_model's learns it).
// The JSON (`--json`, one line): source, description, seed, checkpoint, model, layer, head, prompt, unit
// (what a position is: "characters" or "tokens"), window (T), n_embd (C), head_size (H), head_divisor
// (null when it is sqrt(H), else the head's own), labels (axis_label.h), and states[2 * raw + scale],
// each with the row's journey (scores, scaled, masked, shares, ...).
// The state (checkboxes, selected row, journey step) lives in the URL fragment, e.g.
// figure.html#raw=1&scale=0&row=3&step=2.
// The page (web/figure.html, its look shared in web/pages.css) loads nothing: inline CSS and JS, system fonts.
//
// Exit status: 0 done, 1 failed (a bad checkpoint or prompt, an unwritable file), 2 bad arguments.
//
// Shape legend: T window length, C row width (embedding), H head width.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <axis_label.h>
#include <cli.h>
#include <script_json.h>
#include <nn/attention.h>
#include <nn/files/atomic_file.h>
#include <nn/train/trainer.h>
#include <nlohmann/json.hpp>

#include "chosen_head.h"
#include "figure_page.h"  // web/figure.html, made into C++ strings at build time (web/pages.cmake)
#include "load_checkpoint.h"
#include "tensor_json.h"
#include "tools.h"

using namespace autograd;

namespace {

constexpr int64_t kRandomWidth = 16;  // C = H = 16, the tutorial's "divide by √16"

struct Options {
    std::optional<std::string> out, prompt, tokenizer;
    std::optional<cli::Input> checkpoint;
    std::optional<int64_t> seed, window, layer, head, n_head;
    bool json = false, force = false;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("figure", "[CKPT --prompt TEXT] [options]", "The tutorial's figure as one self-contained HTML page.");
    p.option("--out", "FILE", "the page to write                               (default figure.html)",
             [&o](const cli::Value& v) { o.out = v.file(); });
    p.option("--seed", "S", "random rows and head weights                    (default 1)",
             [&o](const cli::Value& v) { o.seed = v.integer(0, INT64_MAX); });
    p.option("--window", "T", "positions of the random window, 2 to 16         (default 8)",
             [&o](const cli::Value& v) { o.window = v.integer(2, 16); });
    cli::checkpoint_argument(p, o.checkpoint, o.tokenizer, o.n_head,
                             "show a trained model's head instead (with --prompt)", false);
    p.option("--prompt", "TEXT", "the text the trained head reads (at most the model's block)",
             [&o](const cli::Value& v) { o.prompt = v.nonempty(); });
    p.option("--layer", "L", "which layer's head, for a checkpoint             (default 0)",
             [&o](const cli::Value& v) { o.layer = v.integer(0, 1 << 20); });
    p.option("--head", "N", "which head of that layer, for a checkpoint       (default 0)",
             [&o](const cli::Value& v) { o.head = v.integer(0, 1 << 20); });
    p.flag("--json", "print the page's numbers as JSON on stdout (the page is then\nwritten only when --out is given)",
           [&o] { o.json = true; });
    p.flag("--force", cli::kForceHelp, [&o] { o.force = true; });
    return p;
}

void check_options(const Options& o) {
    if (o.prompt && !o.checkpoint)
        throw cli::UsageError(
            "--prompt needs a checkpoint (CKPT or --checkpoint CKPT): random rows have no characters");
    for (const auto& [flag, given] : {std::pair{"--layer", o.layer.has_value()},
                                      {"--head", o.head.has_value()},
                                      {"--tokenizer", o.tokenizer.has_value()},
                                      {"--n-head", o.n_head.has_value()}})
        if (given && !o.checkpoint)
            throw cli::UsageError(fmt::format("{} applies to a checkpoint's heads (give CKPT)", flag));
    if (!o.checkpoint) return;
    const std::string given_as = o.checkpoint->flag.empty() ? "CKPT" : o.checkpoint->flag;
    if (!o.prompt) throw cli::UsageError(fmt::format("{} needs --prompt: the characters the head reads", given_as));
    if (o.seed || o.window)
        throw cli::UsageError(
            fmt::format("{} applies to random rows, not to {}", o.seed ? "--seed" : "--window", given_as));
}

// --- what the head reads ------------------------------------------------------------------------------

// The window the figure shows: the rows x, the head whose weights are used, and the axis labels.
struct Window {
    Tensor x;                                   // (1, T, C)
    const nn::InspectableHead* head = nullptr;  // its parts: queries, keys, values, divisor
    std::vector<std::string> labels;            // one per position
    std::string source;                         // "random" or "checkpoint"
    std::string description;                    // one line for the page's header
    uint64_t seed = 0;
    std::string checkpoint, prompt, model, unit;
    int64_t layer = 0, head_in_layer = 0;
    // owners
    std::unique_ptr<nn::Head> own_head;
    std::optional<nn::TrainedModel> trained;
};

std::unique_ptr<Window> random_window(uint64_t seed, int64_t T) {
    auto w = std::make_unique<Window>();
    Generator gen(seed);
    w->x = randn({1, T, kRandomWidth}, gen);  // rows of everyday size, as in the tutorial
    w->own_head = std::make_unique<nn::Head>(nn::HeadOptions{.n_embd = kRandomWidth, .head_size = kRandomWidth}, gen);
    w->head = w->own_head.get();
    for (int64_t t = 0; t < T; ++t) w->labels.push_back(fmt::format("{}", t));
    w->source = "random";
    w->seed = seed;
    w->description =
        fmt::format("random rows and an untrained head, seed {}, {} positions of width {}", seed, T, kRandomWidth);
    return w;
}

// A head of a trained model, reading the prompt as that head sees it inside the model (for a GPT, its
// block's LayerNorm of the residual stream): the model runs on the prompt and the head keeps what it read.
std::unique_ptr<Window> checkpoint_window(const Options& o) {
    auto w = std::make_unique<Window>();
    const std::string& path = o.checkpoint->path;
    const std::string& prompt = *o.prompt;
    const nn::TrainedModel& trained = w->trained.emplace(load_checkpoint(path, {o.tokenizer, o.n_head}));
    nn::LanguageModel& model = *trained.model;
    const nn::ModelKindInfo& kind = nn::model_kind_info(trained.config.kind);
    const nn::AttentionHead chosen =
        tools::chosen_head(nn::attention_heads(model), o.layer.value_or(0), o.head.value_or(0), path, kind.kind);

    const std::vector<int64_t> ids = trained.tokenizer->encode(prompt);  // lists unknown characters
    const auto T = static_cast<int64_t>(ids.size());
    if (T > model.block_size())
        throw std::runtime_error(fmt::format("the prompt has {} {}, more than the model's block of {} ({})", T,
                                             nn::token_unit(*trained.tokenizer), model.block_size(), path));
    {
        NoGradGuard no_grad;
        model.eval();
        (void)model(ids, 1, T);
    }
    w->head = &chosen.module;
    w->x = w->head->last_input();  // (1, T, C)
    for (int64_t id : ids) w->labels.push_back(axis::label(trained.tokenizer->decode(std::vector<int64_t>{id})));
    w->source = "checkpoint";
    w->checkpoint = path;
    w->prompt = prompt;
    w->model = kind.name;
    w->unit = nn::token_unit(*trained.tokenizer);
    w->layer = chosen.layer;
    w->head_in_layer = chosen.head;
    w->description = fmt::format("head {} of layer {} of a trained {} model ({}), reading the prompt", chosen.head,
                                 chosen.layer, kind.title, path);
    return w;
}

// --- the numbers, from the head's parts --------------------------------------------------------------

// The page's numbers as JSON (tensor_json.h: floats in their shortest form, null where not finite: -inf,
// a masked score; NaN, the median of no looking rows).
using page_json::Json;
using page_json::rows_of;

double max_abs(const Tensor& t) {
    double m = 0.0;
    for (float v : t.data())
        if (std::isfinite(v)) m = std::max(m, double(std::abs(v)));
    return m;
}

// The divisor of "compare x with x": the square root of the width compared, as the tutorial has it.
float raw_divisor(const Window& w) { return std::sqrt(static_cast<float>(w.x.size(-1))); }

int64_t head_width(const Window& w) { return w.head->values(w.x).size(-1); }  // H

// The head's own divisor when it is not sqrt(H), which the page then names as the head's.
std::optional<float> own_divisor(const Window& w) {
    const float d = w.head->divisor();
    if (d == std::sqrt(static_cast<float>(head_width(w)))) return std::nullopt;
    return d;
}

// One checkbox state: the row's journey for every row at once, by the ops of the tutorial's head.
Json state_json(const Window& w, bool raw, bool scale) {
    NoGradGuard no_grad;
    const int64_t T = w.x.size(1);
    const Tensor q = raw ? w.x : w.head->queries(w.x);  // (1, T, H), or (1, T, C) compared with itself
    const Tensor k = raw ? w.x : w.head->keys(w.x);     // likewise
    const Tensor values = w.head->values(w.x);          // (1, T, H)
    const float divisor = raw ? raw_divisor(w) : w.head->divisor();
    const Tensor scores = matmul(q, k.transpose(1, 2));                              // (1, T, T)
    const Tensor scaled = scale ? autograd::scale(scores, 1.0f / divisor) : scores;  // (1, T, T)
    const Tensor masked = causal_mask(scaled);     // (1, T, T), -inf above the diagonal
    const Tensor shares = softmax(masked, -1);     // (1, T, T)
    const Tensor output = matmul(shares, values);  // (1, T, H)
    const Tensor row_sums = sum(shares, -1);       // (1, T)

    // The tutorial's two measurements over the looking rows (1..T-1; row 0 can only see itself).
    std::vector<double> self, largest;
    for (int64_t i = 1; i < T; ++i) {
        self.push_back(shares.at({0, i, i}));
        largest.push_back(
            nn::attention_row_stats(shares.data().subspan(static_cast<size_t>(i * T), static_cast<size_t>(i + 1)))
                .largest_share);
    }
    std::ranges::sort(self);
    std::ranges::sort(largest);
    constexpr double none = std::numeric_limits<double>::quiet_NaN();
    const auto median = [](const std::vector<double>& v) {
        if (v.empty()) return none;  // a window of one position has no looking row: null
        return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    };
    const auto front = [](const std::vector<double>& v) { return v.empty() ? none : v.front(); };
    const auto back = [](const std::vector<double>& v) { return v.empty() ? none : v.back(); };

    const auto data = row_sums.data();
    return {{"raw", raw},
            {"scale", scale},
            {"width", q.size(-1)},  // of the vectors compared
            {"divisor", divisor},
            {"scores", rows_of(scores)},
            {"scaled", rows_of(scaled)},
            {"masked", rows_of(masked)},
            {"shares", rows_of(shares)},
            {"row_sums", std::vector<float>(data.begin(), data.end())},
            {"values", rows_of(values)},
            {"output", rows_of(output)},
            {"scores_range", max_abs(scores)},
            {"values_range", max_abs(values)},
            {"self_share", {{"min", front(self)}, {"median", median(self)}}},
            {"largest_share", {{"min", front(largest)}, {"max", back(largest)}}}};
}

Json figure_json(const Window& w) {
    Json states = Json::array();
    for (int raw = 0; raw < 2; ++raw)  // states[2 * raw + scale]
        for (int scale = 0; scale < 2; ++scale) states.push_back(state_json(w, raw == 1, scale == 1));
    const auto optional_string = [](const std::string& s) { return s.empty() ? Json() : Json(s); };
    return {{"source", w.source},
            {"description", w.description},
            {"seed", w.source == "random" ? Json(w.seed) : Json()},
            {"checkpoint", optional_string(w.checkpoint)},
            {"model", optional_string(w.model)},
            {"layer", w.source == "checkpoint" ? Json(w.layer) : Json()},
            {"head", w.source == "checkpoint" ? Json(w.head_in_layer) : Json()},
            {"prompt", optional_string(w.prompt)},
            {"unit", optional_string(w.unit)},
            {"window", w.x.size(1)},
            {"n_embd", w.x.size(-1)},
            {"head_size", head_width(w)},
            {"head_divisor", own_divisor(w) ? Json(*own_divisor(w)) : Json()},
            {"labels", w.labels},
            {"states", states}};
}

int run(const Options& o) {
    check_options(o);
    const std::optional<std::string> page =
        !o.json || o.out ? std::optional(o.out.value_or("figure.html")) : std::nullopt;
    std::vector<cli::Input> inputs;
    if (o.checkpoint) inputs.push_back(*o.checkpoint);
    std::vector<cli::Output> outputs;
    if (page) outputs.push_back({.flag = "--out", .path = *page});
    const cli::OutputLocks locks = cli::claim_outputs(inputs, outputs, o.force);

    const std::unique_ptr<Window> window =
        o.checkpoint ? checkpoint_window(o) : random_window(o.seed.value_or(1), o.window.value_or(8));
    // invalid UTF-8 (a checkpoint's path can be any bytes) as U+FFFD
    const std::string json = figure_json(*window).dump(-1, ' ', false, Json::error_handler_t::replace);
    if (o.json) fmt::print("{}\n", json);
    if (page) {
        nn::write_file_atomically(
            *page, fmt::format("{}{}{}", figure::kPageBeforeData, html::script_safe(json), figure::kPageAfterData),
            "figure");
        if (!o.json) fmt::print("wrote {} ({})\n", *page, window->description);
    }
    return 0;
}

}  // namespace

int tools::figure(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
