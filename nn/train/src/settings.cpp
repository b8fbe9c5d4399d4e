#include "nn/train/settings.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace nn {

namespace {

using ValueRef = Setting::ValueRef;
constexpr int64_t kBig = int64_t{1} << 40;  // steps and intervals: far past any run, far from overflow

using Section = Setting::Section;
using OnResume = Setting::OnResume;

// The rows in --help's order within each section; examples/train_args.h makes train's flags from them.
const Setting kSettings[] = {
    {.key = "train.steps", .flag = "--steps", .meta = "N", .help = "optimizer steps; with --resume, a larger N extends the run",
     .on_resume = OnResume::extends, .value = [](TrainConfig& c) -> ValueRef { return &c.steps; }, .min = 1, .max = kBig},
    {.key = "train.batch", .flag = "--batch", .meta = "B", .help = "windows per step",
     .value = [](TrainConfig& c) -> ValueRef { return &c.batch; }, .min = 1, .max = 1 << 20},
    {.key = "train.lr", .flag = "--lr", .meta = "X", .help = "peak learning rate (AdamW)",
     .value = [](TrainConfig& c) -> ValueRef { return &c.lr; }, .low = 0, .high = 10, .low_open = true},
    {.key = "train.min_lr", .flag = "--min-lr", .meta = "X", .help = "end of the cosine decay",
     .value = [](TrainConfig& c) -> ValueRef { return &c.min_lr; }, .low = 0, .high = 10, .special = -1.0, .special_means = "lr/10"},
    {.key = "train.warmup", .flag = "--warmup", .meta = "N", .help = "linear warmup steps",
     .value = [](TrainConfig& c) -> ValueRef { return &c.warmup; }, .min = 0, .max = kBig},
    {.key = "train.weight_decay", .flag = "--weight-decay", .meta = "X", .help = "decoupled weight decay on Linear weights",
     .value = [](TrainConfig& c) -> ValueRef { return &c.weight_decay; }, .low = 0, .high = 10},
    {.key = "train.beta1", .flag = "--beta1", .meta = "X", .help = "AdamW's decay of the gradient's mean (momentum)",
     .value = [](TrainConfig& c) -> ValueRef { return &c.beta1; }, .low = 0, .high = 1, .high_open = true},
    {.key = "train.beta2", .flag = "--beta2", .meta = "X", .help = "AdamW's decay of the gradient's square",
     .value = [](TrainConfig& c) -> ValueRef { return &c.beta2; }, .low = 0, .high = 1, .high_open = true},
    {.key = "train.grad_clip", .flag = "--grad-clip", .meta = "X", .help = "clip the global gradient norm; 0 = off",
     .value = [](TrainConfig& c) -> ValueRef { return &c.grad_clip; }, .low = 0, .high = 1e6},
    {.key = "train.seed", .flag = "--seed", .meta = "S", .help = "initialization, batches and dropout",
     .value = [](TrainConfig& c) -> ValueRef { return &c.seed; }, .min = 0, .max = INT64_MAX},
    {.key = "run.eval_every", .flag = "--eval-every", .meta = "N", .help = "evaluate (and save) every N steps",
     .section = Section::evaluation, .on_resume = OnResume::changes,
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.eval_every; }, .min = 1, .max = kBig, .in_every_checkpoint = false},
    {.key = "run.eval_iters", .flag = "--eval-iters", .meta = "N", .help = "batches per evaluation",
     .section = Section::evaluation, .on_resume = OnResume::changes,
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.eval_iters; }, .min = 1, .max = 1 << 20, .in_every_checkpoint = false},
    {.key = "run.log_every", .flag = "--log-every", .meta = "N",
     .help = "log the step's batch loss, lr and grad norm every N steps\n(to --csv or --report); auto: min(--eval-every, --steps) / 20",
     .section = Section::evaluation, .on_resume = OnResume::changes,
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.log_every; }, .min = 1, .max = kBig, .special = 0.0, .special_means = "auto",
     .in_every_checkpoint = false},
    {.key = "run.grad_report", .flag = "--grad-report", .meta = "N", .help = "print the gradient-flow report every N steps",
     .section = Section::evaluation, .on_resume = OnResume::changes,
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.grad_report; }, .min = 1, .max = kBig, .special = 0.0,
     .special_means = "off", .in_every_checkpoint = false},
    {.key = "run.sample", .flag = "--sample", .meta = "N", .help = "characters to sample at the end",
     .section = Section::sampling, .on_resume = OnResume::changes,
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.sample; }, .min = 0, .max = 1 << 24, .in_every_checkpoint = false},
    {.key = "run.temperature", .flag = "--temperature", .meta = "X", .help = "sampling temperature",
     .section = Section::sampling, .on_resume = OnResume::changes,
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.temperature; }, .low = 0, .high = 100, .low_open = true,
     .in_every_checkpoint = false},
    {.key = "run.top_k", .flag = "--top-k", .meta = "K", .help = "sample from the K most likely characters; 0 = all",
     .section = Section::sampling, .on_resume = OnResume::changes,
     .value = [](TrainConfig& c) -> ValueRef { return &c.run.top_k; }, .min = 0, .max = 1 << 24, .in_every_checkpoint = false},
};

}  // namespace

bool Setting::whole() const {
    TrainConfig probe;
    return !std::holds_alternative<float*>(value(probe));
}

std::string Setting::limits() const {
    if (whole()) return fmt::format("a whole number from {} to {}", min, max);
    if (!low_open && !high_open) return fmt::format("a number from {} to {}", low, high);
    return fmt::format("a number {} {} and {} {}", low_open ? "above" : "at least", low, high_open ? "below" : "at most", high);
}

std::string Setting::text(const TrainConfig& config) const {
    TrainConfig copy = config;  // the accessors take a mutable config
    return std::visit(
        [&](auto* v) {
            if (special && double(*v) == *special) return std::string(special_means);
            return fmt::format("{}", *v);
        },
        value(copy));
}

void Setting::refuse(std::string_view shown) const {
    throw std::invalid_argument(fmt::format("{} is {}; {} takes {}", key, shown, flag, limits()));
}

void Setting::check(const TrainConfig& config) const {
    TrainConfig copy = config;  // the accessors take a mutable config
    std::visit(
        [&](auto* v) {
            using T = std::remove_pointer_t<decltype(v)>;
            if (special && double(*v) == *special) return;
            if constexpr (std::is_same_v<T, float>) {
                const auto lo = static_cast<float>(low), hi = static_cast<float>(high);
                const bool in = std::isfinite(*v) && (low_open ? *v > lo : *v >= lo) && (high_open ? *v < hi : *v <= hi);
                if (!in) refuse(fmt::format("{}", *v));
            } else if constexpr (std::is_same_v<T, uint64_t>) {
                if (*v < static_cast<uint64_t>(min) || *v > static_cast<uint64_t>(max)) refuse(fmt::format("{}", *v));
            } else {
                if (*v < min || *v > max) refuse(fmt::format("{}", *v));
            }
        },
        value(copy));
}

std::span<const Setting> settings() { return kSettings; }

const Setting& setting(std::string_view key_or_flag) {
    for (const Setting& s : kSettings)
        if (s.key == key_or_flag || s.flag == key_or_flag) return s;
    throw std::invalid_argument(fmt::format("no training setting is called '{}'", key_or_flag));
}

void check_settings(const TrainConfig& config) {
    for (const Setting& s : kSettings) s.check(config);
    check_min_lr(config);
}

void check_min_lr(const TrainConfig& config, std::string_view Setting::*name) {
    if (config.min_lr > config.lr)  // (min_lr -1, lr / 10, never is)
        throw std::invalid_argument(fmt::format("{} {} is above {} {}: the rate would rise instead of decaying",
                                                setting("train.min_lr").*name, config.min_lr, setting("train.lr").*name, config.lr));
}

}  // namespace nn
