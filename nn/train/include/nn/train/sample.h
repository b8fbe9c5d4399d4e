// Sampling text from a trained model, one token at a time.
#pragma once

#include <vector>

#include <autograd/random.h>

#include "nn/models.h"
#include "nn/train/text.h"

namespace nn {

struct SampleOptions {
    float temperature = 1.0f;  // logits are divided by it: < 1 sharper, > 1 flatter
    int64_t top_k = 0;         // keep only the k most likely tokens; 0 (or k above the vocabulary) keeps all
};

// Extends `context` (ids, at least one) by n tokens and returns the n new ids. The model reads at
// most its block size of the most recent tokens; it runs in eval mode without a graph, and is put
// back in the mode it was in. The same generator state gives the same text.
std::vector<int64_t> generate(LanguageModel& model, std::vector<int64_t> context, int64_t n,
                              const SampleOptions& options, autograd::Generator& gen);

// Where a sample starts when the user gives no prompt: a newline if the vocabulary has one (a fresh
// line, as in nanoGPT), else the vocabulary's first character.
std::string default_prompt(const CharTokenizer& tokenizer);

}  // namespace nn
