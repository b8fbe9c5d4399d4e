// nn/checkpoint.h: safetensors files checked byte by byte against the format, every malformed file
// rejected with the path and the problem, atomic saves, and load_module's all-or-nothing contract.
#include <nn/model_files/safetensors.h>
#include <nn/layers.h>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include <nlohmann/json.hpp>

#include "helpers.h"
#include "temp_dir.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using namespace autograd;
namespace fs = std::filesystem;

namespace {

using test::read_bytes;
using test::TempDir;

// The format, written out by hand: u64 little-endian header length, the header, the data.
std::string file_bytes(const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    for (size_t i = 0; i < 8; ++i) out[i] = static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i));
    return out + header + data;
}
std::string le_floats(const std::vector<float>& values) {
    std::string out;
    for (float v : values)
        for (int i = 0; i < 4; ++i) out += static_cast<char>(std::bit_cast<uint32_t>(v) >> (8 * i));
    return out;
}
float le_float_at(const std::string& bytes, size_t at) {
    uint32_t u = 0;
    for (size_t i = 0; i < 4; ++i) u |= uint32_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
    return std::bit_cast<float>(u);
}

// CRC32C bit by bit (reflected Castagnoli polynomial), the reference for the table-driven one.
uint32_t crc32c_reference(const std::string& bytes) {
    uint32_t crc = ~uint32_t{0};
    for (const char c : bytes) {
        crc ^= static_cast<unsigned char>(c);
        for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

bool same_bits(const Tensor& a, const Tensor& b) {
    const auto bits = [](float v) { return std::bit_cast<uint32_t>(v); };
    return a.shape() == b.shape() && std::ranges::equal(a.data(), b.data(), {}, bits, bits);
}

// The message of the std::runtime_error load_safetensors throws; fails the test otherwise.
std::string load_error(const fs::path& p, const nn::SafetensorsLimits& limits = {}) {
    try {
        nn::load_safetensors(p, limits);
    } catch (const std::invalid_argument& e) {
        FAIL("std::invalid_argument instead of std::runtime_error: " << e.what());
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    FAIL("load_safetensors accepted " << p);
    return {};
}

template <typename Exception, typename F>
std::string message_of(F&& f) {
    try {
        f();
    } catch (const Exception& e) {
        return e.what();
    }
    FAIL("the expected exception was not thrown");
    return {};
}

struct Tiny : nn::Module {
    nn::Linear first, second;
    Tiny(Generator& gen, int64_t hidden = 4)
        : first({.in = 3, .out = hidden}, gen), second({.in = hidden, .out = 2, .bias = false}, gen) {
        register_module("first", first);
        register_module("second", second);
    }
};

std::vector<std::vector<float>> values_of(const nn::Module& m) {
    std::vector<std::vector<float>> out;
    for (const Tensor& p : m.parameters()) out.push_back(p.to_vector());
    return out;
}

}  // namespace

TEST_CASE("safetensors round trip is bit-exact, with metadata, a 0-d and a 4-d tensor", "[safetensors][checkpoint]") {
    const TempDir dir("roundtrip");
    Generator gen(1);
    Tensor special = tensor({-0.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                             std::bit_cast<float>(0x7FC01234u) /* a NaN with a payload */},
                            {4});
    const nn::NamedTensors tensors = {{"z.scalar", scalar(3.25f)},
                                      {"a.weight", randn({2, 3}, gen)},
                                      {"four.d", randn({2, 1, 3, 2}, gen)},
                                      {"special", special},
                                      {"empty", zeros({0, 3})}};
    const std::map<std::string, std::string> metadata = {
        {"vocabulary", std::string("\n !é🙂\0x", 11)}, {"step", "1200"}, {"config", "{\"n_embd\": 32}"}};
    const fs::path p = dir.path / "model.safetensors";
    nn::save_safetensors(p, tensors, metadata);
    CHECK(dir.files() == std::vector<std::string>{"model.safetensors"});  // no temporary file left

    const nn::Safetensors loaded = nn::load_safetensors(p);
    CHECK(loaded.metadata == metadata);
    REQUIRE(loaded.tensors.size() == tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        INFO(tensors[i].first);
        CHECK(loaded.tensors[i].first == tensors[i].first);  // file order is the order given
        CHECK(same_bits(loaded.tensors[i].second, tensors[i].second));
        CHECK(loaded.tensors[i].second.is_leaf());
        CHECK_FALSE(loaded.tensors[i].second.requires_grad());
    }
    CHECK(loaded.tensors[0].second.dim() == 0);

    // Saving over an existing file replaces it.
    nn::save_safetensors(p, {{"only", ones({2})}});
    const nn::Safetensors replaced = nn::load_safetensors(p);
    REQUIRE(replaced.tensors.size() == 1);
    CHECK(replaced.metadata.empty());
    CHECK(replaced.tensors[0].second.to_vector() == std::vector<float>{1.0f, 1.0f});
}

TEST_CASE("safetensors bytes on disk follow the format", "[safetensors][checkpoint]") {
    const TempDir dir("format");
    const Tensor a = tensor({1.5f, -2.0f, 3.0f, 0.25f, 5.0f, -6.5f}, {2, 3});
    const Tensor s = scalar(-7.0f);
    const Tensor c = tensor({8.0f, 9.0f}, {1, 2, 1, 1});
    const fs::path p = dir.path / "w.safetensors";
    nn::save_safetensors(p, {{"a", a}, {"s", s}, {"c", c}}, {{"format", "pt"}});
    const std::string bytes = read_bytes(p);

    REQUIRE(bytes.size() >= 8);
    uint64_t n = 0;
    for (size_t i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
    REQUIRE(8 + n <= bytes.size());
    CHECK(n % 8 == 0);  // padded so the data starts 8-byte aligned
    const std::string header = bytes.substr(8, n);
    CHECK(header.front() == '{');
    CHECK(header.find_last_not_of(' ') < header.size());  // padding, if any, is spaces after the JSON
    const auto json = nlohmann::json::parse(header);
    REQUIRE(json.is_object());
    CHECK(json.size() == 4);
    // the caller's metadata, and each tensor's CRC32C of its bytes as stored
    REQUIRE(crc32c_reference("123456789") == 0xE3069283u);  // the standard check value
    const auto crc_of = [&](uint64_t begin, uint64_t end) {
        return fmt::format("{:08x}", crc32c_reference(bytes.substr(8 + n + begin, end - begin)));
    };
    // and the metadata's own: of every other entry in key order, each key and value as its 8-byte
    // little-endian length and its bytes
    const std::map<std::string, std::string> entries = {
        {"format", "pt"}, {"crc32c.a", crc_of(0, 24)}, {"crc32c.s", crc_of(24, 28)}, {"crc32c.c", crc_of(28, 36)}};
    std::string covered;
    for (const auto& [key, value] : entries)
        for (const std::string& text : {key, value}) {
            for (int i = 0; i < 8; ++i) covered += static_cast<char>(static_cast<uint64_t>(text.size()) >> (8 * i));
            covered += text;
        }
    nlohmann::json metadata(entries);
    metadata["crc32c.__metadata__"] = fmt::format("{:08x}", crc32c_reference(covered));
    CHECK(json.at("__metadata__") == metadata);

    // 4 bytes per float32, contiguous in the order given, the data section ending with the file.
    struct Expected {
        const char* name;
        const Tensor& t;
        std::vector<int64_t> shape;
        uint64_t begin, end;
    };
    const std::vector<Expected> expected = {
        {"a", a, {2, 3}, 0, 24}, {"s", s, {}, 24, 28}, {"c", c, {1, 2, 1, 1}, 28, 36}};
    CHECK(bytes.size() == 8 + n + 36);
    for (const Expected& e : expected) {
        INFO(e.name);
        const auto& entry = json.at(e.name);
        CHECK(entry.at("dtype") == "F32");
        CHECK(entry.at("shape").get<std::vector<int64_t>>() == e.shape);
        CHECK(entry.at("data_offsets").get<std::vector<uint64_t>>() == std::vector<uint64_t>{e.begin, e.end});
        for (size_t k = 0; k < static_cast<size_t>(e.t.numel()); ++k)
            CHECK(le_float_at(bytes, 8 + n + e.begin + 4 * k) == e.t.data()[k]);
    }

    // And a file written by hand to the format loads, tensors returned in offset order, not header order.
    const std::string header2 =
        R"({"second":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},"first":{"shape":[2],"data_offsets":[0,8],"dtype":"F32"}})";
    const fs::path hand = dir.write("hand.safetensors", file_bytes(header2 + "    ", le_floats({1.0f, 2.0f, 3.0f})));
    const auto loaded = nn::load_safetensors(hand);
    REQUIRE(loaded.tensors.size() == 2);
    CHECK(loaded.tensors[0].first == "first");
    CHECK(loaded.tensors[0].second.to_vector() == std::vector<float>{1.0f, 2.0f});
    CHECK(loaded.tensors[1].second.to_vector() == std::vector<float>{3.0f});
}

TEST_CASE("a checksum names the damaged tensor, and a file from before checksums loads with one warning",
          "[safetensors][checkpoint]") {
    const TempDir dir("checksums");
    Generator gen(3);
    const nn::NamedTensors tensors = {{"first", randn({4, 8}, gen)}, {"second", randn({16}, gen)}};
    const fs::path p = dir.path / "w.safetensors";
    nn::save_safetensors(p, tensors, {{"step", "7"}});
    std::vector<std::string> warnings;
    nn::set_warning_handler([&](const std::string& message) { warnings.push_back(message); });
    REQUIRE(nn::load_safetensors(p).checksummed);
    CHECK(warnings.empty());

    std::string bytes = read_bytes(p);
    uint64_t n = 0;
    for (size_t i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
    SECTION("one flipped bit in a value") {
        bytes[8 + n + 4 * 32 + 4 * 5 + 3] ^= 0x40;  // "second"[5]'s top exponent bit
        const fs::path bad = dir.write("flipped.safetensors", bytes);
        CHECK_THAT(load_error(bad),
                   Contains("flipped.safetensors") && Contains("tensor \"second\" does not match its checksum"));
    }
    SECTION("a checksum that is not hex, or names no tensor, or is missing for one tensor") {
        std::string header = bytes.substr(8, n);
        const size_t at = header.find("\"crc32c.first\":\"") + std::string("\"crc32c.first\":\"").size();
        std::string not_hex = header;
        not_hex.replace(at, 1, "g");
        CHECK_THAT(load_error(dir.write("not_hex.safetensors", bytes.substr(0, 8) + not_hex + bytes.substr(8 + n))),
                   Contains("the checksum of tensor \"first\" is not 8 hex digits"));
        std::string other = header;
        other.replace(header.find("crc32c.first"), 12, "crc32c.fxrst");
        CHECK_THAT(load_error(dir.write("other.safetensors", bytes.substr(0, 8) + other + bytes.substr(8 + n))),
                   Contains("a checksum names tensor \"fxrst\", which the file does not hold"));
    }
    SECTION("no checksums at all: loads, with one warning naming the file") {
        std::string header = bytes.substr(8, n);
        for (const char* key : {"\"crc32c.__metadata__\":\"", "\"crc32c.first\":\"", "\"crc32c.second\":\""}) {
            const size_t begin = header.find(key), end = header.find("\",", begin + std::strlen(key)) + 2;
            header.replace(begin, end - begin, std::string(end - begin, ' '));  // same length: offsets stay
        }
        const fs::path legacy = dir.write("legacy.safetensors", bytes.substr(0, 8) + header + bytes.substr(8 + n));
        const nn::Safetensors loaded = nn::load_safetensors(legacy);
        CHECK_FALSE(loaded.checksummed);
        CHECK(loaded.metadata == std::map<std::string, std::string>{{"step", "7"}});
        CHECK(same_bits(loaded.tensors[1].second, tensors[1].second));
        REQUIRE(warnings.size() == 1);
        CHECK_THAT(warnings[0], Contains("legacy.safetensors") && Contains("carries no checksums"));
    }
    SECTION(
        "one changed character of a setting is refused naming the file; a file from before the metadata's checksum "
        "loads with a note") {
        std::string header = bytes.substr(8, n);
        const size_t at = header.find("\"step\":\"7\"");
        REQUIRE(at != std::string::npos);
        std::string edited = header;
        edited[at + 8] = '8';  // "step": "7" -> "8", the tensors' checksums still right
        CHECK_THAT(load_error(dir.write("edited.safetensors", bytes.substr(0, 8) + edited + bytes.substr(8 + n))),
                   Contains("edited.safetensors") && Contains("the metadata does not match its checksum"));
        const char* key = "\"crc32c.__metadata__\":\"";
        const size_t begin = header.find(key), end = header.find("\",", begin + std::strlen(key)) + 2;
        REQUIRE(begin != std::string::npos);
        header.replace(begin, end - begin, std::string(end - begin, ' '));
        const fs::path older = dir.write("older.safetensors", bytes.substr(0, 8) + header + bytes.substr(8 + n));
        CHECK(nn::load_safetensors(older).metadata == std::map<std::string, std::string>{{"step", "7"}});
        REQUIRE(warnings.size() == 1);
        CHECK_THAT(warnings[0], Contains("older.safetensors") && Contains("no checksum of its metadata") &&
                                    Contains("settings are not verified"));
    }
    nn::set_warning_handler(nullptr);
    CHECK_THROWS_WITH(nn::save_safetensors(p, tensors, {{"crc32c.first", "0"}}), Contains("reserved for checksums"));
    CHECK_THROWS_WITH(nn::save_safetensors(p, tensors, {{"crc32c.__metadata__", "0"}}),
                      Contains("reserved for checksums"));
}

TEST_CASE("save_safetensors writes no header that loading would refuse", "[safetensors][checkpoint][errors]") {
    const TempDir dir("header-limit");
    const fs::path p = dir.path / "w.safetensors";
    const nn::NamedTensors tensors = {{"w", tensor({1.0f, 2.0f}, {2})}};
    const std::string big(nn::SafetensorsLimits{}.max_header_bytes, 'x');  // 100 MB: with the rest, over
    CHECK(nn::safetensors_header_bytes(tensors, {{"big", big}}) > nn::SafetensorsLimits{}.max_header_bytes);
    CHECK_THROWS_WITH(nn::save_safetensors(p, tensors, {{"big", big}}),
                      Contains("the header would be") && Contains("nothing was written"));
    CHECK_FALSE(fs::exists(p));
    // the estimate is the header written, length included
    nn::save_safetensors(p, tensors, {{"small", "y"}});
    CHECK(nn::safetensors_header_bytes(tensors, {{"small", "y"}}) == fs::file_size(p) - 2 * 4);  // (2 floats of data)
}

TEST_CASE("loading weights refuses a NaN or an infinity, naming tensor and index", "[safetensors][checkpoint]") {
    const TempDir dir("finite");
    nn::Linear layer({.in = 3, .out = 2});
    layer.weight.data()[4] = std::numeric_limits<float>::infinity();
    const fs::path p = dir.path / "layer.safetensors";
    nn::save_module(p, layer);  // saving keeps any value: the file is faithful
    nn::Linear other({.in = 3, .out = 2});
    const std::vector<float> before = other.weight.to_vector();
    CHECK_THROWS_WITH(nn::load_module(p, other),
                      Contains("layer.safetensors") && Contains("tensor \"weight\" holds inf at index 4"));
    CHECK(other.weight.to_vector() == before);  // nothing loaded
    CHECK_THROWS_WITH(nn::check_finite({{"b", tensor({0.0f, std::nanf("")}, {2})}}, "here"),
                      Contains("here: tensor \"b\" holds nan at index 1"));
}

TEST_CASE("load_safetensors rejects each kind of malformed file, naming the path and the problem",
          "[safetensors][checkpoint][errors]") {
    const TempDir dir("corrupt");
    const std::string data20 = le_floats({1, 2, 3, 4, 5});  // a: 2 floats, b: 3 floats
    const auto entry = [](const char* dtype, const std::string& shape, const std::string& offsets) {
        return fmt::format(R"({{"dtype":"{}","shape":{},"data_offsets":{}}})", dtype, shape, offsets);
    };
    const auto two = [&](const std::string& a_offsets, const std::string& b_offsets) {
        return fmt::format(R"({{"a":{},"b":{}}})", entry("F32", "[2]", a_offsets), entry("F32", "[3]", b_offsets));
    };
    // a file of one tensor "a"
    const auto file_of_a = [&](const char* dtype, const std::string& shape, const std::string& offsets,
                               const std::string& data) {
        return file_bytes(fmt::format(R"({{"a":{}}})", entry(dtype, shape, offsets)), data);
    };
    const std::string good_header = two("[0,8]", "[8,20]");
    const std::string good = file_bytes(good_header, data20);
    REQUIRE_NOTHROW(nn::load_safetensors(dir.write("good.safetensors", good)));

    struct Case {
        const char* what;
        std::string bytes;
        const char* reason;
    };
    const std::vector<Case> cases = {
        {"empty file", "", "too short for the 8-byte header length"},
        {"5 bytes", good.substr(0, 5), "too short"},
        {"cut inside the header", good.substr(0, 8 + good_header.size() - 1), "runs past the end of the file"},
        {"cut inside the data", good.substr(0, good.size() - 1), "ends past the end of the file"},
        {"header length past the end",
         file_bytes(good_header, data20).replace(0, 8, std::string("\x00\x10\0\0\0\0\0\0", 8)),
         "the header length 4096 runs past the end"},
        {"header length 2^64 - 1", std::string(8, '\xFF') + good_header + data20, "runs past the end"},
        {"trailing garbage", good + "junk", "4 bytes of trailing data after the last tensor"},
        {"overlapping offsets", file_bytes(two("[0,8]", "[4,16]"), data20.substr(0, 16)),
         R"(tensor "b" (data_offsets [4, 16]) overlaps tensor "a")"},
        {"same offsets", file_bytes(two("[0,8]", "[0,12]"), data20.substr(0, 12)), "overlaps"},
        {"gapped offsets", file_bytes(two("[0,8]", "[12,24]"), data20 + "1234"),
         R"(a gap of 4 bytes before tensor "b")"},
        {"not starting at 0", file_bytes(two("[4,12]", "[12,24]"), data20 + "1234"),
         R"(a gap of 4 bytes before tensor "a")"},
        {"wrong dtype F16", file_of_a("F16", "[2]", "[0,4]", "abcd"),
         R"(tensor "a" has dtype "F16"; only F32 is supported)"},
        {"shape disagreeing with offsets",
         file_bytes(two("[0,8]", "[8,16]").replace(two("[0,8]", "[8,16]").find("[3]"), 3, "[2,3]"),
                    data20.substr(0, 16)),
         "data_offsets [8, 16] hold 8 bytes, but shape (2, 3) of F32 needs 24"},
        {"not JSON", file_bytes("{\"a\": ", ""), "the header is not valid JSON"},
        {"not an object", file_bytes("[1, 2]  ", ""), "the header is not a JSON object but array"},
        {"invalid UTF-8 in a name", file_bytes("{\"\xC0\x80\":{}}", ""), "not valid JSON"},
        {"an entry without dtype", file_bytes(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", "abcd"),
         R"(tensor "a" has no "dtype")"},
        {"an entry that is a number", file_bytes(R"({"a":5})", ""), R"(tensor "a" must be an object, got number)"},
        {"dtype not a string", file_bytes(R"({"a":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", "abcd"),
         R"("dtype" must be a string)"},
        {"negative shape", file_of_a("F32", "[-1]", "[0,4]", "abcd"),
         "\"shape\" must be an array of non-negative integers"},
        {"fractional shape", file_of_a("F32", "[1.5]", "[0,4]", "abcd"), "non-negative integers"},
        {"shape not an array", file_of_a("F32", "4", "[0,16]", "abcd"), "non-negative integers"},
        {"absurd shape", file_of_a("F32", "[4294967296,4294967296,4294967296]", "[0,4]", "abcd"),
         "has too many elements"},
        {"offsets reversed", file_of_a("F32", "[1]", "[4,0]", "abcd"), "must be [begin, end] with begin <= end"},
        {"three offsets", file_of_a("F32", "[1]", "[0,4,8]", "abcd"), "must be [begin, end]"},
        {"duplicate names",
         file_bytes(fmt::format(R"({{"a":{},"a":{}}})", entry("F32", "[1]", "[0,4]"), entry("F32", "[1]", "[4,8]")),
                    "abcdefgh"),
         R"(names tensor "a" twice)"},
        {"duplicate field",
         file_bytes(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcd"),
         R"(repeats the key "dtype")"},
        {"metadata not an object", file_bytes(R"({"__metadata__":[1]})", ""),
         R"("__metadata__" must be an object of strings, got array)"},
        {"metadata not strings", file_bytes(R"({"__metadata__":{"step":12}})", ""), R"("step" is number)"},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        INFO("case: " << cases[i].what);
        const fs::path p = dir.write(fmt::format("case{}.safetensors", i), cases[i].bytes);
        const std::string message = load_error(p);
        CHECK_THAT(message, StartsWith("'" + p.string() + "': ") && Contains(cases[i].reason));
    }

    // Bounds on the file and the header, each below this good file's sizes.
    const fs::path good_path = dir.path / "good.safetensors";
    CHECK_THAT(load_error(good_path, {.max_header_bytes = 100 << 20, .max_file_bytes = 16}),
               Contains(fmt::format("the file is {} bytes, over the limit of 16", good.size())));
    CHECK_THAT(load_error(good_path, {.max_header_bytes = 16, .max_file_bytes = 1 << 20}),
               Contains(fmt::format("the header length {} is over the limit of 16", good_header.size())));

    // Not files at all.
    CHECK_THAT(load_error(dir.path / "missing.safetensors"),
               Contains("missing.safetensors") && Contains("No such file"));
    CHECK_THAT(load_error(dir.path), Contains("is a directory"));
}

TEST_CASE("load_safetensors rejects random bytes without crashing", "[safetensors][checkpoint][errors]") {
    const TempDir dir("random");
    Generator gen(99);
    for (int round = 0; round < 50; ++round) {
        std::string bytes(static_cast<size_t>(gen.randint(300)), '\0');
        for (char& b : bytes) b = static_cast<char>(gen.randint(256));
        // Half the time a plausible header length, so the JSON parser sees the noise too.
        if (round % 2 == 1 && bytes.size() >= 8)
            bytes.replace(0, 8,
                          std::string(1, static_cast<char>(gen.randint(static_cast<int64_t>(bytes.size()) - 7))) +
                              std::string(7, '\0'));
        INFO("round " << round << ", " << bytes.size() << " bytes");
        const fs::path p = dir.write("noise.safetensors", bytes);
        CHECK_THAT(load_error(p), Contains(p.string()));
    }
}

TEST_CASE("save_safetensors rejects bad names and fails cleanly where it cannot write",
          "[safetensors][checkpoint][errors]") {
    const TempDir dir("save-errors");
    const fs::path p = dir.path / "ckpt.safetensors";
    nn::save_safetensors(p, {{"w", tensor({1, 2, 3})}}, {{"step", "100"}});
    const std::string original = read_bytes(p);

    // Bad names: nothing is written, the existing checkpoint stays.
    CHECK_THAT(message_of<std::invalid_argument>([&] {
                   nn::save_safetensors(p, {{"x", ones({1})}, {"x", ones({2})}});
               }),
               Contains(R"(the name "x" is used twice)"));
    CHECK_THAT(message_of<std::invalid_argument>([&] {
                   nn::save_safetensors(p, {{"", ones({1})}});
               }),
               Contains("tensor 0 has an empty name"));
    CHECK_THAT(message_of<std::invalid_argument>([&] {
                   nn::save_safetensors(p, {{"__metadata__", ones({1})}});
               }),
               Contains("reserved"));
    CHECK_THAT(message_of<std::invalid_argument>([&] {
                   nn::save_safetensors(p, {{"u", Tensor()}});
               }),
               Contains("undefined"));
    CHECK_THAT(message_of<std::invalid_argument>([&] {
                   nn::save_safetensors(p, {{"w", ones({1})}}, {{"k", "caf\xE9"}});
               }),
               Contains("not valid UTF-8"));
    CHECK(read_bytes(p) == original);

    // A directory that does not exist, and a "directory" that is a file.
    const fs::path nowhere = dir.path / "no" / "such" / "dir" / "ckpt.safetensors";
    CHECK_THAT(message_of<std::runtime_error>([&] {
                   nn::save_safetensors(nowhere, {{"w", ones({1})}});
               }),
               Contains(nowhere.string()) && Contains("No such file or directory"));
    const fs::path under_file = p / "ckpt.safetensors";
    CHECK_THAT(message_of<std::runtime_error>([&] {
                   nn::save_safetensors(under_file, {{"w", ones({1})}});
               }),
               Contains(under_file.string()) && Contains("Not a directory"));

    // The target is a directory: everything is written, the rename fails, the temporary file goes.
    fs::create_directory(dir.path / "a_directory");
    CHECK_THAT(message_of<std::runtime_error>([&] {
                   nn::save_safetensors(dir.path / "a_directory", {{"w", ones({1})}});
               }),
               Contains("cannot rename") && Contains("Is a directory"));

    // An unwritable directory (root writes anyway, so only checked for other users).
    const fs::path locked = dir.path / "locked";
    fs::create_directory(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    if (::geteuid() != 0)
        CHECK_THAT(message_of<std::runtime_error>([&] {
                       nn::save_safetensors(locked / "c.safetensors", {{"w", ones({1})}});
                   }),
                   Contains("Permission denied"));
    fs::permissions(locked, fs::perms::owner_all);
    CHECK(fs::is_empty(locked));

    CHECK(dir.files() == std::vector<std::string>{"a_directory", "ckpt.safetensors", "locked"});
    CHECK(read_bytes(p) == original);
}

TEST_CASE("a save that fails midway (file size limit, as a full disk) leaves the old checkpoint intact",
          "[safetensors][checkpoint][errors]") {
    const TempDir dir("midway");
    const fs::path p = dir.path / "ckpt.safetensors";
    nn::save_safetensors(p, {{"w", tensor({1, 2, 3})}});
    const std::string original = read_bytes(p);

    // With RLIMIT_FSIZE at 4 KB and SIGXFSZ ignored, write() past 4 KB fails with EFBIG, the way it
    // fails with ENOSPC on a full disk: a partial write, then an error.
    rlimit saved{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
    const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
    rlimit small = saved;
    small.rlim_cur = 4096;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    std::string message;
    try {
        nn::save_safetensors(p, {{"big", zeros({10000})}});
    } catch (const std::runtime_error& e) {
        message = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &saved);
    ::signal(SIGXFSZ, old_handler);

    CHECK_THAT(message, Contains(p.string()) && Contains("write failed") && Contains("File too large"));
    CHECK(dir.files() == std::vector<std::string>{"ckpt.safetensors"});  // the temporary file is gone
    CHECK(read_bytes(p) == original);
    CHECK(nn::load_safetensors(p).tensors.at(0).second.to_vector() == std::vector<float>{1, 2, 3});
}

TEST_CASE("save_module and load_module round-trip a module's parameters", "[checkpoint]") {
    const TempDir dir("module");
    Generator gen(5), other(6);
    Tiny saved(gen), restored(other);
    const fs::path p = dir.path / "tiny.safetensors";
    nn::save_module(p, saved, {{"model", "tiny"}});
    const auto file = nn::load_safetensors(p);
    CHECK(file.metadata.at("model") == "tiny");
    REQUIRE(file.tensors.size() == 3);
    CHECK(file.tensors[0].first == "first.weight");

    REQUIRE(values_of(restored) != values_of(saved));
    const Tensor weight_before = restored.first.weight;
    nn::load_module(p, restored);
    CHECK(values_of(restored) == values_of(saved));
    // Loaded in place: the parameters are the same tensors (an optimizer holding them sees the new values).
    CHECK(restored.first.weight.impl() == weight_before.impl());
    CHECK(restored.first.weight.requires_grad());
}

TEST_CASE("load_module rejects missing, extra and mismatched tensors and leaves the module unchanged",
          "[checkpoint][errors]") {
    const TempDir dir("module-errors");
    Generator gen(7);
    Tiny target(gen);
    const auto before = values_of(target);
    const auto fails = [&](const fs::path& p) {
        const std::string message = message_of<std::runtime_error>([&] { nn::load_module(p, target); });
        CHECK(values_of(target) == before);
        return message;
    };

    Tiny wider(gen, 5);  // first: (3, 5), (5); second: (5, 2)
    const fs::path wide = dir.path / "wide.safetensors";
    nn::save_module(wide, wider);
    const std::string mismatch = fails(wide);
    CHECK_THAT(mismatch, Contains(wide.string()) && Contains("nothing was loaded") &&
                             Contains("3 of a different shape") &&
                             Contains("first.weight is (3, 5) in the file, (3, 4) in the module") &&
                             Contains("first.bias is (5) in the file, (4) in the module"));

    nn::NamedTensors params = target.named_parameters();
    params.erase(params.begin() + 1);  // first.bias
    const fs::path missing = dir.path / "missing.safetensors";
    nn::save_safetensors(missing, params);
    CHECK_THAT(fails(missing), Contains("1 missing from the file: first.bias (4)"));

    params = target.named_parameters();
    params.emplace_back("third.weight", ones({2, 2}));
    const fs::path extra = dir.path / "extra.safetensors";
    nn::save_safetensors(extra, params);
    CHECK_THAT(fails(extra), Contains(R"(1 in the file but not in the module: "third.weight" (2, 2))"));

    // A corrupt file is the loader's error, and also leaves the module alone.
    const fs::path corrupt = dir.write("corrupt.safetensors", read_bytes(wide).substr(0, 40));
    CHECK_THAT(fails(corrupt), StartsWith("'" + corrupt.string() + "': the header length") &&
                                   Contains("runs past the end of the file"));
}
