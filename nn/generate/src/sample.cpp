// Sampling from a model, one token at a time, and the check of the logits it draws from.
//
// Shape legend: V vocab.
#include "nn/generate/sample.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <nn/decoder.h>
#include <nn/tokenizers/char_tokenizer.h>
#include <nn/tokenizers/hf_tokenizer.h>
#include <nn/tokenizers/llama2c_tokenizer.h>

namespace nn {

using namespace autograd;

namespace {
[[noreturn]] void refuse_non_finite(std::string_view model, std::string_view what) {
    throw std::runtime_error(
        fmt::format("{}{}{}: the model's weights or logits are not finite", model, model.empty() ? "" : ": ", what));
}
}  // namespace

void check_finite_output(std::string_view model, std::string_view what, double value) {
    if (!std::isfinite(value)) refuse_non_finite(model, fmt::format("{} is {}", what, value));
}

void check_finite_output(std::string_view model, std::string_view what, std::span<const float> logits) {
    const auto bad = std::find_if(logits.begin(), logits.end(), [](float v) { return !std::isfinite(v); });
    if (bad != logits.end())
        refuse_non_finite(model, fmt::format("{} hold {} (at id {})", what, *bad, bad - logits.begin()));
}

std::vector<int64_t> generate(LanguageModel& model, const std::vector<int64_t>& context, int64_t n,
                              const SampleOptions& options, Generator& gen, const std::function<bool(int64_t)>& emit) {
    GenerationWindow window(options.cache ? model.cached_decoder() : window_decoder(model));
    return generate(model, window, context, n, options, gen, emit);
}

std::vector<int64_t> generate(LanguageModel& model, GenerationWindow& window, const std::vector<int64_t>& context,
                              int64_t n, const SampleOptions& options, Generator& gen,
                              const std::function<bool(int64_t)>& emit) {
    check(window.decoder().capacity() == model.block_size(),
          "generate: the window holds {} tokens, the model's block is {}", window.decoder().capacity(),
          model.block_size());
    const int64_t V = model.vocab_size();
    check(!context.empty(), "generate: the context is empty; give at least one character to start from");
    check(n >= 0, "generate: cannot sample {} tokens", n);
    check(options.temperature >= 0.0f && std::isfinite(options.temperature),
          "generate: temperature must be 0 (greedy) or positive and finite, got {}", options.temperature);
    check(options.top_k >= 0, "generate: top_k {} is negative", options.top_k);
    const int64_t top_k = std::min(options.top_k, V);  // above the vocabulary: all of it (as nanoGPT)
    for (int64_t id : context)
        check(id >= 0 && id < V, "generate: context id {} is outside the vocabulary of {}", id, V);

    std::vector<int64_t> produced;
    if (n == 0) return produced;
    produced.reserve(static_cast<size_t>(n));
    NoGradGuard no_grad;
    const bool was_training = model.is_training();
    model.eval();
    struct RestoreMode {
        LanguageModel& model;
        bool training;
        ~RestoreMode() { model.train(training); }
    } restore{model, was_training};

    std::vector<double> probs(static_cast<size_t>(V));
    std::vector<float> sorted(static_cast<size_t>(V));
    std::span<const float> last = window.start(context);  // (V), the logits of the next token
    for (int64_t step = 0; step < n; ++step) {
        // NaN would be no token's (dropped below) and +inf every one's: the draw would be the last id's
        check_finite_output(options.model, fmt::format("the logits of sampled token {}", step + 1), last);
        if (options.temperature == 0.0f) {  // greedy: the first largest logit, as run.c's sample_argmax; no draw
            const int64_t pick = std::max_element(last.begin(), last.end()) - last.begin();
            produced.push_back(pick);
            if (emit && !emit(pick)) break;
            if (step + 1 < n) last = window.push(pick);
            continue;
        }
        // top-k: everything below the k-th largest logit is dropped (ties at the threshold are kept)
        float threshold = -std::numeric_limits<float>::infinity();
        if (top_k > 0) {
            std::copy(last.begin(), last.end(), sorted.begin());
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
        produced.push_back(pick);
        if (emit && !emit(pick)) break;
        if (step + 1 < n) last = window.push(pick);  // the last token's logits are never read
    }
    return produced;
}

std::string default_prompt(const Tokenizer& tokenizer) {
    if (as_ids_only(tokenizer)) return std::to_string(tokenizer.vocab_size() - 1);
    const std::vector<int64_t> first = {0};
    const auto* chars = dynamic_cast<const CharTokenizer*>(&tokenizer);
    return chars && chars->encode("\n", Unknown::skip).empty() ? tokenizer.decode(first) : "\n";
}

std::optional<int64_t> sample_bos(const Tokenizer& tokenizer) {
    if (dynamic_cast<const Llama2cTokenizer*>(&tokenizer)) return Llama2cTokenizer::kBos;
    if (const auto* hf = dynamic_cast<const HfTokenizer*>(&tokenizer))
        return hf->kind() == HfTokenizer::Kind::sentencepiece && hf->model_ids().bos ? hf->model_ids().bos : hf->bos();
    return std::nullopt;
}

std::optional<int64_t> sample_eos(const Tokenizer& tokenizer) {
    const auto* hf = dynamic_cast<const HfTokenizer*>(&tokenizer);
    return hf ? hf->model_ids().eos : std::nullopt;
}

SampleStart sample_start(const Tokenizer& tokenizer, std::optional<int64_t> bos,
                         const std::optional<std::string>& prompt) {
    SampleStart start{.text = prompt ? *prompt : bos ? std::string() : default_prompt(tokenizer), .ids = {}};
    if (bos) start.ids.push_back(*bos);  // a tokenizer.bin encodes with no BOS of its own
    if (prompt || !bos)
        for (const int64_t id : tokenizer.encode(start.text)) start.ids.push_back(id);
    return start;
}

}  // namespace nn
