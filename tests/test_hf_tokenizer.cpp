// Hugging Face's tokenizer.json (nn/tokenizers/hf_tokenizer.h) on hand-made files whose ids are worked out
// by hand in the comments: byte-level BPE (GPT-2's stand-in bytes, Digits, added tokens), SentencePiece-style
// BPE (Prepend + Replace, or Metaspace; byte fallback; a BOS template), the merges' rank order, and every
// unsupported feature refused by name.
#include <nn/generate/sample.h>
#include <nn/tokenizers/hf_tokenizer.h>

#include <sys/stat.h>

#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "temp_dir.h"

using Catch::Matchers::Contains;
using json = nlohmann::json;
using Ids = std::vector<int64_t>;

namespace {

// GPT-2's stand-in character of a byte (bytes_to_unicode), written here from its definition.
std::string stand_in(int b) {
    int next = 256;
    for (int x = 0; x < b; ++x)
        if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) ++next;
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    const int c = printable ? b : next;
    std::string s;
    if (c < 0x80) s.push_back(static_cast<char>(c));
    else {
        s.push_back(static_cast<char>(0xC0 | (c >> 6)));
        s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
    return s;
}

// Byte-level: bytes 0..255 are ids 0..255 (their stand-ins), then the merges' results, then <|endoftext|>.
json byte_level_json() {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[stand_in(b)] = b;
    const std::string G = stand_in(' ');  // "Ġ"
    vocab[G + "t"] = 256;
    vocab["he"] = 257;
    vocab[G + "the"] = 258;
    vocab["bc"] = 259;
    vocab["ab"] = 260;
    return {{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens",
             {{{"id", 261},
               {"content", "<|endoftext|>"},
               {"single_word", false},
               {"lstrip", false},
               {"rstrip", false},
               {"normalized", false},
               {"special", true}}}},
            {"normalizer", nullptr},
            {"pre_tokenizer",
             {{"type", "Sequence"},
              {"pretokenizers",
               {{{"type", "Digits"}, {"individual_digits", true}},
                {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}}}}},
            {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}}},
            {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}}},
            {"model",
             {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"continuing_subword_prefix", ""},
              {"end_of_word_suffix", ""},
              {"fuse_unk", false},
              {"byte_fallback", false},
              {"vocab", vocab},
              // ranks: "Ġ t" 0, "h e" 1, "Ġt he" 2, "b c" 3 before "a b" 4 (the newer format: pairs)
              {"merges", {G + " t", "h e", G + "t he", json::array({"b", "c"}), json::array({"a", "b"})}}}}};
}

// SentencePiece-style: <unk> <s> </s>, the byte tokens <0x00>.. as 3.., then pieces; Llama 2's normalizer,
// decoder and BOS template.
json sentencepiece_json() {
    json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
    for (int b = 0; b < 256; ++b) vocab[fmt::format("<0x{:02X}>", b)] = 3 + b;
    const std::string S = "\xE2\x96\x81";  // ▁
    int id = 259;
    for (const std::string& t : {S, std::string("h"), std::string("e"), std::string("l"), std::string("o"), S + "h",
                                 std::string("ll"), S + "he", std::string("llo"), S + "hello", std::string("i")})
        vocab[t] = id++;  // ▁ 259, h 260, e 261, l 262, o 263, ▁h 264, ll 265, ▁he 266, llo 267, ▁hello 268, i 269
    const auto added = [](int i, const char* content) {
        return json{{"id", i},         {"content", content},  {"single_word", false}, {"lstrip", false},
                    {"rstrip", false}, {"normalized", false}, {"special", true}};
    };
    return {{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", {added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")}},
            {"normalizer",
             {{"type", "Sequence"},
              {"normalizers",
               {{{"type", "Prepend"}, {"prepend", S}},
                {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", S}}}}}},
            {"pre_tokenizer", nullptr},
            {"post_processor",
             {{"type", "TemplateProcessing"},
              {"single",
               {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
              {"pair", json::array()},
              {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
            {"decoder",
             {{"type", "Sequence"},
              {"decoders",
               {{{"type", "Replace"}, {"pattern", {{"String", S}}}, {"content", " "}},
                {{"type", "ByteFallback"}},
                {{"type", "Fuse"}},
                {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
            {"model",
             {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", "<unk>"},
              {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr},
              {"fuse_unk", true},
              {"byte_fallback", true},
              {"vocab", vocab},
              // ranks: "▁ h" 0, "l l" 1, "▁h e" 2, "ll o" 3, "▁he llo" 4
              {"merges", {S + " h", "l l", S + "h e", "ll o", S + "he llo"}}}}};
}

json patched(json j, const json& patch) {
    j.merge_patch(patch);
    return j;
}

}  // namespace

TEST_CASE("hf_tokenizer: byte-level BPE, ids worked out by hand", "[hf_tokenizer]") {
    const nn::HfTokenizer tok(byte_level_json().dump());
    CHECK(tok.kind() == nn::HfTokenizer::Kind::byte_level);
    CHECK(tok.vocab_size() == 262);
    CHECK_FALSE(tok.bos());
    CHECK_FALSE(nn::sample_bos(tok));  // a sample starts from the prompt
    // "the cat": GPT-2's split "the" " cat". "the" = t h e: "h e" (rank 1) -> [t he]; "t he" is no merge.
    // " cat" = Ġ c a t: no pair merges. The added token whole. " the 42": Digits first (" the ", "4", "2"),
    // then GPT-2's split (" the", " "): Ġ t h e -> "Ġ t" (0) -> "h e" (1) -> "Ġt he" (2) = 258.
    const std::string text = "the cat<|endoftext|> the 42";
    const Ids expected = {'t', 257, 32, 'c', 'a', 't', 261, 258, 32, '4', '2'};
    CHECK(tok.encode(text) == expected);
    CHECK(tok.decode(expected) == text);
    CHECK(tok.special(261));
    CHECK_FALSE(tok.special(258));
    // The lower rank first: "b c" (3) before "a b" (4), so "abc" is [a, bc], not [ab, c].
    CHECK(tok.encode("abc") == Ids{'a', 259});
    // Bytes of a character that has no token of its own: each byte's stand-in (é = C3 A9)
    CHECK(tok.encode("\xC3\xA9") == Ids{0xC3, 0xA9});
    CHECK(tok.decode(Ids{0xC3, 0xA9}) == "\xC3\xA9");
    // Spaces and a newline: GPT-2's split gives "a", "  ", "\n", "b", each byte its stand-in's id
    CHECK(tok.encode("a  \nb") == Ids{'a', 32, 32, 10, 'b'});

    REQUIRE_THROWS_WITH(tok.decode(Ids{262}), Contains("id 262 at position 0 is outside the vocabulary of 262"));
    REQUIRE_THROWS_WITH(tok.encode("a\xFF"), Contains("invalid UTF-8 at byte offset 1"));

    const nn::HfTokenizer again = nn::HfTokenizer::from_checkpoint_metadata(tok.checkpoint_metadata());
    CHECK(again.encode(text) == expected);
    CHECK(nn::HfTokenizer::in_checkpoint_metadata(tok.checkpoint_metadata()));
}

TEST_CASE("hf_tokenizer: a Split with Qwen's kind of pattern, then ByteLevel without its own", "[hf_tokenizer]") {
    json j = byte_level_json();
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers",
                           {{{"type", "Split"},
                             {"pattern", {{"Regex", R"(\p{N}| ?\p{L}+|\s+)"}}},
                             {"behavior", "Isolated"},
                             {"invert", false}},
                            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
    const nn::HfTokenizer tok(j.dump());
    // " the!42": " the" (Ġ t h e -> 258), "!" (not matched: a piece between matches), "4", "2"
    CHECK(tok.encode(" the!42") == Ids{258, '!', '4', '2'});
}

TEST_CASE("hf_tokenizer: SentencePiece-style BPE with byte fallback, ids worked out by hand", "[hf_tokenizer]") {
    const nn::HfTokenizer tok(sentencepiece_json().dump());
    CHECK(tok.kind() == nn::HfTokenizer::Kind::sentencepiece);
    CHECK(tok.vocab_size() == 270);
    CHECK(tok.bos() == 1);
    CHECK(nn::sample_bos(tok) == 1);  // a sample starts from it and stops at it
    // "hello hi€" -> "▁hello▁hi€": ▁ h e l l o ▁ h i, then € (E2 82 AC) has no token: <0xE2> <0x82> <0xAC>
    // = 3 + byte. Merges: "▁ h" (0) at both places, "l l" (1), "▁h e" (2), "ll o" (3), "▁he llo" (4);
    // "▁h i" is no merge.
    const Ids expected = {268, 264, 269, 3 + 0xE2, 3 + 0x82, 3 + 0xAC};
    CHECK(tok.encode("hello hi\xE2\x82\xAC") == expected);
    CHECK(tok.decode(expected) == "hello hi\xE2\x82\xAC");  // the leading space stripped
    // An added token is never split, and the text after it gets its own "▁" (Llama 2's legacy behaviour)
    CHECK(tok.encode("<s>hello") == Ids{1, 268});
    CHECK(tok.decode(Ids{1, 268}) == "<s> hello");
    // token by token, as a sampler prints: the space is a text's first only at its start or after <s>
    CHECK(tok.piece(-1, 268) == "hello");
    CHECK(tok.piece(1, 268) == "hello");
    CHECK(tok.piece(268, 268) == " hello");
    CHECK(tok.piece(268, 3 + 0xE2) == "\xE2");
    // "▁oh": ▁ o h, and neither "▁ o" nor "o h" is a merge
    CHECK(tok.encode("oh") == Ids{259, 263, 260});
}

TEST_CASE("hf_tokenizer: the model folder's bos and eos ids travel with it into a checkpoint", "[hf_tokenizer]") {
    const nn::HfTokenizer plain(sentencepiece_json().dump());
    CHECK_FALSE(plain.model_ids().bos);
    CHECK(plain.checkpoint_metadata().size() == 2);  // kind and json only: older checkpoints keep their bytes
    const nn::HfTokenizer tok = plain.with_model_ids({.bos = 1, .eos = 2});
    const auto metadata = tok.checkpoint_metadata();
    CHECK(metadata.at("tokenizer.hf.bos_token_id") == "1");
    CHECK(metadata.at("tokenizer.hf.eos_token_id") == "2");
    const nn::HfTokenizer again = nn::HfTokenizer::from_checkpoint_metadata(metadata);
    CHECK(again.model_ids().bos == std::optional<int64_t>(1));
    CHECK(again.model_ids().eos == std::optional<int64_t>(2));
    CHECK_FALSE(nn::HfTokenizer::from_checkpoint_metadata(plain.checkpoint_metadata()).model_ids().eos);
    // an id past the vocabulary (270 tokens), or metadata that is not an id, refused by name
    CHECK_THROWS_WITH(plain.with_model_ids({.bos = std::nullopt, .eos = 270}),
                      Contains("eos_token_id 270 is outside its vocabulary of 270"));
    auto edited = metadata;
    edited["tokenizer.hf.bos_token_id"] = "-1";
    CHECK_THROWS_WITH(nn::HfTokenizer::from_checkpoint_metadata(edited),
                      Contains("'tokenizer.hf.bos_token_id' is '-1', not a token id"));
    edited["tokenizer.hf.bos_token_id"] = "9999";
    CHECK_THROWS_WITH(nn::HfTokenizer::from_checkpoint_metadata(edited), Contains("bos_token_id 9999 is outside"));
    // where samples start and stop: SentencePiece-style from config's bos_token_id (here 2, not the
    // template's 1); byte-level from its template's only (none: SmolLM's bos 0 is never prepended); both
    // stop at eos_token_id
    const nn::HfTokenizer sp = plain.with_model_ids({.bos = 2, .eos = 0});
    CHECK(nn::sample_bos(sp) == 2);
    CHECK(nn::sample_eos(sp) == 0);
    CHECK(nn::sample_bos(plain) == 1);
    CHECK_FALSE(nn::sample_eos(plain));
    const nn::HfTokenizer byte_level =
        nn::HfTokenizer(byte_level_json().dump()).with_model_ids({.bos = 261, .eos = 261});
    CHECK_FALSE(nn::sample_bos(byte_level));
    CHECK(nn::sample_eos(byte_level) == 261);
}

TEST_CASE("hf_tokenizer: Metaspace instead of the normalizer, prepending before the first section only",
          "[hf_tokenizer]") {
    const std::string S = "\xE2\x96\x81";
    json j = sentencepiece_json();
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", S}, {"prepend_scheme", "first"}, {"split", false}};
    j["decoder"] = {{"type", "Metaspace"}, {"replacement", S}, {"prepend_scheme", "first"}, {"split", false}};
    const nn::HfTokenizer tok(j.dump());
    CHECK(tok.encode("hello hi") == Ids{268, 264, 269});
    CHECK(tok.encode("<s>hello") == Ids{1, 260, 261, 267});  // h e llo: no "▁" after the BOS
    CHECK(tok.decode(Ids{268, 264, 269}) == "hello hi");
    // Metaspace puts no "▁" before text that starts with a space (the normalizer's Prepend would: "▁▁hello")
    CHECK(tok.encode(" hello") == Ids{268});
    // and without ByteFallback in the decoder, a byte token is its text, as the tokenizers library writes it
    CHECK(tok.decode(Ids{264, 3 + 0x41}) == "h<0x41>");
}

TEST_CASE("hf_tokenizer: every unsupported feature is refused by name", "[hf_tokenizer]") {
    const json bl = byte_level_json(), sp = sentencepiece_json();
    const auto refused = [](const json& j, const std::string& what) {
        INFO(what);
        REQUIRE_THROWS_AS(nn::HfTokenizer(j.dump(), "tok.json"), std::invalid_argument);
        REQUIRE_THROWS_WITH(nn::HfTokenizer(j.dump(), "tok.json"), Contains("tok.json: ") && Contains(what));
    };
    refused(patched(sp, {{"normalizer", {{"type", "NFC"}}}}), "normalizer \"NFC\" is not supported");
    refused(patched(sp, {{"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "Lowercase"}}}}}}}),
            "normalizer \"Lowercase\"");
    refused(patched(bl, {{"pre_tokenizer", {{"type", "Whitespace"}}}}),
            "pre_tokenizer \"Whitespace\" is not supported");
    refused(patched(bl, {{"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", true}}}}),
            "\"add_prefix_space\" true");
    refused(
        patched(bl, {{"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Removed"}}}}),
        "\"behavior\" is \"Removed\"");
    refused(
        patched(bl, {{"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "("}}}, {"behavior", "Isolated"}}}}),
        "does not compile");
    refused(patched(bl, {{"model", {{"type", "Unigram"}}}}), "model \"Unigram\" is not supported");
    refused(patched(bl, {{"model", {{"type", "WordPiece"}}}}), "model \"WordPiece\" is not supported");
    refused(patched(bl, {{"model", {{"dropout", 0.1}}}}), "\"dropout\" 0.1");
    refused(patched(bl, {{"model", {{"continuing_subword_prefix", "##"}}}}), "\"continuing_subword_prefix\"");
    refused(patched(bl, {{"truncation", {{"max_length", 8}}}}), "\"truncation\"");
    refused(patched(bl, {{"surprise", 1}}), "\"surprise\" 1 is not supported");
    refused(patched(bl, {{"decoder", {{"type", "WordPiece"}}}}), "decoder \"WordPiece\" is not supported");
    refused(patched(bl, {{"post_processor", {{"type", "BertProcessing"}}}}), "post_processor \"BertProcessing\"");
    json eos = sp;  // $A then </s>: an EOS appended, which encode would not give
    eos["post_processor"]["single"] = {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                       {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}};
    refused(eos, "TemplateProcessing's \"single\"");
    json lstrip = bl;
    lstrip["added_tokens"][0]["lstrip"] = true;
    refused(lstrip, "\"lstrip\" true is not supported");
    json bad_merge = bl;
    bad_merge["model"]["merges"].push_back("x q");
    refused(bad_merge, "merge 5 (\"x\" \"q\"): \"xq\" is not in the vocab");
    json gap = bl;  // (an added token that is also in the vocab leaves room under the count for a gap)
    gap["added_tokens"] = {{{"id", 97}, {"content", "a"}, {"special", false}}};
    gap["model"]["vocab"]["ab"] = 261;
    refused(gap, "no token has the id 260");
    json no_byte = bl;
    no_byte["model"]["vocab"].erase("z");
    no_byte["model"]["vocab"]["zz"] = 122;  // (its id to another token: no gap)
    refused(no_byte, "byte 0x7A has no token");
    refused(patched(sp, {{"normalizer", nullptr},
                         {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"split", true}}}}),
            "\"split\" true");
    json neither = bl;
    neither["pre_tokenizer"] = nullptr;
    refused(neither, "neither byte-level");
    refused(json::array(), "not a JSON object");
    json far = bl;  // an id far past the count: refused before any table is sized by it
    far["added_tokens"][0]["id"] = 1 << 30;
    refused(far, "added token \"<|endoftext|>\"'s id is 1073741824, not 0 to 261");
    far = bl;
    far["model"]["vocab"]["a"] = 9999;
    refused(far, "gives token \"a\" the id 9999");
    refused(patched(bl, {{"pre_tokenizer", {{"type", 5}}}}), "pre_tokenizer");
    json odd = bl;
    odd["added_tokens"][0]["lstrip"] = "yes";
    refused(odd, "unexpected type");
    refused(patched(sp, {{"post_processor", {{"type", "TemplateProcessing"}, {"single", {{{"Sequence", 3}}}}}}}),
            "post_processor");
    REQUIRE_THROWS_WITH(nn::HfTokenizer("{", "tok.json"), Contains("tok.json"));

    test::TempDir dir("hf_tokenizer_fifo");
    REQUIRE(::mkfifo((dir.path / "tokenizer.json").c_str(), 0600) == 0);
    REQUIRE_THROWS_WITH(nn::HfTokenizer::from_file(dir.path / "tokenizer.json"), Contains("named pipe"));
    dir.write("ok.json", sp.dump());
    CHECK(nn::HfTokenizer::from_file(dir.path / "ok.json").encode("hello") == Ids{268});
}
