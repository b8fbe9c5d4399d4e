// Training a language model on a token stream: the loop, evaluation, and checkpoints that resume
// exactly. examples/train is a command line around this class.
//
//     nn::Trainer trainer(config, tokenizer, tokens);
//     while (trainer.step_count() < config.steps) trainer.step();
//     trainer.evaluate(nn::Split::validation, 200);
//     trainer.save("run.safetensors");
//     nn::Trainer again = nn::Trainer::resume("run.safetensors", text);  // continues bit-exactly
//
// A checkpoint is one safetensors file, written atomically (temporary file, then rename): the model's
// parameters under their own names (what a PyTorch user loads), and the training state beside them
// under "train_state.*" names (optimizer moments) and in the metadata (step, every generator's state,
// model and training config, vocabulary, and a fingerprint of the data).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include <autograd/random.h>

#include "nn/models.h"
#include "nn/train/optim.h"
#include "nn/train/report.h"
#include "nn/train/text.h"

namespace nn {

struct TrainConfig {
    ModelConfig model;
    int64_t steps = 2000;       // total optimizer steps (the schedule decays over these)
    int64_t batch = 32;         // B
    float lr = 1e-3f;           // peak learning rate (AdamW)
    float min_lr = -1.0f;       // end of the cosine decay; negative means lr / 10
    int64_t warmup = 0;         // linear warmup steps
    float weight_decay = 0.1f;  // decoupled, on Linear weights only
    float beta1 = 0.9f, beta2 = 0.99f;
    float grad_clip = 1.0f;     // global-norm clipping; 0 turns it off
    uint64_t seed = 1337;       // model initialization, batches, dropout

    bool operator==(const TrainConfig&) const = default;
};

struct StepStats {
    int64_t step = 0;        // steps done after this one
    double loss = 0;         // training loss of this step's batch
    double lr = 0;
    double grad_norm = 0;    // before clipping
    int64_t tokens = 0;      // B * T
};

// What training `config` needs in memory, roughly, in bytes: parameters x 4 bytes x (weights, gradients
// and AdamW's two moments), plus one step's activations (each layer keeps a few (B, T, C) tensors and,
// with attention, its (B, heads, T, T) weights; the logits are (B, T, vocab)). An estimate to refuse
// absurd sizes before allocating, not an exact figure; it saturates instead of overflowing. `data_bytes`
// (the token ids, TokenIds::bytes()) is added as it is.
uint64_t estimate_training_bytes(const TrainConfig& config, uint64_t data_bytes = 0);
// The machine's physical memory in bytes (0 when the system does not say).
uint64_t physical_memory_bytes();

class Trainer {
public:
    // A fresh run. The tokens are split 90/10 into training and validation. A config whose
    // estimate_training_bytes (with the token ids) exceeds the physical memory is refused
    // (std::invalid_argument) before the model is allocated; a failed allocation of the model says
    // so and how large (std::runtime_error). The ids are kept as given (TokenIds: as narrow as the
    // vocabulary allows; read_tokenized_text makes them from a file).
    Trainer(const TrainConfig& config, CharTokenizer tokenizer, TokenIds tokens);
    Trainer(const TrainConfig& config, CharTokenizer tokenizer, const std::vector<int64_t>& tokens);
    // Continues the run saved at `path` on the same text, encoded with the checkpoint's vocabulary
    // (characters outside it are an error that lists them) and checked against the saved fingerprint.
    static Trainer resume(const std::filesystem::path& path, std::string_view text);

    // One optimizer step. Throws std::runtime_error if the loss or gradient norm is not finite,
    // before the parameters are touched. With `report`, also fills the gradient-flow report:
    // gradient norms before clipping, update ratios of this step, the heads of this forward.
    StepStats step(GradientReport* report = nullptr);
    // Mean loss over `iters` random batches of the split, without a graph, in eval mode. The batches
    // depend only on the seed, the step and the split, so the figure does not depend on when it is asked.
    double evaluate(Split split, int64_t iters);
    void save(const std::filesystem::path& path) const;

    LanguageModel& model() { return *model_; }
    const TrainConfig& config() const { return config_; }
    const CharTokenizer& tokenizer() const { return tokenizer_; }
    const TextData& data() const { return data_; }
    int64_t step_count() const { return optimizer_->steps(); }
    float lr_at(int64_t step) const;

private:
    Trainer(const TrainConfig& config, CharTokenizer tokenizer, TokenIds tokens, bool fresh);

    TrainConfig config_;
    CharTokenizer tokenizer_;
    uint64_t data_fingerprint_;
    TextData data_;
    autograd::Generator init_gen_, batch_gen_;
    std::unique_ptr<LanguageModel> model_;
    std::unique_ptr<AdamW> optimizer_;
};

// A trained model for inference: its config, vocabulary and weights, read from a training checkpoint
// (the training state in it is ignored). Errors name the path and the problem.
struct TrainedModel {
    ModelConfig config;
    CharTokenizer tokenizer;
    std::unique_ptr<LanguageModel> model;
};
TrainedModel load_trained_model(const std::filesystem::path& path);

}  // namespace nn
