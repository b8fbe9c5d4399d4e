// Fuzz target: the files a user hands over beside or instead of a checkpoint, chosen by the first byte
// of the input, the rest its contents:
//   0  config.json beside a small valid Hugging Face GPT-2 model.safetensors (nn::read_gpt2_weights)
//   1  a token file (.bin: nanoGPT's raw uint16 or llm.c's headed file), mapped and read (every id, a
//      window, the fingerprint)
//   2  a model file named .bin (llm.c's GPT-2 weights, or whatever it claims to be)
// Bad files must be std::runtime_error or std::invalid_argument; anything else, a crash (a nesting that
// exhausts the stack, a read past a mapping), a hang or a sanitizer report is a finding.
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <autograd/random.h>
#include <nn/model_registry.h>
#include <nn/models.h>
#include <nn/model_files/gpt2_weights.h>
#include <nn/train/token_file.h>

#include "fuzz_common.h"

namespace {

// The folder of a small GPT-2 (n_embd 8, 2 heads, 1 layer, vocab 5, n_ctx 4) in Hugging Face's format,
// made once per process; each input's config.json is written beside its weights.
const std::filesystem::path& hf_folder() {
    return fuzz::process_folder("hf", [](const std::filesystem::path& dir) {
        nn::ModelConfig c;
        c.kind = nn::ModelKind::gpt2;
        c.vocab = 5, c.n_embd = 8, c.n_head = 2, c.n_layer = 1, c.block = 4;
        autograd::Generator gen(1);
        nn::write_hf_gpt2(dir, c, nn::make_model(c, gen)->named_parameters());
    });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string_view contents = fuzz::bytes(data + 1, size - 1);
    try {
        switch (data[0] % 3) {
            case 0: {
                const std::filesystem::path dir = hf_folder();
                std::ofstream(dir / "config.json", std::ios::binary | std::ios::trunc) << contents;
                const nn::ForeignWeights w = nn::read_gpt2_weights(dir / "model.safetensors");
                if (w.config.n_embd % w.config.n_head != 0)
                    fuzz::fail("read a config whose n_head does not divide n_embd");
                break;
            }
            case 1: {
                const nn::TokenIds ids = nn::map_token_file(fuzz::scratch_file(contents, ".bin"), 300);
                std::vector<int64_t> window(static_cast<size_t>(std::min<int64_t>(ids.size(), 8)));
                ids.copy_to(ids.size() - static_cast<int64_t>(window.size()), static_cast<int64_t>(window.size()),
                            window.data());
                for (const int64_t id : window)
                    if (id < 0 || id >= 300) fuzz::fail("map_token_file gave an id outside the vocabulary");
                (void)ids.fingerprint();
                break;
            }
            default:
                (void)nn::read_gpt2_weights(fuzz::scratch_file(contents, ".bin"));
        }
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {}
    return 0;
}
