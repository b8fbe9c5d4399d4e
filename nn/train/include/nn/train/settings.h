// Every training setting, declared once: its checkpoint key, train's flag, help, section and limits, in
// one table. The default is TrainConfig{}'s, never restated. train's parser and --help
// (examples/train_args.h), the checkpoint's fields (checkpoint_fields.cpp), the resume checks and the
// report page's settings are all made from it; adding a field to TrainConfig and a row here is all a
// new setting needs. A value edited into a checkpoint's metadata ("run.eval_iters": "4000000000") is
// refused on resume as the flag would refuse it, before any work.
//
//     const nn::Setting& s = nn::setting("--eval-iters");   // or by its key, "run.eval_iters"
//     s.text(nn::TrainConfig{})                               // "200": its default
//     nn::check_settings(config);                             // std::invalid_argument naming key, value, limits
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "nn/train/train_config.h"

namespace nn {

struct Setting {
    using ValueRef = std::variant<int64_t*, uint64_t*, float*>;
    // Where --help lists the flag.
    enum class Section { training, evaluation, sampling };
    // What a flag given with train --resume does: `fixed`, refused (the checkpoint fixes the run);
    // `extends`, a larger total (steps); `changes`, the checkpoint's value replaced (RunSettings).
    enum class OnResume { fixed, extends, changes };

    std::string_view key;   // in a checkpoint's metadata: "train.steps", "run.eval_iters"
    std::string_view flag;  // train's flag: "--steps"
    std::string_view meta;  // the flag's value in --help: "N", "X"
    std::string_view help;  // for --help, without the default (added from TrainConfig{})
    Section section = Section::training;
    OnResume on_resume = OnResume::fixed;
    ValueRef (*value)(TrainConfig&);
    // Whole numbers from `min` to `max`; floats from `low` to `high`, each excluded when it is open.
    int64_t min = 0, max = 0;
    double low = 0, high = 0;
    bool low_open = false, high_open = false;
    // A value outside the limits that the setting may hold though no flag writes it, and what it means:
    // 0 makes log_every auto and turns grad_report off, -1 makes min_lr lr / 10.
    std::optional<double> special = std::nullopt;
    std::string_view special_means = "";
    bool in_every_checkpoint = true;  // false: added later ("run.*"); an older checkpoint keeps the default

    bool whole() const;
    // "a whole number from 1 to 1048576", "a number above 0 and at most 10", "a number at least 0 and below 1"
    std::string limits() const;
    // Its value in `config` as --help and the report page show it: "200", "0.001", "lr/10" (special).
    std::string text(const TrainConfig& config) const;
    // The key without its group: "eval_iters".
    std::string_view name() const { return key.substr(key.find('.') + 1); }
    // std::invalid_argument "run.eval_iters is 4000000000; --eval-iters takes a whole number from 1 to
    // 1048576" unless the value in `config` is within the limits (or the special value).
    void check(const TrainConfig& config) const;
    [[noreturn]] void refuse(std::string_view value) const;
};

// Every TrainConfig setting but the model's (ModelConfig and validate_model_config have those), in
// --help's order.
std::span<const Setting> settings();
// One of them by key or flag; std::invalid_argument if there is none.
const Setting& setting(std::string_view key_or_flag);
// Every setting of `config` against its limits, and min_lr against lr (std::invalid_argument).
void check_settings(const TrainConfig& config);
// min_lr against lr: std::invalid_argument "train.min_lr 0.5 is above train.lr 0.001: the rate would
// rise instead of decaying", naming the two settings by `name`: their key, or their flag (train's
// command line: "--min-lr 0.5 is above --lr 0.001: ...").
void check_min_lr(const TrainConfig& config, std::string_view Setting::*name = &Setting::key);

}  // namespace nn
