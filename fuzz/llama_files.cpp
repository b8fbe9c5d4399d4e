// Fuzz target: the Llama family's files (issue 42), chosen by the first byte of the input, the rest its
// contents:
//   0  a llama2.c model file (nn::read_llama2c: legacy or version 1 header, then the fp32 body)
//   1  llama2.c's tokenizer.bin (nn::Llama2cTokenizer), then encode and decode a fixed text
//   2  config.json beside a small valid Hugging Face Llama's model.safetensors (nn::read_hf_llama)
//   3  a tokenizer.json (nn::HfTokenizer), then encode and decode a fixed text and the input itself
// Bad files must be std::runtime_error or std::invalid_argument; anything else, a crash, a hang, an
// allocation sized by a header that the file's size does not back, or a sanitizer report is a finding.
// Promises checked: a model read has the sizes nn::Llama accepts; encoded ids lie in the vocabulary.
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <autograd/random.h>
#include <nn/llama.h>
#include <nn/model_files/hf_llama.h>
#include <nn/model_files/llama2c.h>
#include <nn/tokenizers/hf_tokenizer.h>
#include <nn/tokenizers/llama2c_tokenizer.h>

#include "fuzz_common.h"

namespace {

// A tiny Llama (vocab 6, n_embd 8, 2 heads on 1 key-value head, 1 layer, F 4, block 4), the shapes the
// seeds' config.json describe.
nn::LlamaOptions tiny() {
    return {.vocab = 6, .n_embd = 8, .n_head = 2, .n_kv_head = 1, .n_layer = 1, .ffn_hidden = 4, .block = 4};
}

// Its Hugging Face folder, made once per process; each input's config.json is written beside its weights.
const std::filesystem::path& hf_folder() {
    return fuzz::process_folder("hf-llama", [](const std::filesystem::path& dir) {
        autograd::Generator gen(1);
        nn::Llama model(tiny(), gen);
        nn::write_hf_llama(dir, {.config = tiny(),
                                 .bos_token_id = std::nullopt,
                                 .eos_token_id = std::nullopt,
                                 .tensors = model.named_parameters(),
                                 .notes = {}});
    });
}

void check_sizes(const nn::LlamaOptions& c) {
    if (c.n_head <= 0 || c.n_kv_head <= 0 || c.n_embd % c.n_head != 0 || c.n_head % c.n_kv_head != 0 ||
        (c.n_embd / c.n_head) % 2 != 0 || c.vocab <= 0 || c.block <= 0)
        fuzz::fail("read a Llama config nn::Llama refuses");
}

void check_ids(const std::vector<int64_t>& ids, int64_t vocab) {
    for (const int64_t id : ids)
        if (id < 0 || id >= vocab) fuzz::fail("encode returned an id outside the vocabulary");
}

constexpr std::string_view kText =
    "Once upon a time, 3 cats \xC3\xA9t\xC3\xA9 \xE2\x96\x81 <s> </s>\n\t\xF0\x9F\x98\x80";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string_view contents = fuzz::bytes(data + 1, size - 1);
    try {
        switch (data[0] % 4) {
            case 0: {
                const std::filesystem::path file = fuzz::scratch_file(contents, ".bin");
                (void)nn::is_llama2c_file(file);
                const nn::Llama2cModel m = nn::read_llama2c(file);
                check_sizes(nn::llama_options(m.config));
                break;
            }
            case 1: {
                const nn::Llama2cTokenizer tok(contents);
                const std::vector<int64_t> ids = tok.encode(kText);
                check_ids(ids, tok.vocab_size());
                (void)tok.decode(ids);
                break;
            }
            case 2: {
                const std::filesystem::path dir = hf_folder();
                std::ofstream(dir / "config.json", std::ios::binary | std::ios::trunc) << contents;
                const nn::HfLlamaModel m = nn::read_hf_llama(dir);
                check_sizes(m.config);
                break;
            }
            default: {
                const nn::HfTokenizer tok(contents);
                for (const std::string_view text : {kText, contents}) {
                    std::vector<int64_t> ids;
                    try {
                        ids = tok.encode(text);
                    } catch (const std::invalid_argument&) {  // text that is not UTF-8
                        continue;
                    }
                    check_ids(ids, tok.vocab_size());
                    (void)tok.decode(ids);
                }
            }
        }
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {}
    return 0;
}
