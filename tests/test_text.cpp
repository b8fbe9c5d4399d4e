// nn/text.h: the character tokenizer (code points from UTF-8), read_text_file's checks, and batches.
#include <nn/train/text.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "helpers.h"
#include "temp_dir.h"

using Catch::Matchers::Contains;
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
        {"abc\xE2\x82", 3, "truncated"},          // input ends inside the sequence
        {"\xE2\x28\xA1", 0, "truncated"},         // second byte is not a continuation
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
    CHECK(invalid_argument_message([&] { tok.decode(std::vector<int64_t>{0, 3}); }) ==
          "decode: id 3 at position 1 is outside the vocabulary [0, 3)");
    CHECK_THAT(invalid_argument_message([&] { tok.decode(std::vector<int64_t>{-1}); }), Contains("id -1 at position 0"));
}

TEST_CASE("the vocabulary round-trips through UTF-8, and a bad vocabulary is rejected", "[text][errors]") {
    const auto tok = CharTokenizer::from_text("Zürich, 東京 and \t🙂\n");
    const std::string stored = tok.vocabulary_utf8();
    const auto restored = CharTokenizer::from_vocabulary_utf8(stored);
    CHECK(restored.vocabulary() == tok.vocabulary());
    CHECK(restored.encode("東京 🙂") == tok.encode("東京 🙂"));

    CHECK_THAT(invalid_argument_message([] { CharTokenizer(std::vector<char32_t>{U'b', U'a'}); }),
               Contains("sorted without repeats") && Contains("'a' (U+0061) follows 'b' (U+0062)"));
    CHECK_THAT(invalid_argument_message([] { CharTokenizer(std::vector<char32_t>{U'a', U'a'}); }),
               Contains("sorted without repeats"));
    CHECK_THAT(invalid_argument_message([] { CharTokenizer(std::vector<char32_t>{}); }), Contains("empty"));
    CHECK_THAT(invalid_argument_message([] { CharTokenizer(std::vector<char32_t>{U'a', 0xD800}); }),
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
    CHECK_THAT(runtime_error_message([&] { nn::read_text_file(empty); }), Contains(empty.string()) && Contains("is empty"));
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
    CHECK_THAT(runtime_error_message([&] { nn::read_text_file(fifo); }), Contains("is a named pipe (FIFO), not a text file"));

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

    CHECK_THAT(invalid_argument_message([] { TextData({}); }), Contains("no tokens"));
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
    REQUIRE_THROWS_WITH(nn::TextData({0, 1, 2147483648, 3}), Catch::Matchers::Contains("token 2147483648 at position 2"));
    REQUIRE_THROWS_WITH(nn::TextData({0, -1}), Catch::Matchers::Contains("token -1 at position 1"));
}
