// Training a language model on a token stream: the loop, evaluation, and checkpoints that resume
// exactly.
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
// model and training config, the run settings (evaluation, logs, sample), vocabulary, a fingerprint of
// the data, and the run's files when the caller names them: RunFiles). nn/train/src/checkpoint_fields.cpp
// and trainer_checkpoint.cpp list the keys.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <autograd/random.h>

#include "nn/models.h"
#include "nn/files/machine.h"
#include "nn/train/optim.h"
#include "nn/train/report.h"
#include "nn/model_files/safetensors.h"  // ReadProgress
#include "nn/train/text.h"
#include "nn/train/train_config.h"

namespace nn {

struct StepStats {
    int64_t step = 0;  // steps done after this one
    double loss = 0;   // training loss of this step's batch
    double lr = 0;
    double grad_norm = 0;  // before clipping
    int64_t tokens = 0;    // B * T
};

// What a pass over a model needs in memory, roughly: an estimate to refuse absurd sizes before
// allocating, and to choose how many rows run at once, not an exact figure.
enum class Pass {
    train,          // a training step: weights, gradients, AdamW's two moments, and the activations kept for backward
    gradient,       // one backward without an optimizer (gradflow): weights, gradients and the activations
    forward,        // no graph (NoGradGuard), and the loss: the weights, what the layers keep, the logits twice
    forward_heads,  // no graph, no loss: the logits once, and every head's (B, T, T) attention (nn::head_scores)
};
struct MemoryEstimate {
    double fixed = 0;                    // bytes whatever the batch: the parameters (and their gradients and moments)
    double per_row = 0;                  // bytes per row of T tokens
    uint64_t bytes(int64_t rows) const;  // fixed + rows x per_row, saturating instead of overflowing
    // The most rows, at most `rows` and at least 1, whose per_row bytes together fit `budget`.
    int64_t rows_within(double budget, int64_t rows) const;
};
// Each layer keeps a few (T, C) tensors per row and, with attention, its heads' (T, T) weights; the logits
// are (T, vocab). A config validate_model_config refuses, or a T that is not positive, is std::invalid_argument.
MemoryEstimate estimate_memory(const ValidModelConfig& model, int64_t T, Pass pass);
inline MemoryEstimate estimate_memory(const ModelConfig& model, int64_t T, Pass pass) {
    return estimate_memory(ValidModelConfig(model), T, pass);
}

// What training `config` needs in memory, in bytes: estimate_memory's Pass::train of its batch of rows
// of its block, plus `data_bytes`, the token ids held while training (TokenIds::bytes()). A block or batch
// that is not positive is std::invalid_argument.
uint64_t estimate_training_bytes(const ValidModelConfig& model, int64_t batch, uint64_t data_bytes = 0);
inline uint64_t estimate_training_bytes(const TrainConfig& config, uint64_t data_bytes = 0) {
    return estimate_training_bytes(ValidModelConfig(config.model), config.batch, data_bytes);
}

// What a run id may be (Trainer::set_run_id): 1 to 64 letters, digits, '-' or '_'.
bool is_run_id(std::string_view id);

// A data file as a checkpoint keeps it ("data.file", "data.file_bytes", "data.file_checksum"): where it
// is, and enough to tell the same file from a changed one before reading it all again.
struct DataFile {
    std::filesystem::path path;
    uint64_t bytes = 0;
    uint64_t checksum = 0;  // 64 bits over every byte, 8 at a time (fast: about the speed of reading it)

    bool operator==(const DataFile&) const = default;
};
// The file at `path` as it is now: its size and checksum, read once. std::runtime_error naming it when it
// cannot be opened or read ("'data.txt': cannot open (No such file or directory)").
DataFile data_file(const std::filesystem::path& path);

// The files of a run besides its checkpoints, kept in them so that a resume finds them again: the data
// it trains on, and the files it writes, by name (train's "csv", "grad_csv", "report"; saved as
// "outputs.NAME"). A file in the checkpoint's directory or below is saved relative to it, so a folder
// moved whole (checkpoint, logs and data) still resumes, from any directory; any other as an absolute
// path. Read back (read_saved_run, Trainer::resume), each is a path from the current directory again.
struct RunFiles {
    std::optional<DataFile> data;
    std::map<std::string, std::filesystem::path> outputs;

    bool operator==(const RunFiles&) const = default;
};
// What a checkpoint says of its run, from its header alone, for a caller that needs it before resuming
// (train: which data and logs to use): its files (none for one saved before they were kept, or by a
// caller that named none), its run id ("" when none), how many tokens it was trained on and its
// precision. Errors as SafetensorsReader's.
struct SavedRun {
    RunFiles files;
    std::string run_id;
    uint64_t tokens = 0;
    bool bf16 = false;  // its precision (TrainConfig::bf16), kept by a resume; float32 before it was saved
};
SavedRun read_saved_run(const std::filesystem::path& checkpoint);

// Resume's refusal of data whose tokens are not the ones the checkpoint was trained on (its fingerprint
// differs): a caller that chose the data itself (train without --data) can say what to give instead.
struct DataMismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Trainer {
public:
    // A fresh run. The tokens are split 90/10 into training and validation. A config whose
    // estimate_training_bytes (with the token ids) exceeds the physical memory is refused
    // (std::invalid_argument) before the model is allocated; a failed allocation of the model says
    // so and how large (std::runtime_error). The ids are kept as given (TokenIds: as narrow as the
    // vocabulary allows; read_tokenized_text makes them from a file).
    Trainer(const TrainConfig& config, CharTokenizer tokenizer, TokenIds tokens);
    Trainer(const TrainConfig& config, CharTokenizer tokenizer, const std::vector<int64_t>& tokens);
    // Any tokenizer (GPT-2's BPE: nn/tokenizers/bpe.h) and data already split (token files: train.bin and
    // val.bin, nn/train/token_file.h). The checkpoint keeps the tokenizer (checkpoint_metadata()).
    Trainer(const TrainConfig& config, std::shared_ptr<const Tokenizer> tokenizer, TextData data);
    // Continues the run saved at `path` on the same text, encoded with the checkpoint's vocabulary
    // (characters outside it are an error that lists them) and checked against the saved fingerprint
    // (DataMismatch). Its RunFiles come from the file too.
    // Its RunSettings come from the file too (the defaults where the file predates them). A checkpoint
    // without a tokenizer (IdTokenizer) is refused: it resumes on its token file, below.
    static Trainer resume(const std::filesystem::path& path, std::string_view text);
    // The same, with the data made by `data` from the checkpoint's tokenizer (a token file mapped, a text
    // file tokenized as it is read).
    static Trainer resume(const std::filesystem::path& path, const std::function<TextData(const Tokenizer&)>& data);

    // Extends the run to `steps` in total (std::invalid_argument below the current total; the same
    // total changes nothing). The learning-rate schedule is recomputed over the new total: the cosine
    // decays over `steps` from the start, so from the current step on the rate is what a run planned
    // for `steps` from the beginning would use (higher than the old schedule's), and the extended run
    // differs from a straight run of the old total from this step on. Steps already taken are kept.
    void extend_to(int64_t steps);
    void set_run(const RunSettings& run);  // std::invalid_argument for a value train could not use
    // The step to stop after: `until` if given, at most the run's total. An `until` at or before the
    // current step is an error (std::invalid_argument): it would train nothing.
    int64_t stop_step(std::optional<int64_t> until) const;

    // One optimizer step. Throws std::runtime_error if the loss or gradient norm is not finite,
    // before the parameters are touched. With `report`, also fills the gradient-flow report:
    // gradient norms before clipping, update ratios of this step, the heads of this forward.
    // In the config's precision (TrainConfig::bf16: autograd/precision.h), set for the step and restored
    // after; in bf16 one Bf16WeightScope covers the forward and backward and closes before the update.
    StepStats step(GradientReport* report = nullptr);
    // Mean loss over `iters` random batches of the split, without a graph, in eval mode. The batches
    // depend only on the seed, the step and the split, so the figure does not depend on when it is asked.
    // `stop`, when given, is asked before each batch: true ends the evaluation there, and it returns NaN
    // (train passes its signal flag, so a Ctrl-C does not wait for a long evaluation). In the config's
    // precision, with one Bf16WeightScope for the whole pass.
    double evaluate(Split split, int64_t iters, const std::function<bool()>& stop = {});
    // The whole state in one safetensors file. A run whose checkpoint could not be read back (a
    // tokenizer over the header's 100 MB) is refused when the Trainer is made, before any training.
    void save(const std::filesystem::path& path) const;

    // What ties a run's other files (train --report's page) to its checkpoints: saved as "run.id" when
    // set, read back by resume (empty when the checkpoint has none). 1 to 64 letters, digits, '-' or
    // '_' (std::invalid_argument otherwise). A fresh Trainer has none: the id is the caller's to make.
    const std::string& run_id() const { return run_id_; }
    void set_run_id(std::string id);

    // The files saved with its checkpoints (RunFiles): none until set, the checkpoint's when resumed.
    const RunFiles& run_files() const { return run_files_; }
    void set_run_files(RunFiles files) { run_files_ = std::move(files); }

    LanguageModel& model() { return *model_; }
    const TrainConfig& config() const { return config_; }
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    const TextData& data() const { return data_; }
    int64_t step_count() const { return optimizer_->steps(); }
    float lr_at(int64_t step) const;

private:
    // What save writes: the tensors (the weights, then the optimizer's state) and the metadata, with the
    // RunFiles' paths relative to `directory`, the checkpoint's.
    std::pair<NamedTensors, std::map<std::string, std::string>> checkpoint(
        const std::filesystem::path& directory = ".") const;

    TrainConfig config_;
    std::shared_ptr<const Tokenizer> tokenizer_;
    uint64_t data_fingerprint_;
    TextData data_;
    autograd::Generator init_gen_, batch_gen_;
    std::unique_ptr<LanguageModel> model_;
    std::unique_ptr<AdamW> optimizer_;
    std::string run_id_;
    RunFiles run_files_;
};

// A model's weights, config and tokenizer as a checkpoint every program reads (load_trained_model), without
// a training run's state: what a program that trains in its own way saves (induction --out). Written
// atomically: a failed write leaves no file.
void save_model_checkpoint(const std::filesystem::path& path, const LanguageModel& model, const ModelConfig& config,
                           const Tokenizer& tokenizer);

// A trained model for inference: its config, vocabulary and weights, read from a training checkpoint
// (the training state in it is ignored). Errors name the path and the problem.
struct TrainedModel {
    ModelConfig config;
    std::shared_ptr<const Tokenizer> tokenizer;  // a CharTokenizer, or the BpeTokenizer a BPE run saved
    std::unique_ptr<LanguageModel> model;
    std::optional<int64_t> step =
        std::nullopt;  // the training step it was saved at (none: GPT-2's weights, nn::save_module's)
    // The id a sample starts from and stops at, as run.c samples llama2.c's models (BOS, 1): set for a
    // llama2.c model file and for a checkpoint with llama2.c's tokenizer; for a Hugging Face Llama folder
    // (or a checkpoint with its tokenizer.json), as docs/llama.md says; none for the others.
    std::optional<int64_t> bos = std::nullopt;
    // Another id a sample stops at (not printed): a Hugging Face Llama's eos_token_id, as transformers' generate.
    std::optional<int64_t> eos = std::nullopt;
};
// Hugging Face's GPT-2 model.safetensors and llm.c's model files load too (nn/model_files/gpt2_weights.h), as
// the `gpt2` kind, with GPT-2's BPE from `tokenizer` or from vocab.json + merges.txt beside the file, and
// the head count from config.json beside it or `n_head` (read_hf_gpt2). A tinygpt checkpoint keeps its
// own tokenizer and head count, which must then be the ones given (check_tokenizer_dir).
struct LoadOptions {
    // a tokenizer the caller gives: GPT-2's BPE directory; for a llama2.c model file, a tokenizer.bin (or a
    // directory holding one; without, the tokenizer.bin beside the model file, else token ids only); for a
    // Hugging Face Llama folder (a directory with config.json), a tokenizer.json or tokenizer.bin, or a
    // directory holding one (without, the folder's tokenizer.json, else token ids only)
    std::optional<std::filesystem::path> tokenizer;
    std::optional<int64_t> n_head;  // a head count the caller gives
    ReadProgress progress = {};     // if given, told how far the file has been read (GPT-2 small's takes seconds)
};
TrainedModel load_trained_model(const std::filesystem::path& path, const LoadOptions& options = {});

// Throws std::runtime_error when `saved` (the tokenizer of `checkpoint`) is not GPT-2's BPE in `dir`, the
// same vocabulary and merges: "the tokenizer DIR and the checkpoint CKPT disagree: ..."; for llama2.c's
// tokenizer, when `dir` (a tokenizer.bin, or a directory holding one) is not the same file.
void check_tokenizer_dir(const std::filesystem::path& dir, const Tokenizer& saved, const std::string& checkpoint);

}  // namespace nn
