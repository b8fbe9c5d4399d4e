// nn/text.h: the character tokenizer (code points from UTF-8), read_text_file's checks, and batches;
// token ids as narrow as the vocabulary allows, files tokenized without holding their text.
#include <nn/model_files/safetensors.h>
#include <nn/train/text.h>
#include <nn/train/trainer.h>

#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>

#include "helpers.h"
#include "temp_dir.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using nn::CharTokenizer;
using nn::Split;
using nn::TextData;
namespace fs = std::filesystem;

namespace {

using test::TempDir;

// The what() of the std::invalid_argument `f` throws; fails the test if it throws nothing or another type.
template <typename F>
std::string invalid_argument_message(F&& f) {
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    FAIL("no std::invalid_argument was thrown");
    return {};
}

template <typename F>
std::string runtime_error_message(F&& f) {
    try {
        f();
    } catch (const std::invalid_argument& e) {
        FAIL("std::invalid_argument instead of std::runtime_error: " << e.what());
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    FAIL("no std::runtime_error was thrown");
    return {};
}

// Token i is i: a window shows where it came from.
std::vector<int64_t> counting(int64_t n) {
    std::vector<int64_t> tokens(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = i;
    return tokens;
}

}  // namespace

// --- tokenizer ----------------------------------------------------------------------------------

TEST_CASE("CharTokenizer vocabulary is the sorted distinct characters and ASCII round-trips", "[text]") {
    const std::string text = "hello world, hello tokens!\n";
    const auto tok = CharTokenizer::from_text(text);
    const std::u32string expected = U"\n !,dehklnorstw";
    CHECK(tok.vocabulary() == std::vector<char32_t>(expected.begin(), expected.end()));
    CHECK(tok.vocab_size() == 15);
    const auto ids = tok.encode(text);
    REQUIRE(ids.size() == text.size());
    CHECK(ids[0] == 6);  // 'h' is the 7th smallest character
    CHECK(ids.back() == 0);
    CHECK(tok.decode(ids) == text);
    CHECK(tok.encode("").empty());
    CHECK(tok.decode({}).empty());
}

// A count of a tokenizer's ids in a message says what they are: the prompt longer than the block was
// "N characters" for GPT-2's BPE too.
TEST_CASE("token_unit: characters for the character tokenizer, tokens for the others", "[text]") {
    CHECK(nn::token_unit(CharTokenizer::from_text("ab")) == "characters");
    CHECK(nn::token_unit(nn::IdTokenizer(50257, "gpt2.bin")) == "tokens");
}

TEST_CASE("CharTokenizer treats each multi-byte UTF-8 character as one token", "[text]") {
    // 2-, 3- and 4-byte characters, plus the largest code point and the last one before the surrogates.
    const std::string text = "naïve café — 日本語 🙂🙂 \xF4\x8F\xBF\xBF \xED\x9F\xBF";
    const auto tok = CharTokenizer::from_text(text);
    const auto& vocab = tok.vocabulary();
    CHECK(std::is_sorted(vocab.begin(), vocab.end()));
    CHECK(std::adjacent_find(vocab.begin(), vocab.end()) == vocab.end());
    CHECK(vocab.back() == U'\U0010FFFF');
    CHECK(std::find(vocab.begin(), vocab.end(), U'é') != vocab.end());
    CHECK(std::find(vocab.begin(), vocab.end(), U'🙂') != vocab.end());

    const auto ids = tok.encode(text);
    CHECK(ids.size() == 23);  // code points, not bytes
    CHECK(tok.decode(ids) == text);
    CHECK(tok.encode("🙂é") == std::vector<int64_t>{tok.encode("🙂")[0], tok.encode("é")[0]});
}

TEST_CASE("encode lists the distinct unknown characters printably, or skips them", "[text][errors]") {
    const auto tok = CharTokenizer::from_text("abc");
    CHECK(invalid_argument_message([&] { tok.encode("abxé\x07xé\nb"); }) ==
          "encode: 4 characters are not in the vocabulary of 3: 'x' (U+0078), 'é' (U+00E9), '\\x07' (U+0007), "
          "'\\n' (U+000A)");
    CHECK(invalid_argument_message([&] { tok.encode("a🙂"); }) ==
          "encode: 1 character is not in the vocabulary of 3: '🙂' (U+1F642)");
    CHECK(tok.encode("abxé\x07xé\nb", nn::Unknown::skip) == std::vector<int64_t>{0, 1, 1});
    CHECK(tok.encode("zzz", nn::Unknown::skip).empty());

    // Many unknown characters: the first 20 are listed, then a count of the rest.
    std::string many;
    for (char c = 'A'; c <= 'Z'; ++c) many += c;
    const std::string message = invalid_argument_message([&] { tok.encode(many); });
    CHECK_THAT(message, Contains("26 characters are not") && Contains("'T' (U+0054), and 6 more"));
    CHECK_THAT(message, !Contains("'U'"));
}

TEST_CASE("invalid UTF-8 of every kind is rejected with its byte offset", "[text][errors]") {
    struct Case {
        std::string bytes;
        size_t offset;
        const char* reason;
    };
    const std::vector<Case> cases = {
        {"ab\x80", 2, "unexpected continuation byte 0x80"},
        {"a\xC0\x80", 1, "overlong"},             // NUL in 2 bytes
        {"a\xC1\xBF", 1, "overlong"},             // '\x7F' in 2 bytes
        {"\xE0\x80\xAF", 0, "overlong"},          // '/' in 3 bytes
        {"xy\xF0\x82\x82\xAC", 2, "overlong"},    // U+20AC in 4 bytes
        {"\xED\xA0\x80", 0, "surrogate U+D800"},  // a UTF-16 surrogate
        {"ok\xED\xBF\xBF", 2, "surrogate U+DFFF"},
        {"abc\xE2\x82", 3, "truncated"},   // input ends inside the sequence
        {"\xE2\x28\xA1", 0, "truncated"},  // second byte is not a continuation
        {"\xF0\x9F\x99", 0, "truncated"},
        {"\xF4\x90\x80\x80", 0, "past U+10FFFF"},  // U+110000
        {"\xF5\x80\x80\x80", 0, "U+10FFFF"},
        {"abcd\xFF", 4, "0xFF"},
    };
    for (const Case& c : cases) {
        INFO("case: " << c.reason << " at offset " << c.offset);
        const std::string where = fmt::format("invalid UTF-8 at byte offset {}: ", c.offset);
        CHECK_THAT(invalid_argument_message([&] { CharTokenizer::from_text(c.bytes); }),
                   Contains(where) && Contains(c.reason));
        const auto tok = CharTokenizer::from_text("abcdefghijklmnopqrstuvwxyz");
        CHECK_THAT(invalid_argument_message([&] { tok.encode(c.bytes, nn::Unknown::skip); }),
                   Contains("encode: " + where) && Contains(c.reason));
        CHECK_THAT(invalid_argument_message([&] { CharTokenizer::from_vocabulary_utf8(c.bytes); }), Contains(where));
    }
}

TEST_CASE("decode rejects an id outside the vocabulary, naming it", "[text][errors]") {
    const auto tok = CharTokenizer::from_text("abc");
    CHECK(tok.decode(std::vector<int64_t>{2, 0, 1}) == "cab");
    CHECK(invalid_argument_message([&] {
              tok.decode(std::vector<int64_t>{0, 3});
          }) == "decode: id 3 at position 1 is outside the vocabulary [0, 3)");
    CHECK_THAT(invalid_argument_message([&] { tok.decode(std::vector<int64_t>{-1}); }),
               Contains("id -1 at position 0"));
}

TEST_CASE("the vocabulary round-trips through UTF-8, and a bad vocabulary is rejected", "[text][errors]") {
    const auto tok = CharTokenizer::from_text("Zürich, 東京 and \t🙂\n");
    const std::string stored = tok.vocabulary_utf8();
    const auto restored = CharTokenizer::from_vocabulary_utf8(stored);
    CHECK(restored.vocabulary() == tok.vocabulary());
    CHECK(restored.encode("東京 🙂") == tok.encode("東京 🙂"));

    CHECK_THAT(invalid_argument_message([] {
                   CharTokenizer(std::vector<char32_t>{U'b', U'a'});
               }),
               Contains("sorted without repeats") && Contains("'a' (U+0061) follows 'b' (U+0062)"));
    CHECK_THAT(invalid_argument_message([] {
                   CharTokenizer(std::vector<char32_t>{U'a', U'a'});
               }),
               Contains("sorted without repeats"));
    CHECK_THAT(invalid_argument_message([] { CharTokenizer(std::vector<char32_t>{}); }), Contains("empty"));
    CHECK_THAT(invalid_argument_message([] {
                   CharTokenizer(std::vector<char32_t>{U'a', 0xD800});
               }),
               Contains("U+D800, not a Unicode character"));
    CHECK_THAT(invalid_argument_message([] { CharTokenizer(std::vector<char32_t>{0x110000}); }), Contains("U+110000"));
    CHECK_THAT(invalid_argument_message([] { CharTokenizer::from_vocabulary_utf8("ba"); }),
               Contains("sorted without repeats"));
    CHECK_THAT(invalid_argument_message([] { CharTokenizer::from_text(""); }), Contains("the corpus is empty"));
}

// --- read_text_file -----------------------------------------------------------------------------

TEST_CASE("read_text_file returns the text and rejects what is not text, naming the path", "[text][errors]") {
    const TempDir dir("read");
    const fs::path good = dir.write("good.txt", "First Citizen:\nBefore we proceed, café\n");
    CHECK(nn::read_text_file(good) == "First Citizen:\nBefore we proceed, café\n");

    const fs::path missing = dir.path / "missing.txt";
    CHECK_THAT(runtime_error_message([&] { nn::read_text_file(missing); }),
               Contains(missing.string()) && Contains("No such file or directory"));
    CHECK_THAT(runtime_error_message([&] { nn::read_text_file(dir.path); }),
               Contains(dir.path.string()) && Contains("is a directory"));
    const fs::path empty = dir.write("empty.txt", "");
    CHECK_THAT(runtime_error_message([&] { nn::read_text_file(empty); }),
               Contains(empty.string()) && Contains("is empty"));
    const fs::path binary = dir.write("binary.bin", std::string_view("text\0\x01\x02", 7));
    CHECK_THAT(runtime_error_message([&] { nn::read_text_file(binary); }),
               Contains(binary.string()) && Contains("binary data") && Contains("NUL byte at offset 4"));
    const fs::path latin1 = dir.write("latin1.txt", "caf\xE9 au lait");
    CHECK_THAT(runtime_error_message([&] { nn::read_text_file(latin1); }),
               Contains(latin1.string()) && Contains("not UTF-8") && Contains("byte offset 3"));
    CHECK_THAT(runtime_error_message([&] { nn::read_text_file("/dev/null"); }),
               Contains("is a character device, not a text file"));
    // a named pipe with no writer: refused at once (tests/faults/bad_input.sh checks it cannot hang)
    const fs::path fifo = dir.path / "fifo.txt";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THAT(runtime_error_message([&] { nn::read_text_file(fifo); }),
               Contains("is a named pipe (FIFO), not a text file"));

    // Permissions do not stop root, so the unreadable case is checked only for other users.
    const fs::path locked = dir.write("locked.txt", "secret");
    fs::permissions(locked, fs::perms::none);
    if (::geteuid() != 0)
        CHECK_THAT(runtime_error_message([&] { nn::read_text_file(locked); }),
                   Contains(locked.string()) && Contains("Permission denied"));
    fs::permissions(locked, fs::perms::owner_all);
}

// --- TextData -----------------------------------------------------------------------------------

TEST_CASE("TextData splits the first 90% for training and the rest for validation", "[text]") {
    const TextData data(counting(1000));
    CHECK(data.size(Split::train) == 900);
    CHECK(data.size(Split::validation) == 100);
    // As the lecture's n = int(0.9 * len(data)) on tiny Shakespeare's 1,115,394 characters.
    const TextData shakespeare(std::vector<int64_t>(1115394, 0));
    CHECK(shakespeare.size(Split::train) == 1003854);
    CHECK(shakespeare.size(Split::validation) == 111540);
    CHECK(TextData(counting(10), 1.0).size(Split::validation) == 0);

    CHECK_THAT(invalid_argument_message([] { TextData(std::vector<int64_t>{}); }), Contains("no tokens"));
    for (double bad : {0.0, -0.5, 1.5, std::numeric_limits<double>::quiet_NaN()})
        CHECK_THAT(invalid_argument_message([&] { TextData(counting(10), bad); }), Contains("train_fraction"));
}

TEST_CASE("batches line up: targets are the inputs shifted by one, from the right split", "[text]") {
    const TextData data(counting(1000));  // train: 0..899, validation: 900..999
    autograd::Generator gen(7);
    for (const Split split : {Split::train, Split::validation}) {
        const int64_t first = split == Split::train ? 0 : 900, last = split == Split::train ? 899 : 999;
        const int64_t B = 64, T = 8;
        const nn::Batch batch = data.batch(split, B, T, gen);
        CHECK(batch.B == B);
        CHECK(batch.T == T);
        REQUIRE(batch.inputs.size() == static_cast<size_t>(B * T));
        REQUIRE(batch.targets.size() == static_cast<size_t>(B * T));
        for (int64_t b = 0; b < B; ++b) {
            for (int64_t t = 0; t < T; ++t) {
                const auto i = static_cast<size_t>(b * T + t);
                CHECK(batch.inputs[i] == batch.inputs[static_cast<size_t>(b * T)] + t);  // one contiguous window
                CHECK(batch.targets[i] == batch.inputs[i] + 1);                          // the next token
                CHECK(batch.inputs[i] >= first);
                CHECK(batch.targets[i] <= last);
            }
        }
    }

    // Every start position is reachable, including the last one whose final target is the split's last token.
    const TextData small(counting(100));  // validation: 90..99
    std::set<int64_t> starts;
    const nn::Batch many = small.batch(Split::validation, 500, 3, gen);
    for (int64_t b = 0; b < many.B; ++b) starts.insert(many.inputs[static_cast<size_t>(b * 3)]);
    CHECK(starts == std::set<int64_t>{90, 91, 92, 93, 94, 95, 96});
    // T = 9 is the longest window the 10-token split allows: one start, the whole split.
    const nn::Batch whole = small.batch(Split::validation, 2, 9, gen);
    CHECK(whole.inputs == std::vector<int64_t>{90, 91, 92, 93, 94, 95, 96, 97, 98, 90, 91, 92, 93, 94, 95, 96, 97, 98});
    CHECK(whole.targets.back() == 99);
}

TEST_CASE("batches are determined by the generator: one randint per row", "[text]") {
    const TextData data(counting(1000));
    autograd::Generator a(123), b(123), c(124), replay(123);
    const nn::Batch first = data.batch(Split::train, 16, 32, a);
    const nn::Batch again = data.batch(Split::train, 16, 32, b);
    CHECK(first.inputs == again.inputs);
    CHECK(first.targets == again.targets);
    CHECK(a.state() == b.state());
    CHECK(data.batch(Split::train, 16, 32, c).inputs != first.inputs);
    for (int64_t row = 0; row < 16; ++row)
        CHECK(first.inputs[static_cast<size_t>(row * 32)] == replay.randint(900 - 32));
    CHECK(replay.state() == a.state());
}

TEST_CASE("batch rejects non-positive sizes and blocks longer than the split, naming the numbers", "[text][errors]") {
    const TextData data(counting(1000));
    autograd::Generator gen(1);
    CHECK_THAT(invalid_argument_message([&] { data.batch(Split::train, 0, 8, gen); }),
               Contains("batch size B must be positive, got 0"));
    CHECK_THAT(invalid_argument_message([&] { data.batch(Split::train, 4, -1, gen); }),
               Contains("block size T must be positive, got -1"));
    CHECK_THAT(invalid_argument_message([&] { data.batch(Split::validation, 4, 256, gen); }),
               Contains("block size 256 is longer than the validation split (100 tokens"));
    // T + 1 tokens are needed: 100 is one too many for the 100-token split, 99 fits.
    CHECK_THAT(invalid_argument_message([&] { data.batch(Split::validation, 4, 100, gen); }),
               Contains("block size 100 is longer than the validation split"));
    CHECK_NOTHROW(data.batch(Split::validation, 4, 99, gen));
    CHECK_THAT(invalid_argument_message([&] { data.batch(Split::train, int64_t{1} << 40, 1 << 20, gen); }),
               Contains("more than the limit"));
    CHECK_THAT(invalid_argument_message([&] { TextData(counting(10), 1.0).batch(Split::validation, 1, 1, gen); }),
               Contains("validation split (0 tokens"));
}

TEST_CASE("TextData keeps wide ids (beyond 16 bits) and refuses one beyond 32 bits, naming its position", "[text]") {
    const nn::TextData data({0, 1, 2147483647, 3, 4, 5, 6, 7, 8, 9});
    autograd::Generator gen(1);
    const nn::Batch batch = data.batch(nn::Split::train, 4, 2, gen);
    for (int64_t id : batch.inputs) CHECK((id >= 0 && id <= 2147483647));
    REQUIRE_THROWS_WITH(nn::TextData({0, 1, 2147483648, 3}),
                        Catch::Matchers::Contains("token 2147483648 at position 2"));
    REQUIRE_THROWS_WITH(nn::TextData({0, -1}), Catch::Matchers::Contains("token -1 at position 1"));
}

// --- narrow token ids ---------------------------------------------------------------------------

namespace {

// A text of `n_symbols` distinct characters (ASCII letters first, then U+0100 on), each used, in an
// order that repeats with variety: "ab ca db..." style, `length` characters long.
std::string text_of_symbols(int64_t n_symbols, int64_t length) {
    std::vector<char32_t> symbols;
    for (char32_t c = 'a'; c <= 'z' && int64_t(symbols.size()) < n_symbols; ++c) symbols.push_back(c);
    for (char32_t c = 0x100; int64_t(symbols.size()) < n_symbols; ++c) symbols.push_back(c);
    std::u32string chars;
    uint64_t state = 12345;
    for (int64_t i = 0; i < length; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        chars.push_back(i < n_symbols ? symbols[size_t(i)] : symbols[(state >> 33) % symbols.size()]);
    }
    std::string out;
    for (char32_t c : chars) {  // UTF-8 by hand: the tokenizer under test is not its own oracle
        if (c < 0x80) {
            out += char(c);
        } else {
            out += char(0xC0 | (c >> 6));
            out += char(0x80 | (c & 0x3F));
        }
    }
    return out;
}

// The fingerprint as checkpoints have always stored it: FNV-1a over the ids as 64-bit values.
uint64_t fnv1a_of_int64_ids(const std::vector<int64_t>& ids) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t t : ids) {
        h ^= static_cast<uint64_t>(t);
        h *= 1099511628211ull;
    }
    return h;
}

}  // namespace

TEST_CASE("token ids take 1 byte each for up to 256 symbols, 2 for up to 65,536, 4 beyond", "[text][memory]") {
    CHECK(nn::TokenIds(1).bytes_per_id() == 1);
    CHECK(nn::TokenIds(256).bytes_per_id() == 1);
    CHECK(nn::TokenIds(257).bytes_per_id() == 2);
    CHECK(nn::TokenIds(65536).bytes_per_id() == 2);
    CHECK(nn::TokenIds(65537).bytes_per_id() == 4);
    CHECK_THAT(invalid_argument_message([] { nn::TokenIds(0); }), Contains("vocab_size must be in [1, 2^31], got 0"));

    for (const int64_t n_symbols : {65, 256, 257, 300}) {
        INFO(n_symbols << " symbols");
        const std::string text = text_of_symbols(n_symbols, 5000);
        const auto tok = CharTokenizer::from_text(text);
        REQUIRE(tok.vocab_size() == n_symbols);
        const nn::TokenIds ids = tok.encode_ids(text);
        const int64_t width = n_symbols <= 256 ? 1 : 2;
        CHECK(ids.bytes_per_id() == width);
        CHECK(ids.size() == 5000);
        CHECK(ids.bytes() == uint64_t(5000 * width));
        CHECK(ids.to_vector() == tok.encode(text));
        CHECK(ids[n_symbols - 1] == n_symbols - 1);  // the largest id survives the narrow type
    }
    // From int64 ids: as narrow as the largest id allows.
    CHECK(nn::TokenIds(std::vector<int64_t>{0, 255, 3}).bytes_per_id() == 1);
    CHECK(nn::TokenIds(std::vector<int64_t>{0, 256}).bytes_per_id() == 2);
    CHECK(nn::TokenIds(std::vector<int64_t>{70000}).bytes_per_id() == 4);
    CHECK(nn::TokenIds(std::vector<int64_t>{70000, 5}).to_vector() == std::vector<int64_t>{70000, 5});
}

TEST_CASE("batches from narrow ids are the windows of the int64 ids, draw for draw", "[text][memory]") {
    for (const int64_t n_symbols : {65, 300}) {
        INFO(n_symbols << " symbols");
        const std::string text = text_of_symbols(n_symbols, 3000);
        const auto tok = CharTokenizer::from_text(text);
        const std::vector<int64_t> wide = tok.encode(text);
        const TextData narrow(tok.encode_ids(text));
        REQUIRE(narrow.tokens().bytes_per_id() == (n_symbols <= 256 ? 1 : 2));
        const int64_t n_train = 2700, B = 16, T = 32;
        autograd::Generator gen(99), replay(99);
        for (const Split split : {Split::train, Split::validation}) {
            const nn::Batch batch = narrow.batch(split, B, T, gen);
            const int64_t first = split == Split::train ? 0 : n_train;
            const int64_t n = split == Split::train ? n_train : 3000 - n_train;
            for (int64_t b = 0; b < B; ++b) {
                const auto start = static_cast<size_t>(first + replay.randint(n - T));
                const auto row = static_cast<std::ptrdiff_t>(b * T);
                CHECK(std::equal(batch.inputs.begin() + row, batch.inputs.begin() + row + T, wide.begin() + start));
                CHECK(
                    std::equal(batch.targets.begin() + row, batch.targets.begin() + row + T, wide.begin() + start + 1));
            }
        }
    }
}

TEST_CASE("the data fingerprint in a checkpoint is FNV-1a over the ids as int64, as before narrow ids",
          "[text][memory]") {
    TempDir dir("text-fingerprint");
    for (const int64_t n_symbols : {40, 300}) {
        INFO(n_symbols << " symbols");
        const std::string text = text_of_symbols(n_symbols, 4000);
        auto tokenizer = CharTokenizer::from_text(text);
        const uint64_t expected = fnv1a_of_int64_ids(tokenizer.encode(text));
        nn::TrainConfig config;
        config.model = {.kind = nn::ModelKind::bigram, .vocab = tokenizer.vocab_size(), .block = 8};
        config.steps = 1;
        config.batch = 2;
        nn::TokenIds ids = tokenizer.encode_ids(text);
        nn::Trainer trainer(config, std::move(tokenizer), std::move(ids));
        const fs::path path = dir.path / "run.safetensors";
        trainer.save(path);
        CHECK(nn::load_safetensors(path).metadata.at("data.fingerprint") == std::to_string(expected));
        CHECK(nn::Trainer::resume(path, text).step_count() == 0);
    }
    // Pinned as well, so that a change to both the code and the test's FNV-1a still shows.
    CHECK(fnv1a_of_int64_ids({0, 1, 2}) == 0xa940e14f3a8f72beull);
}

// --- read_tokenized_text ------------------------------------------------------------------------

TEST_CASE("read_tokenized_text gives what tokenizing the whole text gives, across its read pieces", "[text][memory]") {
    TempDir dir("text-tokenized");
    // 300 kB with 2-, 3- and 4-byte characters at every alignment: some straddle the 64 kB pieces.
    std::string text;
    for (int i = 0; text.size() < 300000; ++i) text += i % 7 == 0 ? "é東🙂\n" : i % 3 == 0 ? "ab🙂" : "xyzé";
    const fs::path path = dir.write("mixed.txt", text);
    const nn::TokenizedText read = nn::read_tokenized_text(path);
    const nn::TokenizedText whole = nn::tokenize(text);
    CHECK(read.tokenizer.vocabulary() == whole.tokenizer.vocabulary());
    CHECK(read.ids.bytes_per_id() == 1);
    CHECK(read.ids.to_vector() == whole.tokenizer.encode(text));
    CHECK(nn::read_text_file(path) == text);
}

TEST_CASE("read_tokenized_text and read_text_file name problems past the first read piece at their offset",
          "[text][errors]") {
    TempDir dir("text-tokenized-errors");
    const std::string ascii(100000, 'a');
    const fs::path nul = dir.write("nul.txt", ascii + std::string(1, '\0') + "b");
    const fs::path latin1 = dir.write("latin1.txt", ascii + "caf\xe9!");
    const fs::path cut = dir.write("cut.txt", ascii + "\xf0\x9f\x99");  // 🙂 without its last byte
    const fs::path empty = dir.write("empty.txt", "");
    for (const auto& [read, who] : {std::pair<std::function<void(const fs::path&)>, std::string>{
                                        [](const fs::path& p) { nn::read_tokenized_text(p); }, "read_tokenized_text"},
                                    {[](const fs::path& p) { nn::read_text_file(p); }, "read_text_file"}}) {
        INFO(who);
        // the message starts with the path, not the function's name: a program prints it as it is
        CHECK_THAT(runtime_error_message([&] { read(nul); }),
                   StartsWith("'" + nul.string() + "': holds binary data, not text (a NUL byte at offset 100000)"));
        CHECK_THAT(runtime_error_message([&] { read(latin1); }),
                   Contains("is not UTF-8 text") && Contains("invalid UTF-8 at byte offset 100003"));
        CHECK_THAT(runtime_error_message([&] { read(cut); }),
                   Contains("invalid UTF-8 at byte offset 100000: truncated sequence (lead byte 0xF0 needs 4 bytes, "
                            "the input ends after 3 bytes)"));
        CHECK_THAT(runtime_error_message([&] { read(empty); }), Contains(empty.string()) && Contains("is empty"));
        CHECK_THAT(runtime_error_message([&] { read(dir.path); }), Contains("is a directory, not a text file"));
    }
}

TEST_CASE("read_tokenized_text refuses a file larger than the memory before reading it", "[text][memory]") {
    TempDir dir("text-huge");
    const uint64_t memory = nn::physical_memory_bytes();
    if (memory == 0) {
        WARN("the system does not say how much memory it has: nothing to compare with");
        return;
    }
    // Sparse: as large as it says, without the disk space; all NUL bytes, so reading it would fail otherwise.
    const fs::path huge = dir.path / "huge.txt";
    std::ofstream(huge).put('a');
    std::error_code error;
    fs::resize_file(huge, memory + 1, error);
    if (error) {
        WARN("this file system cannot hold a sparse file of " << memory + 1 << " bytes: " << error.message());
        return;
    }
    const std::string message = runtime_error_message([&] { nn::read_tokenized_text(huge); });
    CHECK_THAT(message, StartsWith("'" + huge.string() + "': its ") && Contains("of text would take about") &&
                            Contains("more than this machine's"));
    CHECK_THAT(message, !Contains("binary"));
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__has_feature)
#define TINYGPT_TEXT_RLIMIT_TESTS 1
#elif !defined(__SANITIZE_ADDRESS__) && defined(__has_feature)
#if !__has_feature(address_sanitizer)
#define TINYGPT_TEXT_RLIMIT_TESTS 1
#endif
#endif

#ifdef TINYGPT_TEXT_RLIMIT_TESTS
namespace {
// The allocation tests run `what` in a fresh copy of this program (a forked child would inherit the
// heap memory earlier tests freed, and allocate from it) whose address space may grow by only `room`
// bytes beyond what it uses at the start (RLIMIT_AS): an allocation failure that does not depend on
// how much memory this machine has. Returns the what() of the std::runtime_error thrown, "" when
// nothing was thrown.
std::string message_with_little_memory(const std::string& what, uint64_t room, const fs::path& path = {}) {
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::close(pipe_fds[0]);
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDOUT_FILENO);
        ::setenv("TINYGPT_TEST_LIMITED_CASE", what.c_str(), 1);
        ::setenv("TINYGPT_TEST_LIMITED_ROOM", std::to_string(room).c_str(), 1);
        ::setenv("TINYGPT_TEST_LIMITED_PATH", path.c_str(), 1);
        ::setenv("TINYGPT_TEST_LIMITED_FD", std::to_string(pipe_fds[1]).c_str(), 1);
        ::execl("/proc/self/exe", "nn_tests", "[.limited_memory]", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(pipe_fds[1]);
    std::string message;
    char buffer[4096];
    for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) message.append(buffer, size_t(n));
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    return message;
}
}  // namespace

// The child's side of message_with_little_memory; does nothing when run by hand.
TEST_CASE("(an allocation test's child process)", "[.limited_memory]") {
    const char* what = std::getenv("TINYGPT_TEST_LIMITED_CASE");
    if (!what) return;
    const uint64_t room = std::stoull(std::getenv("TINYGPT_TEST_LIMITED_ROOM"));
    const fs::path path = std::getenv("TINYGPT_TEST_LIMITED_PATH");
    const int fd = std::stoi(std::getenv("TINYGPT_TEST_LIMITED_FD"));
    ::mallopt(M_MMAP_THRESHOLD, 1 << 20);  // large blocks from new address space, always
    std::string message;
    uint64_t vm_kb = 0;
    {
        std::ifstream status("/proc/self/status");
        for (std::string line; std::getline(status, line);)
            if (line.rfind("VmSize:", 0) == 0) vm_kb = std::stoull(line.substr(7));
    }
    const rlimit limit{vm_kb * 1024 + room, vm_kb * 1024 + room};
    if (vm_kb == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0) message = "(no limit set)";
    try {
        if (!message.empty()) {
        } else if (what == std::string("read_tokenized_text")) {
            nn::read_tokenized_text(path);
        } else if (what == std::string("read_text_file")) {
            nn::read_text_file(path);
        } else if (what == std::string("model")) {
            nn::TokenizedText data = nn::tokenize(text_of_symbols(26, 2000));
            nn::TrainConfig config;
            config.model = {.kind = nn::ModelKind::gpt,
                            .vocab = data.tokenizer.vocab_size(),
                            .n_embd = 512,
                            .n_head = 8,
                            .n_layer = 8,
                            .block = 16};
            nn::Trainer trainer(config, std::move(data.tokenizer), std::move(data.ids));
        } else {
            message = "(unknown case)";
        }
    } catch (const std::runtime_error& e) {
        message = e.what();
    } catch (const std::exception& e) {
        message = std::string("(another exception) ") + e.what();
    }
    (void)!::write(fd, message.data(), message.size());
}

TEST_CASE("an allocation that fails while reading data says what it was for and how much", "[text][memory]") {
    TempDir dir("text-bad-alloc");
    const fs::path path = dir.write("big.txt", text_of_symbols(26, 32000000));  // 32 MB, 1 byte an id
    CHECK_THAT(message_with_little_memory("read_tokenized_text", 8 << 20, path),
               StartsWith("'" + path.string() +
                          "': could not allocate 32 MB for the token ids (32000000 characters, 1 byte each)"));
    CHECK_THAT(message_with_little_memory("read_text_file", 8 << 20, path),
               StartsWith("'" + path.string() + "': could not allocate 32 MB for the text"));
    // With room, the same calls succeed there: the limit is what failed them.
    CHECK(message_with_little_memory("read_tokenized_text", 256 << 20, path).empty());
    CHECK(message_with_little_memory("read_text_file", 256 << 20, path).empty());
}

TEST_CASE("an allocation that fails while making the model says what it was for and how much", "[text][memory]") {
    // about 27 million parameters: 0.44 GB with gradients and AdamW's moments
    CHECK_THAT(message_with_little_memory("model", 32 << 20),
               StartsWith("could not allocate about 0.4") && Contains("GB for the gpt model and its optimizer"));
    CHECK(message_with_little_memory("model", 1200 << 20).empty());
}
#endif
