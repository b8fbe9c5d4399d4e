#include "nn/tokenizers/text_file.h"
#include "char_encoding.h"
#include "utf8.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nn/files/file_names.h>
#include <nn/files/machine.h>

namespace nn {

using detail::count_characters;
using detail::decode_utf8;
using detail::encode_into;
using detail::path_str;
using detail::UnknownCharacters;
using detail::VocabularyBuilder;

namespace {

// Sizes as messages show them: "3.24 GB", "120 MB", "512 bytes".
std::string show_bytes(double bytes) {
    if (bytes >= 1e9) return fmt::format("{:.3g} GB", bytes / 1e9);
    if (bytes >= 1e6) return fmt::format("{:.3g} MB", bytes / 1e6);
    if (bytes >= 1e3) return fmt::format("{:.3g} kB", bytes / 1e3);
    return fmt::format("{} bytes", bytes);
}

constexpr size_t kPieceBytes = size_t{1} << 16;

// The length of the longest prefix of `bytes` that does not end inside a character: a character cut at
// the end of one read is finished by the next. Invalid bytes are left in, for the decoder to name.
size_t whole_characters(std::string_view bytes) {
    const size_t n = bytes.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const auto b = static_cast<unsigned char>(bytes[n - back]);
        if ((b & 0xC0) == 0x80) continue;  // a continuation byte: its lead is further back
        const size_t length = b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        return length > back ? n - back : n;
    }
    return n;
}

// A text file open for reading, checked to be a regular file; its path starts its messages.
class TextFile {
public:
    explicit TextFile(const std::filesystem::path& path) : path_(path) {
        // O_NONBLOCK: opening a named pipe would otherwise wait for a writer, forever; it is refused
        // below, and on a regular file the flag changes nothing.
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd_ < 0) throw fail(fmt::format("cannot open ({})", std::strerror(errno)));
        struct stat st {};
        if (::fstat(fd_, &st) != 0) {
            const int error = errno;
            ::close(fd_);
            throw fail(fmt::format("cannot stat ({})", std::strerror(error)));
        }
        if (!S_ISREG(st.st_mode)) {
            ::close(fd_);
            throw fail(fmt::format("is {}, not a text file", file_kind(st.st_mode)));
        }
        size_ = static_cast<uint64_t>(st.st_size);
    }
    ~TextFile() { ::close(fd_); }
    TextFile(const TextFile&) = delete;
    TextFile& operator=(const TextFile&) = delete;

    uint64_t size() const { return size_; }  // as the file system says before reading
    std::runtime_error fail(const std::string& what) const {
        return std::runtime_error(fmt::format("{}: {}", path_str(path_), what));
    }

    // Reads the whole file from its start and calls on_piece(piece, offset) for consecutive pieces that
    // end between characters, each checked to hold no NUL byte and only valid UTF-8 (the messages give
    // offsets in the file). An empty file is an error.
    template <typename OnPiece>
    void scan(OnPiece&& on_piece) {
        if (::lseek(fd_, 0, SEEK_SET) != 0) throw fail(fmt::format("cannot seek ({})", std::strerror(errno)));
        std::string buffer(kPieceBytes + 3, '\0');
        size_t carried = 0;   // the start of a character cut by the last read, moved to the front
        uint64_t offset = 0;  // where buffer[0] is in the file
        for (;;) {
            const ssize_t n = ::read(fd_, buffer.data() + carried, kPieceBytes);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw fail(fmt::format("cannot read ({})", std::strerror(errno)));
            const bool at_end = n == 0;
            const std::string_view bytes(buffer.data(), carried + static_cast<size_t>(n));
            if (const void* nul = std::memchr(bytes.data(), '\0', bytes.size()))
                throw fail(fmt::format("holds binary data, not text (a NUL byte at offset {})",
                                       offset + static_cast<uint64_t>(static_cast<const char*>(nul) - bytes.data())));
            const std::string_view piece = bytes.substr(0, at_end ? bytes.size() : whole_characters(bytes));
            try {
                decode_utf8(
                    piece, "text", [](char32_t) {}, offset);
            } catch (const std::invalid_argument& e) {
                throw fail(fmt::format("is not UTF-8 text ({})", e.what()));
            }
            if (!piece.empty()) on_piece(piece, offset);
            offset += piece.size();
            carried = bytes.size() - piece.size();
            std::memmove(buffer.data(), bytes.data() + piece.size(), carried);
            if (at_end) break;
        }
        if (offset == 0) throw fail("is empty");
    }

private:
    std::filesystem::path path_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

}  // namespace

std::string read_text_file(const std::filesystem::path& path) {
    TextFile file(path);
    std::string text;
    try {
        text.reserve(file.size());
        file.scan([&](std::string_view piece, uint64_t) { text.append(piece); });
    } catch (const std::bad_alloc&) {
        throw file.fail(fmt::format("could not allocate {} for the text", show_bytes(double(file.size()))));
    }
    return text;
}

TokenizedText read_tokenized_text(const std::filesystem::path& path) {
    TextFile file(path);
    // Refused before reading: the ids take at least a byte per character, and most text has about
    // one character per byte.
    const uint64_t have = physical_memory_bytes();
    if (have != 0 && file.size() > have)
        throw file.fail(
            fmt::format("its {} of text would take about {} of memory as token ids (1 byte per "
                        "character), more than this machine's {}",
                        show_bytes(double(file.size())), show_bytes(double(file.size())), show_bytes(double(have))));

    VocabularyBuilder vocabulary;  // first pass: the characters
    file.scan(
        [&](std::string_view piece, uint64_t) { decode_utf8(piece, "text", [&](char32_t c) { vocabulary.add(c); }); });
    CharTokenizer tokenizer(vocabulary.sorted());

    TokenIds ids(tokenizer.vocab_size());  // second pass: the ids
    const uint64_t n = vocabulary.characters();
    const auto changed = [&] {
        return file.fail("changed while it was read; read it again when nothing writes to it");
    };
    try {
        ids.visit([&](auto& v) { v.reserve(n); });
    } catch (const std::bad_alloc&) {
        throw file.fail(fmt::format("could not allocate {} for the token ids ({} characters, {} byte{} each)",
                                    show_bytes(double(n) * double(ids.bytes_per_id())), n, ids.bytes_per_id(),
                                    ids.bytes_per_id() == 1 ? "" : "s"));
    }
    UnknownCharacters unknown;
    file.scan([&](std::string_view piece, uint64_t offset) {
        ids.visit([&](auto& v) {
            if (v.size() + count_characters(piece) > n) throw changed();  // (before the ids outgrow their room)
            encode_into(tokenizer.vocabulary(), piece, /*skip_unknown=*/false, v, unknown, offset);
        });
        if (!unknown.found.empty()) throw changed();
    });
    if (static_cast<uint64_t>(ids.size()) != n) throw changed();
    return {std::move(tokenizer), std::move(ids)};
}

}  // namespace nn
