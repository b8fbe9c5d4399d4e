// The training-step configurations of the speed issues, shared by bench_train_step (which times them)
// and export_weights (which writes their weights and batch for bench/pytorch_reference.py): the four
// character models, GPT-2 small (124M, V 50,257) at llm.c's B 4, T 64 and at its full window, T 1024, and a
// SmolLM-135M-shaped Llama (issue 42) at B 4, T 64.
//
// Shape legend: B batch, T window (= block), C n_embd, V vocab (65, tiny Shakespeare's; GPT-2's 50,257;
// SmolLM's 49,152), F the SwiGLU's hidden width.
//
// A step is what examples/train does per iteration: forward, cross_entropy, backward, clip the global
// gradient norm to 1.0, AdamW (lr 1e-3, betas 0.9/0.99, eps 1e-8, weight decay 0.1 on Linear weights).
// The batch is fixed random token ids, so no file is needed; it and the weights come from the seed.
// In bf16 (issue 44), the step's products with weights round to bfloat16 (autograd/precision.h), with the
// weights' bfloat16 copies made once a step: a Bf16WeightScope around forward and backward, closed
// before the optimizer changes the weights.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <autograd/autograd.h>
#include <autograd/precision.h>
#include <nn/models.h>
#include <nn/train/optim.h>

namespace bench {

struct StepConfig {
    std::string_view name;  // tutorial | small | baby | nano | gpt2 | gpt2-T1024
    nn::ModelConfig model;
    int64_t batch;  // B; T is model.block
};

inline constexpr int64_t kVocab = 65;
// Timed steps from one start before the weights are reset (both sides). Thousands of steps on one fixed
// batch memorize it: the gradients shrink into subnormal floats, which x86 computes up to ~5x slower,
// a regime no real training run (a new batch every step) is in.
inline constexpr size_t kStepsPerRun = 50;
inline constexpr uint64_t kSeed = 1337;

inline const std::array<StepConfig, 4>& step_configs() {
    static const std::array<StepConfig, 4> configs = {{
        // the tutorial model: embeddings, one head of width 32, lm_head
        {"tutorial", {.kind = nn::ModelKind::head, .vocab = kVocab, .n_embd = 32, .block = 8}, 32},
        // the 4-layer model
        {"small",
         {.kind = nn::ModelKind::gpt, .vocab = kVocab, .n_embd = 64, .n_head = 4, .n_layer = 4, .block = 32},
         16},
        // nanoGPT's baby GPT (shakespeare_char on CPU)
        {"baby",
         {.kind = nn::ModelKind::gpt, .vocab = kVocab, .n_embd = 128, .n_head = 4, .n_layer = 4, .block = 64},
         12},
        // nanoGPT's shakespeare_char model (its GPU config; batch 4 for CPU timing, dropout 0)
        {"nano",
         {.kind = nn::ModelKind::gpt, .vocab = kVocab, .n_embd = 384, .n_head = 6, .n_layer = 6, .block = 256},
         4},
    }};
    return configs;
}

// GPT-2 small, random weights (GPT-2's init): llm.c's train_gpt2.c demo (B 4, T 64), and the full window.
inline const std::array<StepConfig, 2>& gpt2_configs() {
    static constexpr nn::ModelConfig small{
        .kind = nn::ModelKind::gpt2, .vocab = 50257, .n_embd = 768, .n_head = 12, .n_layer = 12, .block = 64};
    static const std::array<StepConfig, 2> configs = {{
        {"gpt2", small, 4},
        {"gpt2-T1024",
         [] {
             nn::ModelConfig c = small;
             c.block = 1024;
             return c;
         }(),
         1},
    }};
    return configs;
}

// Llama, random weights (GPT-2-style init, nn/llama.h): SmolLM-135M's shape (30 layers, C 576, 9 query
// heads of width 64 reading 3 key-value heads, F 1,536, V 49,152, tied output; 134.5M parameters) at B 4,
// T 64, issue 42's training step.
inline const std::array<StepConfig, 1>& llama_configs() {
    static const std::array<StepConfig, 1> configs = {{
        {"smollm",
         {.kind = nn::ModelKind::llama,
          .vocab = 49152,
          .n_embd = 576,
          .n_head = 9,
          .n_layer = 30,
          .block = 64,
          .n_kv_head = 3,
          .ffn_hidden = 1536,
          .tied_embeddings = true},
         4},
    }};
    return configs;
}

// The configuration of that name, of any list (std::invalid_argument naming them all if none).
inline StepConfig step_config(std::string_view name) {
    for (const auto& c : step_configs())
        if (c.name == name) return c;
    for (const auto& c : gpt2_configs())
        if (c.name == name) return c;
    for (const auto& c : llama_configs())
        if (c.name == name) return c;
    throw std::invalid_argument("no step configuration '" + std::string(name) +
                                "' (tutorial, small, baby, nano, gpt2, gpt2-T1024, smollm)");
}

// FLOPs of one step (forward + backward), counted as
//     6 * P_matmul * B*T                      (2 forward, 4 backward per weight per token)
//   + 12 * L * W * T * B*T                    (attention: Q K^T and weights @ V, each 2 T W per token per
//                                              layer forward, times 3 for forward + backward, full T x T
//                                              grids as we compute them, the causal half not subtracted)
// where P_matmul is the number of Linear weights (lm_head included, also when it is the token table, as
// GPT-2's and a tied Llama's; embeddings, biases and norms not),
// L the attention layers and W the total width of their heads (C for GPT, the head width for the
// tutorial model; n_head * H = C for Llama, whose grouped key-value heads are shared, not fewer products).
// This is nanoGPT's/PaLM's estimate_mfu formula.
inline double step_flops(const StepConfig& config, const nn::LanguageModel& model) {
    double matmul_params = 0;
    for (const auto& name : model.decayed_parameter_names())
        for (const auto& [n, p] : model.named_parameters())
            if (n == name) matmul_params += static_cast<double>(p.numel());
    const bool tied = config.model.kind == nn::ModelKind::gpt2 ||
                      (config.model.kind == nn::ModelKind::llama && config.model.tied_embeddings);
    if (tied)  // the output layer is the (undecayed) token table
        matmul_params += static_cast<double>(config.model.vocab * config.model.n_embd);
    const double tokens = static_cast<double>(config.batch * config.model.block);
    const double layers = nn::model_size(config.model).layers;
    const double T = static_cast<double>(config.model.block), W = static_cast<double>(config.model.n_embd);
    return 6.0 * matmul_params * tokens + 12.0 * layers * W * T * tokens;
}

// One model, its optimizer and a fixed batch: the state one timed step works on.
struct TrainStep {
    explicit TrainStep(const StepConfig& c, uint64_t seed = kSeed,
                       autograd::Precision products = autograd::Precision::float32)
        : config(c), precision(products) {
        restart(seed);
    }

    // Back to the seed's weights and a new optimizer, the old ones freed first (GPT-2 small's take 2 GB).
    void restart(uint64_t seed = kSeed) {
        const StepConfig& c = config;
        optimizer.reset();
        model.reset();
        autograd::Generator init(seed);
        model = nn::make_model(c.model, init);
        optimizer = std::make_unique<nn::AdamW>(
            *model, nn::AdamWOptions{.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .weight_decay = 0.1f});
        // ids and targets: (B, T), uniform in [0, V), from their own stream
        autograd::Generator data(seed + 1);
        const int64_t n = c.batch * c.model.block;
        ids.resize(static_cast<size_t>(n));
        targets.resize(static_cast<size_t>(n));
        const auto vocab = static_cast<uint64_t>(c.model.vocab);
        for (auto& id : ids) id = static_cast<int64_t>(data.next_u64() % vocab);
        for (auto& t : targets) t = static_cast<int64_t>(data.next_u64() % vocab);
    }

    // The loss of the current weights on the batch, without a graph, in the step's precision.
    double loss() {
        autograd::NoGradGuard no_grad;
        autograd::MatmulPrecisionGuard products(precision);
        return autograd::cross_entropy(model->forward(ids, config.batch, config.model.block), targets).item();
    }

    // One training step; returns the loss of the batch before the update.
    double step() {
        optimizer->zero_grad();
        double value = 0;
        {
            autograd::MatmulPrecisionGuard products(precision);
            std::optional<autograd::Bf16WeightScope> copies;  // the weights rounded once, for this step only
            if (precision == autograd::Precision::bf16) copies.emplace();
            autograd::Tensor loss =
                autograd::cross_entropy(model->forward(ids, config.batch, config.model.block), targets);
            loss.backward();
            value = loss.item();
        }  // the copies freed here: the optimizer below changes the weights
        nn::clip_grad_norm(model->parameters(), 1.0f);
        optimizer->step();
        return value;
    }

    StepConfig config;
    autograd::Precision precision;  // of the products with weights (float32 or bf16)
    std::unique_ptr<nn::LanguageModel> model;
    std::unique_ptr<nn::AdamW> optimizer;
    std::vector<int64_t> ids, targets;
};

}  // namespace bench
