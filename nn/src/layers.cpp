#include "nn/layers.h"

#include <autograd/ops.h>

#include <cmath>

namespace nn {

using namespace autograd;

Linear::Linear(LinearOptions opts, Generator& gen) : options(opts) {
    check(opts.in > 0 && opts.out > 0, "Linear: in ({}) and out ({}) must be positive", opts.in, opts.out);
    const float bound = 1.0f / std::sqrt(static_cast<float>(opts.in));
    weight = register_parameter("weight", rand({opts.in, opts.out}, gen, -bound, bound), /*decay=*/true);
    if (opts.bias) bias = register_parameter("bias", rand({opts.out}, gen, -bound, bound));
}

Tensor Linear::forward(const Tensor& x) const {
    check(x.dim() >= 2 && x.size(-1) == options.in, "Linear: input of shape {} does not end in {} channels",
          shape_str(x.shape()), options.in);
    return options.bias ? linear(x, weight, bias) : matmul(x, weight);
}

Embedding::Embedding(EmbeddingOptions opts, Generator& gen) : options(opts) {
    check(opts.num > 0 && opts.dim > 0, "Embedding: num ({}) and dim ({}) must be positive", opts.num, opts.dim);
    weight = register_parameter("weight", randn({opts.num, opts.dim}, gen));
}

Tensor Embedding::forward(std::span<const int64_t> ids, const Shape& ids_shape) const {
    return embedding(weight, ids, ids_shape);
}

LayerNorm::LayerNorm(LayerNormOptions opts) : options(opts) {
    check(opts.dim > 0 && opts.eps > 0.0f, "LayerNorm: dim ({}) and eps ({}) must be positive", opts.dim, opts.eps);
    gain = register_parameter("gain", ones({opts.dim}));
    bias = register_parameter("bias", zeros({opts.dim}));
    register_hook_point("hook_normalized", hook_normalized);
}

Tensor LayerNorm::forward(const Tensor& x) {
    check(x.dim() >= 1 && x.size(-1) == options.dim, "LayerNorm: input of shape {} does not end in {} channels",
          shape_str(x.shape()), options.dim);
    // the fused op: (x - mean) / sqrt(biased variance + eps) * gain + bias, one pass and one backward
    return hook_normalized(layer_norm(x, gain, bias, options.eps));  // (..., C)
}

void init_gpt2_style(Module& model, Generator& gen, int64_t n_layer,
                     const std::function<bool(const std::string&)>& residual,
                     const std::function<bool(const std::string&)>& keep) {
    const float residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(n_layer));
    for (auto& [name, p] : model.named_parameters()) {
        if (keep(name) || !p.has_values()) continue;  // (a shapes-only model draws nothing)
        const bool bias = name.ends_with(".bias"), scaled = residual(name);
        for (float& v : p.data()) v = bias ? 0.0f : gen.normal(0.0f, scaled ? residual_std : 0.02f);
    }
}

}  // namespace nn
