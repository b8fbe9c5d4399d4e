// One setting of a config, declared once: its key in a checkpoint's metadata, one line of what it means,
// where its value lives, and the values it may take. A model's settings (ModelConfig: nn::model_settings()
// in nn/model_registry.h) and a training run's (TrainConfig: nn::train_settings() in nn/train/settings.h)
// are rows of this one schema, and everything that reads or checks a setting (checkpoints, the resume
// checks, validation, the report page) does it through the functions here. The library knows no
// command line: a program makes its own options and their help from the rows.
//
//     const nn::TrainSetting& s = nn::train_setting("run.eval_iters");
//     s.text(nn::TrainConfig{})   // "200": its default, from TrainConfig{}, never restated
//     s.limits()                  // "a whole number from 1 to 1048576"
//     s.check(config)             // std::invalid_argument "run.eval_iters is 0; it takes a whole number from 1 to 1048576"
#pragma once

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

namespace nn {

template <class Config>
struct Setting {
    using Ref = std::variant<int64_t*, uint64_t*, float*, bool*>;
    // How a checkpoint stores a float: as text ("0.1") or by its 32 bits, exactly ("1036831949"). Each
    // config kept the form its checkpoints were first written in.
    enum class FloatText { decimal, bits };

    std::string_view key;      // in a checkpoint's metadata: "model.n_embd", "train.lr", "run.eval_iters"
    std::string_view meaning;  // one line: "embedding width"
    Ref (*value)(Config&);     // where it lives in the config
    // Whole numbers from `min` to `max`; floats from `low` to `high`, each end excluded when it is open.
    int64_t min = 0, max = 0;
    double low = 0, high = 0;
    bool low_open = false, high_open = false;
    // A value outside the limits that the setting may hold, and what it means: 0 makes log_every auto,
    // -1 makes min_lr lr / 10.
    std::optional<double> special = std::nullopt;
    std::string_view special_means = "";
    // A true/false setting named by a word (false's, true's): "tanh", "exact"; none: on or off.
    std::array<std::string_view, 2> words = {};
    // A model setting: the ModelOption bit of the kinds that read it (0: every kind).
    unsigned option = 0;
    // Added after checkpoints existed: an older checkpoint lacks it and gets its default (a model
    // setting is also written only for the kinds that read it, so the others' checkpoints keep their bytes).
    bool added_later = false;

    // The key without its group: "eval_iters".
    std::string_view name() const { return key.substr(key.find('.') + 1); }
    bool whole() const { return !std::holds_alternative<float*>(ref_of_default()); }
    bool on_off() const { return std::holds_alternative<bool*>(ref_of_default()); }

    // "a whole number from 1 to 1048576", "a number above 0 and at most 10", "0 or 1"
    std::string limits() const {
        if (on_off()) return words[0].empty() ? "0 or 1" : fmt::format("{} or {}", words[0], words[1]);
        if (whole()) return fmt::format("a whole number from {} to {}", min, max);
        if (!low_open && !high_open) return fmt::format("a number from {} to {}", low, high);
        return fmt::format("a number {} {} and {} {}", low_open ? "above" : "at least", low,
                           high_open ? "below" : "at most", high);
    }

    // Its value in `config` as a help text or the report page shows it: "200", "0.001", "lr/10" (special), "exact".
    std::string text(const Config& config) const {
        return std::visit(
            [&](auto* v) -> std::string {
                if constexpr (std::is_same_v<std::remove_pointer_t<decltype(v)>, bool>)
                    return words[0].empty() ? std::string(*v ? "1" : "0") : std::string(words[*v ? 1 : 0]);
                else if (special && double(*v) == *special) return std::string(special_means);
                else return fmt::format("{}", *v);
            },
            ref(config));
    }

    // std::invalid_argument "run.eval_iters is 4000000000; it takes a whole number from 1 to 1048576"
    // unless the value in `config` is within the limits (or the special value).
    void check(const Config& config) const {
        std::visit(
            [&](auto* v) {
                using T = std::remove_pointer_t<decltype(v)>;
                if constexpr (std::is_same_v<T, bool>) return;
                else {
                    if (special && double(*v) == *special) return;
                    if (!admits(*v)) refuse(fmt::format("{}", *v));
                }
            },
            ref(config));
    }
    [[noreturn]] void refuse(std::string_view shown) const {
        throw std::invalid_argument(fmt::format("{} is {}; it takes {}", key, shown, limits()));
    }

    // Its value in `config` as a checkpoint's metadata stores it: whole numbers and true/false (0, 1) in decimal.
    std::string stored(const Config& config, FloatText floats) const {
        return std::visit(
            [&](auto* v) -> std::string {
                using T = std::remove_pointer_t<decltype(v)>;
                if constexpr (std::is_same_v<T, bool>) return *v ? "1" : "0";
                else if constexpr (std::is_same_v<T, float>)
                    return floats == FloatText::bits ? std::to_string(bits_of(*v)) : fmt::format("{}", *v);
                else return std::to_string(*v);
            },
            ref(config));
    }
    // Reads what `stored` wrote into `config` (std::invalid_argument "'model.n_embd' is 'x', not a whole
    // number"); the limits are checked separately (check).
    void read(Config& config, const std::string& text, FloatText floats) const {
        std::visit(
            [&](auto* v) {
                using T = std::remove_pointer_t<decltype(v)>;
                char* end = nullptr;
                errno = 0;
                if constexpr (std::is_same_v<T, float>) {
                    if (floats == FloatText::decimal) {
                        *v = std::strtof(text.c_str(), &end);
                        if (text.empty() || *end != '\0') bad(text, "not a number");
                        return;
                    }
                    const unsigned long long bits = std::strtoull(text.c_str(), &end, 10);
                    if (text.empty() || *end != '\0' || text[0] == '-' || errno == ERANGE || bits > UINT32_MAX)
                        bad(text, "not the bits of a float");
                    *v = float_of(static_cast<uint32_t>(bits));
                } else {
                    const long long n = std::strtoll(text.c_str(), &end, 10);
                    if (text.empty() || *end != '\0') bad(text, "not a whole number");
                    if (errno == ERANGE) refuse(text);  // past any limit
                    if constexpr (std::is_same_v<T, bool>) {
                        if (n != 0 && n != 1) refuse(text);  // (an edited "2" is neither word)
                        *v = n != 0;
                    } else if constexpr (std::is_same_v<T, uint64_t>) {
                        if (n < 0) refuse(text);
                        *v = static_cast<uint64_t>(n);
                    } else *v = static_cast<T>(n);
                }
            },
            ref(config));
    }

    // Where the value lives in a config that is not changed (the accessors take a mutable one).
    Ref ref(const Config& config) const { return value(const_cast<Config&>(config)); }

private:
    // (memcpy, not std::bit_cast: the WebAssembly build's libc++ 13 has none)
    static uint32_t bits_of(float f) {
        uint32_t bits = 0;
        std::memcpy(&bits, &f, sizeof bits);
        return bits;
    }
    static float float_of(uint32_t bits) {
        float f = 0;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    }
    bool admits(float v) const {
        const auto lo = static_cast<float>(low), hi = static_cast<float>(high);
        return std::isfinite(v) && (low_open ? v > lo : v >= lo) && (high_open ? v < hi : v <= hi);
    }
    bool admits(int64_t v) const { return v >= min && v <= max; }
    bool admits(uint64_t v) const { return v >= static_cast<uint64_t>(min) && v <= static_cast<uint64_t>(max); }
    [[noreturn]] void bad(const std::string& text, std::string_view what) const {
        throw std::invalid_argument(fmt::format("'{}' is '{}', {}", key, text, what));
    }
    Ref ref_of_default() const {
        static Config probe;
        return value(probe);
    }
};

}  // namespace nn
