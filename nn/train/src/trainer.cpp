#include "nn/train/trainer.h"
#include "nn/model_files/safetensors.h"
#include "nn/train/settings.h"

#include <autograd/ops.h>
#include <autograd/precision.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace nn {

using namespace autograd;

Trainer::Trainer(const TrainConfig& config, CharTokenizer tokenizer, const std::vector<int64_t>& tokens)
    : Trainer(config, std::move(tokenizer), TokenIds(std::span<const int64_t>(tokens))) {}

Trainer::Trainer(const TrainConfig& config, CharTokenizer tokenizer, TokenIds tokens)
    : Trainer(config, std::make_shared<const CharTokenizer>(std::move(tokenizer)), TextData(std::move(tokens))) {}

Trainer::Trainer(const TrainConfig& config, std::shared_ptr<const Tokenizer> tokenizer, TextData data)
    : config_(config),
      tokenizer_(std::move(tokenizer)),
      data_fingerprint_(data.tokens().fingerprint()),
      data_(std::move(data)),
      init_gen_(config.seed),
      batch_gen_(config.seed + 1) {
    // Every setting within the limits of the flag that sets it (nn/train/settings.h), as a command line's
    // and a checkpoint's: a division by zero in the program's loop or an evaluation of 4e9 batches if not.
    check_train_settings(config);
    const ValidModelConfig model(config.model);  // checked here once, for the estimate and the model
    check(config.model.block > 0, "block must be positive (every kind trains on windows of that many tokens), got {}",
          config.model.block);
    check(tokenizer_ != nullptr, "no tokenizer");
    check(config.model.vocab == tokenizer_->vocab_size(), "the model's vocab {} differs from the tokenizer's {}",
          config.model.vocab, tokenizer_->vocab_size());
    for (Split split : {Split::train, Split::validation})
        check(data_.size(split) > config.model.block, "block size {} needs at least {} tokens, but the {} split has {}",
              config.model.block, config.model.block + 1, split == Split::train ? "training" : "validation",
              data_.size(split));
    // mapped token files stay the file's pages, not the process's memory
    const uint64_t held = data_.tokens().mapped() ? 0 : data_.tokens().bytes();
    const uint64_t need = estimate_training_bytes(model, config.batch, held), have = physical_memory_bytes();
    check(have == 0 || need <= have,
          "this model and batch would need about {:.3g} GB of memory (model {} n_embd {} n_layer {} block {}, "
          "batch {}; {:.3g} GB of it the token ids), more than this machine's {:.3g} GB; choose smaller sizes",
          double(need) / 1e9, config.model.kind, config.model.n_embd, config.model.n_layer, config.model.block,
          config.batch, double(held) / 1e9, double(have) / 1e9);
    try {
        model_ = make_model(model, init_gen_);
        optimizer_ = std::make_unique<AdamW>(
            *model_,
            AdamWOptions{
                .lr = config.lr, .beta1 = config.beta1, .beta2 = config.beta2, .weight_decay = config.weight_decay});
    } catch (const std::bad_alloc&) {
        const double parameters = model_size(model).parameters;
        throw std::runtime_error(
            fmt::format("could not allocate about {:.3g} GB for the {} model and its optimizer "
                        "(about {:.3g} parameters, 16 bytes each with gradients and AdamW's moments)",
                        parameters * 16 / 1e9, config.model.kind, parameters));
    }
    // Refused now, not after hours: a checkpoint whose header is over what loading reads (a vocabulary
    // of 100 MB and more) would be written but never read back. (The run id, set later, is 64 bytes.)
    const auto [tensors, metadata] = checkpoint();
    const uint64_t header = safetensors_header_bytes(tensors, metadata), limit = SafetensorsLimits{}.max_header_bytes;
    uint64_t tokenizer_bytes = 0;
    for (const auto& [key, value] : tokenizer_->checkpoint_metadata()) tokenizer_bytes += key.size() + value.size();
    check(header + 1024 <= limit,
          "its checkpoint's header would be {} bytes ({} of them the tokenizer's tables), over the limit of {} "
          "that loading a checkpoint reads: it could be saved but never resumed or sampled; use a smaller vocabulary",
          header, tokenizer_bytes, limit);
}

void Trainer::set_run(const RunSettings& run) {
    TrainConfig changed = config_;
    changed.run = run;
    check_train_settings(changed);
    config_.run = run;
}

void Trainer::extend_to(int64_t steps) {
    check(steps >= config_.steps, "the run has {} step{}; it can be extended, not shortened to {}", config_.steps,
          config_.steps == 1 ? "" : "s", steps);
    TrainConfig changed = config_;
    changed.steps = steps;
    check_train_settings(changed);
    config_.steps = steps;  // lr_at decays over the new total from here on (see the header)
}

int64_t Trainer::stop_step(std::optional<int64_t> until) const {
    if (!until) return config_.steps;
    check(*until > step_count(), "stopping after step {} trains nothing: the run is at step {} already", *until,
          step_count());
    return std::min(config_.steps, *until);
}

float Trainer::lr_at(int64_t step) const {
    const float min_lr = config_.min_lr < 0.0f ? config_.lr / 10.0f : config_.min_lr;
    return CosineSchedule{.lr = config_.lr, .min_lr = min_lr, .warmup = config_.warmup, .total = config_.steps}.at(
        step);
}

StepStats Trainer::step(GradientReport* report) {
    const int64_t B = config_.batch, T = config_.model.block;
    const Batch batch = data_.batch(Split::train, B, T, batch_gen_);
    const float lr = lr_at(step_count());
    optimizer_->set_lr(lr);
    model_->train();
    optimizer_->zero_grad();
    const MatmulPrecisionGuard precision(config_.precision());
    Tensor loss;
    {
        // bf16: each weight rounded once for the step's forward and backward; closed before the
        // optimizer writes the weights, which the next step's scope then rounds afresh.
        const Bf16WeightScope weight_copies;
        loss = cross_entropy((*model_)(batch.inputs, B, T), batch.targets);
        loss.backward();
        if (report) *report = gradient_report(*model_, nullptr, step_count() + 1);
    }
    const float norm = clip_grad_norm(model_->parameters(), config_.grad_clip);
    if (!std::isfinite(loss.item()) || !std::isfinite(norm))
        throw std::runtime_error(
            fmt::format("at step {} the loss is {} and the gradient norm {} (lr {:.3g}); "
                        "stopped before updating the parameters",
                        step_count() + 1, loss.item(), norm, lr));
    optimizer_->record_update_ratios(report != nullptr);
    optimizer_->step();
    if (report) report->add_update_ratios(*optimizer_);
    return {step_count(), loss.item(), lr, norm, B * T};
}

double Trainer::evaluate(Split split, int64_t iters, const std::function<bool()>& stop) {
    check(iters > 0, "evaluate: iters must be positive, got {}", iters);
    NoGradGuard no_grad;
    const MatmulPrecisionGuard precision(config_.precision());  // the run's, as its steps
    const Bf16WeightScope weight_copies;                        // the weights stay: rounded once a pass
    const bool was_training = model_->is_training();
    model_->eval();
    const int64_t B = config_.batch, T = config_.model.block;
    // Batches drawn from the seed, the step and the split alone: an evaluation gives the same figure
    // whenever it runs, so a run stopped and resumed reports what a straight run reports.
    Generator gen(config_.seed ^
                  (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(2 * step_count() + (split == Split::train ? 1 : 2))));
    double total = 0.0;
    for (int64_t i = 0; i < iters; ++i) {
        if (stop && stop()) {
            model_->train(was_training);
            return NAN;
        }
        const Batch batch = data_.batch(split, B, T, gen);
        total += cross_entropy((*model_)(batch.inputs, B, T), batch.targets).item();
    }
    model_->train(was_training);
    return total / static_cast<double>(iters);
}

}  // namespace nn
