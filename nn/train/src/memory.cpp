// How much memory a training run needs, from the model registry's sizes.
#include "nn/train/trainer.h"

namespace nn {

uint64_t estimate_training_bytes(const TrainConfig& config, uint64_t data_bytes) {
    // In double: absurd sizes overflow int64 long before they reach the comparison.
    const ModelConfig& m = config.model;
    const double V = double(m.vocab), C = double(m.n_embd), T = double(m.block), B = double(config.batch);
    const ModelSize size = model_size(m);
    // Activations kept for backward, in floats: a dozen or so (B, T, C) tensors per layer, the attention
    // weights (scores, mask, softmax, dropout) per head, and the logits with their softmax and gradient.
    const double activations = size.layers * (B * T * C * 16 + B * size.heads_per_layer * T * T * 4) + B * T * V * 3;
    const double bytes = 4.0 * (size.parameters * 4 + activations) + double(data_bytes);
    return bytes >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

}  // namespace nn
