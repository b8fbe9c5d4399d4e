#include "nn/train/data_file.h"

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "nn/tokenizers/bpe.h"
#include "nn/files/file_names.h"
#include "nn/tokenizers/text_file.h"
#include "nn/train/token_file.h"

namespace nn {

std::runtime_error text_without_tokenizer(const std::filesystem::path& data, const IdTokenizer& ids) {
    return std::runtime_error(
        fmt::format("{} is text, but {} has no tokenizer (token ids only): give it a tokenizer directory "
                    "(GPT-2's vocab.json and merges.txt), or a token file (.bin) of ids below {}",
                    printable_name(data.string()), ids.origin(), ids.vocab_size()));
}

TokenIds read_token_ids(const std::filesystem::path& path, const Tokenizer& tokenizer) {
    if (is_token_file(path)) return map_token_file(path, tokenizer.vocab_size());
    if (const auto* ids = as_ids_only(tokenizer)) throw text_without_tokenizer(path, *ids);
    if (const auto* bpe = dynamic_cast<const BpeTokenizer*>(&tokenizer)) return bpe->encode_file(path);
    const std::string text = read_text_file(path);
    try {
        return tokenizer.encode_ids(text);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(fmt::format("{}: {}", path.string(), e.what()));
    }
}

}  // namespace nn
