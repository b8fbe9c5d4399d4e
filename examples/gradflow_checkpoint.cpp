#include "gradflow_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <vector>

#include <autograd/autograd.h>
#include <nlohmann/json.hpp>
#include <nn/files/atomic_file.h>
#include <nn/train/report.h>
#include <nn/train/text_data.h>
#include <nn/train/trainer.h>
#include <nn/tutorial/study.h>

#include "checkpoint_data.h"
#include "load_checkpoint.h"
#include "progress.h"

namespace gradflow {

namespace {

// One head's rows over every part of every window: its attention's entropy and largest share as means
// over all its rows (as nn::gradient_report's), and the row gradient of each looking row.
struct HeadRows {
    std::string name;
    double entropy = 0, largest_share = 0;
    std::vector<double> row_gradients = {};
    double median() const { return row_gradients.empty() ? NAN : nn::study::summarize(row_gradients).median; }
    double flat() const { return row_gradients.empty() ? NAN : nn::study::flat_share(row_gradients); }
};

// The heads whose typical row is flat, in words.
std::string flat_heads(const std::vector<HeadRows>& heads) {
    std::vector<std::string> flat;
    for (const HeadRows& h : heads)
        if (h.flat() > 0.5) flat.push_back(fmt::format("{} ({:.0f}% of its rows)", h.name, 100 * h.flat()));
    if (flat.empty())
        return "No head has most of its rows flat: every head's attention can still learn where to look.\n";
    std::string out =
        fmt::format("{} of {} heads have most of their rows flat, their attention stuck where it looks:", flat.size(),
                    heads.size());
    for (const std::string& f : flat) out += "\n  " + f;
    return out + "\n";
}

void print_tables(const nn::GradientReport& report, const std::vector<HeadRows>& heads) {
    size_t width = 9;
    for (const auto& p : report.parameters) width = std::max(width, p.name.size());
    for (const auto& h : heads) width = std::max(width, h.name.size());
    fmt::print("{:<{}}  {:>14}  {:>10}  {:>10}\n", "parameter", width, "shape", "|grad|", "|param|");
    for (const nn::ParameterFlow& p : report.parameters)
        fmt::print("{:<{}}  {:>14}  {:10.3e}  {:10.3e}\n", p.name, width, autograd::shape_str(p.shape), p.grad_norm,
                   p.param_norm);
    fmt::print(
        "(no update/param: this takes a gradient and changes no weight; train --grad-report shows each step's "
        "update)\n");
    if (heads.empty()) return;
    fmt::print("\n{:<{}}  {:>7}  {:>13}  {:>12}  {:>9}\n{:<{}}  {:>7}  {:>13}  {:>12}\n", "head", width, "entropy",
               "largest share", "row gradient", "flat rows", "", width, "(nats)", "(mean)", "(median)");
    for (const HeadRows& h : heads)  // (a window of one token has no looking row: a dash)
        fmt::print("{:<{}}  {:7.3f}  {:13.3f}  {:>12}  {:>9}\n", h.name, width, h.entropy, h.largest_share,
                   h.row_gradients.empty() ? "-" : fmt::format("{:.2e}", h.median()),
                   h.row_gradients.empty() ? "-" : fmt::format("{:.0f}%", 100 * h.flat()));
    fmt::print(
        "\nentropy, largest share: means over every row of the head's attention on the data. row gradient: what a\n"
        "row's softmax passes back to its scores for a gradient N(0, 1) at its shares, as the saturation study\n"
        "(gradflow without CKPT) measures it: a row spread evenly over n positions passes about 1/sqrt(n) (0.33\n"
        "over 8), one that looks at a single position 0; flat: under {:g}.\n{}",
        nn::study::kFlatRowGradient, flat_heads(heads));
}

}  // namespace

int checkpoint_flow(const CheckpointOptions& o) {
    nn::TrainedModel trained = load_checkpoint(o.checkpoint, {o.tokenizer, o.n_head});
    nn::LanguageModel& model = *trained.model;
    const CheckpointData d =
        checkpoint_data(trained, o.checkpoint, o.data, o.batch, o.block, o.batches, nn::Pass::gradient);
    const int64_t B = d.B, T = d.T;
    const std::vector<nn::AttentionHead> attention = nn::attention_heads(model);
    std::vector<HeadRows> heads;
    for (const nn::AttentionHead& h : attention) heads.push_back({.name = h.name});
    autograd::Generator upstream(1);  // the study's N(0, 1) at the shares: the same draws every run

    model.eval();  // no dropout: the gradient of the model as it predicts
    model.zero_grad();
    double loss = 0;
    progress::Bar bar("gradflow", "tokens");
    for (int64_t i = 0; i < o.batches; ++i) {
        const nn::Batch batch = nn::consecutive_window(d.ids, i, B, T);
        // in parts of d.rows rows: each part's mean loss weighed by its share of every window's tokens, so
        // the gradients its backward adds up to are those of the mean over the windows
        for (int64_t first = 0; first < B; first += d.rows) {
            const int64_t n = std::min(d.rows, B - first);
            const double weight = double(n) / double(B * o.batches);
            const std::span<const int64_t> inputs(batch.inputs.data() + first * T, n * T),
                targets(batch.targets.data() + first * T, n * T);
            const autograd::Tensor part = autograd::cross_entropy(model(inputs, n, T), targets);  // (n, T, V) -> ()
            autograd::scale(part, float(weight)).backward();
            loss += part.item() * weight;
            for (size_t h = 0; h < heads.size(); ++h) {
                const autograd::Tensor& w = attention[h].module.last_attention();  // (n, T, T)
                if (!w.defined()) continue;                                        // a head the forward did not run
                const nn::AttentionStats stats = nn::attention_stats(w);
                heads[h].entropy += weight * stats.entropy;
                heads[h].largest_share += weight * stats.largest_share;
                const std::vector<double> rows = nn::study::row_gradients(nn::study::passed_back(w, upstream));
                heads[h].row_gradients.insert(heads[h].row_gradients.end(), rows.begin(), rows.end());
            }
            bar.update(uint64_t((i * B + first + n) * T), uint64_t(o.batches * B * T));
        }
    }
    nn::GradientReport report = nn::gradient_report(model, nullptr, trained.step.value_or(0));
    report.heads.clear();  // the last part's: every part's instead
    for (const HeadRows& h : heads) report.heads.push_back({h.name, h.entropy, h.largest_share});
    for (const nn::ParameterFlow& p : report.parameters)
        if (!std::isfinite(p.grad_norm))
            throw std::runtime_error(fmt::format("{}: the gradient of {} is not finite ({}) on --data {}", o.checkpoint,
                                                 p.name, p.grad_norm, o.data));
    if (o.csv) nn::write_file_atomically(*o.csv, nn::GradientReport::csv_header() + report.csv_rows(), "--csv");

    const std::string kind = fmt::format("{}", trained.config.kind);
    if (o.json) {
        using Json = nlohmann::ordered_json;
        Json parameters = Json::array(), head_rows = Json::array();
        for (const nn::ParameterFlow& p : report.parameters)
            parameters.push_back({{"name", p.name},
                                  {"shape", std::vector<int64_t>(p.shape)},
                                  {"grad_norm", p.grad_norm},
                                  {"param_norm", p.param_norm}});
        for (const HeadRows& h : heads)
            head_rows.push_back({{"name", h.name},
                                 {"entropy", h.entropy},
                                 {"largest_share", h.largest_share},
                                 {"row_gradient_median", h.median()},
                                 {"flat_rows", h.flat()}});
        fmt::print("{}\n", Json{{"checkpoint", o.checkpoint},
                                {"model", kind},
                                {"step", trained.step ? Json(*trained.step) : Json()},
                                {"loss", loss},
                                {"tokens", o.batches * B * T},
                                {"batches", o.batches},
                                {"parameters", parameters},
                                {"heads", head_rows}}
                               .dump(-1, ' ', false, Json::error_handler_t::replace));
        return 0;
    }
    fmt::print(
        "the gradient of the {} model in {}{} on the first {} window{} of {} x {} tokens of {} (mean loss {:.4f})\n\n",
        kind, o.checkpoint, trained.step ? fmt::format(", saved at step {},", *trained.step) : "", o.batches,
        o.batches == 1 ? "" : "s", B, T, o.data, loss);
    print_tables(report, heads);
    if (o.csv) fmt::print("wrote {} (--csv)\n", *o.csv);
    return 0;
}

}  // namespace gradflow
