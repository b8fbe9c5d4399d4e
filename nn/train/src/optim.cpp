#include "nn/train/optim.h"

#include <autograd/detail/optimizer_kernels.h>
#include <autograd/threads.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <set>

namespace nn {

using autograd::check;
using autograd::shape_str;

namespace {
// Options must be finite and inside [low, high) (or [low, inf) when high is infinite); `inclusive_low`
// false makes it (low, ...).
void check_option(const std::string& kind, const char* option, float value, float low, bool inclusive_low,
                  float high = INFINITY) {
    const bool ok = std::isfinite(value) && (inclusive_low ? value >= low : value > low) && value < high;
    if (ok) return;
    const std::string range = std::isinf(high) ? fmt::format("{} {}", inclusive_low ? ">=" : ">", low)
                                               : fmt::format("in [{}, {})", low, high);
    throw std::invalid_argument(fmt::format("{}: {} must be finite and {}, got {}", kind, option, range, value));
}

// Largest step count a float32 scalar holds exactly.
constexpr int64_t max_exact_count = int64_t{1} << 24;

}  // namespace

// --- Optimizer ------------------------------------------------------------------------------------

Optimizer::Optimizer(const Module& module, float lr, std::string kind, std::string prefix)
    : kind_(std::move(kind)), prefix_(std::move(prefix)), lr_(lr) {
    check_option(kind_, "lr", lr, 0.0f, true);
    const std::vector<std::string> decayed = module.decayed_parameter_names();
    const std::set<std::string> decayed_set(decayed.begin(), decayed.end());
    std::set<const autograd::TensorImpl*> seen;  // a tensor registered twice (tied weights) is updated once
    for (const auto& [name, p] : module.named_parameters()) {
        if (!seen.insert(p.impl().get()).second) continue;
        names_.push_back(name);
        params_.push_back(p);
        decay_.push_back(decayed_set.contains(name));
    }
    counts_.assign(params_.size(), 0);
}

size_t Optimizer::add_buffer(std::string name) {
    Buffer buffer{std::move(name), {}};
    for (const Tensor& p : params_) buffer.tensors.push_back(autograd::zeros(p.shape()));
    buffers_.push_back(std::move(buffer));
    return buffers_.size() - 1;
}

void Optimizer::step() {
    autograd::NoGradGuard no_grad;
    last_update_ratios_.clear();
    std::vector<ParamUpdate> updates;
    for (size_t i = 0; i < params_.size(); ++i)
        if (const Tensor g = params_[i].grad(); g.defined())
            updates.push_back({i, params_[i].data(), g.data(), counts_[i]});
    if (!record_update_ratios_) {
        update(updates);
    } else {
        std::vector<float> before;
        for (const ParamUpdate& u : updates) {
            const std::span<float> p = u.values;
            before.assign(p.begin(), p.end());
            update({&u, 1});
            // ||update|| / ||parameter||: about 1e-3 is healthy; far above, the step is too big for the weights
            double update2 = 0.0, param2 = 0.0;
            for (size_t k = 0; k < p.size(); ++k) {
                update2 += double(p[k] - before[k]) * double(p[k] - before[k]);
                param2 += double(p[k]) * double(p[k]);
            }
            last_update_ratios_.emplace_back(names_[u.index], param2 > 0.0 ? std::sqrt(update2 / param2) : INFINITY);
        }
    }
    for (const ParamUpdate& u : updates) ++counts_[u.index];
    ++steps_;
}

void Optimizer::zero_grad() {
    for (Tensor& p : params_) p.zero_grad();
}

void Optimizer::set_lr(float lr) {
    check_option(kind_, "lr", lr, 0.0f, true);
    lr_ = lr;
}

NamedTensors Optimizer::state_in_place() const {
    NamedTensors out;
    if (buffers_.empty()) return out;
    for (const Buffer& b : buffers_)
        for (size_t i = 0; i < params_.size(); ++i)
            out.emplace_back(prefix_ + "." + b.name + "." + names_[i], b.tensors[i]);
    for (size_t i = 0; i < params_.size(); ++i)
        out.emplace_back(prefix_ + ".step." + names_[i], autograd::scalar(static_cast<float>(counts_[i])));
    return out;
}

NamedTensors Optimizer::state() const {
    NamedTensors out = state_in_place();
    for (auto& [name, t] : out) t = t.clone();
    return out;
}

void Optimizer::load_state(const NamedTensors& state, int64_t steps) {
    // What state() would list: name -> (buffer index or -1 for a step count, parameter index).
    std::map<std::string, std::pair<int64_t, size_t>> expected;
    if (!buffers_.empty()) {
        for (size_t b = 0; b < buffers_.size(); ++b)
            for (size_t i = 0; i < params_.size(); ++i)
                expected[prefix_ + "." + buffers_[b].name + "." + names_[i]] = {static_cast<int64_t>(b), i};
        for (size_t i = 0; i < params_.size(); ++i) expected[prefix_ + ".step." + names_[i]] = {-1, i};
    }

    std::vector<std::string> extra, mismatched, problems;
    std::set<std::string> found;
    for (const auto& [name, t] : state) {
        const auto it = expected.find(name);
        if (it == expected.end()) {
            extra.push_back(name);
            continue;
        }
        if (!found.insert(name).second) {
            mismatched.push_back(fmt::format("{} (given twice)", name));
            continue;
        }
        const auto [b, i] = it->second;
        const Shape want = b < 0 ? Shape{} : params_[i].shape();
        if (!t.defined()) {
            mismatched.push_back(fmt::format("{} (undefined, expected shape {})", name, shape_str(want)));
        } else if (t.shape() != want) {
            mismatched.push_back(
                fmt::format("{} (shape {}, expected {})", name, shape_str(t.shape()), shape_str(want)));
        } else if (b < 0) {
            const float count = t.item();
            if (!(count >= 0.0f && count <= static_cast<float>(std::min(steps, max_exact_count)) &&
                  std::floor(count) == count))
                mismatched.push_back(fmt::format("{} (value {}, expected a whole number in [0, {}])", name, count,
                                                 std::min(steps, max_exact_count)));
        }
    }
    std::vector<std::string> missing;
    for (const auto& [name, _] : expected)
        if (!found.contains(name)) missing.push_back(name);

    if (steps < 0) problems.push_back(fmt::format("steps is {}, expected >= 0", steps));
    if (!missing.empty()) problems.push_back(fmt::format("missing [{}]", fmt::join(missing, ", ")));
    if (!extra.empty()) problems.push_back(fmt::format("extra [{}]", fmt::join(extra, ", ")));
    if (!mismatched.empty()) problems.push_back(fmt::format("mismatched [{}]", fmt::join(mismatched, ", ")));
    check(problems.empty(), "{}.load_state: the state does not fit this optimizer: {}", kind_,
          fmt::join(problems, "; "));

    // Everything checked: nothing below can fail.
    for (const auto& [name, t] : state) {
        const auto [b, i] = expected.at(name);
        if (b < 0) {
            counts_[i] = static_cast<int64_t>(t.item());
        } else {
            const auto src = t.data();
            const auto dst = buffers_[static_cast<size_t>(b)].tensors[i].data();
            if (src.data() != dst.data()) std::copy(src.begin(), src.end(), dst.begin());  // (read in place)
        }
    }
    steps_ = steps;
}

// --- SGD ------------------------------------------------------------------------------------------

SGD::SGD(const Module& module, SGDOptions options) : Optimizer(module, options.lr, "SGD", "sgd"), options_(options) {
    check_option(kind(), "momentum", options.momentum, 0.0f, true);
    check_option(kind(), "weight_decay", options.weight_decay, 0.0f, true);
    if (options_.momentum != 0.0f) momentum_ = add_buffer("momentum");
}

void SGD::update(std::span<const ParamUpdate> params) {
    for (const auto& [i, p, g, count] : params) {
        const float lr_now = lr(), wd = decays(i) ? options_.weight_decay : 0.0f, mu = options_.momentum;
        const std::span<float> buf = mu != 0.0f ? buffer(momentum_, i) : std::span<float>{};
        for (size_t k = 0; k < p.size(); ++k) {
            float d = g[k];
            if (wd != 0.0f) d += wd * p[k];
            if (mu != 0.0f) {
                buf[k] = count == 0 ? d : mu * buf[k] + d;
                d = buf[k];
            }
            p[k] -= lr_now * d;
        }
    }
}

// --- AdamW ----------------------------------------------------------------------------------------

AdamW::AdamW(const Module& module, AdamWOptions options)
    : Optimizer(module, options.lr, "AdamW", "adamw"), options_(options) {
    check_option(kind(), "beta1", options.beta1, 0.0f, true, 1.0f);
    check_option(kind(), "beta2", options.beta2, 0.0f, true, 1.0f);
    check_option(kind(), "eps", options.eps, 0.0f, false);
    check_option(kind(), "weight_decay", options.weight_decay, 0.0f, true);
    m_ = add_buffer("m");
    v_ = add_buffer("v");
}

void AdamW::update(std::span<const ParamUpdate> params) {
    const AdamWOptions& o = options_;
    struct Work {
        float *p, *m, *v;
        const float* g;
        autograd::kernels::AdamWStep step;
    };
    std::vector<Work> work;
    std::vector<int64_t> sizes;
    for (const ParamUpdate& u : params) {
        const double t = static_cast<double>(u.count + 1);
        const double bias_correction1 = 1.0 - std::pow(static_cast<double>(o.beta1), t);
        const double bias_correction2 = 1.0 - std::pow(static_cast<double>(o.beta2), t);
        const auto decay = static_cast<float>(1.0 - static_cast<double>(lr()) * static_cast<double>(o.weight_decay));
        const bool decayed = decays(u.index) && o.weight_decay != 0.0f;
        work.push_back({u.values.data(),
                        buffer(m_, u.index).data(),
                        buffer(v_, u.index).data(),
                        u.grad.data(),
                        {decayed ? decay : 1.0f, o.beta1, o.beta2, 1.0f - o.beta1, 1.0f - o.beta2,
                         static_cast<float>(static_cast<double>(lr()) / bias_correction1),
                         static_cast<float>(std::sqrt(bias_correction2)), o.eps}});
        sizes.push_back(static_cast<int64_t>(u.values.size()));
    }
    // every parameter's elements split across the threads at once: most tensors are too small to split
    autograd::parallel_for_segments(sizes, autograd::kMinElementsPerThread, [&](size_t i, int64_t begin, int64_t end) {
        const Work& w = work[i];
        autograd::kernels::adamw_update(w.p, w.g, w.m, w.v, begin, end, w.step);
    });
}

// --- clipping and schedule ------------------------------------------------------------------------

float clip_grad_norm(const std::vector<Tensor>& params, float max_norm) {
    // Sum of squares in fixed chunks (partial sums in double, added in order): the same bits for any
    // thread count, and the chunks can run in parallel.
    constexpr int64_t kChunk = 4096;
    std::vector<std::span<float>> grads;
    for (const Tensor& p : params)
        if (const Tensor g = p.grad(); g.defined()) grads.push_back(g.data());
    // The chunks of every gradient, tensor by tensor, split across threads at once.
    struct Chunk {
        const float* g;
        int64_t begin, end;
    };
    std::vector<Chunk> chunks;
    std::vector<int64_t> sizes;
    for (const std::span<float> g : grads) {
        const auto n = static_cast<int64_t>(g.size());
        for (int64_t begin = 0; begin < n; begin += kChunk)
            chunks.push_back({g.data(), begin, std::min(n, begin + kChunk)});
        sizes.push_back(n);
    }
    std::vector<double> partial(chunks.size());
    autograd::parallel_for(
        static_cast<int64_t>(chunks.size()), autograd::kMinElementsPerThread / kChunk, [&](int64_t begin, int64_t end) {
            for (int64_t c = begin; c < end; ++c)
                partial[c] = autograd::kernels::sum_of_squares(chunks[c].g, chunks[c].begin, chunks[c].end);
        });
    double sum_squares = 0.0;
    for (const double s : partial) sum_squares += s;
    const double norm = std::sqrt(sum_squares);
    if (max_norm > 0.0f && std::isfinite(norm) && norm > static_cast<double>(max_norm)) {
        const float coef = static_cast<float>(static_cast<double>(max_norm) / (norm + 1e-6));
        autograd::parallel_for_segments(sizes, autograd::kMinElementsPerThread,
                                        [&](size_t i, int64_t begin, int64_t end) {
                                            for (int64_t k = begin; k < end; ++k) grads[i][k] *= coef;
                                        });
    }
    return static_cast<float>(norm);
}

float CosineSchedule::at(int64_t step) const {
    check(step >= 0 && warmup >= 0 && total >= 0,
          "CosineSchedule: step, warmup and total must be >= 0, got step {}, warmup {}, total {}", step, warmup, total);
    check(std::isfinite(lr) && lr >= 0.0f && std::isfinite(min_lr) && min_lr >= 0.0f,
          "CosineSchedule: lr and min_lr must be finite and >= 0, got lr {}, min_lr {}", lr, min_lr);
    const double top = lr, bottom = min_lr;
    if (step < warmup) return static_cast<float>(top * static_cast<double>(step + 1) / static_cast<double>(warmup + 1));
    if (step > total) return min_lr;
    const double ratio =
        total > warmup ? static_cast<double>(step - warmup) / static_cast<double>(total - warmup) : 1.0;
    const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));
    return static_cast<float>(bottom + coeff * (top - bottom));
}

}  // namespace nn
