// Hugging Face's tokenizer.json, for the two kinds of BPE small Llama-family models ship, encoding and
// decoding as the `tokenizers` library does:
//
//   byte-level BPE (SmolLM, GPT-2's family): the text split by regular expressions (ByteLevel's own,
//     GPT-2's pattern; Split's "Regex", behavior "Isolated"; Digits), each piece's UTF-8 bytes written as
//     GPT-2's 256 stand-in characters ("Ġ" for a space), then merged by the merges' rank.
//   SentencePiece-style BPE (TinyLlama, Llama 2, llama2.c's exported tokenizers): spaces written "▁" and
//     one "▁" put in front (the normalizer Prepend + Replace, or the pre-tokenizer Metaspace without
//     splitting, which puts none before text that starts with a space), the whole text one piece; a
//     character with no token becomes its bytes' <0xNN> tokens (byte_fallback), or unk; then merged by rank.
//
//     auto tok = nn::HfTokenizer::from_file("SmolLM-135M/tokenizer.json");
//     std::vector<int64_t> ids = tok.encode("Hello world");   // no BOS: tok.bos() is the template's, if any
//     std::string text = tok.decode(ids);
//
// Merging is the `tokenizers` library's: the adjacent pair of lowest rank (the leftmost of equal ranks)
// merges first, one at a time, through a heap (n log n). Added tokens (added_tokens) are found in the
// text first, the longest at each place, and never split; the text between them is encoded as above.
// encode adds no BOS or EOS: a post_processor "TemplateProcessing" whose single template is an optional
// special token then $A gives bos(), which a sampler puts first.
//
// decode: added tokens as their content, byte-level tokens back to their bytes, SentencePiece tokens with
// "▁" as a space and <0xNN> as the byte (when the decoder has ByteFallback), and the one leading space the
// decoder's Strip (or Metaspace) removes. Bytes that are not UTF-8 on their own (a piece of a character) are returned as they are.
//
// Everything else tokenizer.json may hold is refused by name (std::invalid_argument naming the source and
// the field), never silently ignored: the list is in docs/llama.md ("Hugging Face's Llama folders").
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

class HfTokenizer final : public Tokenizer {
public:
    enum class Kind { byte_level, sentencepiece };

    // The text of a tokenizer.json; `source` names it in messages.
    explicit HfTokenizer(std::string_view json, std::string_view source = "tokenizer.json");
    // The file (a regular file of at most 64 MiB; a named pipe is refused unread).
    static HfTokenizer from_file(const std::filesystem::path& path);
    // A checkpoint keeps the whole tokenizer.json ("tokenizer.kind" "hf-tokenizer-json", "tokenizer.hf.json").
    static HfTokenizer from_checkpoint_metadata(const std::map<std::string, std::string>& metadata);
    static bool in_checkpoint_metadata(const std::map<std::string, std::string>& metadata);

    int64_t vocab_size() const override;
    std::vector<int64_t> encode(std::string_view text) const override;
    TokenIds encode_ids(std::string_view text) const override;
    std::string decode(std::span<const int64_t> ids) const override;
    std::map<std::string, std::string> checkpoint_metadata() const override;

    // What `id` adds to a text after `previous` (-1: none), for a sampler that prints token by token:
    // decode({id}), but the leading space the decoder strips from a whole text is kept unless the text
    // starts here (no previous, or a special token such as BOS before it).
    std::string piece(int64_t previous, int64_t id) const;

    Kind kind() const;
    std::optional<int64_t> bos() const;  // the post-processor template's leading special token

    // The model folder's config.json bos_token_id and eos_token_id, which the tokenizer.json itself does
    // not hold but a sampler needs (where a sample starts and stops): carried with the tokenizer so a
    // checkpoint made from the folder keeps them ("tokenizer.hf.bos_token_id", "tokenizer.hf.eos_token_id").
    // An id outside the vocabulary is std::invalid_argument naming it.
    struct ModelIds {
        std::optional<int64_t> bos, eos;
    };
    HfTokenizer with_model_ids(ModelIds ids) const;
    const ModelIds& model_ids() const { return model_ids_; }
    // The token's text as tokenizer.json spells it ("Ġthe", "▁the", "<0x0A>", "<s>"), and the id of one so spelled, or -1.
    const std::string& token(int64_t id) const;
    int64_t token_id(std::string_view spelled) const;
    bool special(int64_t id) const;      // an added token marked special
    std::string_view json_text() const;  // what it was made from

private:
    struct Tables;
    std::string decode_text(std::span<const int64_t> ids, bool strip) const;
    std::shared_ptr<const Tables> tables_;  // immutable once built; copies share them
    ModelIds model_ids_;
};

}  // namespace nn
