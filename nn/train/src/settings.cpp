#include "nn/train/settings.h"

#include <stdexcept>

#include <fmt/format.h>

namespace nn {

namespace {

using ValueRef = TrainSetting::Ref;
constexpr int64_t kBig = int64_t{1} << 40;  // steps and intervals: far past any run, far from overflow

// train's --help lists them in this order (examples/train_args.h).
// (one row a setting, as a table reads)
// clang-format off
const TrainSetting kSettings[] = {
    {.key = "train.steps", .meaning = "optimizer steps",
     .value = [](TrainConfig& c) -> ValueRef { return &c.steps; }, .min = 1, .max = kBig},
    {.key = "train.batch", .meaning = "windows per step",
     .value = [](TrainConfig& c) -> ValueRef { return &c.batch; }, .min = 1, .max = 1 << 20},
    {.key = "train.lr", .meaning = "peak learning rate (AdamW)",
     .value = [](TrainConfig& c) -> ValueRef { return &c.lr; }, .low = 0, .high = 10, .low_open = true},
    {.key = "train.min_lr", .meaning = "end of the cosine decay",
     .value = [](TrainConfig& c) -> ValueRef { return &c.min_lr; }, .low = 0, .high = 10, .special = -1.0, .special_means = "lr/10"},
    {.key = "train.warmup", .meaning = "linear warmup steps",
     .value = [](TrainConfig& c) -> ValueRef { return &c.warmup; }, .min = 0, .max = kBig},
    {.key = "train.weight_decay", .meaning = "decoupled weight decay on Linear weights",
     .value = [](TrainConfig& c) -> ValueRef { return &c.weight_decay; }, .low = 0, .high = 10},
    {.key = "train.beta1", .meaning = "AdamW's decay of the gradient's mean (momentum)",
     .value = [](TrainConfig& c) -> ValueRef { return &c.beta1; }, .low = 0, .high = 1, .high_open = true},
    {.key = "train.beta2", .meaning = "AdamW's decay of the gradient's square",
     .value = [](TrainConfig& c) -> ValueRef { return &c.beta2; }, .low = 0, .high = 1, .high_open = true},
    {.key = "train.grad_clip", .meaning = "clip the global gradient norm; 0 = off",
     .value = [](TrainConfig& c) -> ValueRef { return &c.grad_clip; }, .low = 0, .high = 1e6},
    {.key = "train.seed", .meaning = "initialization, batches and dropout",
     .value = [](TrainConfig& c) -> ValueRef { return &c.seed; }, .min = 0, .max = INT64_MAX},
    {.key = "train.bf16", .meaning = "the products with weights: bf16 rounds both inputs to bfloat16 and sums in float32",
     .value = [](TrainConfig& c) -> ValueRef { return &c.bf16; }, .words = {"float32", "bf16"}, .added_later = true},
    {.key = "run.eval_every", .meaning = "evaluate (and save) every N steps",
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.eval_every; }, .min = 1, .max = kBig, .added_later = true},
    {.key = "run.eval_iters", .meaning = "batches per evaluation",
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.eval_iters; }, .min = 1, .max = 1 << 20, .added_later = true},
    {.key = "run.log_every", .meaning = "log the step's batch loss, lr and grad norm every N steps; auto: min(eval_every, steps) / 20",
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.log_every; }, .min = 1, .max = kBig, .special = 0.0, .special_means = "auto",
     .added_later = true},
    {.key = "run.grad_report", .meaning = "print the gradient-flow report every N steps",
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.grad_report; }, .min = 1, .max = kBig, .special = 0.0,
     .special_means = "off", .added_later = true},
    {.key = "run.sample", .meaning = "characters to sample at the end",
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.sample; }, .min = 0, .max = 1 << 24, .added_later = true},
    {.key = "run.temperature", .meaning = "sampling temperature; 0: greedy (the most likely token)",
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.temperature; }, .low = 0, .high = 100,
     .added_later = true},
    {.key = "run.top_k", .meaning = "sample from the K most likely characters; 0 = all",
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.top_k; }, .min = 0, .max = 1 << 24, .added_later = true},
};
// clang-format on

}  // namespace

std::span<const TrainSetting> train_settings() { return kSettings; }

const TrainSetting& train_setting(std::string_view key) {
    for (const TrainSetting& s : kSettings)
        if (s.key == key) return s;
    throw std::invalid_argument(fmt::format("no training setting is called '{}'", key));
}

void check_train_settings(const TrainConfig& config) {
    for (const TrainSetting& s : kSettings) s.check(config);
    check_min_lr(config);
}

void check_min_lr(const TrainConfig& config, const std::function<std::string(std::string_view key)>& name) {
    const auto named = [&](std::string_view key) { return name ? name(key) : std::string(key); };
    if (config.min_lr > config.lr)  // (min_lr -1, lr / 10, never is)
        throw std::invalid_argument(fmt::format("{} {} is above {} {}: the rate would rise instead of decaying",
                                                named("train.min_lr"), config.min_lr, named("train.lr"), config.lr));
}

}  // namespace nn
