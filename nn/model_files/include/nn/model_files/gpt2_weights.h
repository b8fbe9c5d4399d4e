// GPT-2 weights in the two formats they are published in, read into and written from the `gpt2` kind
// (nn/gpt2.h; the formats' details: docs/gpt2_weights.md).
//
//   - Hugging Face's model.safetensors: wte.weight (V, C), wpe.weight (n_ctx, C), h.N.ln_1.weight,
//     h.N.attn.c_attn.weight (C, 3C) (Conv1D's (in, out), as ours) ..., ln_f.{weight,bias}; with or
//     without a "transformer." prefix; lm_head.weight absent or equal to wte; the causal-mask buffers
//     h.N.attn.bias and h.N.attn.masked_bias skipped. F32, or F16 / BF16 widened.
//     n_head is not in the tensors: a config.json beside the file gives it, or else the caller; without either, a file of one of the published widths (n_embd 768, 1024,
//     1280, 1600) gets their heads of 64, with a warning, and any other is refused: a wrong guess would
//     load and run, only worse.
//   - llm.c's model file (train_gpt2.c): 256 int32 (magic 20240326, version 3 = fp32 or 5 = bf16, maxT,
//     V, L, NH, C, padded V), then 16 arrays, each all layers' of one kind, in nn.Linear's (out, in)
//     layout, wte with padded-V rows.
//
//     nn::ForeignWeights w = nn::read_gpt2_weights("gpt2/model.safetensors");   // or "gpt2_124M.bin"
//     nn::write_hf_gpt2("out/", config, model.named_parameters());   // out/model.safetensors + config.json
//     nn::write_hf_gpt2("out/", config, params, &bpe);               // + vocab.json and merges.txt
//     nn::write_llmc_gpt2("out.bin", config, model.named_parameters());
//
// Errors are std::runtime_error naming the file and the tensor or header field.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nn/model_registry.h"
#include "nn/model_files/safetensors.h"

namespace nn {

class BpeTokenizer;  // nn/tokenizers/bpe.h

enum class WeightsFormat { tinygpt, hugging_face, llmc };

// What a file holds, from its first bytes (llm.c's magic) and a safetensors header's names and metadata.
// A file that is neither llm.c's nor a safetensors file is `tinygpt` (its loader then says what is wrong).
WeightsFormat weights_format(const std::filesystem::path& path);

struct ForeignWeights {
    ModelConfig config;                 // kind gpt2, sizes from the shapes (and the header / config.json)
    NamedTensors weights;               // under tinygpt's names (GPT2::named_parameters), in its layouts
    std::vector<std::string> notes;     // what was read from where, or skipped, for the user
    std::vector<std::string> warnings;  // what was guessed (n_head by rule): to be shown, not hidden among notes
};
// Where the weights go: given the model the file holds, the tensors to read them into under tinygpt's
// names (a new model's parameters, so that loading takes the model's size in memory once, not twice);
// the ones it does not give, or an empty WeightsPlace, are new tensors. ForeignWeights::weights holds
// whichever were filled. On a refusal, the given tensors may be partly overwritten.
// `progress`, if given, is told how far the file has been read (SafetensorsReader::on_progress).
using WeightsPlace = std::function<NamedTensors(const ModelConfig&)>;
// `n_head`, when given, is the head count: what a file without config.json lacks, and what a file that
// holds one (config.json, llm.c's header) must agree with.
ForeignWeights read_hf_gpt2(const std::filesystem::path& path, const WeightsPlace& into = {},
                            std::optional<int64_t> n_head = std::nullopt, const ReadProgress& progress = {});
ForeignWeights read_llmc_gpt2(const std::filesystem::path& path, const WeightsPlace& into = {},
                              std::optional<int64_t> n_head = std::nullopt, const ReadProgress& progress = {});
ForeignWeights read_gpt2_weights(const std::filesystem::path& path,
                                 const WeightsPlace& into = {},  // either, by weights_format
                                 std::optional<int64_t> n_head = std::nullopt, const ReadProgress& progress = {});

// `weights` under tinygpt's names for a `gpt2` config. write_hf_gpt2 makes `directory` if needed and
// writes model.safetensors (names with the "transformer." prefix, as save_pretrained writes them, and
// metadata format "pt", which from_pretrained requires), config.json, and the tokenizer's vocab.json and
// merges.txt (GPT2Tokenizer's names) when one is given; without one, a vocab.json and merges.txt already
// there are removed, since they would be read as this model's. write_llmc_gpt2 writes version 3 (fp32)
// with the vocabulary padded to a multiple of 128 by zero rows. Both write atomically: write_hf_gpt2
// writes every file in full before renaming any into place, and a failure leaves no folder it made.
void write_hf_gpt2(const std::filesystem::path& directory, const ModelConfig& config, const NamedTensors& weights,
                   const BpeTokenizer* tokenizer = nullptr);
void write_llmc_gpt2(const std::filesystem::path& path, const ModelConfig& config, const NamedTensors& weights);

}  // namespace nn
