#include "nn/train/sample.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nn {

using namespace autograd;

std::vector<int64_t> generate(LanguageModel& model, std::vector<int64_t> context, int64_t n,
                              const SampleOptions& options, Generator& gen) {
    const int64_t V = model.vocab_size();
    check(!context.empty(), "generate: the context is empty; give at least one character to start from");
    check(n >= 0, "generate: cannot sample {} tokens", n);
    check(options.temperature > 0.0f && std::isfinite(options.temperature),
          "generate: temperature must be positive and finite, got {}", options.temperature);
    check(options.top_k >= 0, "generate: top_k {} is negative", options.top_k);
    const int64_t top_k = std::min(options.top_k, V);  // above the vocabulary: all of it (as nanoGPT)
    for (int64_t id : context) check(id >= 0 && id < V, "generate: context id {} is outside the vocabulary of {}", id, V);

    NoGradGuard no_grad;
    const bool was_training = model.is_training();
    model.eval();
    std::vector<int64_t> produced;
    std::vector<double> probs(static_cast<size_t>(V));
    for (int64_t step = 0; step < n; ++step) {
        const auto T = std::min<int64_t>(static_cast<int64_t>(context.size()), model.block_size());
        const std::span<const int64_t> window(context.data() + context.size() - T, static_cast<size_t>(T));
        const Tensor logits = model.forward(window, 1, T);  // (1, T, V)
        const std::span<const float> last = logits.data().subspan(static_cast<size_t>((T - 1) * V));

        // top-k: everything below the k-th largest logit is dropped (ties at the threshold are kept)
        float threshold = -std::numeric_limits<float>::infinity();
        if (top_k > 0) {
            std::vector<float> sorted(last.begin(), last.end());
            std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<>());
            threshold = sorted[static_cast<size_t>(top_k - 1)];
        }
        const float top = *std::max_element(last.begin(), last.end());
        double total = 0.0;
        for (int64_t v = 0; v < V; ++v)
            total += probs[v] = last[v] >= threshold ? std::exp(double(last[v] - top) / options.temperature) : 0.0;
        double u = gen.uniform() * total;
        int64_t pick = V - 1;
        for (int64_t v = 0; v < V; ++v) {
            if (probs[v] > 0.0 && (u -= probs[v]) < 0.0) {
                pick = v;
                break;
            }
        }
        while (probs[pick] == 0.0) --pick;  // rounding left u >= 0: take the last possible token
        context.push_back(pick);
        produced.push_back(pick);
    }
    model.train(was_training);
    return produced;
}

std::string default_prompt(const CharTokenizer& tokenizer) {
    const std::vector<int64_t> first = {0};
    return tokenizer.encode("\n", Unknown::skip).empty() ? tokenizer.decode(first) : "\n";
}

}  // namespace nn
