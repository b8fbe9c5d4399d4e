// The page's calls (web_api.h), on the library's ops and modules.
//
// Shape legend: B batch, T window length, C row width, H head width, V vocabulary.
#include "web_api.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include <autograd/autograd.h>
#include <axis_label.h>
#include <fmt/format.h>
#include <nn/attention.h>
#include <nn/models.h>
#include <nn/tokenizers/char_tokenizer.h>
#include <nn/train/optim.h>
#include <nn/train/text_data.h>
#include <nn/tutorial/study.h>
#include <nn/tutorial/tasks.h>
#include <nlohmann/json.hpp>

#include "lab_cells.h"
#include "tensor_json.h"

using namespace autograd;

namespace web {
namespace {

using Request = nlohmann::json;
// Answers hold numbers as the tensors do (tensor_json.h: floats in their shortest form, null where not
// finite, as a masked score's -inf).
using page_json::Json;
using page_json::rows_of;

[[noreturn]] void bad(std::string_view call, std::string_view message) {
    throw std::invalid_argument(fmt::format("{}: {}", call, message));
}

// An integer argument in [low, high], or its default.
int64_t integer(const Request& r, std::string_view call, const char* key, int64_t fallback, int64_t low, int64_t high) {
    if (!r.contains(key)) return fallback;
    const Request& v = r[key];
    if (!v.is_number_integer() || v.get<int64_t>() < low || v.get<int64_t>() > high)
        bad(call, fmt::format("{} must be an integer from {} to {}, not {}", key, low, high, v.dump()));
    return v.get<int64_t>();
}

// The call's seed (default 1) for its random draws.
uint64_t seed(const Request& r, std::string_view call) {
    return static_cast<uint64_t>(integer(r, call, "seed", 1, 0, INT64_MAX));
}

bool flag(const Request& r, std::string_view call, const char* key, bool fallback) {
    if (!r.contains(key)) return fallback;
    if (!r[key].is_boolean()) bad(call, fmt::format("{} must be true or false, not {}", key, r[key].dump()));
    return r[key].get<bool>();
}

// --- head ---------------------------------------------------------------------------------------------
// The figure's head (C = H = 16, "divide by √16") reading a sentence, one position per character. Each
// character has its own random row (as an untrained embedding: the first 256 code points from a table
// of 256 rows, the others each from its own generator), so a letter that repeats brings the same row
// back and "compare x with x" shows it matching itself. The head's weights and the random upstream
// gradient come from the same seed whatever the options, so toggling an option changes only what the
// option changes. The weights are drawn N(0, 1/C): queries and keys of everyday size, as the tutorial's
// figure and the lab's cell 5 have them, so that without the divisor the scores spread like √16 and the
// softmax sharpens.
//   backward() from sum(output * upstream), the output dotted with a random gradient (no loss: it only
//   sends that gradient back), gives the gradient of the scores the softmax received.
// Answer: labels (axis_label.h), T, width, raw, divide, divisor, scores (Q Kᵀ, or x xᵀ), scaled
// (÷ divisor, or the scores), masked (null above the diagonal), shares (the attention map), values,
// output (T x H), score_grad (T x T, its gradient at the masked scores), output_dot_upstream, graph
// (to_dot of it after backward, with grad norms).
constexpr int64_t kHeadWidth = 16;
constexpr int64_t kLongestSentence = 64;

Json head(const Request& r) {
    if (!r.contains("sentence") || !r["sentence"].is_string()) bad("head", "needs a sentence (a string)");
    const std::string sentence = r["sentence"].get<std::string>();
    if (sentence.empty())
        bad("head", fmt::format("the sentence is empty; it must have 1 to {} characters", kLongestSentence));
    const nn::CharTokenizer characters = nn::CharTokenizer::from_text(sentence);  // (JSON strings are UTF-8)
    const std::vector<int64_t> ids = characters.encode(sentence);
    const auto T = static_cast<int64_t>(ids.size());
    if (T > kLongestSentence)
        bad("head", fmt::format("the sentence has {} characters; it must have 1 to {}", T, kLongestSentence));
    const bool raw = flag(r, "head", "raw", false), divide = flag(r, "head", "divide", true);
    const uint64_t draws = seed(r, "head");
    Generator gen(draws);

    const Tensor table = randn({256, kHeadWidth}, gen);  // (256, C): the rows of the first 256 code points
    nn::Head head({.n_embd = kHeadWidth, .head_size = kHeadWidth, .scaled = divide, .compare_raw = raw}, gen);
    // of everyday size (above): q·k spreads like √16, and the divisor brings it back to 1
    for (nn::Linear* w : {&head.query, &head.key, &head.value})
        for (float& v : w->weight.data()) v = gen.normal(0.0f, 1.0f / std::sqrt(float(kHeadWidth)));
    Tensor upstream = randn({1, T, kHeadWidth}, gen);  // (1, T, H)
    upstream.set_name("upstream");
    Tensor x = zeros({1, T, kHeadWidth});  // (1, T, C)
    Json labels = Json::array();
    for (int64_t t = 0; t < T; ++t) {
        const std::span<const int64_t> id(&ids[static_cast<size_t>(t)], 1);
        const char32_t c = characters.vocabulary()[static_cast<size_t>(id[0])];
        Tensor own;  // (C): the row of a character past the table, from the seed and its code point
        if (c >= 256) {
            Generator character_gen(Generator(draws).next_u64() ^ (uint64_t(c) * 0x9E3779B97F4A7C15u));
            own = randn({kHeadWidth}, character_gen);
        }
        const std::span<const float> row = c < 256 ? table.data().subspan(c * kHeadWidth, kHeadWidth) : own.data();
        std::ranges::copy(row, x.data().begin() + t * kHeadWidth);
        labels.push_back(axis::label(characters.decode(id)));
    }
    x.set_name("x").requires_grad_();  // so the scores of "compare x with x", made of x alone, get a gradient too

    const Tensor out = head.forward(x);  // (1, T, H)
    Tensor out_dot_upstream = sum(out * upstream);
    out_dot_upstream.set_name("output·upstream");
    out_dot_upstream.backward(/*retain_graph=*/true);  // kept for to_dot, which then shows every gradient's norm

    NoGradGuard no_grad;
    const Tensor scores = matmul(head.queries(x), head.keys(x).transpose(1, 2));   // (1, T, T)
    const Tensor scaled = divide ? scale(scores, 1.0f / head.divisor()) : scores;  // (1, T, T)
    return {{"labels", labels},
            {"T", T},
            {"width", kHeadWidth},
            {"raw", raw},
            {"divide", divide},
            {"divisor", divide ? head.divisor() : 1.0f},
            {"scores", rows_of(scores)},
            {"scaled", rows_of(scaled)},
            {"masked", rows_of(head.last_scores())},
            {"shares", rows_of(head.last_attention())},
            {"values", rows_of(head.values(x))},
            {"output", rows_of(out)},
            {"score_grad", rows_of(head.last_scores().grad())},
            {"output_dot_upstream", out_dot_upstream.item()},
            {"graph", to_dot(out_dot_upstream, {.title = fmt::format("sum(output * upstream), {} positions", T)})}};
}

// --- saturation ---------------------------------------------------------------------------------------
// The most work one call may ask for, in heads x the sum over widths C of (C + T)^2 (below): 6 times the
// page's call (its defaults, 4.8e6, about a second). 12 widths of 1024 with 1000 heads and a window of 64,
// each number within its own limit, would be 1.4e10: most of an hour.
constexpr double kSaturationWork = 3e7;

// The lab's cell 5 over more widths: random heads per width with and without the divisor, each the
// medians (over looking rows) of the row gradient that comes back through the softmax and of the largest
// share, and the fraction of flat rows (nn/tutorial/study.h).
Json saturation(const Request& r) {
    std::vector<int64_t> widths = {2, 4, 8, 16, 32, 64, 128, 256};
    if (r.contains("widths")) {
        const Request& w = r["widths"];
        if (!w.is_array() || w.empty() || w.size() > 12 || !std::all_of(w.begin(), w.end(), [](const Request& v) {
                return v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= 1024;
            }))
            bad("saturation", fmt::format("widths must be 1 to 12 integers from 1 to 1024, not {}", w.dump()));
        widths = w.get<std::vector<int64_t>>();
    }
    const int64_t T = integer(r, "saturation", "window", 8, 2, 64);
    const int64_t heads = integer(r, "saturation", "heads", 50, 1, 1000);
    // A trial's time goes mostly to drawing its three (C, C) weights, the rest to its (T, C) rows and
    // (T, T) scores: about (C + T)^2. The call runs `heads` trials per width, with and without the divisor.
    double work = 0;
    for (int64_t C : widths) work += double(heads) * double((C + T) * (C + T));
    if (work > kSaturationWork)
        bad("saturation",
            fmt::format("{} heads x the sum over widths {} of (width + window {})^2 is {:.3g}, over the limit of "
                        "{:.3g} for one call; ask for fewer heads, narrower widths or a shorter window",
                        heads, nlohmann::json(widths).dump(), T, work, kSaturationWork));
    Generator gen(seed(r, "saturation"));
    Json answer = {{"widths", widths}, {"window", T}, {"heads", heads}};
    for (bool divided : {true, false}) {
        std::vector<float> row_gradient, largest_share, flat_rows;
        for (int64_t width : widths) {
            const nn::study::Saturation s = nn::study::saturation(width, divided, T, heads, gen);
            row_gradient.push_back(static_cast<float>(s.row_gradient.median));
            largest_share.push_back(static_cast<float>(s.largest_share.median));
            flat_rows.push_back(static_cast<float>(s.flat_rows));
        }
        answer[divided ? "divided" : "raw"] = {
            {"row_gradient", row_gradient}, {"largest_share", largest_share}, {"flat_rows", flat_rows}};
    }
    return answer;
}

// --- training -----------------------------------------------------------------------------------------
// One SingleHead (C = H = 32, window 16) learning the copy task (nn/tutorial/tasks.h) with AdamW, as
// examples/gradflow trains it: the characters as tokens (CharTokenizer), batches of 16 windows drawn at
// random from the first 90% (TextData), a constant learning rate (the run has no planned end: the page stops and
// continues it). After the first word of a line every character repeats the one 5 places back, so the
// loss falls from ln V as the head learns to look there, which the probe window's map shows.
struct CopyTaskRun {
    static constexpr int64_t kWidth = 32, kBlock = 16, kBatch = 16;
    static constexpr float kLr = 3e-3f;

    explicit CopyTaskRun(uint64_t seed)
        : text([seed] {
              Generator g(seed);
              return nn::copy_task_text(500, g);
          }()),
          tokenizer(nn::CharTokenizer::from_text(text)),
          data(tokenizer.encode(text)),
          init(seed + 1),
          batches(seed + 2),
          model({.vocab = tokenizer.vocab_size(), .n_embd = kWidth, .block = kBlock}, init),
          opt(model, {.lr = kLr, .beta2 = 0.99f}) {}

    // One step: a batch of (B, T) windows of the training split and their next characters, forward,
    // backward, AdamW.
    float step() {
        const nn::Batch b = data.batch(nn::Split::train, kBatch, kBlock, batches);
        opt.zero_grad();
        const Tensor loss = cross_entropy(model(b.inputs, b.B, b.T), b.targets);  // logits (B, T, V)
        loss.backward();
        opt.step();
        ++steps;
        return loss.item();
    }

    // The head's attention on the first window of the text, (T, T), and that window's characters.
    std::string probe_window() const { return text.substr(0, kBlock); }
    Json probe() {
        NoGradGuard no_grad;
        (void)model(tokenizer.encode(probe_window()), 1, kBlock);
        return rows_of(model.head.last_attention());
    }

    std::string text;
    nn::CharTokenizer tokenizer;
    nn::TextData data;
    Generator init, batches;
    nn::SingleHead model;
    nn::AdamW opt;
    int64_t steps = 0;
};

std::unique_ptr<CopyTaskRun> run;  // the page's one training run (a worker's module has its own)

Json train_start(const Request& r) {
    run = std::make_unique<CopyTaskRun>(seed(r, "train_start"));
    Json vocab = Json::array();
    for (int64_t id = 0; id < run->tokenizer.vocab_size(); ++id)
        vocab.push_back(axis::label(run->tokenizer.decode(std::span(&id, 1))));
    Json probe_labels = Json::array();
    for (char c : run->probe_window())
        probe_labels.push_back(axis::label(std::string(1, c)));  // (the copy task's characters are ASCII)
    return {{"vocab", vocab},
            {"n_embd", CopyTaskRun::kWidth},
            {"block", CopyTaskRun::kBlock},
            {"batch", CopyTaskRun::kBatch},
            {"lr", CopyTaskRun::kLr},
            {"text", run->text.substr(0, 4 * 40)},
            {"probe_labels", probe_labels},
            {"attention", run->probe()},
            {"step", run->steps}};
}

Json train_steps(const Request& r) {
    if (!run) bad("train_steps", "no run: call train_start first");
    const int64_t n = integer(r, "train_steps", "steps", 1, 1, 100000);
    std::vector<float> losses;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; ++i) losses.push_back(run->step());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return {{"step", run->steps}, {"losses", losses}, {"seconds", seconds}, {"attention", run->probe()}};
}

}  // namespace

std::string call(std::string_view request) {
    Json answer;
    try {
        const Request r = Request::parse(request);
        if (!r.is_object() || !r.contains("call") || !r["call"].is_string())
            throw std::invalid_argument("a request is an object with \"call\": the call's name");
        const std::string name = r["call"].get<std::string>();
        if (name == "lab")
            return lab::run(seed(r, "lab")).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
        if (name == "head") answer = head(r);
        else if (name == "saturation") answer = saturation(r);
        else if (name == "train_start") answer = train_start(r);
        else if (name == "train_steps") answer = train_steps(r);
        else
            throw std::invalid_argument(
                fmt::format("no call named \"{}\": lab, head, saturation, train_start, train_steps", name));
    } catch (const std::exception& e) {
        answer = {{"error", e.what()}};
    }
    return answer.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace web
