// --precision float32|bf16 for the programs that run a model forward to use its outputs (generate,
// evaluate), as train's setting of that name (TrainConfig::bf16): the products with weights in bfloat16
// (autograd/precision.h), or float32. The tools that read a model's insides (cache, lens, patch,
// attribute, ablate, heatmap, figure, head_scores) stay float32: their numbers are compared with PyTorch's.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <autograd/precision.h>
#include <cli.h>
#include <fmt/format.h>

namespace precision_flag {

// autograd::bf16_speed_note() in two lines, after its colon.
inline std::string speed_note() {
    std::string note(autograd::bf16_speed_note());
    if (const size_t colon = note.find(": "); colon != std::string::npos) note.replace(colon, 2, ":\n");
    return note;
}

// The flag, into `precision`; its help says what bf16 costs on this CPU (autograd::bf16_speed_note). A
// value that is neither name is a usage error naming the flag and both: "--precision needs float32 or
// bf16, got 'fp16'".
inline void add(cli::Parser& p, autograd::Precision& precision) {
    p.option("--precision", "P",
             fmt::format("float32 or bf16: bf16 rounds both inputs of the products with weights\n"
                         "to bfloat16 and sums in float32 (default float32)\n{}",
                         speed_note()),
             [&precision](const cli::Value& v) {
                 const std::optional<autograd::Precision> named = autograd::parse_precision(v.text());
                 if (!named) v.fail(fmt::format("needs {}, got '{}'", autograd::kPrecisionNames, v.text()));
                 precision = *named;
             });
}

// A program's run under `precision`: the setting for its lifetime, and the weights rounded once (they do
// not change while it runs), not once per product.
struct Scope {
    explicit Scope(autograd::Precision precision) : guard(precision) {}
    autograd::MatmulPrecisionGuard guard;
    autograd::Bf16WeightScope weight_copies;
};

}  // namespace precision_flag
