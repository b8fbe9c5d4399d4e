// How much memory a pass over a model needs (training, a gradient, a forward pass), from the model
// registry's sizes.
//
// Shape legend: B batch (rows), T time (tokens of a row), C channels (n_embd), V vocab.
#include "nn/train/trainer.h"

#include <cmath>

#include "nn/attention.h"  // HeadOptions::kFlashFrom

namespace nn {

using autograd::check;

uint64_t MemoryEstimate::bytes(int64_t rows) const {
    const double total = fixed + double(rows) * per_row;
    return total >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(total);  // saturates instead of overflowing
}

int64_t MemoryEstimate::rows_within(double budget, int64_t rows) const {
    const double fit = per_row > 0 ? std::floor(budget / per_row) : double(rows);
    return fit < 1 ? 1 : fit >= double(rows) ? rows : static_cast<int64_t>(fit);
}

MemoryEstimate estimate_memory(const ValidModelConfig& config, int64_t T, Pass pass) {
    // (validated: a negative size, which a checkpoint may hold, would make a negative estimate)
    const ModelConfig& m = config.get();
    check(T > 0, "estimate_memory: T ({}) must be positive", T);
    // In double: absurd sizes overflow int64 long before they reach the comparison. A kind that reads no
    // n_embd (the bigram) keeps no (B, T, C) activations, whatever the config holds there.
    const double V = double(m.vocab), t = double(T);
    const double C = model_kind_info(m.kind).reads(option_n_embd) ? double(m.n_embd) : 0.0;
    const ModelSize size = model_size(config);
    const double heads = size.layers * size.heads_per_layer;
    double copies = 1, row = 0;  // floats: of the parameters, and of one row's activations
    switch (pass) {
        case Pass::train:
        case Pass::gradient:
            // Kept for backward: a dozen or so (B, T, C) tensors per layer, the attention weights
            // (scores, mask, softmax, dropout) per head, and the logits with their softmax and gradient.
            // Training adds AdamW's two moments to the weights and their gradients.
            copies = pass == Pass::train ? 4 : 2;
            row = size.layers * t * C * 16 + heads * t * t * 4 + t * V * 3;
            break;
        case Pass::forward:
        case Pass::forward_heads:
            // No graph: what each layer keeps for inspection (its input, and the queries and keys with the
            // values they were made with: 4 (T, C)), one layer's hidden (T, 4C), one head's (T, T) weights
            // below the length from which attention is one fused op, and the logits with cross-entropy's
            // log-softmax beside them. forward_heads: the logits alone (no loss), and every head's weights,
            // as nn::head_scores reads them.
            row = size.layers * t * C * 4 + t * C * 4 + (T < HeadOptions::kFlashFrom ? t * t : 0.0);
            row += pass == Pass::forward ? t * V * 2 : t * V + heads * t * t;
            break;
    }
    return {.fixed = 4.0 * size.parameters * copies, .per_row = 4.0 * row};
}

uint64_t estimate_training_bytes(const ValidModelConfig& model, int64_t batch, uint64_t data_bytes) {
    check(model->block > 0 && batch > 0, "estimate_training_bytes: block ({}) and batch ({}) must be positive",
          model->block, batch);
    const uint64_t bytes = estimate_memory(model, model->block, Pass::train).bytes(batch);
    return bytes > UINT64_MAX - data_bytes ? UINT64_MAX : bytes + data_bytes;
}

}  // namespace nn
