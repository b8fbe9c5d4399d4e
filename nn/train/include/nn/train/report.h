// The gradient-flow report: how much gradient reaches each parameter, how big the last update was
// next to the parameter, and what each attention head's rows look like. Printed as a table, and
// available as data for logs.
//
//     trainer.step(&report);                    // or gradient_report(model, &optimizer) after a step
//     fmt::print("{}", report.table());
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/module.h"
#include "nn/train/optim.h"

namespace nn {

struct ParameterFlow {
    std::string name;
    Shape shape;
    double grad_norm = 0;     // ||dL/dp|| (as backward left it; Trainer::step records it before clipping)
    double param_norm = 0;    // ||p||
    double update_ratio = 0;  // ||last update|| / ||p||; NaN when the optimizer has not updated it
};

struct HeadFlow {
    std::string name;          // e.g. "blocks.0.attention.heads.1"
    double entropy = 0;        // mean entropy (nats) of its attention rows in the last forward
    double largest_share = 0;  // mean largest share of those rows
};

struct GradientReport {
    int64_t step = 0;
    std::vector<ParameterFlow> parameters;
    std::vector<HeadFlow> heads;

    // Fills update_ratio from the optimizer's last step, by parameter name.
    void add_update_ratios(const Optimizer& optimizer);

    std::string table() const;        // aligned, one line per parameter, then per head
    static std::string csv_header();  // step,kind,name,grad_norm,param_norm,update_ratio,entropy,largest_share
    std::string csv_rows() const;     // one line per parameter and per head
};

// The report for a module after backward (and, if given, after the optimizer's step). Heads are the
// nn::attention_heads() of it (every nn::InspectableHead), read from their last forward.
GradientReport gradient_report(const Module& model, const Optimizer* optimizer = nullptr, int64_t step = 0);

}  // namespace nn
