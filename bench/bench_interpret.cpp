// Issue 43's speed experiment, our side: GPT-2 small's shape (12 layers, 12 heads, C 768, V 50,257) with
// random weights, one prompt of T 64 and a corrupt copy of it (its last token changed), one thread by
// default. Medians of --rounds rounds, in milliseconds, as one JSON line (bench/interpret.sh prints it
// beside bench/interpret_pytorch.py's, the same experiment in PyTorch with forward hooks):
//   forward      the model's forward, no graph
//   cache_all    run_with_cache of every hook point (the attention's scores and pattern included)
//   patch_head   activation patching of every head (144 patched runs, the clean and corrupt runs)
//   attribution  attribution patching of every head (a clean forward, a corrupt forward and one backward)
//
//     build/release/bench/bench_interpret [--rounds 5] [--threads 1] [--T 64]
//     build/release/bench/bench_interpret --write-model gpt2.st    (that model as a checkpoint, token ids
//                                                                   only: what bench/interpret.sh caches)
//
// Shape legend: T time, V vocab.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include <autograd/autograd.h>
#include <autograd/threads.h>
#include <nn/gpt2.h>
#include <nn/interpret/cache.h>
#include <nn/interpret/probes.h>
#include <nn/train/trainer.h>

namespace {

double median_ms(int rounds, const std::function<void()>& body) {
    std::vector<double> ms;
    for (int r = 0; r < rounds; ++r) {
        const auto start = std::chrono::steady_clock::now();
        body();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::ranges::sort(ms);
    return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    int rounds = 5, threads = 1;
    int64_t T = 64;
    std::string write_model;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string_view flag = argv[i];
        const int value = std::atoi(argv[i + 1]);
        if (flag == "--write-model") write_model = argv[i + 1];
        else if (flag == "--rounds") rounds = std::max(1, value);
        else if (flag == "--threads") threads = std::max(1, value);
        else if (flag == "--T") T = std::clamp<int64_t>(value, 2, 1024);
        else {
            fmt::print(stderr,
                       "bench_interpret: unknown flag {} (--rounds N, --threads N, --T N, --write-model FILE)\n", flag);
            return 2;
        }
    }
    autograd::set_num_threads(threads);
    autograd::Generator gen(43);
    nn::GPT2 model({}, gen);  // GPT-2 small's shape, GPT-2's initialization
    model.eval();
    if (!write_model.empty()) {
        const nn::ModelConfig config{
            .kind = nn::ModelKind::gpt2, .vocab = 50257, .n_embd = 768, .n_head = 12, .n_layer = 12, .block = 1024};
        nn::save_model_checkpoint(write_model, model, config, nn::IdTokenizer(50257, "bench_interpret"));
        return 0;
    }
    std::vector<int64_t> clean;
    for (int64_t t = 0; t < T; ++t) clean.push_back(static_cast<int64_t>(gen.next_u64() % 50257));
    std::vector<int64_t> corrupt = clean;
    corrupt.back() = (clean.back() + 1) % 50257;
    const nn::LogitDiff metric{.answer = 11, .wrong = 12};

    const double forward = median_ms(rounds, [&] {
        autograd::NoGradGuard no_grad;
        model(clean, 1, T);
    });
    size_t cached = 0;
    const double cache_all = median_ms(rounds, [&] { cached = nn::run_with_cache(model, clean).size(); });
    const double patch_head = median_ms(std::max(1, rounds / 2), [&] {
        nn::patch(model, clean, corrupt, metric, nn::PatchSite::head, nn::PatchMethod::activation);
    });
    const double attribution = median_ms(
        rounds, [&] { nn::patch(model, clean, corrupt, metric, nn::PatchSite::head, nn::PatchMethod::attribution); });
    fmt::print(
        "{{\"side\":\"tinygpt\",\"threads\":{},\"T\":{},\"rounds\":{},\"hook_points\":{},\"forward_ms\":{:.2f},"
        "\"cache_all_ms\":{:.2f},\"patch_head_ms\":{:.1f},\"attribution_ms\":{:.2f},\"cache_over_forward\":{:.3f},"
        "\"activation_over_attribution\":{:.1f}}}\n",
        threads, T, rounds, cached, forward, cache_all, patch_head, attribution, cache_all / forward,
        patch_head / attribution);
    return 0;
}
