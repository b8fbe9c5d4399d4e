// Characters per second of nn::generate, cached and uncached (SampleOptions::cache), for the baby GPT
// (4 layers, 128 wide, block 64) and nanoGPT's shakespeare_char model (6 layers, 6 heads, 384 wide,
// block 256), untrained (GPT-2 init), vocabulary 65; and, by name only, the gpt2 kind at the baby's sizes
// (gpt2-baby) and GPT-2 small (gpt2-small: 124M, V 50,257, block 1024; a "char" is then a token). Every sample starts from a prompt of a whole block,
// so that a short run already reads the windows of a long one (between block/2 + 1 and block characters).
// One round times every case once, in turn, so the load of a shared machine falls on all of them;
// bench/generate.sh runs rounds beside PyTorch's sampling.
//
//     build/release/bench/bench_generate [CHARS [UNCACHED_CHARS [CONFIGS [THREADS [PROMPT [PRECISION]]]]]]
//     build/release/bench/bench_generate 2000 300 baby,shakespeare 1,2
//     build/release/bench/bench_generate 200 20 gpt2-baby,gpt2-small 1     # the gpt2 kind, cached vs the window decoder
//     build/release/bench/bench_generate 200 0 gpt2-small 1,2 16           # GPT-2 small's decoding alone
//     build/release/bench/bench_generate 200 0 gpt2-small 1,2 16 bf16      # ... with bf16 products
//
// Prints one JSON line per case: {"config", "threads", "cache", "chars", "seconds", "chars_per_s",
// "same_text", "weight_bytes"}; same_text: the uncached text equals the cached text's first characters
// (same seed); weight_bytes: the model's parameters, which a cached token reads once each. With PROMPT,
// samples start from PROMPT tokens instead of a whole block, and a line also gives "decode_ms_per_token":
// the time of CHARS tokens less that of one (the prompt's forward), over CHARS - 1: decoding alone, the
// figure bench/generate.sh sets against the memory bandwidth. UNCACHED_CHARS 0 skips the uncached runs.
// PRECISION (float32, the default, or bf16; issue 44): the products' precision. In bf16 the runs of a
// model share one Bf16WeightScope, whose copies an untimed one-token run makes first, so every timed
// token reads half the bytes and no timed run makes copies (the first run's copies took fresh pages, which
// the one-token run subtracted from it did not: 0.4 s that decode_ms_per_token spread over its tokens);
// a line then also gives "precision" and "bf16_kernel" (the kernel that ran).
#include <fmt/core.h>

#include <autograd/precision.h>
#include <autograd/threads.h>
#include <nn/gpt2.h>
#include <nn/models.h>
#include <nn/generate/sample.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> parts;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
    return parts;
}

}  // namespace

int main(int argc, char** argv) {
    const int64_t chars = argc > 1 ? std::atoll(argv[1]) : 2000;
    const int64_t uncached_chars = argc > 2 ? std::atoll(argv[2]) : chars;
    const auto configs = split(argc > 3 ? argv[3] : "baby,shakespeare");
    const auto threads = split(argc > 4 ? argv[4] : "1,2");
    const int64_t prompt_tokens = argc > 5 ? std::atoll(argv[5]) : 0;  // 0: a whole block
    const std::optional<autograd::Precision> precision = autograd::parse_precision(argc > 6 ? argv[6] : "float32");
    if (!precision) {
        std::fprintf(stderr, "bench_generate: unknown precision '%s' (%s)\n", argv[6],
                     std::string(autograd::kPrecisionNames).c_str());
        return 2;
    }
    const autograd::MatmulPrecisionGuard products(*precision);
    const bool bf16 = *precision == autograd::Precision::bf16;
    using Make = std::function<std::unique_ptr<nn::LanguageModel>(autograd::Generator&)>;
    const auto gpt = [](nn::GPTOptions o) -> Make {
        return [o](autograd::Generator& g) { return std::make_unique<nn::GPT>(o, g); };
    };
    const auto gpt2 = [](nn::GPT2Options o) -> Make {
        return [o](autograd::Generator& g) { return std::make_unique<nn::GPT2>(o, g); };
    };
    const std::map<std::string, Make> models = {
        {"baby", gpt({.vocab = 65, .n_embd = 128, .n_head = 4, .n_layer = 4, .block = 64})},
        {"shakespeare", gpt({.vocab = 65, .n_embd = 384, .n_head = 6, .n_layer = 6, .block = 256})},
        {"gpt2-baby", gpt2({.vocab = 65, .n_embd = 128, .n_head = 4, .n_layer = 4, .block = 64})},
        {"gpt2-small", gpt2({.vocab = 50257, .n_embd = 768, .n_head = 12, .n_layer = 12, .block = 1024})},
    };
    for (const std::string& name : configs) {
        if (!models.contains(name)) {
            std::fprintf(stderr, "bench_generate: unknown config '%s' (baby, shakespeare, gpt2-baby, gpt2-small)\n",
                         name.c_str());
            return 2;
        }
        autograd::Generator init(1337);
        const std::unique_ptr<nn::LanguageModel> made = models.at(name)(init);
        nn::LanguageModel& model = *made;
        const int64_t V = model.vocab_size();
        std::vector<int64_t> prompt;
        for (int64_t i = 0; i < (prompt_tokens > 0 ? prompt_tokens : model.block_size()); ++i)
            prompt.push_back(static_cast<int64_t>(init.uniform() * static_cast<float>(V)) % V);
        // bf16: the weights rounded once, before any timed run (weights do not change while sampling)
        std::optional<autograd::Bf16WeightScope> copies;
        if (bf16) {
            copies.emplace();
            autograd::Generator warm(42);
            nn::generate(model, prompt, 1, {.temperature = 1.0f, .cache = true}, warm);
        }
        for (const std::string& t : threads) {
            autograd::set_num_threads(std::atoi(t.c_str()));
            std::vector<int64_t> cached_text;
            for (const bool cache : {true, false}) {
                const int64_t n = cache ? chars : uncached_chars;
                if (n <= 0) continue;
                const auto timed = [&](int64_t tokens, std::vector<int64_t>* out) {
                    autograd::Generator gen(42);
                    const auto t0 = std::chrono::steady_clock::now();  // the prompt's refill included
                    auto text = nn::generate(model, prompt, tokens, {.temperature = 1.0f, .cache = cache}, gen);
                    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                    if (out) *out = std::move(text);
                    return s;
                };
                std::vector<int64_t> text;
                const double seconds = timed(n, &text);
                std::string decode;
                if (prompt_tokens > 0 && n > 1)
                    decode = fmt::format(",\"decode_ms_per_token\":{:.3f}",
                                         (seconds - timed(1, nullptr)) / double(n - 1) * 1e3);
                if (bf16)
                    decode +=
                        fmt::format(",\"precision\":\"bf16\",\"bf16_kernel\":\"{}\"", autograd::bf16_kernel_in_use());
                if (cache) cached_text = text;
                const bool same = cache || std::equal(text.begin(), text.end(), cached_text.begin(),
                                                      cached_text.begin() + std::min(text.size(), cached_text.size()));
                std::printf(
                    "{\"config\":\"%s\",\"threads\":%s,\"cache\":%s,\"chars\":%lld,\"seconds\":%.4f,\"chars_per_s\":%."
                    "2f,\"same_text\":%s,\"weight_bytes\":%lld%s}\n",
                    name.c_str(), t.c_str(), cache ? "true" : "false", static_cast<long long>(n), seconds,
                    static_cast<double>(n) / seconds, same ? "true" : "false",
                    static_cast<long long>(model.parameter_count() * int64_t(sizeof(float))), decode.c_str());
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
