#include "nn/train/report.h"

#include <cmath>
#include <map>

#include "nn/attention.h"

namespace nn {

namespace {
double norm(const Tensor& t) {
    if (!t.defined()) return 0.0;
    double total = 0.0;
    for (float v : t.data()) total += double(v) * v;
    return std::sqrt(total);
}
}  // namespace

GradientReport gradient_report(const Module& model, const Optimizer* optimizer, int64_t step) {
    GradientReport report;
    report.step = step;
    for (const auto& [name, p] : model.named_parameters())
        report.parameters.push_back({name, p.shape(), norm(p.grad()), norm(p), NAN});
    if (optimizer) report.add_update_ratios(*optimizer);
    for (const AttentionHead& head : attention_heads(model))
        if (head.module.last_attention().defined()) {
            const AttentionStats stats = attention_stats(head.module.last_attention());  // (B, T, T)
            report.heads.push_back({head.name, stats.entropy, stats.largest_share});
        }
    return report;
}

void GradientReport::add_update_ratios(const Optimizer& optimizer) {
    std::map<std::string, double> ratios(optimizer.last_update_ratios().begin(), optimizer.last_update_ratios().end());
    for (ParameterFlow& p : parameters) {
        const auto it = ratios.find(p.name);
        p.update_ratio = it == ratios.end() ? NAN : it->second;
    }
}

std::string GradientReport::table() const {
    size_t width = 9;
    for (const auto& p : parameters) width = std::max(width, p.name.size());
    for (const auto& h : heads) width = std::max(width, h.name.size());
    std::string out = fmt::format("gradient flow at step {}\n{:<{}}  {:>14}  {:>10}  {:>10}  {:>12}\n", step,
                                  "parameter", width, "shape", "|grad|", "|param|", "update/param");
    for (const auto& p : parameters) {
        // not updated (no optimizer step, or no gradient): a dash, not "nan"
        const std::string update = std::isnan(p.update_ratio) ? "-" : fmt::format("{:.3e}", p.update_ratio);
        out += fmt::format("{:<{}}  {:>14}  {:10.3e}  {:10.3e}  {:>12}\n", p.name, width, autograd::shape_str(p.shape),
                           p.grad_norm, p.param_norm, update);
    }
    if (!heads.empty()) {
        out += fmt::format("{:<{}}  {:>14}  {:>13}\n", "head", width, "entropy (nats)", "largest share");
        for (const auto& h : heads)
            out += fmt::format("{:<{}}  {:14.3f}  {:13.3f}\n", h.name, width, h.entropy, h.largest_share);
    }
    return out;
}

std::string GradientReport::csv_header() {
    return "step,kind,name,grad_norm,param_norm,update_ratio,entropy,largest_share\n";
}

std::string GradientReport::csv_rows() const {
    std::string out;
    for (const auto& p : parameters)
        out += fmt::format("{},parameter,{},{:.6g},{:.6g},{:.6g},,\n", step, p.name, p.grad_norm, p.param_norm,
                           p.update_ratio);
    for (const auto& h : heads)
        out += fmt::format("{},head,{},,,,{:.6g},{:.6g}\n", step, h.name, h.entropy, h.largest_share);
    return out;
}

}  // namespace nn
