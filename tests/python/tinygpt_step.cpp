// Test helper: one AdamW step of a checkpoint's model on given ids, for the PyTorch tests to compare with
// torch.optim.AdamW on the same model.
//
//   tinygpt_step CKPT OUT LR WEIGHT_DECAY EPS B T ID... TARGET...
//       B * T ids and B * T targets; the loss is the mean cross-entropy of the (B, T, V) logits. Writes
//       every parameter after the step (named_parameters() order, each row-major) to OUT, raw float32 in
//       this machine's order, after one line per parameter "name numel" on stdout.
//
// Exit status: 0 written, 1 a bad checkpoint, ids or file (message on stderr), 2 bad arguments.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <autograd/ops.h>
#include <fmt/format.h>
#include <nn/train/optim.h>
#include <nn/train/trainer.h>

int main(int argc, char** argv) {
    if (argc < 8) {
        fmt::print(stderr, "usage: tinygpt_step CKPT OUT LR WEIGHT_DECAY EPS B T ID... TARGET...\n");
        return 2;
    }
    try {
        const nn::TrainedModel trained = nn::load_trained_model(argv[1]);
        const float lr = std::stof(argv[3]), weight_decay = std::stof(argv[4]), eps = std::stof(argv[5]);
        const int64_t B = std::stoll(argv[6]), T = std::stoll(argv[7]);
        if (argc != 8 + 2 * B * T) {
            fmt::print(stderr, "tinygpt_step: {} ids and targets given, {} expected\n", argc - 8, 2 * B * T);
            return 2;
        }
        std::vector<int64_t> ids, targets;
        for (int64_t i = 0; i < B * T; ++i) ids.push_back(std::stoll(argv[8 + i]));
        for (int64_t i = 0; i < B * T; ++i) targets.push_back(std::stoll(argv[8 + B * T + i]));
        nn::LanguageModel& model = *trained.model;
        model.train();  // (dropout, if any, is the checkpoint's; the tests use none)
        nn::AdamW optimizer(model, {.lr = lr, .eps = eps, .weight_decay = weight_decay});
        autograd::cross_entropy(model.forward(ids, B, T), targets).backward();
        optimizer.step();
        std::FILE* out = std::fopen(argv[2], "wb");
        bool ok = out != nullptr;
        for (const auto& [name, p] : model.named_parameters()) {
            fmt::print("{} {}\n", name, p.numel());
            ok = ok && std::fwrite(p.data().data(), sizeof(float), p.data().size(), out) == p.data().size();
        }
        if (!ok || std::fclose(out) != 0) {
            fmt::print(stderr, "tinygpt_step: cannot write {}\n", argv[2]);
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        fmt::print(stderr, "tinygpt_step: {}\n", e.what());
        return 1;
    }
}
