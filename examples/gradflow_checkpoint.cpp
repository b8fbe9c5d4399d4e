#include "gradflow_checkpoint.h"

#include <cmath>
#include <stdexcept>

#include <autograd/autograd.h>
#include <nlohmann/json.hpp>
#include <nn/files/atomic_file.h>
#include <nn/train/report.h>
#include <nn/train/text_data.h>
#include <nn/train/trainer.h>

#include "checkpoint_data.h"

namespace gradflow {

int checkpoint_flow(const CheckpointOptions& o) {
    nn::TrainedModel trained = nn::load_trained_model(o.checkpoint, {o.tokenizer, o.n_head});
    nn::LanguageModel& model = *trained.model;
    const CheckpointData d = checkpoint_data(trained, o.checkpoint, o.data, o.batch, o.block, o.batches, nn::Pass::gradient);
    const int64_t B = d.B, T = d.T;

    model.eval();  // no dropout: the gradient of the model as it predicts
    model.zero_grad();
    double loss = 0;
    for (int64_t i = 0; i < o.batches; ++i) {
        const nn::Batch batch = nn::consecutive_window(d.ids, i, B, T);
        const autograd::Tensor window_loss = autograd::cross_entropy(model.forward(batch.inputs, B, T), batch.targets);  // ()
        autograd::scale(window_loss, 1.0f / float(o.batches)).backward();  // the gradient of the mean over the windows
        loss += window_loss.item() / double(o.batches);
    }
    const nn::GradientReport report = nn::gradient_report(model);
    for (const nn::ParameterFlow& p : report.parameters)
        if (!std::isfinite(p.grad_norm))
            throw std::runtime_error(fmt::format("{}: the gradient of {} is not finite ({}) on --data {}", o.checkpoint, p.name,
                                                 p.grad_norm, o.data));
    if (o.csv) nn::write_file_atomically(*o.csv, nn::GradientReport::csv_header() + report.csv_rows(), "--csv");

    const std::string kind = fmt::format("{}", trained.config.kind);
    if (o.json) {
        nlohmann::ordered_json parameters = nlohmann::ordered_json::array(), heads = nlohmann::ordered_json::array();
        for (const nn::ParameterFlow& p : report.parameters)
            parameters.push_back({{"name", p.name}, {"shape", std::vector<int64_t>(p.shape)}, {"grad_norm", p.grad_norm}, {"param_norm", p.param_norm}});
        for (const nn::HeadFlow& h : report.heads)
            heads.push_back({{"name", h.name}, {"entropy", h.entropy}, {"largest_share", h.largest_share}});
        fmt::print("{}\n", nlohmann::ordered_json{{"checkpoint", o.checkpoint}, {"model", kind}, {"loss", loss},
                                                  {"tokens", o.batches * B * T}, {"batches", o.batches},
                                                  {"parameters", parameters}, {"heads", heads}}
                               .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
        return 0;
    }
    fmt::print("the gradient of the {} model in {} on the first {} window{} of {} x {} tokens of {} (mean loss {:.4f})\n\n",
               kind, o.checkpoint, o.batches, o.batches == 1 ? "" : "s", B, T, o.data, loss);
    fmt::print("{}", report.table());
    if (o.csv) fmt::print("wrote {} (--csv)\n", *o.csv);
    return 0;
}

}  // namespace gradflow
