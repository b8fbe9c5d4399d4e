// Token files (nn/train/token_file.h): nanoGPT's raw uint16 and llm.c's headed files, written and read
// back mapped, and every malformed file refused naming it.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include <nn/train/text_data.h>
#include <nn/train/token_file.h>

#include "temp_dir.h"

namespace {

std::string le16(const std::vector<uint16_t>& ids) {
    std::string bytes;
    for (uint16_t id : ids) bytes += {static_cast<char>(id & 0xFF), static_cast<char>(id >> 8)};
    return bytes;
}

std::string llmc_header(int32_t magic, int32_t version, int32_t count) {
    std::array<int32_t, 256> header{};
    header[0] = magic, header[1] = version, header[2] = count;
    return std::string(reinterpret_cast<const char*>(header.data()), sizeof(header));
}

}  // namespace

TEST_CASE("token files: nanoGPT's raw uint16 and llm.c's headed files are read in place", "[token_file]") {
    test::TempDir dir("token-files");
    const std::vector<uint16_t> ids = {50256, 15496, 995, 0, 1, 258};
    const std::vector<int64_t> wide(ids.begin(), ids.end());

    const auto raw = dir.write("train.bin", le16(ids));
    const nn::TokenIds a = nn::map_token_file(raw, 50257);
    CHECK(a.mapped());
    CHECK(a.to_vector() == wide);
    CHECK(a.fingerprint() == nn::TokenIds(std::span<const int64_t>(wide)).fingerprint());

    const auto llmc = dir.write("llmc.bin", llmc_header(20240520, 1, 6) + le16(ids));
    CHECK(nn::map_token_file(llmc, 50257).to_vector() == wide);
    CHECK(nn::map_token_file(llmc, 50257, nn::TokenFileFormat::llmc).to_vector() == wide);

    // the writer's files are the same bytes, in both formats
    for (auto [format, expected] :
         {std::pair{nn::TokenFileFormat::nanogpt, raw}, std::pair{nn::TokenFileFormat::llmc, llmc}}) {
        const auto written = dir.path / "written.bin";
        nn::TokenFileWriter out(written, format);
        out.append(std::span(wide).first(2));
        out.append(std::span(wide).subspan(2));
        out.finish();
        CHECK(out.count() == 6);
        CHECK(test::read_bytes(written) == test::read_bytes(expected));
    }
    // batches read the mapped ids, the validation from its own stream
    const auto val = dir.write("val.bin", le16({7, 8, 9, 10}));
    const nn::TextData data(nn::map_token_file(raw, 50257), nn::map_token_file(val, 50257));
    CHECK(data.size(nn::Split::train) == 6);
    CHECK(data.size(nn::Split::validation) == 4);
    autograd::Generator gen(1);
    const nn::Batch batch = data.batch(nn::Split::validation, 4, 2, gen);
    for (size_t i = 0; i < batch.inputs.size(); ++i) {
        CHECK(batch.inputs[i] >= 7);
        CHECK(batch.targets[i] == batch.inputs[i] + 1);
    }
}

TEST_CASE("token files that are wrong are refused naming the file", "[token_file]") {
    test::TempDir dir("token-files-bad");
    const std::vector<uint16_t> ids = {1, 2, 3};
    auto refused = [&](const std::string& name, const std::string& bytes, const std::string& why,
                       nn::TokenFileFormat format = nn::TokenFileFormat::detect) {
        const auto path = dir.write(name, bytes);
        CHECK_THROWS_WITH(nn::map_token_file(path, 50257, format),
                          Catch::Contains(path.string()) && Catch::Contains(why));
    };
    refused("wrong_magic.bin", llmc_header(20240521, 1, 3) + le16(ids), "has magic 20240521, not llm.c's 20240520",
            nn::TokenFileFormat::llmc);
    refused("version.bin", llmc_header(20240520, 2, 3) + le16(ids), "version 2");
    refused("truncated.bin", llmc_header(20240520, 1, 4) + le16(ids), "is truncated: its header gives 4 tokens");
    refused("long.bin", llmc_header(20240520, 1, 2) + le16(ids), "has 2 bytes after the 2 tokens");
    refused("short_header.bin", std::string(100, '\0'), "shorter than llm.c's header", nn::TokenFileFormat::llmc);
    refused("odd.bin", le16(ids) + "x", "odd byte count (7)");
    refused("empty.bin", "", "is empty");
    refused("past_vocab.bin", le16({1, 50257, 2}), "token 50257 at position 1 is outside the vocabulary [0, 50257)");
    refused("past_vocab_llmc.bin", llmc_header(20240520, 1, 3) + le16({1, 2, 65535}), "token 65535 at position 2");
    CHECK_THROWS_WITH(nn::map_token_file(dir.path / "missing.bin", 50257),
                      Catch::Contains("missing.bin") && Catch::Contains("cannot open"));
    CHECK_THROWS_WITH(nn::map_token_file(dir.path, 50257), Catch::Contains("is a directory, not a token file"));
    // a named pipe is refused at once (it waited forever in open() for a writer)
    const auto fifo = dir.path / "fifo.bin";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH(nn::map_token_file(fifo, 50257),
                      Catch::Contains("fifo.bin") && Catch::Contains("is a named pipe (FIFO)"));
    nn::TokenFileWriter out(dir.path / "big.bin", nn::TokenFileFormat::nanogpt);
    CHECK_THROWS_WITH(out.append(std::vector<int64_t>{70000}), Catch::Contains("big.bin") && Catch::Contains("70000"));
}

TEST_CASE("a token file cut short while it is mapped stops the reads with its name, not SIGBUS",
          "[token_file][errors]") {
    test::TempDir dir("token-files-cut");
    std::vector<uint16_t> ids(1 << 20);  // 2 MB: many pages past the cut
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint16_t>(1 + i % 1000);
    const auto path = dir.write("train.bin", le16(ids));
    const nn::TokenIds mapped = nn::map_token_file(path, 50257);
    const nn::TokenIds other = nn::map_token_file(dir.write("other.bin", le16(ids)), 50257);
    std::vector<int64_t> window(64);
    mapped.copy_to(100000, 64, window.data());
    CHECK(window[0] == 1 + 100000 % 1000);

    std::filesystem::resize_file(path, 4096);  // as another program rewriting it would
    // a read past the new end faulted (SIGBUS: the process died, exit 135, no message)
    CHECK_THROWS_WITH(mapped.copy_to(900000, 64, window.data()),
                      Catch::Contains(path.string()) && Catch::Contains("was cut short while it was read"));
    CHECK_THROWS_WITH(mapped.copy_to(0, 64, window.data()), Catch::Contains("cut short"));  // it stays refused
    CHECK_THROWS_WITH(mapped.fingerprint(), Catch::Contains("cut short"));
    other.copy_to(900000, 64, window.data());  // another mapping is not touched
    CHECK(window[0] == 1 + 900000 % 1000);
    CHECK_NOTHROW(other.check_intact());
}
