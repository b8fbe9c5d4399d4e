// llama2.c's tokenizer file (tokenizer.bin, as its tokenizer.py exports a SentencePiece model), encoding
// and decoding as run.c does, id for id:
//
//     int32 max_token_length, then for each token: float32 score, int32 length, `length` bytes
//     (little-endian; no token count: run.c reads the model's vocab_size tokens). Ids 0, 1, 2 are
//     <unk>, BOS and EOS ("\n<s>\n", "\n</s>\n" in llama2.c's export), 3..258 the byte tokens <0x00>..<0xFF>.
//
//     auto tok = nn::Llama2cTokenizer::from_file("tokenizer.bin", 32000);
//     std::vector<int64_t> ids = tok.encode("Hello world");   // {15043, 3186}: no BOS
//     std::string text = tok.decode(ids);                     // " Hello world"; after BOS (1) "Hello world"
//
// encode is run.c's encode without BOS or EOS (a sampler puts BOS, id 1, first): a non-empty text gets
// the dummy prefix " " first; each UTF-8 character is looked up as a token, else becomes its bytes' byte
// tokens (byte + 3); then, over and over, the adjacent pair whose concatenation is the token of highest
// score (the leftmost of equal scores; only scores above -1e10, run.c's starting best) is merged. run.c
// scans every pair per merge (quadratic in the text's length); here each merge looks up only its new
// neighbours, with a heap of candidate pairs (n log n), and gives the same ids: encode_reference keeps
// run.c's loop, and the tests compare them.
//
// decode gives the text run.c prints: each token as run.c's decode(previous, token), i.e. its bytes, a
// <0xNN> token as the raw byte NN, and the leading space dropped after BOS; BOS itself, which run.c never
// prints (it ends a sample), is empty. So decode({1} + encode(text)) == text for text run.c round-trips.
//
// Differences from run.c, each where run.c is undefined or crashes: text that is not UTF-8 is refused
// (std::invalid_argument with its byte offset), where run.c reads a NUL as the end; a character with no
// token needs ids 3..258 to be the byte tokens (else refused, where run.c emits byte + 3 regardless); a
// token whose bytes repeat another's is found as the lower id (run.c's bsearch finds either); a <0xNN>
// token must be exactly "<0x" two hex digits ">" (run.c's sscanf takes any text starting so).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nn/tokenizers/token_ids.h>
#include <nn/tokenizers/tokenizer.h>

namespace nn {

class Llama2cTokenizer final : public Tokenizer {
public:
    static constexpr int64_t kBos = 1;  // begins each sample; run.c stops when it is sampled
    static constexpr int64_t kEos = 2;

    // The bytes of a tokenizer.bin. With `vocab_size` (the model's, as run.c reads it) the file must hold
    // exactly that many tokens; without, all tokens to its end. Refuses (std::invalid_argument naming
    // `source`, the token and the field): a truncated file, fewer tokens than asked or bytes after them,
    // a negative max_token_length, a NaN score, a negative length or one over max_token_length.
    Llama2cTokenizer(std::string_view file, std::optional<int64_t> vocab_size = std::nullopt,
                     std::string_view source = "tokenizer.bin");
    // The file at `path` (a regular file of at most 32 MiB); errors name the path (std::runtime_error
    // for the file itself, std::invalid_argument for its contents).
    static Llama2cTokenizer from_file(const std::filesystem::path& path,
                                      std::optional<int64_t> vocab_size = std::nullopt);
    // A checkpoint keeps the whole file, base64 ("tokenizer.llama2c.file"; 580 kB for llama2.c's 32,000
    // tokens), so that it rebuilds it with no other file.
    static Llama2cTokenizer from_checkpoint_metadata(const std::map<std::string, std::string>& metadata);
    static bool in_checkpoint_metadata(const std::map<std::string, std::string>& metadata);

    int64_t vocab_size() const override;
    std::vector<int64_t> encode(std::string_view text) const override;
    TokenIds encode_ids(std::string_view text) const override;
    std::string decode(std::span<const int64_t> ids) const override;
    std::map<std::string, std::string> checkpoint_metadata() const override;

    // What run.c prints for `id` after `previous` (any id, or -1 for none): decode's unit, for a sampler
    // that prints token by token. Refuses ids outside the vocabulary.
    std::string piece(int64_t previous, int64_t id) const;
    // run.c's merge loop as written: every adjacent pair scanned per merge. The reference encode is
    // tested against, and the benchmark's baseline; `lookups`, if given, counts the pairs looked up.
    std::vector<int64_t> encode_reference(std::string_view text, uint64_t* lookups = nullptr) const;
    // The same count for encode: the pairs it looked up (each merge looks up at most two new ones).
    std::vector<int64_t> encode_counted(std::string_view text, uint64_t* lookups) const;

    std::string_view token_bytes(int64_t id) const;  // as stored (" the", "<0x0A>", "\n<s>\n")
    float score(int64_t id) const;
    int64_t max_token_length() const;
    int64_t token_id(std::string_view bytes) const;  // the token spelled so, or -1
    std::string_view file() const;                   // the bytes it was made from (what a checkpoint keeps)

private:
    struct Tables;
    std::vector<int64_t> initial_ids(std::string_view text) const;
    std::shared_ptr<const Tables> tables_;  // immutable once built; copies share them
};

}  // namespace nn
