// Optimizers (SGD with momentum, AdamW), gradient clipping by global norm, and the warmup + cosine
// learning-rate schedule. All follow PyTorch (and nanoGPT for the schedule) formula for formula, so a
// run here can be compared with a run there.
//
//     nn::AdamW opt(model, {.lr = 1e-3f, .beta2 = 0.99f, .weight_decay = 0.1f});
//     nn::CosineSchedule schedule{.lr = 1e-3f, .min_lr = 1e-4f, .warmup = 100, .total = 2000};
//     for (int64_t it = 0; it < 2000; ++it) {
//         opt.set_lr(schedule.at(it));
//         opt.zero_grad();
//         loss(model, batch(it)).backward();
//         const float norm = nn::clip_grad_norm(model.parameters(), 1.0f);  // stop if !isfinite(norm)
//         opt.step();
//     }
//
// Weight decay goes only to the parameters the module registered with decay (Module::
// decayed_parameter_names(): Linear weights; not biases, norm gains or embedding tables).
// A parameter with no gradient at a step is skipped entirely (no decay, no moment update, its own
// step count unchanged), as in PyTorch.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"

namespace nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// The parameters of a module, the optimizer's per-parameter buffers, and the bookkeeping every
// optimizer shares. step() runs under autograd::NoGradGuard and writes the parameters' data() in place.
class Optimizer {
public:
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;

    // One update of every parameter that has a gradient; then steps() grows by one.
    virtual void step();
    void zero_grad();  // drops every parameter's gradient

    float lr() const { return lr_; }
    void set_lr(float lr);                    // throws std::invalid_argument unless finite and >= 0
    int64_t steps() const { return steps_; }  // number of step() calls (or the value load_state set)
    // For each parameter the last step() updated: ||change|| / ||parameter after the step||
    // (infinity for an all-zero parameter). Recorded only by a step() taken while
    // record_update_ratios(true) is set (off by default: it costs a copy of every weight per step);
    // otherwise empty.
    const std::vector<std::pair<std::string, double>>& last_update_ratios() const { return last_update_ratios_; }
    void record_update_ratios(bool on) { record_update_ratios_ = on; }

    // --- checkpoints ---------------------------------------------------------------------------
    // Copies of the optimizer's buffers, named "<kind>.<buffer>.<parameter>", e.g.
    // "adamw.m.blocks.0.attn.weight", "adamw.v...", "sgd.momentum...", plus "<kind>.step.<parameter>":
    // a float32 scalar holding how many updates that parameter has received (PyTorch stores its
    // per-parameter step as a float32 tensor too; exact up to 2^24 updates). Every parameter is
    // listed, whether or not it has been updated yet. SGD without momentum has no state.
    NamedTensors state() const;
    // Restores what state() returned and sets steps(), so a resumed run continues bit-exactly.
    // Every name must be present exactly once with the right shape, and each step count a whole
    // number in [0, steps]; otherwise std::invalid_argument lists what is missing, extra and
    // mismatched, and nothing is changed. The values are copied (the caller's tensors are not kept).
    void load_state(const NamedTensors& state, int64_t steps);
    // state() without the copies: the buffers themselves (and new step counts), which a checkpoint is
    // written from and read straight into (SafetensorsReader::read_all, then load_state to check them),
    // so that saving or resuming never holds the moments twice.
    NamedTensors state_in_place() const;

protected:
    // `kind` names the optimizer in messages ("AdamW") and, lower-cased, prefixes its state ("adamw").
    Optimizer(const Module& module, float lr, std::string kind, std::string prefix);

    // Parameter `index`'s values, its gradient, and how many updates it had before this one.
    struct ParamUpdate {
        size_t index;
        std::span<float> values;
        std::span<const float> grad;
        int64_t count;
    };
    // The update of these parameters (all of a step's, or one at a time while update ratios are
    // recorded): one call, so an optimizer can split all of them across threads at once.
    virtual void update(std::span<const ParamUpdate> params) = 0;
    // Adds a buffer: a zero tensor shaped like each parameter, saved as "<prefix>.<name>.<param>".
    // Returns its index for buffer().
    size_t add_buffer(std::string name);
    std::span<float> buffer(size_t b, size_t i) const { return buffers_[b].tensors[i].data(); }
    bool decays(size_t i) const { return decay_[i]; }
    const std::string& kind() const { return kind_; }

private:
    struct Buffer {
        std::string name;
        std::vector<Tensor> tensors;  // one per parameter
    };
    std::vector<std::string> names_;
    std::vector<Tensor> params_;
    std::vector<bool> decay_;
    std::vector<int64_t> counts_;  // updates each parameter has received
    std::vector<Buffer> buffers_;
    std::vector<std::pair<std::string, double>> last_update_ratios_;
    bool record_update_ratios_ = false;
    std::string kind_, prefix_;
    float lr_;
    int64_t steps_ = 0;
};

struct SGDOptions {
    float lr = 1e-2f;
    float momentum = 0.0f;
    float weight_decay = 0.0f;  // L2, added to the gradient (decayed parameters only)
};

// torch.optim.SGD (dampening 0, no Nesterov). For each parameter p with gradient g:
//     g += weight_decay * p                          (decayed parameters only)
//     buf = momentum * buf + g   (buf = g on the parameter's first update; skipped when momentum is 0)
//     p -= lr * buf
class SGD : public Optimizer {
public:
    explicit SGD(const Module& module, SGDOptions options = {});
    const SGDOptions& options() const { return options_; }

private:
    void update(std::span<const ParamUpdate> params) override;
    SGDOptions options_;
    size_t momentum_ = 0;  // buffer index
};

struct AdamWOptions {
    float lr = 1e-3f;
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float eps = 1e-8f;
    float weight_decay = 0.01f;  // decoupled (decayed parameters only)
};

// torch.optim.AdamW. For each parameter p with gradient g, on its t-th update (t counts from 1):
//     p *= 1 - lr * weight_decay                     (decayed parameters only)
//     m = beta1 * m + (1 - beta1) * g
//     v = beta2 * v + (1 - beta2) * g^2
//     p -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
// computed as PyTorch does: the bias corrections in double, then
// p -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps) elementwise in float.
class AdamW : public Optimizer {
public:
    explicit AdamW(const Module& module, AdamWOptions options = {});
    const AdamWOptions& options() const { return options_; }

private:
    void update(std::span<const ParamUpdate> params) override;
    AdamWOptions options_;
    size_t m_ = 0, v_ = 0;  // buffer indices
};

// Clips gradients by their global L2 norm, as torch.nn.utils.clip_grad_norm_: the norm over every
// gradient together (accumulated in double) is returned as it was before clipping; when it exceeds
// max_norm, every gradient is multiplied by max_norm / (norm + 1e-6). max_norm <= 0 only measures.
// Tensors without a gradient are skipped; pass each tensor once. A non-finite norm is returned without
// scaling anything: the caller decides (the training loop stops).
float clip_grad_norm(const std::vector<Tensor>& params, float max_norm);

// Linear warmup then cosine decay, nanoGPT's get_lr(it) exactly (computed in double):
//     step <  warmup:  lr * (step + 1) / (warmup + 1)
//     step >  total:   min_lr
//     otherwise:       ratio = (step - warmup) / (total - warmup)
//                      min_lr + 0.5 * (1 + cos(pi * ratio)) * (lr - min_lr)
// so it rises to lr at step == warmup and reaches min_lr at step == total. When total == warmup the
// ratio is taken as 1 (min_lr at that step), the same as when total < warmup.
// at() throws std::invalid_argument for a negative step, warmup or total, or a non-finite or negative lr.
struct CosineSchedule {
    float lr = 1e-3f;
    float min_lr = 1e-4f;
    int64_t warmup = 0;
    int64_t total = 0;
    float at(int64_t step) const;
};

}  // namespace nn
