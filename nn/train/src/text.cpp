#include "nn/train/text.h"
#include "files.h"
#include "utf8.h"
#include "nn/train/machine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include <autograd/check.h>
#include <fmt/format.h>

namespace nn {

using detail::file_kind;
using detail::path_str;

using autograd::check;

namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;
constexpr size_t kMaxListed = 20;  // unknown characters named in one error message

bool is_scalar_value(char32_t c) { return c <= kMaxCodePoint && !(c >= 0xD800 && c <= 0xDFFF); }

// The code point at s[i] and its length in bytes, or why the bytes there are not UTF-8.
struct Decoded {
    char32_t code_point = 0;
    size_t length = 0;
    std::string error;  // empty when valid
};

Decoded decode_one(std::string_view s, size_t i) {
    const auto lead = static_cast<unsigned char>(s[i]);
    if (lead < 0x80) return {lead, 1, {}};
    if (lead < 0xC0) return {0, 0, fmt::format("unexpected continuation byte 0x{:02X}", lead)};
    if (lead < 0xC2) return {0, 0, fmt::format("overlong encoding (lead byte 0x{:02X})", lead)};
    if (lead >= 0xF5)
        return {0, 0, fmt::format("byte 0x{:02X} never appears in UTF-8 (it would start a code point past U+10FFFF)", lead)};
    const size_t length = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    char32_t c = lead & (length == 2 ? 0x1Fu : length == 3 ? 0x0Fu : 0x07u);
    for (size_t k = 1; k < length; ++k) {
        if (i + k >= s.size())
            return {0, 0, fmt::format("truncated sequence (lead byte 0x{:02X} needs {} bytes, the input ends after {})",
                                      lead, length, k == 1 ? "1 byte" : fmt::format("{} bytes", k))};
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80)
            return {0, 0, fmt::format("truncated sequence (lead byte 0x{:02X} needs {} bytes, byte {} is 0x{:02X})",
                                      lead, length, k + 1, b)};
        c = (c << 6) | (b & 0x3Fu);
    }
    if ((length == 3 && c < 0x800) || (length == 4 && c < 0x10000))
        return {0, 0, fmt::format("overlong encoding of U+{:04X} in {} bytes", static_cast<uint32_t>(c), length)};
    if (c >= 0xD800 && c <= 0xDFFF)
        return {0, 0, fmt::format("surrogate U+{:04X} (not a character)", static_cast<uint32_t>(c))};
    if (c > kMaxCodePoint) return {0, 0, fmt::format("U+{:X} is past U+10FFFF", static_cast<uint32_t>(c))};
    return {c, length, {}};
}

// Calls emit(code_point) for each character; throws std::invalid_argument "<who>: invalid UTF-8 at byte
// offset N: <reason>" at the first invalid sequence (N counted from `base`, where s starts in a file).
template <typename Emit>
void decode_utf8(std::string_view s, const char* who, Emit&& emit, uint64_t base = 0) {
    for (size_t i = 0; i < s.size();) {
        const auto lead = static_cast<unsigned char>(s[i]);
        if (lead < 0x80) {  // ASCII fast path
            emit(static_cast<char32_t>(lead));
            ++i;
            continue;
        }
        Decoded d = decode_one(s, i);
        check(d.error.empty(), "{}: invalid UTF-8 at byte offset {}: {}", who, base + i, d.error);
        emit(d.code_point);
        i += d.length;
    }
}

void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
}

// A character as an error message shows it: 'é' (U+00E9), '\n' (U+000A), '\x07' (U+0007). Control
// and invisible characters are escaped so the message stays on one line and shows something.
std::string describe(char32_t c) {
    const auto u = static_cast<uint32_t>(c);
    std::string shown;
    switch (c) {
        case U'\n': shown = "\\n"; break;
        case U'\t': shown = "\\t"; break;
        case U'\r': shown = "\\r"; break;
        case U'\'': shown = "\\'"; break;
        case U'\\': shown = "\\\\"; break;
        default:
            if (u < 0x20 || u == 0x7F)
                shown = fmt::format("\\x{:02X}", u);
            else if ((u >= 0x80 && u < 0xA0) || u == 0xA0 || u == 0xAD || (u >= 0x200B && u <= 0x200F) ||
                     (u >= 0x2028 && u <= 0x202E) || (u >= 0x2060 && u <= 0x2064) || u == 0xFEFF)
                shown = fmt::format("\\u{:04X}", u);
            else
                append_utf8(shown, c);
    }
    return fmt::format("'{}' (U+{:04X})", shown, u);
}

// The distinct characters of a text, collected piece by piece without sorting it: a table for ASCII, a
// set for the rest. Also counts the characters.
class VocabularyBuilder {
public:
    void add(char32_t c) {
        ++characters_;
        if (c < 128) ascii_[c] = true;
        else others_.insert(c);
    }
    uint64_t characters() const { return characters_; }
    std::vector<char32_t> sorted() const {
        std::vector<char32_t> vocabulary;
        for (char32_t c = 0; c < 128; ++c)
            if (ascii_[c]) vocabulary.push_back(c);
        const size_t n_ascii = vocabulary.size();
        vocabulary.insert(vocabulary.end(), others_.begin(), others_.end());
        std::sort(vocabulary.begin() + static_cast<std::ptrdiff_t>(n_ascii), vocabulary.end());
        return vocabulary;
    }

private:
    std::array<bool, 128> ascii_{};
    std::unordered_set<char32_t> others_;
    uint64_t characters_ = 0;
};

// Characters met that are not in the vocabulary: distinct, in order of first appearance.
struct UnknownCharacters {
    std::vector<char32_t> found;
    std::unordered_set<char32_t> seen;

    void add(char32_t c) {
        if (seen.insert(c).second) found.push_back(c);
    }
    // "encode: 2 characters are not in the vocabulary of 5: 'x' (U+0078), ..."
    std::string message(size_t vocab_size) const {
        std::string listed;
        for (size_t i = 0; i < found.size() && i < kMaxListed; ++i) listed += (i ? ", " : "") + describe(found[i]);
        if (found.size() > kMaxListed) listed += fmt::format(", and {} more", found.size() - kMaxListed);
        return fmt::format("encode: {} character{} not in the vocabulary of {}: {}", found.size(),
                           found.size() == 1 ? " is" : "s are", vocab_size, listed);
    }
};

// Appends the id of each character of `text` to `ids` (a vector of an integer type wide enough for the
// vocabulary); characters outside it go to `unknown` (Unknown::error) or are dropped (Unknown::skip).
template <typename Ids>
void encode_into(const std::vector<char32_t>& vocab, std::string_view text, Unknown policy, Ids& ids,
                 UnknownCharacters& unknown, uint64_t base = 0) {
    std::array<int32_t, 128> ascii_id;  // ASCII without a binary search: most text is mostly ASCII
    ascii_id.fill(-1);
    for (size_t i = 0; i < vocab.size() && vocab[i] < 128; ++i) ascii_id[vocab[i]] = static_cast<int32_t>(i);
    decode_utf8(text, "encode", [&](char32_t c) {
        int64_t id = -1;
        if (c < 128) {
            id = ascii_id[c];
        } else if (const auto it = std::lower_bound(vocab.begin(), vocab.end(), c); it != vocab.end() && *it == c) {
            id = it - vocab.begin();
        }
        if (id >= 0) ids.push_back(static_cast<typename Ids::value_type>(id));
        else if (policy == Unknown::error) unknown.add(c);
    }, base);
}

// Characters in valid UTF-8: the bytes that are not continuation bytes.
size_t count_characters(std::string_view text) {
    size_t n = 0;
    for (const char b : text) n += (static_cast<unsigned char>(b) & 0xC0) != 0x80;
    return n;
}

// Sizes as messages show them: "3.24 GB", "120 MB", "512 bytes".
std::string show_bytes(double bytes) {
    if (bytes >= 1e9) return fmt::format("{:.3g} GB", bytes / 1e9);
    if (bytes >= 1e6) return fmt::format("{:.3g} MB", bytes / 1e6);
    if (bytes >= 1e3) return fmt::format("{:.3g} kB", bytes / 1e3);
    return fmt::format("{} bytes", bytes);
}

}  // namespace

// --- CharTokenizer ------------------------------------------------------------------------------

CharTokenizer::CharTokenizer(std::vector<char32_t> vocabulary) : vocab_(std::move(vocabulary)) {
    check(!vocab_.empty(), "CharTokenizer: the vocabulary is empty");
    for (size_t i = 0; i < vocab_.size(); ++i) {
        check(is_scalar_value(vocab_[i]), "CharTokenizer: vocabulary entry {} is U+{:04X}, not a Unicode character",
              i, static_cast<uint32_t>(vocab_[i]));
        if (i > 0 && !(vocab_[i - 1] < vocab_[i]))  // (check() would evaluate vocab_[i - 1] at i = 0)
            throw std::invalid_argument(
                fmt::format("CharTokenizer: the vocabulary must be sorted without repeats, but entry {} {} follows {}",
                            i, describe(vocab_[i]), describe(vocab_[i - 1])));
    }
}

CharTokenizer CharTokenizer::from_text(std::string_view corpus) {
    check(!corpus.empty(), "CharTokenizer::from_text: the corpus is empty");
    VocabularyBuilder vocabulary;
    decode_utf8(corpus, "CharTokenizer::from_text", [&](char32_t c) { vocabulary.add(c); });
    return CharTokenizer(vocabulary.sorted());
}

namespace detail {
void check_utf8(std::string_view text, const char* who, uint64_t base) { decode_utf8(text, who, [](char32_t) {}, base); }
}  // namespace detail

std::vector<int64_t> CharTokenizer::encode(std::string_view text, Unknown policy) const {
    std::vector<int64_t> ids;
    ids.reserve(count_characters(text));
    UnknownCharacters unknown;
    encode_into(vocab_, text, policy, ids, unknown);
    if (!unknown.found.empty()) throw std::invalid_argument(unknown.message(vocab_.size()));
    return ids;
}

TokenIds CharTokenizer::encode_ids(std::string_view text, Unknown policy) const {
    TokenIds ids(vocab_size());
    UnknownCharacters unknown;
    ids.visit([&](auto& v) {
        v.reserve(count_characters(text));
        encode_into(vocab_, text, policy, v, unknown);
    });
    if (!unknown.found.empty()) throw std::invalid_argument(unknown.message(vocab_.size()));
    return ids;
}

TokenIds CharTokenizer::encode_ids(std::string_view text) const { return encode_ids(text, Unknown::error); }

std::map<std::string, std::string> CharTokenizer::checkpoint_metadata() const {
    return {{"tokenizer.vocabulary", vocabulary_utf8()}};
}

std::string CharTokenizer::decode(std::span<const int64_t> ids) const {
    std::string out;
    out.reserve(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
        check(ids[i] >= 0 && ids[i] < vocab_size(), "decode: id {} at position {} is outside the vocabulary [0, {})",
              ids[i], i, vocab_size());
        append_utf8(out, vocab_[static_cast<size_t>(ids[i])]);
    }
    return out;
}

std::string CharTokenizer::vocabulary_utf8() const {
    std::string out;
    for (char32_t c : vocab_) append_utf8(out, c);
    return out;
}

CharTokenizer CharTokenizer::from_vocabulary_utf8(std::string_view vocabulary) {
    std::vector<char32_t> chars;
    decode_utf8(vocabulary, "CharTokenizer::from_vocabulary_utf8", [&](char32_t c) { chars.push_back(c); });
    return CharTokenizer(std::move(chars));
}

// --- reading text files -----------------------------------------------------------------------

namespace {

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

// A text file open for reading, checked to be a regular file; `who` starts its messages.
class TextFile {
public:
    TextFile(const std::filesystem::path& path, const char* who) : path_(path), who_(who) {
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
        return std::runtime_error(fmt::format("{}: {}: {}", who_, path_str(path_), what));
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
                decode_utf8(piece, "text", [](char32_t) {}, offset);
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
    const char* who_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

}  // namespace

std::string read_text_file(const std::filesystem::path& path) {
    TextFile file(path, "read_text_file");
    std::string text;
    try {
        text.reserve(file.size());
        file.scan([&](std::string_view piece, uint64_t) { text.append(piece); });
    } catch (const std::bad_alloc&) {
        throw file.fail(fmt::format("could not allocate {} for the text", show_bytes(double(file.size()))));
    }
    return text;
}

TokenizedText tokenize(std::string_view text) {
    CharTokenizer tokenizer = CharTokenizer::from_text(text);
    TokenIds ids = tokenizer.encode_ids(text);
    return {std::move(tokenizer), std::move(ids)};
}

TokenizedText read_tokenized_text(const std::filesystem::path& path) {
    TextFile file(path, "read_tokenized_text");
    // Refused before reading: the ids take at least a byte per character, and most text has about
    // one character per byte.
    const uint64_t have = physical_memory_bytes();
    if (have != 0 && file.size() > have)
        throw file.fail(fmt::format("its {} of text would take about {} of memory as token ids (1 byte per "
                                    "character), more than this machine's {}",
                                    show_bytes(double(file.size())), show_bytes(double(file.size())),
                                    show_bytes(double(have))));

    VocabularyBuilder vocabulary;  // first pass: the characters
    file.scan([&](std::string_view piece, uint64_t) { decode_utf8(piece, "text", [&](char32_t c) { vocabulary.add(c); }); });
    CharTokenizer tokenizer(vocabulary.sorted());

    TokenIds ids(tokenizer.vocab_size());  // second pass: the ids
    const uint64_t n = vocabulary.characters();
    const auto changed = [&] { return file.fail("changed while it was read; read it again when nothing writes to it"); };
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
            encode_into(tokenizer.vocabulary(), piece, Unknown::error, v, unknown, offset);
        });
        if (!unknown.found.empty()) throw changed();
    });
    if (static_cast<uint64_t>(ids.size()) != n) throw changed();
    return {std::move(tokenizer), std::move(ids)};
}

// --- TokenIds -----------------------------------------------------------------------------------

namespace {
constexpr int64_t kMaxIds = int64_t{1} << 31;  // ids are below 2^31
}  // namespace

TokenIds::TokenIds(int64_t vocab_size) {
    check(vocab_size >= 1 && vocab_size <= kMaxIds, "TokenIds: vocab_size must be in [1, 2^31], got {}", vocab_size);
    if (vocab_size <= 256) ids_ = std::vector<uint8_t>{};
    else if (vocab_size <= 65536) ids_ = std::vector<uint16_t>{};
    else ids_ = std::vector<int32_t>{};
}

TokenIds::TokenIds(std::span<const int64_t> ids) {
    int64_t largest = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        check(ids[i] >= 0 && ids[i] < kMaxIds, "TokenIds: token {} at position {} is outside [0, 2^31)", ids[i], i);
        largest = std::max(largest, ids[i]);
    }
    *this = TokenIds(largest + 1);
    visit([&](auto& v) { v.assign(ids.begin(), ids.end()); });
}

TokenIds::TokenIds(MappedU16 mapped) : ids_(std::move(mapped)) {}

int64_t TokenIds::size() const {
    return visit([](const auto& v) { return static_cast<int64_t>(v.size()); });
}

int64_t TokenIds::bytes_per_id() const {
    return visit([](const auto& v) { return static_cast<int64_t>(sizeof(v[0])); });
}

int64_t TokenIds::operator[](int64_t i) const {
    return visit([&](const auto& v) { return static_cast<int64_t>(v[static_cast<size_t>(i)]); });
}

void TokenIds::copy_to(int64_t first, int64_t count, int64_t* out) const {
    visit([&](const auto& v) { std::copy(v.begin() + first, v.begin() + first + count, out); });
}

std::vector<int64_t> TokenIds::to_vector() const {
    return visit([](const auto& v) { return std::vector<int64_t>(v.begin(), v.end()); });
}

uint64_t TokenIds::fingerprint() const {
    uint64_t h = 1469598103934665603ull;
    visit([&](const auto& ids) {
        for (const auto t : ids) {
            h ^= static_cast<uint64_t>(static_cast<int64_t>(t));
            h *= 1099511628211ull;
        }
    });
    return h;
}

// --- TextData -----------------------------------------------------------------------------------

namespace {
const char* split_name(Split split) { return split == Split::train ? "train" : "validation"; }
constexpr int64_t kMaxBatchTokens = int64_t{1} << 28;  // 2 GiB per id vector; far beyond any real batch
}  // namespace

TextData::TextData(TokenIds tokens, double train_fraction) : tokens_(std::move(tokens)) {
    check(!tokens_.empty(), "TextData: no tokens");
    check(train_fraction > 0.0 && train_fraction <= 1.0, "TextData: train_fraction must be in (0, 1], got {}",
          train_fraction);
    // As the lecture's n = int(0.9 * len(data)).
    n_train_ = static_cast<int64_t>(std::floor(train_fraction * static_cast<double>(tokens_.size())));
}

TextData::TextData(TokenIds train, TokenIds validation)
    : tokens_(std::move(train)), validation_(std::move(validation)), n_train_(tokens_.size()) {
    check(!tokens_.empty(), "TextData: no training tokens");
    check(!validation_->empty(), "TextData: no validation tokens");
}

TextData::TextData(const std::vector<int64_t>& tokens, double train_fraction)
    : TextData(TokenIds(std::span<const int64_t>(tokens)), train_fraction) {}

int64_t TextData::size(Split split) const {
    if (split == Split::train) return n_train_;
    return validation_ ? validation_->size() : tokens_.size() - n_train_;
}

void TextData::copy(Split split, int64_t first, int64_t count, int64_t* out) const {
    check(first >= 0 && count >= 0 && first + count <= size(split), "TextData::copy: [{}, {}) is outside the {} split of {} tokens",
          first, first + count, split_name(split), size(split));
    if (split == Split::validation && validation_) validation_->copy_to(first, count, out);
    else tokens_.copy_to(split == Split::train ? first : n_train_ + first, count, out);
}

Batch TextData::batch(Split split, int64_t B, int64_t T, autograd::Generator& gen) const {
    check(B > 0, "batch: batch size B must be positive, got {}", B);
    check(T > 0, "batch: block size T must be positive, got {}", T);
    check(B <= kMaxBatchTokens / T, "batch: B * T = {} * {} tokens is more than the limit of {}", B, T,
          kMaxBatchTokens);
    const TokenIds& stream = split == Split::validation && validation_ ? *validation_ : tokens_;
    const int64_t n = size(split), first = split == Split::train || validation_ ? 0 : n_train_;
    check(T < n, "batch: block size {} is longer than the {} split ({} tokens; a window and its targets need {})",
          T, split_name(split), n, T + 1);

    Batch out{std::vector<int64_t>(static_cast<size_t>(B * T)), std::vector<int64_t>(static_cast<size_t>(B * T)), B, T};
    for (int64_t b = 0; b < B; ++b) {
        const int64_t start = first + gen.randint(n - T);  // the last target is token start + T
        stream.copy_to(start, T, out.inputs.data() + b * T);
        stream.copy_to(start + 1, T, out.targets.data() + b * T);
    }
    return out;
}

}  // namespace nn
