// Test helper: which files tinygpt's loaders accept, for test_hostile.py to hold tinygpt_torch's loaders
// to the same answers.
//
//   load_check safetensors FILE...   nn::load_safetensors (what tinygpt_torch.read_safetensors mirrors)
//   load_check checkpoint FILE...    nn::load_trained_model (what tinygpt_torch.load mirrors)
//
// One line per file on stdout: "accepted<TAB>FILE" or "refused<TAB>FILE<TAB>MESSAGE". Exit status 0, or 2
// for bad arguments.
#include <cstring>
#include <exception>

#include <fmt/format.h>
#include <nn/model_files/safetensors.h>
#include <nn/train/trainer.h>

int main(int argc, char** argv) {
    const bool safetensors = argc >= 2 && std::strcmp(argv[1], "safetensors") == 0;
    if (argc < 3 || (!safetensors && std::strcmp(argv[1], "checkpoint") != 0)) {
        fmt::print(stderr, "usage: load_check safetensors|checkpoint FILE...\n");
        return 2;
    }
    nn::set_warning_handler(nullptr);  // (files without checksums: accepted, and the answer is all we print)
    for (int i = 2; i < argc; ++i) {
        try {
            if (safetensors) (void)nn::load_safetensors(argv[i]);
            else (void)nn::load_trained_model(argv[i]);
            fmt::print("accepted\t{}\n", argv[i]);
        } catch (const std::exception& e) {
            fmt::print("refused\t{}\t{}\n", argv[i], e.what());
        }
    }
    return 0;
}
