// The report page of a training run (train --report): one self-contained HTML file, no network and no
// external script, that draws the run from a JSON blob embedded in it. The program adds what it measures
// as it goes and rewrites the page (atomically) at each evaluation.
//
//     RunReport report(settings_json);
//     report.add_log(step, batch_loss, train_loss, val_loss, lr);   // NaN: not measured at this step
//     report.add_gradients(gradient_report);                        // per-parameter gradient norms
//     report.add_attention(step, model, sample_ids, sample_text);  // every head's map on the sample
//     report.write("run.html");
//
// A resumed run continues its own page: RunReport::read takes the data back out of an existing file, with
// the run id it was written with (train keeps the same id in the run's checkpoints), and drop_after
// removes what the page holds past the resumed checkpoint's step.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include <nlohmann/json.hpp>
#include <nn/models.h>
#include <nn/train/report.h>

namespace report {

class RunReport {
public:
    explicit RunReport(nlohmann::ordered_json settings);
    // The data of the page at `path` (written by write), with `settings` replacing its settings.
    // std::runtime_error naming the file when it holds no report data.
    static RunReport read(const std::filesystem::path& path, nlohmann::ordered_json settings);

    // The run the page belongs to ("" when none was set, or the page predates run ids).
    std::string run_id() const;
    void set_run_id(const std::string& id);
    // Removes the log rows, gradient norms and evaluations of the steps after `step`.
    void drop_after(int64_t step);

    void add_log(int64_t step, double batch_loss, double train_loss, double val_loss, double lr);
    void add_gradients(const nn::GradientReport& gradients);
    // Runs `model` on the sample (eval mode, no graph) and keeps every head's attention map (rounded
    // to 3 decimals), mean row entropy (nats) and mean largest share. Leaves the model in training mode.
    // The maps are labelled (axis_label.h) with `token_texts`, each token's text (GPT-2's BPE: words and
    // pieces), or when empty with the characters of `sample_text`, one a token.
    void add_attention(int64_t step, nn::LanguageModel& model, std::span<const int64_t> sample_ids,
                       const std::string& sample_text, const std::vector<std::string>& token_texts = {});

    const nlohmann::ordered_json& data() const { return data_; }
    std::string html() const;
    void write(const std::filesystem::path& path, const std::string& who) const;  // atomically

private:
    nlohmann::ordered_json data_;
};

}  // namespace report
