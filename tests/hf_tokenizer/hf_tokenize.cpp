// Test helper: nn::HfTokenizer's ids of a text file, for oracle_test.py to compare with transformers.js's.
//
//   hf_tokenize TOKENIZER_JSON INPUT OUTPUT
//
// writes OUTPUT as the space-separated ids of INPUT's whole text, and OUTPUT.text as those ids decoded.
// Exit status: 0 done, 1 a refusal (message on stderr), 2 bad arguments.
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>
#include <nn/tokenizers/hf_tokenizer.h>

int main(int argc, char** argv) {
    if (argc != 4) {
        fmt::print(stderr, "usage: hf_tokenize TOKENIZER_JSON INPUT OUTPUT\n");
        return 2;
    }
    try {
        const nn::HfTokenizer tok = nn::HfTokenizer::from_file(argv[1]);
        std::ifstream in(argv[2], std::ios::binary);
        const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        const std::vector<int64_t> ids = tok.encode(text);
        std::ofstream out(argv[3], std::ios::binary);
        out << fmt::format("{}\n", fmt::join(ids, " "));
        std::ofstream decoded(std::string(argv[3]) + ".text", std::ios::binary);
        decoded << tok.decode(ids);
        if (!out.flush() || !decoded.flush()) {
            fmt::print(stderr, "hf_tokenize: cannot write {}\n", argv[3]);
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        fmt::print(stderr, "hf_tokenize: {}\n", e.what());
        return 1;
    }
}
