// The saturation study: what the 1/sqrt(width) divisor does to the gradient that reaches an attention
// head's query and key matrices, measured on the graph (nn::study::saturation), then on a short training
// run of a wide head on the copy task, with and without the divisor.
//
//   gradflow                          both parts, as tables
//   gradflow --steps 0 --json         the measured table (and no training) as one JSON object
//   gradflow --svg grad.svg --train-svg train.svg --csv grad.csv --dot head.dot
//
// And for any trained model, on your own data (examples/gradflow_checkpoint.h):
//
//   gradflow run.safetensors --data FILE [--batch B --block T --batches N] [--json] [--csv FILE]
//
// Every random draw is seeded (--seed). Each row of the table has a generator of its own, seeded with
// the "stream" number the JSON shows, so nn::study::saturation(width, divided, window, trials,
// Generator(stream)) reproduces a row exactly. Exit status: 0 done, 1 failed, 2 bad arguments.
//
// Shape legend: B batch, T window, C embedding width, H head width, V vocabulary.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <autograd/autograd.h>
#include <cli.h>
#include <nn/models.h>
#include <nn/files/atomic_file.h>
#include <nn/train/optim.h>
#include <nn/tutorial/study.h>
#include <nn/tutorial/tasks.h>
#include <nn/train/text.h>
#include <nlohmann/json.hpp>

#include "gradflow_checkpoint.h"
#include "progress.h"
#include "svg_chart.h"

using namespace autograd;

namespace {

struct Options {
    uint64_t seed = 1;
    int64_t trials = 50, window = 8, steps = 300;
    std::optional<std::string> csv, svg, train_svg, dot;
    bool json = false, force = false;
    int64_t threads = 1;
    // a checkpoint's gradient on --data instead of the study
    std::optional<cli::Input> checkpoint;
    std::optional<std::string> data, tokenizer;
    std::optional<int64_t> n_head;
    int64_t batch = 4, batches = 1;
    std::optional<int64_t> block;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("gradflow", "[options] | CKPT --data FILE [options]",
                  "The saturation study: what the 1/sqrt(width) divisor does to a head's gradient;\n"
                  "or, with a checkpoint, every parameter's gradient norm on your data.");
    p.section("the study");
    p.option("--seed", "S", "seed for every random draw                          (default 1)",
             [&o](const cli::Value& v) { o.seed = static_cast<uint64_t>(v.integer(0, INT64_MAX)); });
    p.option("--trials", "N", "random heads per width in the study                 (default 50)",
             [&o](const cli::Value& v) { o.trials = v.integer(1, 100000); });
    p.option("--window", "T", "window length in the study                          (default 8)",
             [&o](const cli::Value& v) { o.window = v.integer(2, 4096); });
    p.option("--steps", "N",
             "training steps per run, with and without the divisor;\n0 skips the training run (default 300)",
             [&o](const cli::Value& v) { o.steps = v.integer(0, 1000000); });
    p.option("--csv", "FILE", "write the study's table as CSV (with CKPT: the gradient report,\nas train --grad-csv)",
             [&o](const cli::Value& v) { o.csv = v.file(); });
    p.option("--svg", "FILE", "chart the gradient against width (log-log)",
             [&o](const cli::Value& v) { o.svg = v.file(); });
    p.option("--train-svg", "FILE", "chart the training runs' validation loss",
             [&o](const cli::Value& v) { o.train_svg = v.file(); });
    p.option("--dot", "FILE", "write the graph of one small head's forward and backward (Graphviz DOT)",
             [&o](const cli::Value& v) { o.dot = v.file(); });
    p.section("a checkpoint on your data");
    cli::checkpoint_argument(p, o.checkpoint, o.tokenizer, o.n_head,
                             "a checkpoint saved by train --out, or GPT-2 weights: its gradient\non --data", false);
    p.option("--data", "FILE", "text (encoded with the checkpoint's tokenizer) or a token file (.bin)",
             [&o](const cli::Value& v) { o.data = v.file(); });
    p.option("--batch", "B", "rows of a window                                    (default 4)",
             [&o](const cli::Value& v) { o.batch = v.integer(1, 1 << 16); });
    p.option("--block", "T", "tokens of a row, at most the model's block          (default its block)",
             [&o](const cli::Value& v) { o.block = v.integer(1, 1 << 20); });
    p.option("--batches", "N", "consecutive windows from the start of the file      (default 1)",
             [&o](const cli::Value& v) { o.batches = v.integer(1, 1 << 20); });
    p.section("output and threads");
    p.option("--threads", "N", "threads for the kernels                             (default 1)",
             [&o](const cli::Value& v) { o.threads = v.integer(1, 256); });
    p.flag("--force", cli::kForceHelp, [&o] { o.force = true; });
    p.flag("--json", "print the measured values as one JSON object instead of tables", [&o] { o.json = true; });
    return p;
}

// --- the study --------------------------------------------------------------------------------------

const std::vector<int64_t> kWidths = {2, 4, 8, 16, 32, 64, 128, 256};

struct Row {
    uint64_t stream = 0;  // the seed of this row's generator
    nn::study::Saturation s;
};

// Each (width, divided) row draws from a stream of its own, so any row can be reproduced alone.
uint64_t stream_seed(uint64_t seed, int64_t width, bool divided) {
    return seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(2 * width + (divided ? 1 : 0));
}

std::vector<Row> run_study(const Options& o) {
    std::vector<Row> rows;
    progress::Bar bar("the study", "rows");
    for (int64_t width : kWidths)
        for (bool divided : {true, false}) {
            const uint64_t stream = stream_seed(o.seed, width, divided);
            Generator gen(stream);
            rows.push_back({stream, nn::study::saturation(width, divided, o.window, o.trials, gen)});
            bar.update(rows.size(), 2 * kWidths.size());
        }
    return rows;
}

const nn::study::Saturation& find(const std::vector<Row>& rows, int64_t width, bool divided) {
    for (const Row& r : rows)
        if (r.s.width == width && r.s.divided == divided) return r.s;
    throw std::logic_error(fmt::format("gradflow: no row for width {}", width));
}

void print_study(const Options& o, const std::vector<Row>& rows) {
    fmt::print(
        "The divisor and the gradient, measured on the graph ({} random heads per width, window {}, seed {}).\n"
        "Rows of N(0, 1) entries, Wq, Wk, Wv drawn N(0, 1/width): q and k entries are everyday-size at every\n"
        "width; the upstream gradient makes what arrives at the shares unit-variance, so only the softmax changes.\n\n",
        o.trials, o.window, o.seed);
    fmt::print("  width  divisor     |dWq|     |dWk|  row gradient  flat rows  largest share  entropy\n");
    fmt::print("                    (median over heads)   (median)               (median)   (nats)\n");
    for (const Row& r : rows) {
        const auto& s = r.s;
        fmt::print("  {:>5}  {:>7}  {:8.3f}  {:8.3f}  {:12.2e}  {:8.0f}%  {:13.3f}  {:7.3f}\n", s.width,
                   s.divided ? "÷√H" : "none", s.grad_query, s.grad_key, s.row_gradient.median, 100 * s.flat_rows,
                   s.largest_share.median, s.entropy);
    }
    fmt::print(
        "\n  |dWq|, |dWk|: norm of the whole matrix's gradient. row gradient: ||dL/dscores|| of one looking row,\n"
        "  what came back through the softmax. flat: a row passing back under {:g}.\n",
        nn::study::kFlatRowGradient);
}

// What the table shows, in words computed from it.
std::string study_finding(const std::vector<Row>& rows) {
    const auto& w2 = find(rows, 2, true);
    const auto& w256 = find(rows, 256, true);
    const auto& r2 = find(rows, 2, false);
    const auto& r128 = find(rows, 128, false);
    const auto& d128 = find(rows, 128, true);
    std::string out = fmt::format(
        "With the divisor the typical row passes back {:.2f} at width 2 and {:.2f} at width 256{}.\n"
        "Without it the typical row's gradient goes from {:.2f} at width 2 to {:.1e} at width 128 ({:.0f}x less than\n"
        "with the divisor there), and {:.0f}% of the rows are flat.\n",
        w2.row_gradient.median, w256.row_gradient.median,
        w256.row_gradient.median >= 0.5 * w2.row_gradient.median ? ": steady" : ": it falls too",
        r2.row_gradient.median, r128.row_gradient.median,
        d128.row_gradient.median / std::max(r128.row_gradient.median, 1e-30), 100 * r128.flat_rows);
    const double wq_ratio = r128.grad_query / d128.grad_query;
    out += fmt::format(
        "The whole-matrix norm |dWq| at width 128 is {:.2f} without and {:.2f} with the divisor ({}): it is made by "
        "the\n"
        "rows that are not flat yet (and, without the divisor, is not multiplied by 1/sqrt(H) on its way back), so a\n"
        "matrix norm hides the collapse that the typical row shows.\n",
        r128.grad_query, d128.grad_query,
        wq_ratio >= 1.5   ? fmt::format("{:.1f}x larger, not smaller", wq_ratio)
        : wq_ratio >= 0.5 ? std::string("about the same")
                          : fmt::format("{:.1f}x less, far less than the rows' {:.0f}x", 1 / wq_ratio,
                                        d128.row_gradient.median / std::max(r128.row_gradient.median, 1e-30)));
    return out;
}

void write_csv(const std::string& path, const std::vector<Row>& rows) {
    std::string csv = fmt::format(
        "width,divided,grad_query,grad_key,row_gradient_median,row_gradient_min,row_gradient_max,flat_rows,"
        "largest_share_median,entropy\n");
    for (const Row& r : rows) {
        const auto& s = r.s;
        csv += fmt::format("{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}\n", s.width,
                           s.divided ? 1 : 0, s.grad_query, s.grad_key, s.row_gradient.median, s.row_gradient.min,
                           s.row_gradient.max, s.flat_rows, s.largest_share.median, s.entropy);
    }
    nn::write_file_atomically(path, csv, "gradflow --csv");
}

void write_study_svg(const std::string& path, const Options& o, const std::vector<Row>& rows) {
    chart::LineChart c{.title = "Gradient through an attention head against its width",
                       .x = {.label = "head width H", .scale = chart::Scale::log},
                       .y = {.label = "gradient norm", .scale = chart::Scale::log},
                       .note = fmt::format("nn::study::saturation: {} random heads per width, window {}, seed {}",
                                           o.trials, o.window, o.seed),
                       .width = 760,
                       .height = 440};
    const auto series = [&](const char* what, bool divided, const char* color, auto value) {
        chart::Series s{.name = fmt::format("{}, {}", what, divided ? "÷√H" : "no divisor"),
                        .color = color,
                        .dashed = !divided,
                        .markers = true};
        for (const Row& r : rows)
            if (r.s.divided == divided) s.x.push_back(double(r.s.width)), s.y.push_back(value(r.s));
        c.series.push_back(std::move(s));
    };
    const auto row = [](const nn::study::Saturation& s) { return s.row_gradient.median; };
    const auto wq = [](const nn::study::Saturation& s) { return s.grad_query; };
    series("typical row's gradient", true, "#1f77b4", row);
    series("typical row's gradient", false, "#1f77b4", row);
    series("|dWq|", true, "#d62728", wq);
    series("|dWq|", false, "#d62728", wq);
    if (std::ranges::any_of(rows, [](const Row& r) { return r.s.row_gradient.median <= 0.0; }))
        c.note += "; a gradient of exactly 0 cannot be drawn on a log axis: the line breaks there";
    chart::write_svg(c, path);
}

// One small head's forward and backward, as Graphviz DOT.
void write_dot(const std::string& path, uint64_t seed) {
    Generator gen(seed);
    nn::Head head({.n_embd = 4, .head_size = 4}, gen);
    for (auto& [name, p] : head.named_parameters()) p.set_name(name);  // "query.weight" rather than "weight"
    const Tensor x = randn({1, 3, 4}, gen).set_name("x");              // (B, T, C)
    const Tensor out = head.forward(x);                                // (B, T, H)
    const Tensor loss = sum(out * randn(out.shape(), gen).set_name("upstream"));
    loss.backward(/*retain_graph=*/true);
    nn::write_file_atomically(
        path, autograd::to_dot(loss, {.title = "one head (C = H = 4, T = 3): forward and backward"}), "gradflow --dot");
}

// --- the training run -------------------------------------------------------------------------------

constexpr int64_t kTrainWidth = 128, kTrainBlock = 16, kTrainBatch = 32;
constexpr float kTrainLr = 3e-3f;

struct Curve {
    bool divided = true;
    std::vector<double> step = {}, val_loss = {}, train_loss = {}, row_gradient = {}, grad_query = {};
    double seconds = 0;
};

Curve train_one(bool divided, int64_t steps, uint64_t seed, const nn::CharTokenizer& tokenizer,
                const nn::TextData& data, progress::Bar& bar, int64_t first_step) {
    Curve curve{.divided = divided};
    Generator init(seed), batches(seed + 1);
    nn::SingleHead model({.vocab = tokenizer.vocab_size(),
                          .n_embd = kTrainWidth,
                          .block = kTrainBlock,
                          .scaled = divided,
                          .record_scores = true},
                         init);  // record_scores: the row gradients are of the head's last_scores().grad()
    nn::AdamW opt(model, {.lr = kTrainLr, .beta2 = 0.99f, .weight_decay = 0.1f});
    const nn::CosineSchedule schedule{.lr = kTrainLr, .min_lr = kTrainLr / 10, .warmup = 0, .total = steps};
    const int64_t every = std::max<int64_t>(1, steps / 20);
    const auto val_loss = [&] {
        NoGradGuard no_grad;
        Generator eval_gen(seed + 2);  // the same validation batches at every evaluation, for both runs
        double total = 0.0;
        for (int k = 0; k < 4; ++k) {
            const nn::Batch b = data.batch(nn::Split::validation, kTrainBatch, kTrainBlock, eval_gen);
            total += cross_entropy(model(b.inputs, b.B, b.T), b.targets).item();
        }
        return total / 4;
    };
    const auto start = std::chrono::steady_clock::now();
    for (int64_t it = 0; it < steps; ++it) {
        opt.set_lr(schedule.at(it));
        opt.zero_grad();
        const nn::Batch b = data.batch(nn::Split::train, kTrainBatch, kTrainBlock, batches);
        const Tensor loss = cross_entropy(model(b.inputs, b.B, b.T), b.targets);  // logits (B, T, V)
        loss.backward();
        // the typical row's: the median over every window's looking rows
        const double row_gradient =
            nn::study::summarize(nn::study::row_gradients(model.head.last_scores().grad())).median;
        const double grad_query = nn::study::norm(model.head.query.weight.grad());
        nn::clip_grad_norm(model.parameters(), 1.0f);
        opt.step();
        if (it == 0 || (it + 1) % every == 0) {
            curve.step.push_back(double(it + 1));
            curve.train_loss.push_back(loss.item());
            curve.row_gradient.push_back(row_gradient);
            curve.grad_query.push_back(grad_query);
            curve.val_loss.push_back(val_loss());
        }
        bar.update(uint64_t(first_step + it + 1), uint64_t(2 * steps));
    }
    curve.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return curve;
}

// The first evaluation at which the validation loss is under `level`, or -1.
double first_step_under(const Curve& c, double level) {
    for (size_t i = 0; i < c.step.size(); ++i)
        if (c.val_loss[i] < level) return c.step[i];
    return -1;
}

// The first evaluation from which on the typical row's gradient is exactly 0, or -1.
double frozen_from(const Curve& c) {
    double from = -1;
    for (size_t i = 0; i < c.step.size(); ++i) from = c.row_gradient[i] == 0.0 ? (from < 0 ? c.step[i] : from) : -1;
    return from;
}

std::string training_finding(const Curve& with, const Curve& without) {
    // 90% of the way down the divided run's curve.
    const double level = with.val_loss.back() + 0.1 * (with.val_loss.front() - with.val_loss.back());
    const double a = first_step_under(with, level), b = first_step_under(without, level);
    const auto when = [](double s) {
        return s < 0 ? std::string("not within the run") : fmt::format("by step {:.0f}", s);
    };
    std::string out = fmt::format(
        "Training a width-{} head: validation loss {:.3f} -> {:.3f} with the divisor, {:.3f} -> {:.3f} without.\n"
        "Loss {:.2f} (90% of the way down with the divisor) was reached {} with it and {} without.\n",
        kTrainWidth, with.val_loss.front(), with.val_loss.back(), without.val_loss.front(), without.val_loss.back(),
        level, when(a), when(b));
    const double frozen = frozen_from(without);
    out += fmt::format("The typical row's gradient at the first step: {:.1e} with the divisor, {:.1e} without; ",
                       with.row_gradient.front(), without.row_gradient.front());
    out += frozen > 0
               ? fmt::format(
                     "without it, it is exactly 0\nfrom step {:.0f} on: the typical row's attention stopped "
                     "learning, and only the value path, the embeddings and\nthe output layer kept training.\n",
                     frozen)
               : fmt::format("at the end {:.1e} and {:.1e}.\n", with.row_gradient.back(), without.row_gradient.back());
    const double gap = without.val_loss.back() - with.val_loss.back();
    if (gap > 0.05)
        out += fmt::format(
            "The run without the divisor ended {:.2f} nats behind. AdamW rescales small gradients, but a "
            "row that\npasses back nothing gives it nothing to rescale.\n",
            gap);
    else if (gap < -0.05)
        out += fmt::format(
            "Here the run without the divisor ended {:.2f} nats ahead: on this task and budget the saturation "
            "did not\nhold training back.\n",
            -gap);
    else
        out +=
            "Both ended within 0.05 nats of each other: AdamW divides each gradient by its own running size, and on "
            "this\n"
            "task and budget the saturated start did not hold training back much.\n";
    if (without.seconds > 1.5 * with.seconds)
        out += fmt::format(
            "The run without the divisor also took {:.1f}x as long, most likely because its saturated softmax\n"
            "computes with subnormal floats (gradients like 1e-44 above), which CPUs handle slowly.\n",
            without.seconds / with.seconds);
    return out;
}

void print_training(const Curve& with, const Curve& without) {
    fmt::print(
        "\nTraining: a SingleHead of width {} (C = H = {}, window {}, batch {}, AdamW lr {:g} with cosine decay) on\n"
        "the copy task, the same initial weights and batches with and without the divisor.\n\n",
        kTrainWidth, kTrainWidth, kTrainBlock, kTrainBatch, kTrainLr);
    fmt::print(
        "   step   val loss ÷√H   val loss none   row gradient ÷√H   row gradient none   |dWq| ÷√H   |dWq| none\n");
    for (size_t i = 0; i < with.step.size(); ++i)
        if (i == 0 || i % 2 == 1 || i + 1 == with.step.size())  // every other evaluation; the chart has them all
            fmt::print("  {:>5.0f}   {:12.4f}   {:13.4f}   {:16.2e}   {:17.2e}   {:9.2e}   {:10.2e}\n", with.step[i],
                       with.val_loss[i], without.val_loss[i], with.row_gradient[i], without.row_gradient[i],
                       with.grad_query[i], without.grad_query[i]);
    fmt::print("  ({:.1f} s and {:.1f} s; row gradient = median over the batch's looking rows of ||dL/dscores||)\n",
               with.seconds, without.seconds);
}

void write_training_svg(const std::string& path, const Curve& with, const Curve& without, uint64_t seed) {
    chart::LineChart c{.title = fmt::format("Training a width-{} head on the copy task", kTrainWidth),
                       .x = {.label = "step"},
                       .y = {.label = "validation loss (nats per character)", .min = 0.0},
                       .note = fmt::format("SingleHead C = H = {}, window {}, batch {}, AdamW lr {:g}, seed {}; "
                                           "same weights and batches for both",
                                           kTrainWidth, kTrainBlock, kTrainBatch, kTrainLr, seed),
                       .width = 720,
                       .height = 400};
    c.series.push_back({.name = "with ÷√H", .x = with.step, .y = with.val_loss, .color = "#1f77b4"});
    c.series.push_back(
        {.name = "without the divisor", .x = without.step, .y = without.val_loss, .color = "#d62728", .dashed = true});
    chart::write_svg(c, path);
}

// --- JSON ---------------------------------------------------------------------------------------------

// One line; keys in the order written, a value that is not finite as null.
void print_json(const Options& o, const std::vector<Row>& rows, const std::vector<Curve>& curves) {
    using Json = nlohmann::ordered_json;
    Json study = Json::array(), runs = Json::array();
    for (const Row& r : rows) {
        const auto& s = r.s;
        study.push_back({{"width", s.width},
                         {"divided", s.divided},
                         {"stream", r.stream},
                         {"grad_query", s.grad_query},
                         {"grad_key", s.grad_key},
                         {"row_gradient_median", s.row_gradient.median},
                         {"row_gradient_min", s.row_gradient.min},
                         {"row_gradient_max", s.row_gradient.max},
                         {"flat_rows", s.flat_rows},
                         {"largest_share_median", s.largest_share.median},
                         {"entropy", s.entropy}});
    }
    for (const Curve& c : curves)
        runs.push_back({{"divided", c.divided},
                        {"step", std::vector<int64_t>(c.step.begin(),
                                                      c.step.end())},  // whole steps, held as doubles for the chart
                        {"val_loss", c.val_loss},
                        {"train_loss", c.train_loss},
                        {"row_gradient", c.row_gradient},
                        {"grad_query", c.grad_query}});
    const Json out = {
        {"seed", o.seed},
        {"trials", o.trials},
        {"window", o.window},
        {"flat_row_gradient", nn::study::kFlatRowGradient},
        {"study", study},
        {"training", {{"steps", o.steps}, {"width", kTrainWidth}, {"block", kTrainBlock}, {"runs", runs}}}};
    fmt::print("{}\n", out.dump());
}

int run_study_program(const Options& o) {
    if (o.train_svg && o.steps == 0) throw cli::UsageError("--train-svg needs a training run (--steps above 0)");
    std::vector<cli::Output> outputs;
    for (const auto& [flag, file] :
         {std::pair{"--csv", o.csv}, {"--svg", o.svg}, {"--train-svg", o.train_svg}, {"--dot", o.dot}})
        if (file) outputs.push_back({.flag = flag, .path = *file});
    const cli::OutputLocks locks = cli::claim_outputs({}, outputs, o.force);
    if (o.dot) write_dot(*o.dot, o.seed);
    const std::vector<Row> rows = run_study(o);
    if (!o.json) {
        print_study(o, rows);
        fmt::print("\n{}", study_finding(rows));
    }
    if (o.csv) write_csv(*o.csv, rows);
    if (o.svg) write_study_svg(*o.svg, o, rows);

    std::vector<Curve> curves;
    if (o.steps > 0) {
        Generator text_gen(20260);  // the copy task `train` uses
        const std::string text = nn::copy_task_text(5000, text_gen);
        const auto tokenizer = nn::CharTokenizer::from_text(text);
        const nn::TextData data(tokenizer.encode(text));
        const uint64_t train_seed = o.seed + 1000;
        progress::Bar bar("training", "steps");
        curves.push_back(train_one(true, o.steps, train_seed, tokenizer, data, bar, 0));
        curves.push_back(train_one(false, o.steps, train_seed, tokenizer, data, bar, o.steps));
        if (!o.json) {
            print_training(curves[0], curves[1]);
            fmt::print("\n{}", training_finding(curves[0], curves[1]));
        }
        if (o.train_svg) write_training_svg(*o.train_svg, curves[0], curves[1], o.seed);
    }
    if (o.json) print_json(o, rows, curves);
    if (!o.json) {
        for (const auto& [flag, file] :
             {std::pair{"csv", o.csv}, {"svg", o.svg}, {"train-svg", o.train_svg}, {"dot", o.dot}})
            if (file) fmt::print("wrote {} (--{})\n", *file, flag);
    }
    return 0;
}

// The study (no checkpoint) or a checkpoint's gradient flow.
int run(const Options& o, const cli::Parser& parser) {
    set_num_threads(static_cast<int>(o.threads));
    if (!o.checkpoint) {
        for (const char* flag : {"--data", "--tokenizer", "--n-head", "--batch", "--block", "--batches"})
            if (parser.given(flag)) throw cli::UsageError(fmt::format("{} applies to a checkpoint (give CKPT)", flag));
        return run_study_program(o);
    }
    for (const char* flag : {"--seed", "--trials", "--window", "--steps", "--svg", "--train-svg", "--dot"})
        if (parser.given(flag))
            throw cli::UsageError(fmt::format("{} applies to the study, not to a checkpoint", flag));
    if (!o.data)
        throw cli::UsageError("a checkpoint needs --data FILE: the text or token file to take the gradient on");
    std::vector<cli::Output> outputs;
    if (o.csv) outputs.push_back({.flag = "--csv", .path = *o.csv});
    const cli::OutputLocks locks = cli::claim_outputs({*o.checkpoint, {"--data", *o.data}}, outputs, o.force);
    return gradflow::checkpoint_flow({.checkpoint = o.checkpoint->path,
                                      .data = *o.data,
                                      .tokenizer = o.tokenizer,
                                      .n_head = o.n_head,
                                      .batch = o.batch,
                                      .batches = o.batches,
                                      .block = o.block,
                                      .csv = o.csv,
                                      .json = o.json});
}

}  // namespace

int main(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
