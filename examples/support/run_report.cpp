// The report page (examples/web/run_report.html): the data as JSON inside a <script type="application/json">,
// and a small inline script that draws it (SVG line charts, or heatmaps when there are more series than
// colours; attention maps with a slider over the evaluations and a layer and head picker). Nothing is fetched.
#include "run_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <autograd/autograd.h>
#include <fmt/format.h>
#include <nn/attention.h>
#include <nn/files/atomic_file.h>
#include <nn/train/trainer.h>

#include "axis_label.h"
#include "run_report_page.h"  // web/run_report.html, made into C++ strings at build time (web/pages.cmake)
#include "script_json.h"

namespace report {

namespace {

// Where read finds the data again: around the page's /*@DATA@*/.
constexpr std::string_view kDataStart = "<script type=\"application/json\" id=\"run-data\">";
constexpr std::string_view kDataEnd = "</script>";
static_assert(kPageBeforeData.ends_with(kDataStart) && kPageAfterData.starts_with(kDataEnd),
              "web/run_report.html: its data must sit alone in <script type=\"application/json\" id=\"run-data\">");

double rounded(double v, double per_unit) { return std::round(v * per_unit) / per_unit; }
// NaN (not measured) becomes null in the JSON
nlohmann::ordered_json number_or_null(double v, double per_unit) {
    return std::isnan(v) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(rounded(v, per_unit));
}
// The step of an entry of "log" ([step, ...]) or of "grads" and "evals" ({"step": step, ...}); none for an
// entry without a whole-number step (a page not written by train).
std::optional<int64_t> step_of(const nlohmann::ordered_json& entry) {
    const nlohmann::ordered_json* step = entry.is_array() && !entry.empty()            ? &entry[0]
                                         : entry.is_object() && entry.contains("step") ? &entry["step"]
                                                                                       : nullptr;
    if (step == nullptr || !step->is_number_integer()) return std::nullopt;
    return step->get<int64_t>();
}
double significant(double v, int digits) { return std::stod(fmt::format("{:.{}g}", v, digits)); }

// The attention maps' labels (axis_label.h): the sample's tokens, or without them its characters.
nlohmann::ordered_json labels_of(const std::string& sample, const nlohmann::ordered_json& tokens) {
    nlohmann::ordered_json labels = nlohmann::ordered_json::array();
    for (const auto& token : tokens) labels.push_back(axis::label(token.get<std::string>()));
    for (size_t i = 0; tokens.empty() && i < sample.size();) {
        const size_t n = std::max<size_t>(1, axis::utf8_length(sample, i));
        labels.push_back(axis::label(sample.substr(i, n)));
        i += n;
    }
    return labels;
}

}  // namespace

RunReport::RunReport(nlohmann::ordered_json settings) {
    data_ = {{"settings", std::move(settings)},           {"sample", ""},
             {"tokens", nlohmann::ordered_json::array()}, {"labels", nlohmann::ordered_json::array()},
             {"heads", nlohmann::ordered_json::array()},  {"parameters", nlohmann::ordered_json::array()},
             {"log", nlohmann::ordered_json::array()},    {"grads", nlohmann::ordered_json::array()},
             {"evals", nlohmann::ordered_json::array()}};
}

RunReport RunReport::read(const std::filesystem::path& path, nlohmann::ordered_json settings) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string page = buffer.str();
    const size_t start = page.find(kDataStart);
    const size_t end = start == std::string::npos ? start : page.find(kDataEnd, start);
    if (!in || end == std::string::npos)
        throw std::runtime_error(
            fmt::format("--report {}: not a report page written by train (no run data in it)", path.string()));
    RunReport report(std::move(settings));
    try {
        nlohmann::ordered_json old =
            nlohmann::ordered_json::parse(page.substr(start + kDataStart.size(), end - start - kDataStart.size()));
        for (const char* key : {"sample", "heads", "parameters", "log", "grads", "evals"})
            report.data_[key] = old.at(key);
        if (old.contains("tokens")) report.data_["tokens"] = old["tokens"];  // (pages before it have none)
        report.data_["labels"] = labels_of(report.data_["sample"].get<std::string>(), report.data_["tokens"]);
        if (old.contains("run_id")) {
            const auto id = old["run_id"].get<std::string>();
            if (!nn::is_run_id(id))  // (not shown: it may hold anything)
                throw std::runtime_error(fmt::format("--report {}: its run id ({} bytes) is not one train writes",
                                                     path.string(), id.size()));
            report.data_["run_id"] = id;
        }
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(fmt::format("--report {}: its run data cannot be read: {}", path.string(), e.what()));
    }
    for (const char* key : {"log", "grads", "evals"}) {
        const nlohmann::ordered_json& entries = report.data_[key];
        if (!entries.is_array() ||
            !std::all_of(entries.begin(), entries.end(), [](const auto& e) { return step_of(e).has_value(); }))
            throw std::runtime_error(
                fmt::format("--report {}: its run data cannot be read: \"{}\" is not a list of entries "
                            "with a step each",
                            path.string(), key));
    }
    return report;
}

std::string RunReport::run_id() const {
    return data_.contains("run_id") ? data_["run_id"].get<std::string>() : std::string();
}

void RunReport::set_run_id(const std::string& id) { data_["run_id"] = id; }

void RunReport::drop_after(int64_t step) {
    for (const char* key : {"log", "grads", "evals"}) {
        auto& entries = data_[key];
        entries.erase(std::remove_if(entries.begin(), entries.end(),
                                     [&](const auto& e) {
                                         return step_of(e).value_or(std::numeric_limits<int64_t>::max()) > step;
                                     }),
                      entries.end());
    }
}

void RunReport::add_log(int64_t step, double batch_loss, double train_loss, double val_loss, double lr) {
    // rounded as the --csv log is: losses to 6 decimals, the rate to 6 significant digits
    data_["log"].push_back({step, number_or_null(batch_loss, 1e6), number_or_null(train_loss, 1e6),
                            number_or_null(val_loss, 1e6), significant(lr, 6)});
}

void RunReport::add_gradients(const nn::GradientReport& gradients) {
    auto& names = data_["parameters"];
    if (names.empty())
        for (const nn::ParameterFlow& p : gradients.parameters) names.push_back(p.name);
    nlohmann::ordered_json norms = nlohmann::ordered_json::array();
    for (const nn::ParameterFlow& p : gradients.parameters) norms.push_back(significant(p.grad_norm, 4));
    data_["grads"].push_back({{"step", gradients.step}, {"norms", std::move(norms)}});
}

void RunReport::add_attention(int64_t step, nn::LanguageModel& model, std::span<const int64_t> sample_ids,
                              const std::string& sample_text, const std::vector<std::string>& token_texts) {
    autograd::check(token_texts.empty() || token_texts.size() == sample_ids.size(),
                    "RunReport::add_attention: {} token texts for a sample of {} tokens", token_texts.size(),
                    sample_ids.size());
    const auto T = static_cast<int64_t>(sample_ids.size());
    {
        autograd::NoGradGuard no_grad;
        model.eval();
        (void)model(sample_ids, 1, T);
        model.train();
    }
    data_["sample"] = sample_text;
    data_["tokens"] = token_texts;
    data_["labels"] = labels_of(sample_text, data_["tokens"]);
    auto& names = data_["heads"];
    const bool naming = names.empty();
    nlohmann::ordered_json maps = nlohmann::ordered_json::array(), entropy = maps, largest = maps;
    for (const nn::AttentionHead& head : nn::attention_heads(model)) {
        if (!head.module.last_attention().defined()) continue;
        if (naming) names.push_back(head.name);
        const autograd::Tensor& w = head.module.last_attention();  // (1, T, T)
        const std::span<const float> values = w.data();
        nlohmann::ordered_json map = nlohmann::ordered_json::array();
        for (int64_t i = 0; i < T; ++i) {
            nlohmann::ordered_json row = nlohmann::ordered_json::array();
            for (int64_t j = 0; j <= i; ++j) row.push_back(rounded(values[static_cast<size_t>(i * T + j)], 1e3));
            map.push_back(std::move(row));
        }
        maps.push_back(std::move(map));
        const nn::AttentionStats stats = nn::attention_stats(w);
        entropy.push_back(rounded(stats.entropy, 1e4));
        largest.push_back(rounded(stats.largest_share, 1e4));
    }
    data_["evals"].push_back(
        {{"step", step}, {"maps", std::move(maps)}, {"entropy", std::move(entropy)}, {"largest", std::move(largest)}});
}

std::string RunReport::html() const {
    // safe inside <script>: no "<", ">" or "&" in it (html::script_safe)
    const std::string json =
        html::script_safe(data_.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    std::string page(kPageBeforeData);
    page += json;
    page += kPageAfterData;
    return page;
}

void RunReport::write(const std::filesystem::path& path, const std::string& who) const {
    nn::write_file_atomically(path, html(), who);
}

}  // namespace report
