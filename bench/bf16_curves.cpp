// The loss curves of issue 44: one GPT-2-shaped model (the gpt2 kind: tied head, tanh GELU, GPT-2's init)
// trained on a text's characters by nn::Trainer, as `train` does, with its products in float32 or in bf16
// (autograd::set_matmul_precision), from the same seed: the same initial weights, batches and evaluation
// batches, so the two runs differ only by the products' rounding. bench/bf16.sh runs both precisions and
// draws their curves (bench/bf16_curves.py).
//
//     build/release/bench/bf16_curves TEXT PRECISION [STEPS [EVAL_EVERY [EVAL_ITERS [LAYERS [C [HEADS [T [B]]]]]]]]
//     build/release/bench/bf16_curves tinyshakespeare.txt bf16 300 25 10 6 384 6 128 8
//
// Prints a CSV to stdout: precision,step,train_loss,val_loss,seconds, one line at step 0 and one every
// EVAL_EVERY steps (the evaluations: EVAL_ITERS batches of each split, in the run's precision, as a bf16
// user's `train` reports them); seconds is the training time so far, evaluations excluded.
//
// The precision is set for the whole process: Trainer::step holds no Bf16WeightScope (that belongs to
// `train --precision`, branch bf16-train), so each product rounds its weight again; the scope's copies
// are the same to_bf16 roundings (autograd/precision.h), so the losses are the same bits, only slower.
//
// Shape legend: B batch, T window (= block), C n_embd, V vocab (the text's distinct characters).
#include <fmt/core.h>

#include <autograd/precision.h>
#include <autograd/threads.h>
#include <nn/train/text.h>
#include <nn/train/trainer.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

namespace {

int64_t arg(int argc, char** argv, int i, int64_t fallback) { return argc > i ? std::atoll(argv[i]) : fallback; }

int run(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr,
                     "usage: bf16_curves TEXT PRECISION [STEPS [EVAL_EVERY [EVAL_ITERS [LAYERS [C [HEADS "
                     "[T [B]]]]]]]]\n");
        return 2;
    }
    const std::optional<autograd::Precision> precision = autograd::parse_precision(argv[2]);
    if (!precision) {
        std::fprintf(stderr, "bf16_curves: unknown precision '%s' (%s)\n", argv[2],
                     std::string(autograd::kPrecisionNames).c_str());
        return 2;
    }
    const int64_t steps = arg(argc, argv, 3, 300), eval_every = arg(argc, argv, 4, 25),
                  eval_iters = arg(argc, argv, 5, 10);
    const std::string text = nn::read_text_file(argv[1]);
    const auto tokenizer = nn::CharTokenizer::from_text(text);
    nn::TrainConfig config{
        .model = {.kind = nn::ModelKind::gpt2,
                  .vocab = tokenizer.vocab_size(),    // V
                  .n_embd = arg(argc, argv, 7, 384),  // C
                  .n_head = arg(argc, argv, 8, 6),
                  .n_layer = arg(argc, argv, 6, 6),
                  .block = arg(argc, argv, 9, 128)},  // T
        .steps = steps,
        .batch = arg(argc, argv, 10, 8),  // B
        .lr = 1e-3f,
        .min_lr = 1e-4f,
        .warmup = steps / 10,
    };
    autograd::set_num_threads(1);  // the two precisions run side by side, a core each
    autograd::set_matmul_precision(*precision);
    nn::Trainer trainer(config, tokenizer, tokenizer.encode_ids(text));
    const char* name = argv[2];
    double seconds = 0;
    const auto evaluation = [&] {
        const double train = trainer.evaluate(nn::Split::train, eval_iters);
        const double val = trainer.evaluate(nn::Split::validation, eval_iters);
        std::printf("%s,%lld,%.6f,%.6f,%.2f\n", name, static_cast<long long>(trainer.step_count()), train, val,
                    seconds);
        std::fflush(stdout);
    };
    std::printf("precision,step,train_loss,val_loss,seconds\n");
    evaluation();
    while (trainer.step_count() < steps) {
        const auto t0 = std::chrono::steady_clock::now();
        trainer.step();
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (trainer.step_count() % eval_every == 0 || trainer.step_count() == steps) evaluation();
    }
    const std::string kernel = *precision == autograd::Precision::bf16
                                   ? fmt::format(", bf16 kernel {}", autograd::bf16_kernel_in_use())
                                   : std::string();
    std::fprintf(stderr, "bf16_curves %s: %lld steps in %.1f s%s\n", name, static_cast<long long>(steps), seconds,
                 kernel.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bf16_curves: %s\n", e.what());
        return 1;
    }
}
