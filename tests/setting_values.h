// Values for each training setting (nn/train/settings.h) that its limits accept and refuse: the tests of
// the table (test_trainer.cpp through a checkpoint, test_train_args.cpp through train's flags) try every
// row with them, so a row added to the table is tested without a line here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <variant>
#include <vector>

#include <nn/train/settings.h>

namespace setting_values {

// A value within the limits that is not the default: the lowest, or past it when that is the default or
// excluded (the middle of a float's range).
inline double accepted(const nn::TrainSetting& s) {
    nn::TrainConfig defaults;
    const double standard = std::visit([](auto* v) { return double(*v); }, s.value(defaults));
    if (s.whole()) return double(s.min) != standard ? double(s.min) : double(s.min + 1);
    return !s.low_open && s.low != standard ? s.low : (s.low + s.high) / 2;
}

// Values just outside the limits but the special value (none below a whole number's 0: a checkpoint
// cannot hold one, and the flag's parse of "-1" is the same as of any other number out of range).
inline std::vector<double> refused(const nn::TrainSetting& s) {
    if (s.on_off()) return {2};  // neither 0 nor 1 (a two-word setting's flag: neither word)
    std::vector<double> out;
    if (s.whole()) {
        out = {double(uint64_t(s.max) + 1)};
        if (s.min > 0) out.push_back(double(s.min - 1));
    } else {
        out = {s.high_open ? s.high : s.high * 2 + 1, s.low_open ? s.low : s.low - 0.5};
    }
    if (s.special) std::erase(out, *s.special);
    return out;
}

// `x` written into `config`'s field of `s`.
inline void set(const nn::TrainSetting& s, nn::TrainConfig& config, double x) {
    std::visit([x](auto* v) { *v = static_cast<std::remove_pointer_t<decltype(v)>>(x); }, s.value(config));
}

// The field of `s` in `config` as a double.
inline double get(const nn::TrainSetting& s, const nn::TrainConfig& config) {
    nn::TrainConfig copy = config;
    return std::visit([](auto* v) { return double(*v); }, s.value(copy));
}

}  // namespace setting_values
