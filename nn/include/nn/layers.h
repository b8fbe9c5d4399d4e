// The basic layers: Linear, Embedding, LayerNorm. Built from autograd ops (LayerNorm is the fused
// autograd::layer_norm); no hand-written backward here.
//
// Shape legend: B batch, T time, C channels (in), K channels (out), V vocab, "..." any leading dims.
#pragma once

#include <array>
#include <functional>
#include <span>
#include <string>
#include <utility>

#include <autograd/random.h>

#include "nn/module.h"

namespace nn {

struct LinearOptions {
    int64_t in = 0;   // C
    int64_t out = 0;  // K
    bool bias = true;
};

// y = x @ weight + bias. weight is (C, K), so the layer reads as the tutorial's `x @ W`.
// Initialized like PyTorch: uniform in +-1/sqrt(C).
class Linear : public Callable<Linear> {
public:
    explicit Linear(LinearOptions options, autograd::Generator& gen = autograd::default_generator());
    Tensor forward(const Tensor& x) const;  // x: (..., C) -> (..., K)

    LinearOptions options;
    Tensor weight;  // (C, K)
    Tensor bias;    // (K), undefined when options.bias is false
};

struct EmbeddingOptions {
    int64_t num = 0;  // V rows
    int64_t dim = 0;  // C channels
};

// A table of V rows of width C, initialized N(0, 1) like PyTorch.
class Embedding : public Callable<Embedding> {
public:
    explicit Embedding(EmbeddingOptions options, autograd::Generator& gen = autograd::default_generator());
    // ids: values in [0, V) laid out as ids_shape (e.g. (B, T))  ->  (ids_shape..., C)
    Tensor forward(std::span<const int64_t> ids, const Shape& ids_shape) const;

    EmbeddingOptions options;
    Tensor weight;  // (V, C)
};

struct LayerNormOptions {
    int64_t dim = 0;  // C, the normalized (last) dim
    float eps = 1e-5f;
};

// Normalizes the last dim to mean 0 and variance 1 (biased, as PyTorch), then scales and shifts.
class LayerNorm : public Callable<LayerNorm> {
public:
    explicit LayerNorm(LayerNormOptions options);
    Tensor forward(const Tensor& x);  // x: (..., C) -> (..., C)

    LayerNormOptions options;
    Tensor gain;                // (C), ones
    Tensor bias;                // (C), zeros
    HookPoint hook_normalized;  // (..., C): the output, scaled and shifted (TransformerLens's name)
};

// GPT-2's initialization (nanoGPT's; Hugging Face's GPT-2 _init_weights), for the models that start from
// it: every parameter of `model` N(0, 0.02), drawn from gen in named_parameters() order; those `residual`
// names (the projections that write into the residual stream) N(0, 0.02 / sqrt(2 n_layer)), so the
// stream's variance does not grow with depth; biases (".bias") 0; those `keep` names (the norms) left
// as they are. A shapes-only model draws nothing.
void init_gpt2_style(Module& model, autograd::Generator& gen, int64_t n_layer,
                     const std::function<bool(const std::string& name)>& residual,
                     const std::function<bool(const std::string& name)>& keep);

// A pre-norm block's residual stream (B, T, C) at each point, TransformerLens's names: "hook_resid_pre"
// (the block's input x), "hook_attn_out", "hook_resid_mid" (x + attention), "hook_mlp_out",
// "hook_resid_post" (the block's output). The gpt and gpt2 kinds' blocks hold one and run their forward
// through flow().
struct ResidualHookPoints {
    HookPoint resid_pre, attn_out, resid_mid, mlp_out, resid_post;
    // Each point with its name, for the block to register (Module::register_hook_point).
    std::array<std::pair<const char*, HookPoint*>, 5> named() {
        return {{{"hook_resid_pre", &resid_pre},
                 {"hook_attn_out", &attn_out},
                 {"hook_resid_mid", &resid_mid},
                 {"hook_mlp_out", &mlp_out},
                 {"hook_resid_post", &resid_post}}};
    }
    // x + attention(x), then + mlp(that): attention and mlp take the stream (B, T, C) and return their
    // branch (B, T, C), each normalising it as the block does; every value passes its point. With
    // last_row, the MLP and what follows it run on the last position alone: (B, 1, C) out.
    template <typename Attention, typename Mlp>
    Tensor flow(const Tensor& input, Attention&& attention, Mlp&& mlp, bool last_row = false) {
        const Tensor x = resid_pre(input);                   // (B, T, C)
        Tensor mid = resid_mid(x + attn_out(attention(x)));  // (B, T, C)
        if (last_row) mid = mid.slice(1, mid.size(1) - 1, mid.size(1));
        return resid_post(mid + mlp_out(mlp(mid)));  // (B, T or 1, C)
    }
};

}  // namespace nn
