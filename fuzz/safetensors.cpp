// Fuzz target: nn::load_safetensors on arbitrary bytes, and nn::load_parameters of what it returns into
// a small model. Bad files must be std::runtime_error (load) or std::invalid_argument (parameters).
#include <stdexcept>

#include <autograd/random.h>
#include <nn/model_files/safetensors.h>
#include <nn/layers.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // (the committed seeds predate checksums: their warning each run would only fill the log)
    [[maybe_unused]] static const bool quiet = [] {
        nn::set_warning_handler(nullptr);
        return true;
    }();
    const auto path = fuzz::scratch_file(fuzz::bytes(data, size), ".safetensors");
    nn::Safetensors loaded;
    try {
        // Small limits so an absurd header length is refused by the check rather than by the allocator.
        loaded =
            nn::load_safetensors(path, nn::SafetensorsLimits{.max_header_bytes = 1 << 20, .max_file_bytes = 1 << 24});
    } catch (const std::runtime_error&) {
        return 0;
    }
    for (const auto& [name, tensor] : loaded.tensors) {
        if (name.empty()) fuzz::fail("a loaded tensor has an empty name");
        (void)tensor.numel();
    }
    autograd::Generator gen(1);
    nn::Linear layer(nn::LinearOptions{.in = 3, .out = 2}, gen);  // "weight" (3, 2), "bias" (2): match or be refused
    try {
        nn::load_parameters(layer, loaded.tensors);
    } catch (const std::invalid_argument&) {}
    return 0;
}
