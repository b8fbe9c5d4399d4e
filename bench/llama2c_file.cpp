// Writes a llama2.c legacy model file (what run.c reads) of a randomly initialized nn::Llama of
// llama2.c's stories15M shape (nn::LlamaOptions' defaults: dim 288, 6 layers, 6 heads, 6 KV heads, hidden
// 768, vocab 32,000, seq_len 256, tied; 15.2M parameters, 61 MB), made by our own code so that
// bench/llama_decode.sh can time our `generate` and run.c on the same bytes without a download.
//
//     build/release/bench/llama2c_file OUT.bin [SEED]      # SEED 1337 unless given
//
// Legend: C dim, F hidden_dim, V vocab, T seq_len.
#include <fmt/core.h>

#include <autograd/random.h>
#include <nn/llama.h>
#include <nn/model_files/llama2c.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        std::fprintf(stderr, "usage: llama2c_file OUT.bin [SEED]\n");
        return 2;
    }
    try {
        autograd::Generator init(argc > 2 ? std::stoull(argv[2]) : 1337);
        const nn::LlamaOptions options;  // stories15M's sizes
        nn::Llama model(options, init);  // GPT-2-style init: weights N(0, 0.02), norms 1
        const nn::Llama2cModel file{
            .config = nn::llama2c_config(options), .tensors = model.named_parameters(), .legacy_rope_tables = {}};
        nn::write_llama2c(argv[1], file, nn::Llama2cVersion::legacy);
        fmt::print("{}: stories15M-shaped llama2.c legacy file, {} parameters ({:.1f} MB of fp32 weights)\n", argv[1],
                   model.parameter_count(), static_cast<double>(model.parameter_count()) * 4 / 1e6);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "llama2c_file: %s\n", e.what());
        return 1;
    }
    return 0;
}
