// Test helper: tinygpt's logits for given token ids, for the PyTorch tests to compare with.
//
//   tinygpt_logits CKPT OUT B T ID...     writes the (B, T, V) logits of the B * T ids to OUT,
//                                         raw float32, little-endian (this machine's order), row-major
//
// Exit status: 0 written, 1 a bad checkpoint, ids or file (message on stderr), 2 bad arguments.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nn/train/trainer.h>

int main(int argc, char** argv) {
    if (argc < 6) {
        fmt::print(stderr, "usage: tinygpt_logits CKPT OUT B T ID...\n");
        return 2;
    }
    try {
        const nn::TrainedModel trained = nn::load_trained_model(argv[1]);
        const int64_t B = std::stoll(argv[3]), T = std::stoll(argv[4]);
        std::vector<int64_t> ids;
        for (int i = 5; i < argc; ++i) ids.push_back(std::stoll(argv[i]));
        const autograd::Tensor logits = trained.model->forward(ids, B, T);  // (B, T, V); checks the ids
        const auto values = logits.to_vector();
        std::FILE* out = std::fopen(argv[2], "wb");
        if (!out || std::fwrite(values.data(), sizeof(float), values.size(), out) != values.size() ||
            std::fclose(out) != 0) {
            fmt::print(stderr, "tinygpt_logits: cannot write {}\n", argv[2]);
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        fmt::print(stderr, "tinygpt_logits: {}\n", e.what());
        return 1;
    }
}
