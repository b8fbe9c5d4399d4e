// What attention learns: the induction-head lab. A two-layer attention-only transformer trained on
// random tokens in which a random segment reappears later learns, at one sudden point, to continue the
// repeat ([A][B] ... [A] -> [B]): a first-layer head comes to look one token back (previous-token head)
// and a second-layer head to look at the token after the earlier occurrence of the current one (induction
// head). A one-layer control of about the same size cannot: it has no earlier layer to read from.
// Elhage et al. (2021), Olsson et al. (2022).
//
//   induction                                  both models, a line per evaluation, then the figures
//   induction --json                           the same, the figures as one JSON line last on stdout
//   induction --figures DIR                    and three SVG pictures in DIR (attention, loss, scores)
//   induction --report run.html                and the two-layer model's training as a report page (train --report)
//   induction --out induction.safetensors      and the trained two-layer model as a checkpoint (the attn_only kind)
//                                              that every program reads: ablate, patch, attribute, lens, cache, ...
//
// Every number comes from nn::AttentionOnly and nn/tutorial/induction.h. Exit status: 0 done, 1 failed,
// 2 bad arguments.
//
// Shape legend: B batch, T window, C residual width, V vocabulary.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <cli.h>
#include <nn/attention_only.h>
#include <nn/files/atomic_file.h>
#include <nn/train/optim.h>
#include <nn/train/report.h>
#include <nn/train/trainer.h>
#include <nn/tutorial/induction.h>
#include <nlohmann/json.hpp>

#include "run_report.h"
#include "svg_chart.h"

using namespace autograd;

namespace {

struct Options {
    nn::InductionDataOptions data{.vocab = 24, .block = 40, .min_segment = 10, .max_segment = 20};
    int64_t n_embd = 32, n_head = 4, control_n_embd = 40, steps = 2000, batch = 32, eval_every = 50, eval_batch = 64;
    float lr = 3e-3f;
    uint64_t seed = 1;
    int64_t threads = 1;
    std::optional<std::string> figures, report, out;
    bool json = false, force = false;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("induction", "[options]",
                  "Induction heads: what a two-layer attention-only model learns that one layer cannot.");
    p.section("data (made in memory)");
    p.option("--vocab", "V", "tokens drawn uniformly                            (default 24)",
             [&o](const cli::Value& v) { o.data.vocab = v.integer(2, 4096); });
    p.option("--block", "T", "window length                                     (default 40)",
             [&o](const cli::Value& v) { o.data.block = v.integer(4, 1024); });
    p.option("--segment", "MIN:MAX", "length of the repeated segment                 (default 10:20)",
             [&o](const cli::Value& v) {
                 const std::string text = v.nonempty();
                 const size_t colon = text.find(':');
                 char* end = nullptr;
                 const long lo = std::strtol(text.c_str(), &end, 10);
                 const long hi = colon == std::string::npos ? -1 : std::strtol(text.c_str() + colon + 1, &end, 10);
                 if (colon == std::string::npos || *end != '\0' || lo < 2 || hi < lo)
                     throw cli::UsageError(fmt::format("--segment needs MIN:MAX with 2 <= MIN <= MAX, got '{}'", text));
                 o.data.min_segment = lo;
                 o.data.max_segment = hi;
             });
    p.section("models and training");
    p.option("--n-embd", "C", "residual width of the two-layer model             (default 32)",
             [&o](const cli::Value& v) { o.n_embd = v.integer(1, 4096); });
    p.option("--control-n-embd", "C", "residual width of the one-layer control           (default 40)",
             [&o](const cli::Value& v) { o.control_n_embd = v.integer(1, 4096); });
    p.option("--n-head", "N", "heads per layer, both models; divides both widths (default 4)",
             [&o](const cli::Value& v) { o.n_head = v.integer(1, 64); });
    p.option("--steps", "N", "optimizer steps per model                         (default 2000)",
             [&o](const cli::Value& v) { o.steps = v.integer(1, int64_t{1} << 30); });
    p.option("--batch", "B", "sequences per step                                (default 32)",
             [&o](const cli::Value& v) { o.batch = v.integer(1, 1 << 16); });
    p.option("--lr", "X", "AdamW learning rate, constant                     (default 3e-3)",
             [&o](const cli::Value& v) { o.lr = v.number(0.0, 10.0, true); });
    p.option("--eval-every", "N", "measure every N steps                             (default 50)",
             [&o](const cli::Value& v) { o.eval_every = v.integer(1, int64_t{1} << 30); });
    p.option("--eval-batch", "B", "fixed sequences measured at each evaluation       (default 64)",
             [&o](const cli::Value& v) { o.eval_batch = v.integer(1, 1 << 16); });
    p.option("--seed", "S", "data, initialization                              (default 1)",
             [&o](const cli::Value& v) { o.seed = static_cast<uint64_t>(v.integer(0, INT64_MAX)); });
    p.option("--threads", "N", "threads for the kernels                           (default 1)",
             [&o](const cli::Value& v) { o.threads = v.integer(1, 256); });
    p.section("output");
    p.option("--figures", "DIR", "write induction_attention.svg, induction_loss.svg and induction_scores.svg",
             [&o](const cli::Value& v) { o.figures = v.file(); });
    p.option("--report", "HTML",
             "a report page of the two-layer model's training (as train --report),\n"
             "rewritten at every evaluation",
             [&o](const cli::Value& v) { o.report = v.file(); });
    p.option("--out", "FILE",
             "the trained two-layer model as a checkpoint the other programs read (its\n"
             "tokens are the letters a, b, c, ... up to 26, else token ids)",
             [&o](const cli::Value& v) { o.out = v.file(); });
    p.flag("--force", cli::kForceHelp, [&o] { o.force = true; });
    p.flag("--json", "print the figures as one JSON line last on stdout", [&o] { o.json = true; });
    return p;
}

struct HeadScore {
    int64_t layer = -1, head = -1;
    double score = NAN;  // a mean share of attention
    std::string name() const { return fmt::format("layer {} head {}", layer, head); }
    std::string percent() const { return fmt::format("{:.{}f}%", 100 * score, 100 * score < 9.95 ? 1 : 0); }
};

// One evaluation of a model on the fixed batch.
struct Evaluation {
    int64_t step = 0;
    nn::InductionLosses losses;
    double mean_loss = 0;                                                        // over every token of the batch
    std::vector<std::vector<double>> previous_token = {}, prefix_matching = {};  // [layer][head]
    HeadScore best(const std::vector<std::vector<double>>& scores) const {
        HeadScore best;
        for (size_t l = 0; l < scores.size(); ++l)
            for (size_t h = 0; h < scores[l].size(); ++h)
                if (!(scores[l][h] <= best.score)) best = {int64_t(l), int64_t(h), scores[l][h]};
        return best;
    }
};

Evaluation evaluate(nn::AttentionOnly& model, const nn::InductionBatch& batch, int64_t step) {
    NoGradGuard no_grad;
    model.eval();
    const Tensor logits = model(batch.inputs, batch.B, batch.T);  // (B, T, V)
    model.train();
    const std::vector<double> losses = nn::token_losses(logits, batch.targets);
    Evaluation e{.step = step, .losses = nn::induction_losses(losses, batch)};
    for (const double l : losses) e.mean_loss += l / double(losses.size());
    for (const nn::AttentionHead& head : nn::attention_heads(model)) {
        if (head.head == 0) {
            e.previous_token.emplace_back();
            e.prefix_matching.emplace_back();
        }
        e.previous_token.back().push_back(nn::previous_token_score(head.module.last_attention()));
        e.prefix_matching.back().push_back(nn::prefix_matching_score(head.module.last_attention(), batch));
    }
    return e;
}

struct Run {
    std::string name;
    std::unique_ptr<nn::AttentionOnly> model;
    int64_t params = 0;
    std::vector<Evaluation> evaluations = {};
    std::vector<std::vector<float>> attention =
        {};  // the last evaluation's (T, T) map of sequence 0, per [layer * n_head + head]
};

// The report page's fixed sample: the first evaluation sequence, its tokens shown as letters and digits.
std::string token_letters(std::span<const int64_t> ids) {
    static constexpr std::string_view kLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string out;
    for (const int64_t id : ids) out += id < int64_t(kLetters.size()) ? kLetters[size_t(id)] : '?';
    return out;
}

// With `page`, the run is also drawn there (train --report's page): the batch loss every fifth of an
// evaluation interval, the evaluation batch's mean loss as the validation loss, the gradient norms
// (before clipping) and the attention maps on the first evaluation sequence at every evaluation.
Run train(const Options& o, const std::string& name, int64_t n_embd, int64_t n_layer,
          const nn::InductionBatch& eval_batch, report::RunReport* page = nullptr) {
    Generator init(o.seed * 2 + 11), data(o.seed * 2 + 12);  // the same data stream for both models
    Run run{
        .name = name,
        .model = std::make_unique<nn::AttentionOnly>(
            nn::AttentionOnlyOptions{
                .vocab = o.data.vocab, .n_embd = n_embd, .n_head = o.n_head, .n_layer = n_layer, .block = o.data.block},
            init)};
    nn::AttentionOnly& model = *run.model;
    run.params = model.parameter_count();
    nn::AdamW optimizer(model, {.lr = o.lr, .weight_decay = 0.0f});
    const std::span<const int64_t> sample(eval_batch.inputs.data(), size_t(eval_batch.T));
    const auto measure = [&](int64_t step, double batch_loss) {
        run.evaluations.push_back(evaluate(model, eval_batch, step));
        const Evaluation& e = run.evaluations.back();
        if (page) {
            page->add_log(step, batch_loss, NAN, e.mean_loss, o.lr);
            page->add_attention(step, model, sample, token_letters(sample));
            page->write(*o.report, "--report");
        }
        const HeadScore prev = e.best(e.previous_token), induction = e.best(e.prefix_matching);
        fmt::print(
            stderr,
            "{} step {:>5}: loss on repeats {:.3f}, on first occurrences {:.3f}; best previous-token head {} ({}), "
            "induction head {} ({})\n",
            name, step, e.losses.repeated, e.losses.first, prev.name(), prev.percent(), induction.name(),
            induction.percent());
    };
    measure(0, NAN);
    const int64_t page_every = std::max<int64_t>(1, o.eval_every / 5);
    for (int64_t step = 1; step <= o.steps; ++step) {
        const nn::InductionBatch batch = nn::make_induction_batch(o.data, o.batch, data);
        optimizer.zero_grad();
        const Tensor loss = cross_entropy(model(batch.inputs, batch.B, batch.T), batch.targets);
        loss.backward();
        const bool evaluating = step % o.eval_every == 0 || step == o.steps;
        if (page && evaluating) page->add_gradients(nn::gradient_report(model, nullptr, step));
        const float norm = nn::clip_grad_norm(model.parameters(), 1.0f);
        if (!std::isfinite(loss.item()) || !std::isfinite(norm))
            throw std::runtime_error(
                fmt::format("{} model: at step {} the loss is {} and the gradient norm {}; try a lower --lr", name,
                            step, loss.item(), norm));
        optimizer.step();
        if (evaluating) measure(step, loss.item());
        else if (page && step % page_every == 0) page->add_log(step, loss.item(), NAN, NAN, o.lr);
    }
    for (const nn::AttentionHead& head : nn::attention_heads(model)) {
        const auto w = head.module.last_attention().data();  // (B, T, T): sequence 0 is the first T * T
        run.attention.emplace_back(w.begin(), w.begin() + eval_batch.T * eval_batch.T);
    }
    return run;
}

// --- pictures ----------------------------------------------------------------------------------------

std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
    return out;
}

// Two (T, T) attention maps side by side, white 0 to dark blue 1, with the segment and its copy marked.
std::string attention_svg(const std::vector<const std::vector<float>*>& maps, const std::vector<std::string>& titles,
                          const nn::InductionBatch& batch) {
    const int64_t T = batch.T, cell = std::max<int64_t>(3, 320 / T), side = cell * T, margin = 40, gap = 50;
    const int64_t width = margin + int64_t(maps.size()) * (side + gap), height = side + margin + 60;
    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
        "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
        width, height, width, height);
    const int64_t s = batch.segment_start[0], d = batch.copy_start[0], L = batch.segment_length[0];
    for (size_t m = 0; m < maps.size(); ++m) {
        const int64_t x0 = margin + int64_t(m) * (side + gap), y0 = margin;
        svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", x0, y0 - 22, escape(titles[m]));
        svg += fmt::format(
            "<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"#555\">key (looked at) →; rows: query</text>\n", x0,
            y0 - 8);
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j <= i; ++j) {
                const double w = std::clamp(double((*maps[m])[i * T + j]), 0.0, 1.0);
                const int shade = static_cast<int>(std::lround(255 * (1 - w)));
                svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"rgb({},{},255)\"/>\n",
                                   x0 + j * cell, y0 + i * cell, cell, cell, shade, shade);
            }
        svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", x0,
                           y0, side, side);
        // the copy's rows (queries d .. d+L-1) and the segment's columns (keys s .. s+L-1), in orange
        svg += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#ff7f0e\" "
            "stroke-dasharray=\"3,2\"/>\n",
            x0 + s * cell, y0 + d * cell, L * cell, L * cell);
    }
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#555\">one sequence of T = {}: tokens {}..{} repeat {}..{} "
        "(dashed box: copy's rows against the segment's columns)</text>\n</svg>\n",
        margin, height - 16, T, d, d + L - 1, s, s + L - 1);
    return svg;
}

void write_figures(const Options& o, const Run& two, const Run& control, std::optional<int64_t> phase,
                   const HeadScore& prev, const HeadScore& induction, const nn::InductionBatch& eval_batch) {
    const std::filesystem::path dir = *o.figures;
    const auto& a = two.attention;
    nn::write_file_atomically(
        dir / "induction_attention.svg",
        attention_svg({&a[prev.layer * o.n_head + prev.head], &a[induction.layer * o.n_head + induction.head]},
                      {fmt::format("previous-token head {}.{} (score {:.2f})", prev.layer, prev.head, prev.score),
                       fmt::format("induction head {}.{} (prefix matching {:.2f})", induction.layer, induction.head,
                                   induction.score)},
                      eval_batch),
        "induction --figures");

    const auto column = [](const Run& r, auto field) {
        std::vector<double> xs, ys;
        for (const Evaluation& e : r.evaluations) xs.push_back(double(e.step)), ys.push_back(field(e));
        return std::pair(xs, ys);
    };
    chart::LineChart loss{
        .title = "Loss on repeated tokens and on first occurrences",
        .x = {.label = "step"},
        .y = {.label = "loss (nats per token)", .min = 0.0},
        .note = phase ? fmt::format("phase change at step {} (repeated-token loss halfway down)", *phase)
                      : std::string("no phase change")};
    const auto add = [&](const Run& r, const char* what, auto field, const char* color, bool dashed) {
        auto [xs, ys] = column(r, field);
        loss.series.push_back(
            {.name = fmt::format("{}, {}", r.name, what), .x = xs, .y = ys, .color = color, .dashed = dashed});
    };
    add(
        two, "repeated", [](const Evaluation& e) { return e.losses.repeated; }, "#1f77b4", false);
    add(
        two, "first occurrences", [](const Evaluation& e) { return e.losses.first; }, "#1f77b4", true);
    add(
        control, "repeated", [](const Evaluation& e) { return e.losses.repeated; }, "#d62728", false);
    add(
        control, "first occurrences", [](const Evaluation& e) { return e.losses.first; }, "#d62728", true);
    if (phase) {
        double top = 0;
        for (const Evaluation& e : control.evaluations) top = std::max({top, e.losses.first, e.losses.repeated});
        loss.series.push_back({.name = fmt::format("phase change, step {}", *phase),
                               .x = {double(*phase), double(*phase)},
                               .y = {0.0, top},
                               .color = "#2ca02c",
                               .dashed = true});
    }
    chart::write_svg(loss, dir / "induction_loss.svg");

    chart::LineChart scores{
        .title = "Head scores of the two-layer model",
        .x = {.label = "step"},
        .y = {.label = "mean attention", .min = 0.0, .max = 1.0},
        .note = "solid: previous-token score of layer 0's heads; dashed: prefix-matching score of layer 1's heads"};
    const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    for (int64_t h = 0; h < o.n_head; ++h) {
        auto [xs, prev_ys] = column(two, [h](const Evaluation& e) { return e.previous_token[0][h]; });
        scores.series.push_back(
            {.name = fmt::format("0.{} previous token", h), .x = xs, .y = prev_ys, .color = palette[h % 8]});
        auto [xs2, prefix_ys] = column(two, [h](const Evaluation& e) { return e.prefix_matching.back()[h]; });
        scores.series.push_back(
            {.name = fmt::format("{}.{} prefix matching", two.evaluations[0].prefix_matching.size() - 1, h),
             .x = xs2,
             .y = prefix_ys,
             .color = palette[h % 8],
             .dashed = true});
    }
    chart::write_svg(scores, dir / "induction_scores.svg");
}

nlohmann::ordered_json head_json(const HeadScore& h) {
    return {{"layer", h.layer}, {"head", h.head}, {"score", std::round(h.score * 1e4) / 1e4}};
}

// The two-layer model as a checkpoint of the attn_only kind. Its tokens are the letters token_letters
// shows (a character tokenizer, whose ids are the sorted letters: a, b, c, ... while V <= 26), else ids.
void save_model(const Options& o, const nn::AttentionOnly& model, const std::string& path) {
    const nn::ModelConfig config{.kind = nn::ModelKind::attn_only,
                                 .vocab = o.data.vocab,
                                 .n_embd = model.options.n_embd,
                                 .n_head = model.options.n_head,
                                 .n_layer = model.options.n_layer,
                                 .block = model.options.block};
    if (o.data.vocab > 26)
        return nn::save_model_checkpoint(path, model, config, nn::IdTokenizer(o.data.vocab, "induction"));
    std::vector<char32_t> letters;
    for (char32_t c = U'a'; c < U'a' + char32_t(o.data.vocab); ++c) letters.push_back(c);
    nn::save_model_checkpoint(path, model, config, nn::CharTokenizer(letters));
}

int run(const Options& o) {
    set_num_threads(static_cast<int>(o.threads));
    for (int64_t width : {o.n_embd, o.control_n_embd})
        if (width % o.n_head != 0)
            throw cli::UsageError(fmt::format("--n-head {} must divide the width {}", o.n_head, width));
    if (o.data.min_segment < 2 || 2 * o.data.max_segment > o.data.block + 1)
        throw cli::UsageError(fmt::format("--segment {}:{} does not fit twice in --block {} + 1 tokens",
                                          o.data.min_segment, o.data.max_segment, o.data.block));
    std::vector<cli::Output> outputs;
    if (o.figures)
        for (const char* name : {"induction_attention.svg", "induction_loss.svg", "induction_scores.svg"})
            outputs.push_back({.flag = "--figures", .path = (std::filesystem::path(*o.figures) / name).string()});
    if (o.report) outputs.push_back({.flag = "--report", .path = *o.report});
    if (o.out) outputs.push_back({.flag = "--out", .path = *o.out});
    const cli::OutputLocks locks = cli::claim_outputs({}, outputs, o.force);
    const auto start = std::chrono::steady_clock::now();

    Generator eval_gen(o.seed * 2 + 13);
    const nn::InductionBatch eval_batch = nn::make_induction_batch(o.data, o.eval_batch, eval_gen);
    std::optional<report::RunReport> page;
    if (o.report)
        page.emplace(nlohmann::ordered_json{{"program", "induction (the two-layer model)"},
                                            {"vocab", o.data.vocab},
                                            {"block", o.data.block},
                                            {"segment", fmt::format("{}:{}", o.data.min_segment, o.data.max_segment)},
                                            {"n_embd", o.n_embd},
                                            {"n_head", o.n_head},
                                            {"n_layer", 2},
                                            {"steps", o.steps},
                                            {"batch", o.batch},
                                            {"lr", std::stod(fmt::format("{:.6g}", o.lr))},
                                            {"eval_every", o.eval_every},
                                            {"eval_batch", o.eval_batch},
                                            {"seed", o.seed},
                                            {"val loss", "the mean loss on the fixed evaluation batch"}});
    const Run two = train(o, "two layers", o.n_embd, 2, eval_batch, page ? &*page : nullptr);
    const Run control = train(o, "one layer", o.control_n_embd, 1, eval_batch);

    std::vector<int64_t> steps;
    std::vector<double> repeat;
    for (const Evaluation& e : two.evaluations) steps.push_back(e.step), repeat.push_back(e.losses.repeated);
    const std::optional<int64_t> phase = nn::phase_change_step(steps, repeat);
    const Evaluation& last = two.evaluations.back();
    const Evaluation& control_last = control.evaluations.back();
    const HeadScore prev = last.best(last.previous_token), induction = last.best(last.prefix_matching);
    if (o.figures) write_figures(o, two, control, phase, prev, induction, eval_batch);
    if (o.out) save_model(o, *two.model, *o.out);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const auto r4 = [](double v) { return std::round(v * 1e4) / 1e4; };
    fmt::print(
        "two layers ({} parameters): loss on repeated tokens {:.3f}, on first occurrences {:.3f} (log V = {:.3f}), "
        "in-context score {:.3f}; phase change {}\n",
        two.params, last.losses.repeated, last.losses.first, std::log(double(o.data.vocab)), last.losses.icl_score(),
        phase ? fmt::format("at step {}", *phase) : std::string("not seen"));
    fmt::print("  the previous-token head is {}: {} of its attention on the previous token\n", prev.name(),
               prev.percent());
    fmt::print(
        "  the induction head is {}: {} of a repeated token's attention on the token after its earlier occurrence\n",
        induction.name(), induction.percent());
    fmt::print(
        "one layer ({} parameters): loss on repeated tokens {:.3f}, on first occurrences {:.3f}, in-context score "
        "{:.3f}\n",
        control.params, control_last.losses.repeated, control_last.losses.first, control_last.losses.icl_score());
    if (o.json) {
        const nlohmann::ordered_json figures = {
            {"phase_change_step", phase ? nlohmann::ordered_json(*phase) : nlohmann::ordered_json(nullptr)},
            {"repeat_loss", r4(last.losses.repeated)},
            {"first_loss", r4(last.losses.first)},
            {"icl_score", r4(last.losses.icl_score())},
            {"control_repeat_loss", r4(control_last.losses.repeated)},
            {"control_first_loss", r4(control_last.losses.first)},
            {"control_icl_score", r4(control_last.losses.icl_score())},
            {"log_vocab", r4(std::log(double(o.data.vocab)))},
            {"previous_token_head", head_json(prev)},
            {"induction_head", head_json(induction)},
            {"params", two.params},
            {"control_params", control.params},
            {"steps", o.steps},
            {"seconds", std::round(seconds * 100) / 100}};
        fmt::print("{}\n", figures.dump());
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
