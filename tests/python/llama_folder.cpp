// Test helper: a random Llama written as a Hugging Face folder, read back, and its loss on given ids, for
// test_llama_torch.py to compare with PyTorch's.
//
//   llama_folder DIR N_KV_HEAD tied|untied SEED B T ID...
//       writes DIR/config.json + DIR/model.safetensors (nn::write_hf_llama) of a random Llama (vocab 37,
//       n_embd 32, 4 heads on N_KV_HEAD, 2 layers, ffn 48, rope_theta 10000, norm_eps 1e-5); reads the
//       folder back (nn::read_hf_llama) into a new model, and prints the mean cross-entropy of its logits
//       on the B * (T + 1) ids (inputs ids[:, :T], targets ids[:, 1:]) as "%.9g".
//
// Exit status: 0 done, 1 a refusal (message on stderr), 2 bad arguments.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <fmt/format.h>
#include <nn/llama.h>
#include <nn/model_files/hf_llama.h>

int main(int argc, char** argv) {
    if (argc < 8) {
        fmt::print(stderr, "usage: llama_folder DIR N_KV_HEAD tied|untied SEED B T ID...\n");
        return 2;
    }
    try {
        const nn::LlamaOptions o{.vocab = 37,
                                 .n_embd = 32,
                                 .n_head = 4,
                                 .n_kv_head = std::stoll(argv[2]),
                                 .n_layer = 2,
                                 .ffn_hidden = 48,
                                 .block = 16,
                                 .rope_theta = 10000.0f,
                                 .norm_eps = 1e-5f,
                                 .tied_embeddings = std::string(argv[3]) == "tied"};
        autograd::Generator gen(std::stoull(argv[4]));
        nn::Llama model(o, gen);
        nn::HfLlamaModel m;
        m.config = o;
        // weights larger than the initialization's (N(0, 0.02)), and norms away from 1, so the logits are far
        // from uniform and every tensor matters to the loss
        for (const auto& [name, t] : model.named_parameters()) {
            const bool norm = t.dim() == 1;
            autograd::Tensor w = autograd::randn(t.shape(), gen);
            for (float& v : w.data()) v = norm ? 1.0f + 0.3f * v : 0.25f * v;
            m.tensors.emplace_back(name, w);
        }
        nn::write_hf_llama(argv[1], m);
        const nn::HfLlamaModel back = nn::read_hf_llama(argv[1]);
        nn::Llama read(back.config);
        nn::load_parameters(read, back.tensors);

        const int64_t B = std::stoll(argv[5]), T = std::stoll(argv[6]);
        std::vector<int64_t> ids;
        for (int i = 7; i < argc; ++i) ids.push_back(std::stoll(argv[i]));
        if (static_cast<int64_t>(ids.size()) != B * (T + 1)) {
            fmt::print(stderr, "llama_folder: {} ids given, B (T + 1) = {} needed\n", ids.size(), B * (T + 1));
            return 2;
        }
        std::vector<int64_t> inputs, targets;
        for (int64_t b = 0; b < B; ++b)
            for (int64_t t = 0; t < T; ++t) {
                inputs.push_back(ids[static_cast<size_t>(b * (T + 1) + t)]);
                targets.push_back(ids[static_cast<size_t>(b * (T + 1) + t + 1)]);
            }
        const autograd::Tensor loss = autograd::cross_entropy(read.forward(inputs, B, T), targets);
        fmt::print("{:.9g}\n", loss.item());
        return 0;
    } catch (const std::exception& e) {
        fmt::print(stderr, "llama_folder: {}\n", e.what());
        return 1;
    }
}
