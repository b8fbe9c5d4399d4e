// Sampling text from a trained model, one token at a time.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <autograd/random.h>

#include "nn/decoder.h"
#include "nn/models.h"
#include "nn/tokenizers/tokenizer.h"

namespace nn {

struct SampleOptions {
    float temperature = 1.0f;  // logits are divided by it: < 1 sharper, > 1 flatter; 0: greedy (the first argmax)
    int64_t top_k = 0;         // keep only the k most likely tokens; 0 (or k above the vocabulary) keeps all
    bool cache = true;         // model.cached_decoder(); false: window_decoder(model), the reference
    std::string model = {};    // what names the model in a refusal (check_finite_output): its file
};

// A model whose output is not finite (weights so large that the logits overflow, say) is refused in the
// same words by every program that runs one: "MODEL: WHAT is VALUE: the model's weights or logits are
// not finite" (std::runtime_error; no "MODEL: " when `model` is empty). For logits, the first value that
// is not finite and its id. generate checks each step's logits before it draws from them.
void check_finite_output(std::string_view model, std::string_view what, double value);
void check_finite_output(std::string_view model, std::string_view what, std::span<const float> logits);

// Extends `context` (ids, at least one) by n tokens and returns the n new ids. The model reads the
// window of nn::GenerationWindow (nn/decoder.h): the last block of the context, and when the window is
// full, its last half; cached or not, the same windows and the same text. It runs in eval mode without
// a graph, and is put back in the mode it was in. The same generator state gives the same text.
// `emit`, when given, sees each new id as it is drawn; returning false stops there (that id is kept).
std::vector<int64_t> generate(LanguageModel& model, const std::vector<int64_t>& context, int64_t n,
                              const SampleOptions& options, autograd::Generator& gen,
                              const std::function<bool(int64_t)>& emit = {});
// The same through a window the caller made over a decoder of `model` (options.cache is not read): one
// window serves sample after sample, and window.decoder().cached() says which decoder ran (a kind without
// a cache of its own gets the window decoder from model.cached_decoder()).
std::vector<int64_t> generate(LanguageModel& model, GenerationWindow& window, const std::vector<int64_t>& context,
                              int64_t n, const SampleOptions& options, autograd::Generator& gen,
                              const std::function<bool(int64_t)>& emit = {});

// Where a sample starts when the user gives no prompt: a newline if the vocabulary has one (a fresh
// line, as in nanoGPT), else the vocabulary's first character; without a tokenizer (IdTokenizer), the
// last id, which in GPT-2's vocabulary is <|endoftext|> (50256), where llm.c's samples start.
std::string default_prompt(const Tokenizer& tokenizer);

// The id a tokenizer's samples start from and stop at: llama2.c's BOS (1), as run.c samples; for a Hugging
// Face tokenizer.json, SentencePiece-style (TinyLlama, llama2.c's exported tokenizers): the model folder's
// bos_token_id (HfTokenizer::model_ids), else its template's <s>, as run.c and transformers' template do;
// byte-level BPE (SmolLM, Qwen): only its template's leading special token (HfTokenizer::bos), since
// transformers' encode puts no other first (SmolLM's bos_token_id 0 is <|endoftext|>, never prepended),
// so the ids are those transformers' generate would see; none for the others.
std::optional<int64_t> sample_bos(const Tokenizer& tokenizer);
// Another id a sample stops at (not printed): a Hugging Face model folder's eos_token_id, where
// transformers' generate stops; none for the others.
std::optional<int64_t> sample_eos(const Tokenizer& tokenizer);

// Where a sample starts. With a BOS, run.c's way: BOS, then the prompt's tokens, or BOS alone without a
// prompt (and a sample ends when BOS is drawn). Without one, the prompt's tokens, or default_prompt's.
struct SampleStart {
    std::string text;          // printed before the sample
    std::vector<int64_t> ids;  // what the model reads first
};
SampleStart sample_start(const Tokenizer& tokenizer, std::optional<int64_t> bos,
                         const std::optional<std::string>& prompt);

}  // namespace nn
