// How much memory a training run needs, from the model registry's sizes.
#include "nn/train/trainer.h"

namespace nn {

using autograd::check;

uint64_t estimate_training_bytes(const TrainConfig& config, uint64_t data_bytes) {
    // Sizes only: a negative one (a checkpoint may hold any number) would make a negative estimate.
    const ModelConfig& m = config.model;
    validate_model_config(m);
    check(m.block > 0 && config.batch > 0, "estimate_training_bytes: block ({}) and batch ({}) must be positive", m.block,
          config.batch);
    // In double: absurd sizes overflow int64 long before they reach the comparison. A kind that reads no
    // n_embd (the bigram) keeps no (B, T, C) activations, whatever the config holds there.
    const double V = double(m.vocab), T = double(m.block), B = double(config.batch);
    const double C = model_kind_info(m.kind).reads(option_n_embd) ? double(m.n_embd) : 0.0;
    const ModelSize size = model_size(m);
    // Activations kept for backward, in floats: a dozen or so (B, T, C) tensors per layer, the attention
    // weights (scores, mask, softmax, dropout) per head, and the logits with their softmax and gradient.
    const double activations = size.layers * (B * T * C * 16 + B * size.heads_per_layer * T * T * 4) + B * T * V * 3;
    const double bytes = 4.0 * (size.parameters * 4 + activations) + double(data_bytes);
    return bytes >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

}  // namespace nn
