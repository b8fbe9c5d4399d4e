// Fuzz target: a training checkpoint on arbitrary bytes, through nn::load_trained_model (inference) and
// nn::Trainer::resume (training) on the text the seed checkpoints were trained on (kText, the same as in
// make_seeds.cpp), with one step after a successful resume. Bad files must be std::runtime_error or
// std::invalid_argument; anything else, a crash or a sanitizer report is a finding.
#include <stdexcept>

#include <nn/model_files/safetensors.h>
#include <nn/train/trainer.h>

#include "fuzz_common.h"
#include "seed_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // (the committed seeds predate checksums: their warning each run would only fill the log)
    [[maybe_unused]] static const bool quiet = [] {
        nn::set_warning_handler(nullptr);
        return true;
    }();
    const auto path = fuzz::scratch_file(fuzz::bytes(data, size), ".ckpt.safetensors");
    try {
        const nn::TrainedModel trained = nn::load_trained_model(path);
        if (!trained.model) fuzz::fail("load_trained_model returned no model");
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {}
    try {
        nn::Trainer trainer = nn::Trainer::resume(path, fuzz::kSeedText);
        if (trainer.step_count() < trainer.config().steps) (void)trainer.step();
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {}
    return 0;
}
