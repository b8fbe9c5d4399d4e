// Token files as nanoGPT and llm.c write them, read memory-mapped (2 bytes a token, never read whole):
//   nanoGPT  train.bin / val.bin: raw little-endian uint16 ids, no header (prepare.py's np.uint16 tofile)
//   llm.c    a header of 256 int32 (magic 20240520, version 1, the token count, then zeros), then the
//            count's uint16 ids
//
//     const nn::TokenIds train = nn::map_token_file("data/train.bin", 50257);
//     nn::TokenFileWriter out("train.bin", nn::TokenFileFormat::llmc);  out.append(ids);  out.finish();
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

#include <nn/files/atomic_file.h>
#include <nn/tokenizers/token_ids.h>

namespace nn {

enum class TokenFileFormat {
    detect,  // llm.c's when the file starts with its magic, else nanoGPT's
    nanogpt,
    llmc,
};

// Whether the file is one of these (its name ends ".bin"), for programs that take text or tokens.
bool is_token_file(const std::filesystem::path& path);

// The file's ids, mapped in place, each checked to be below vocab_size (one pass over the mapping).
// Throws std::runtime_error naming the path when it is missing or not a regular file, empty, of an odd
// byte count, llm.c's model file (its magic 20240326), with a wrong llm.c magic or version (format llmc, or detect with the magic and a bad
// version), a body shorter or longer than the header's count, or an id >= vocab_size (with its position).
TokenIds map_token_file(const std::filesystem::path& path, int64_t vocab_size,
                        TokenFileFormat format = TokenFileFormat::detect);

// Writes ids to a token file as they come (llm.c's count is written when finished), through a temporary
// file that becomes `path` only on finish(): a failure or an exception leaves no half-written file. Ids
// must be below 65,536. Throws std::runtime_error naming the path when a write fails.
class TokenFileWriter {
public:
    TokenFileWriter(const std::filesystem::path& path, TokenFileFormat format);
    TokenFileWriter(const TokenFileWriter&) = delete;
    TokenFileWriter& operator=(const TokenFileWriter&) = delete;

    void append(std::span<const int64_t> ids);
    // Writes llm.c's header (with the count) and renames the file into place.
    void finish();
    uint64_t count() const { return count_; }

private:
    std::filesystem::path path_;
    TokenFileFormat format_;
    std::unique_ptr<AtomicFile> file_;
    uint64_t count_ = 0;
};

}  // namespace nn
