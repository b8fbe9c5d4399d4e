// llama2.c's tokenizer (nn/tokenizers/llama2c_tokenizer.h): ids equal to run.c's encode on llama2.c's own
// tokenizer.bin (tests/data/llama2c, made by tests/data/README.md's commands), the heap's merges equal to
// run.c's loop, decode, checkpoint metadata, and hostile files refused by name.
#include <nn/generate/sample.h>
#include <nn/tokenizers/llama2c_tokenizer.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "temp_dir.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using nn::Llama2cTokenizer;

namespace {

const fs::path kData = fs::path(TINYGPT_TEST_DATA) / "llama2c";

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<int64_t> parse_ids(const std::string& line) {
    std::istringstream in(line);
    std::vector<int64_t> ids;
    for (int64_t id = 0; in >> id;) ids.push_back(id);
    return ids;
}

const Llama2cTokenizer& llama() {
    static const Llama2cTokenizer tok = Llama2cTokenizer::from_file(kData / "tokenizer.bin", 32000);
    return tok;
}

// A tokenizer.bin from (bytes, score) pairs, as tokenizer.py's export writes one.
std::string tokenizer_file(const std::vector<std::pair<std::string, float>>& tokens,
                           std::optional<int32_t> max_length = {}) {
    int32_t longest = 0;
    for (const auto& [bytes, score] : tokens) longest = std::max(longest, static_cast<int32_t>(bytes.size()));
    std::string out(4, '\0');
    const int32_t m = max_length.value_or(longest);
    std::memcpy(out.data(), &m, 4);
    for (const auto& [bytes, score] : tokens) {
        char head[8];
        const auto length = static_cast<int32_t>(bytes.size());
        std::memcpy(head, &score, 4);
        std::memcpy(head + 4, &length, 4);
        out.append(head, 8).append(bytes);
    }
    return out;
}

// <unk>, BOS, EOS, the 256 byte tokens, then `extra`.
std::vector<std::pair<std::string, float>> with_bytes(const std::vector<std::pair<std::string, float>>& extra) {
    std::vector<std::pair<std::string, float>> tokens = {{"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}};
    for (int b = 0; b < 256; ++b) tokens.emplace_back(fmt::format("<0x{:02X}>", b), 0.0f);
    tokens.insert(tokens.end(), extra.begin(), extra.end());
    return tokens;
}

}  // namespace

TEST_CASE(
    "llama2.c tokenizer: llama2.c's tokenizer.bin encodes tiny Shakespeare's first 20,000 characters as run.c does",
    "[llama2c_tokenizer]") {
    const fs::path shakespeare = fs::path(TINYGPT_SHARED_DIR) / "data/tinyshakespeare.txt";
    if (!fs::is_regular_file(shakespeare)) {
        std::cout << "SKIPPED: " << shakespeare << " is not on this machine (the tests make no copy of it)\n";
        return;
    }
    const std::string text = slurp(shakespeare).substr(0, 20000);  // ASCII: 20,000 characters
    const std::vector<int64_t> expected = parse_ids(slurp(kData / "tinyshakespeare_20000.ids"));
    REQUIRE(expected.size() == 6574);
    const auto start = std::chrono::steady_clock::now();
    uint64_t lookups = 0;
    const std::vector<int64_t> ids = llama().encode_counted(text, &lookups);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "llama2.c tokenizer: 20,000 characters in " << seconds * 1e3 << " ms, " << lookups
              << " pair lookups\n";
    CHECK(ids == expected);
    CHECK(llama().encode(text) == ids);
    // Not quadratic: each merge looks up its two new neighbours only (run.c looks up every pair again).
    CHECK(lookups <= 3 * (text.size() + 1));
    // decode after BOS gives the text back, as run.c's decode of the same ids did (tests/data/README.md)
    std::vector<int64_t> with_bos = {Llama2cTokenizer::kBos};
    with_bos.insert(with_bos.end(), ids.begin(), ids.end());
    CHECK(llama().decode(with_bos) == text);
    CHECK(llama().decode(ids) == " " + text);  // without BOS the dummy prefix stays
}

TEST_CASE("llama2.c tokenizer: characters of every length, byte fallback and literal specials, as run.c encodes them",
          "[llama2c_tokenizer]") {
    std::istringstream texts(slurp(kData / "utf8_lines.txt")), ids(slurp(kData / "utf8_lines.ids"));
    std::string text, line;
    int n = 0;
    while (std::getline(texts, text)) {
        REQUIRE(std::getline(ids, line));
        INFO("line " << n << ": " << text);
        const std::vector<int64_t> expected = parse_ids(line);
        CHECK(llama().encode(text) == expected);
        CHECK(llama().encode_reference(text) == expected);
        std::vector<int64_t> with_bos = {Llama2cTokenizer::kBos};
        with_bos.insert(with_bos.end(), expected.begin(), expected.end());
        CHECK(llama().decode(with_bos) == text);
        ++n;
    }
    CHECK(n == 10);
    CHECK(llama().encode("").empty());  // run.c: no dummy prefix for an empty text
    CHECK(llama().encode_ids("Hello world").to_vector() == std::vector<int64_t>{15043, 3186});
}

TEST_CASE("llama2.c tokenizer: SentencePiece's own ids for Meta's example prompts", "[llama2c_tokenizer]") {
    // The prompts of Meta's example_text_completion.py and the ids Llama 2's SentencePiece model gives them
    // (after BOS), as llama2.c's test.c lists them: an oracle besides run.c.
    const std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {
        {"I believe the meaning of life is", {306, 4658, 278, 6593, 310, 2834, 338}},
        {"Simply put, the theory of relativity states that ",
         {3439, 17632, 1925, 29892, 278, 6368, 310, 14215, 537, 5922, 393, 29871}},
        {"A brief message congratulating the team on the launch:\n\n        Hi everyone,\n\n        I just ",
         {319, 11473, 2643, 378,  629,   271,   18099, 278, 3815, 373, 278, 6826, 29901,
          13,  13,    4706, 6324, 14332, 29892, 13,    13,  4706, 306, 925, 29871}},
        {"Translate English to French:\n\n        sea otter => loutre de mer\n        peppermint => menthe "
         "poivr\xC3\xA9"
         "e\n        plush girafe => girafe peluche\n        cheese =>",
         {4103, 9632, 4223, 304,  5176, 29901, 13,   13,   4706, 7205,  4932, 357,  1149,  301,  449, 276,  316,
          2778, 13,   4706, 1236, 407,  837,   524,  1149, 6042, 354,   772,  440,  29878, 1318, 13,  4706, 715,
          1878, 330,  3055, 1725, 1149, 330,   3055, 1725, 4639, 28754, 13,   4706, 923,   968,  1149}},
    };
    for (const auto& [prompt, expected] : cases) {
        INFO(prompt);
        CHECK(llama().encode(prompt) == expected);
    }
}

TEST_CASE("llama2.c tokenizer: the heap's merges are run.c's loop's, on long texts", "[llama2c_tokenizer]") {
    std::string text = slurp(kData / "utf8_lines.txt");
    for (int i = 0; i < 3; ++i) text += text;  // 2.7 kB with newlines, UTF-8 and byte fallback
    uint64_t heap = 0, loop = 0;
    CHECK(llama().encode_counted(text, &heap) == llama().encode_reference(text, &loop));
    INFO("pair lookups: heap " << heap << ", run.c's loop " << loop);
    CHECK(heap * 50 < loop);
    // A word of one repeated letter: many merges of equal score, where the leftmost must win.
    const std::string aaa(999, 'a');
    CHECK(llama().encode(aaa) == llama().encode_reference(aaa));
}

TEST_CASE("llama2.c tokenizer: merge order, ties and scores at run.c's floor", "[llama2c_tokenizer]") {
    // ids: 259 " ", 260 "a", 261 "b", 262 "ab" (-5), 263 "ba" (-5), 264 "abab" (-1), 265 "c", 266 "cc" (-1e10)
    const Llama2cTokenizer tok(tokenizer_file(with_bytes(
        {{" ", -1}, {"a", -2}, {"b", -3}, {"ab", -5}, {"ba", -5}, {"abab", -1}, {"c", -4}, {"cc", -1e10f}})));
    CHECK(tok.vocab_size() == 267);
    // "aba": " " a b a; "ab" and "ba" tie at -5, the leftmost pair merges first: " " "ab" "a"
    CHECK(tok.encode("aba") == std::vector<int64_t>{259, 262, 260});
    // "abab": "ab" at 0 first, then "ba" is gone; then "ab" "ab" -> "abab"
    CHECK(tok.encode("abab") == std::vector<int64_t>{259, 264});
    // "cc" scores -1e10, not above run.c's starting best: never merged
    CHECK(tok.encode("cc") == std::vector<int64_t>{259, 265, 265});
    // a character with no token: its UTF-8 bytes' byte tokens (byte + 3)
    CHECK(tok.encode("\xC3\xA9") == std::vector<int64_t>{259, 0xC3 + 3, 0xA9 + 3});
    for (const char* text : {"aba", "abab", "cc", "babab c ab", "\xC3\xA9"})
        CHECK(tok.encode(text) == tok.encode_reference(text));
    REQUIRE_THROWS_WITH(tok.encode("a\xFF"), Contains("invalid UTF-8 at byte offset 1"));

    // Without byte tokens at 3..258, a character with no token is refused (run.c would emit byte + 3).
    const Llama2cTokenizer no_bytes(tokenizer_file({{"<unk>", 0}, {"<s>", 0}, {"</s>", 0}, {" ", -1}, {"a", -1}}));
    CHECK(no_bytes.encode("aa") == std::vector<int64_t>{3, 4, 4});
    REQUIRE_THROWS_WITH(no_bytes.encode("ab"), Contains("\"b\" at byte offset 1 is no token"));
}

TEST_CASE(
    "llama2.c tokenizer: decode is run.c's: byte tokens as bytes, the space dropped after BOS, BOS itself unprinted",
    "[llama2c_tokenizer]") {
    const Llama2cTokenizer& tok = llama();
    CHECK(tok.token_bytes(1) == "\n<s>\n");
    CHECK(tok.token_bytes(13) == "<0x0A>");
    CHECK(tok.decode(std::vector<int64_t>{13}) == "\n");
    CHECK(tok.decode(std::vector<int64_t>{3}) == std::string(1, '\0'));
    CHECK(tok.decode(std::vector<int64_t>{15043, 3186}) == " Hello world");
    CHECK(tok.decode(std::vector<int64_t>{1, 15043, 3186}) == "Hello world");
    CHECK(tok.decode(std::vector<int64_t>{3186, 1, 3186}) ==
          " worldworld");  // BOS mid-sequence too: unprinted, and the space after it dropped
    CHECK(tok.decode(std::vector<int64_t>{2}) == "\n</s>\n");  // EOS is printed as run.c prints it
    CHECK(tok.piece(1, 3186) == "world");
    CHECK(tok.piece(-1, 3186) == " world");
    CHECK(tok.piece(15043, 1).empty());
    REQUIRE_THROWS_WITH(tok.decode(std::vector<int64_t>{5, 32000}), Contains("token id 32000 at position 1"));
    REQUIRE_THROWS_WITH(tok.piece(0, -1), Contains("token id -1"));
    CHECK(tok.max_token_length() == 27);
    CHECK(tok.token_id(" world") == 3186);
    CHECK(tok.token_id("no such token") == -1);
}

TEST_CASE("llama2.c tokenizer: a checkpoint's metadata rebuilds it", "[llama2c_tokenizer]") {
    const auto metadata = llama().checkpoint_metadata();
    CHECK(Llama2cTokenizer::in_checkpoint_metadata(metadata));
    CHECK(metadata.at("tokenizer.llama2c.file").size() == (433869 + 2) / 3 * 4);
    const Llama2cTokenizer back = Llama2cTokenizer::from_checkpoint_metadata(metadata);
    CHECK(back.file() == llama().file());
    CHECK(back.vocab_size() == 32000);
    CHECK(nn::sample_bos(back) == 1);  // as run.c samples: from BOS, until BOS
    CHECK(back.encode("café ROMEO:") == llama().encode("café ROMEO:"));
    // every length modulo 3 (base64's padding)
    for (const std::string extra : {"x", "xy", "xyz"}) {
        const Llama2cTokenizer t(tokenizer_file(with_bytes({{extra, -1}})));
        CHECK(Llama2cTokenizer::from_checkpoint_metadata(t.checkpoint_metadata()).file() == t.file());
    }
    auto damaged = metadata;
    damaged["tokenizer.llama2c.file"][10] = '*';
    REQUIRE_THROWS_WITH(Llama2cTokenizer::from_checkpoint_metadata(damaged), Contains("not base64"));
    REQUIRE_THROWS_WITH(Llama2cTokenizer::from_checkpoint_metadata({{"tokenizer.kind", "llama2c"}}),
                        Contains("lacks tokenizer.llama2c.file"));
    CHECK_FALSE(Llama2cTokenizer::in_checkpoint_metadata({{"tokenizer.kind", "gpt2-bpe"}}));
}

TEST_CASE("llama2.c tokenizer: hostile files are refused naming the token and the field", "[llama2c_tokenizer]") {
    const std::string good = tokenizer_file(with_bytes({{" ", -1}, {"ab", -2}}));
    REQUIRE(Llama2cTokenizer(good, 261).vocab_size() == 261);
    const auto refused = [](const std::string& bytes, std::optional<int64_t> vocab, const std::string& what) {
        INFO(what);
        REQUIRE_THROWS_WITH(Llama2cTokenizer(bytes, vocab, "hostile.bin"), Contains("hostile.bin: ") && Contains(what));
    };
    refused(good, 512, "the file holds 261 tokens, fewer than the 512 asked (the model's vocab_size)");
    refused(good, 100, "bytes follow token 99, the last of the 100 asked");
    refused(good + "x", std::nullopt, "truncated in token 261");
    refused(good.substr(0, good.size() - 1), std::nullopt, "truncated in token 260: its 2 bytes run past the end");
    refused(good.substr(0, 2), std::nullopt, "too short for its max_token_length");
    refused(tokenizer_file(with_bytes({{"a", std::numeric_limits<float>::quiet_NaN()}})), std::nullopt,
            "token 259 has a NaN score");
    refused(tokenizer_file(with_bytes({{"abcdefgh", -1}}), 6), std::nullopt,
            "token 259 has length 8, over max_token_length 6");
    refused(tokenizer_file(with_bytes({}), -3), std::nullopt, "max_token_length is -3, negative");
    std::string negative = tokenizer_file({{"<unk>", 0}, {"x", 0}});
    const int32_t minus = -4;
    std::memcpy(negative.data() + 4 + 8 + 5 + 4, &minus, 4);  // token 1's length
    refused(negative, std::nullopt, "token 1 has length -4, negative");
    refused(std::string(4, '\0'), std::nullopt, "holds no token");
    REQUIRE_THROWS_WITH(Llama2cTokenizer(good, 0), Contains("asked for 0 tokens"));

    const test::TempDir dir("llama2c_tokenizer_files");
    REQUIRE_THROWS_WITH(Llama2cTokenizer::from_file(dir.path / "missing.bin"),
                        Contains("missing.bin") && Contains("cannot open"));
    const fs::path short_file = dir.write("short.bin", good.substr(0, 101));
    REQUIRE_THROWS_WITH(Llama2cTokenizer::from_file(short_file, 300),
                        Contains("short.bin") && Contains("truncated in token"));
}
