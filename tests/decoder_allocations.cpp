// Decoding allocates nothing per token in the steady state, on every kind: operator new is counted here
// (its own program, so the count sees nothing else), and after one pass through a full window and its
// refill (which sizes gemm's reused packing buffers and the tensor cache), hundreds of tokens, refills
// included, must allocate nothing: the models' own forward without a graph, with the decoder's caches
// (and even the window decoder's reruns of the whole window). A vector made between two counts must be
// counted: the count works.
#include <nn/attention_only.h>
#include <nn/decoder.h>
#include <nn/gpt2.h>
#include <nn/llama.h>
#include <nn/models.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

namespace {
std::atomic<long> g_allocations{0};
}

void* operator new(std::size_t bytes) {
    ++g_allocations;
    if (void* p = std::malloc(bytes ? bytes : 1)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t bytes) { return operator new(bytes); }
void* operator new(std::size_t bytes, std::align_val_t align) {
    ++g_allocations;
    const auto a = static_cast<std::size_t>(align);
    if (void* p = std::aligned_alloc(a, (bytes + a - 1) / a * a)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t bytes, std::align_val_t align) { return operator new(bytes, align); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

// Allocations during `tokens` pushes after a warm-up of two windows.
long steady_allocations(nn::GenerationWindow& window, int64_t block, int64_t tokens) {
    const int64_t prompt[] = {1, 2, 3};
    window.start(prompt);
    for (int64_t i = 0; i < 2 * block; ++i) window.push(i % 7);
    const long before = g_allocations.load();
    for (int64_t i = 0; i < tokens; ++i) window.push((i * 5) % 7);
    return g_allocations.load() - before;
}

}  // namespace

int main() {
    int failures = 0;
    const auto expect = [&failures](bool ok, const char* what, long count) {
        std::printf("%s %s: %ld allocations\n", ok ? "ok:" : "FAIL:", what, count);
        failures += ok ? 0 : 1;
    };
    autograd::Generator gen(1);
    nn::GPT gpt({.vocab = 7, .n_embd = 32, .n_head = 4, .n_layer = 2, .block = 16}, gen);
    nn::GPT2 gpt2({.vocab = 7, .n_embd = 32, .n_head = 4, .n_layer = 2, .block = 16}, gen);
    nn::Llama llama(
        {.vocab = 7, .n_embd = 32, .n_head = 4, .n_kv_head = 2, .n_layer = 2, .ffn_hidden = 48, .block = 16}, gen);
    nn::MultiHead multihead({.vocab = 7, .n_embd = 16, .n_head = 2, .block = 16, .feed_forward = true}, gen);
    nn::SingleHead head({.vocab = 7, .n_embd = 16, .block = 16}, gen);
    nn::AverageModel average({.vocab = 7, .n_embd = 16, .block = 16}, gen);
    nn::Bigram bigram({.vocab = 7}, gen);
    nn::AttentionOnly attention_only({.vocab = 7, .n_embd = 16, .n_head = 2, .n_layer = 2, .block = 16}, gen);
    for (auto [name, model] : {std::pair<const char*, nn::LanguageModel*>{"gpt cached, 300 tokens", &gpt},
                               {"gpt2 cached, 300 tokens", &gpt2},
                               {"llama cached, 300 tokens", &llama},
                               {"multihead cached, 300 tokens", &multihead},
                               {"head cached, 300 tokens", &head},
                               {"average cached, 300 tokens", &average},
                               {"bigram cached, 300 tokens", &bigram},
                               {"attention-only cached, 300 tokens", &attention_only}}) {
        nn::GenerationWindow window(model->cached_decoder());
        const long count = steady_allocations(window, model->block_size(), 300);
        expect(count == 0 && (window.refills() > 30 || model->block_size() == 1), name, count);
    }
    nn::GenerationWindow reference(nn::window_decoder(gpt));
    const long count = steady_allocations(reference, gpt.block_size(), 20);
    expect(count == 0, "gpt uncached, 20 tokens", count);
    const long before = g_allocations.load();
    volatile size_t n = 64;
    const std::vector<int> made(n, 1);
    expect(g_allocations.load() - before == 1 && made[0] == 1, "a vector made between two counts is counted",
           g_allocations.load() - before);
    return failures == 0 ? 0 : 1;
}
