// Every training setting, declared once (nn/setting.h's schema, as the model's): its checkpoint key, one
// line of meaning and its limits. The default is TrainConfig{}'s, never restated. The checkpoint's fields
// (checkpoint_fields.cpp), the resume checks and the report page's settings are made from these rows, and
// a program makes its command line from them; adding a field to TrainConfig and a row here is
// all a new setting needs. The "run." settings are TrainConfig::run (nn::RunSettings), which a resumed
// run may change; the "train." ones the checkpoint fixes. A value edited into a checkpoint's metadata
// ("run.eval_iters": "4000000000") is refused on resume, before any work.
//
//     const nn::TrainSetting& s = nn::train_setting("run.eval_iters");
//     s.text(nn::TrainConfig{})   // "200": its default
//     nn::check_train_settings(config);   // std::invalid_argument naming key, value, limits
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "nn/setting.h"
#include "nn/train/train_config.h"

namespace nn {

using TrainSetting = Setting<TrainConfig>;

// Every TrainConfig setting but the model's (nn::model_settings() has those).
std::span<const TrainSetting> train_settings();
// One of them by key; std::invalid_argument if there is none.
const TrainSetting& train_setting(std::string_view key);
// Every setting of `config` against its limits, and min_lr against lr (std::invalid_argument).
void check_train_settings(const TrainConfig& config);
// min_lr against lr: std::invalid_argument "train.min_lr 0.5 is above train.lr 0.001: the rate would rise
// instead of decaying", naming the two settings by their key, or by what `name` makes of the key (a
// program names them as its user gives them).
void check_min_lr(const TrainConfig& config, const std::function<std::string(std::string_view key)>& name = {});

}  // namespace nn
