#include "nn/train/text.h"
#include "files.h"

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
// offset N: <reason>" at the first invalid sequence.
template <typename Emit>
void decode_utf8(std::string_view s, const char* who, Emit&& emit) {
    for (size_t i = 0; i < s.size();) {
        const auto lead = static_cast<unsigned char>(s[i]);
        if (lead < 0x80) {  // ASCII fast path
            emit(static_cast<char32_t>(lead));
            ++i;
            continue;
        }
        Decoded d = decode_one(s, i);
        check(d.error.empty(), "{}: invalid UTF-8 at byte offset {}: {}", who, i, d.error);
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
    // Distinct characters without sorting the text: a table for ASCII, a set for the rest.
    std::array<bool, 128> ascii{};
    std::unordered_set<char32_t> others;
    decode_utf8(corpus, "CharTokenizer::from_text", [&](char32_t c) {
        if (c < 128)
            ascii[c] = true;
        else
            others.insert(c);
    });
    std::vector<char32_t> vocabulary;
    for (char32_t c = 0; c < 128; ++c)
        if (ascii[c]) vocabulary.push_back(c);
    const size_t n_ascii = vocabulary.size();
    vocabulary.insert(vocabulary.end(), others.begin(), others.end());
    std::sort(vocabulary.begin() + static_cast<std::ptrdiff_t>(n_ascii), vocabulary.end());
    return CharTokenizer(std::move(vocabulary));
}

std::vector<int64_t> CharTokenizer::encode(std::string_view text, Unknown policy) const {
    std::vector<int64_t> ids;
    ids.reserve(text.size());
    std::vector<char32_t> unknown;  // distinct, in order of first appearance
    std::unordered_set<char32_t> unknown_seen;
    decode_utf8(text, "encode", [&](char32_t c) {
        const auto it = std::lower_bound(vocab_.begin(), vocab_.end(), c);
        if (it != vocab_.end() && *it == c) {
            ids.push_back(it - vocab_.begin());
        } else if (policy == Unknown::error && unknown_seen.insert(c).second) {
            unknown.push_back(c);
        }
    });
    if (!unknown.empty()) {
        std::string listed;
        for (size_t i = 0; i < unknown.size() && i < kMaxListed; ++i) listed += (i ? ", " : "") + describe(unknown[i]);
        if (unknown.size() > kMaxListed) listed += fmt::format(", and {} more", unknown.size() - kMaxListed);
        throw std::invalid_argument(fmt::format("encode: {} character{} not in the vocabulary of {}: {}",
                                                unknown.size(), unknown.size() == 1 ? " is" : "s are",
                                                vocab_.size(), listed));
    }
    return ids;
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

// --- read_text_file -----------------------------------------------------------------------------

std::string read_text_file(const std::filesystem::path& path) {
    const auto fail = [&](const std::string& what) {
        return std::runtime_error(fmt::format("read_text_file: {}: {}", path_str(path), what));
    };
    // O_NONBLOCK: opening a named pipe would otherwise wait for a writer, forever; it is refused below,
    // and on a regular file the flag changes nothing.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw fail(fmt::format("cannot open ({})", std::strerror(errno)));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};

    struct stat st {};
    if (::fstat(fd, &st) != 0) throw fail(fmt::format("cannot stat ({})", std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) throw fail(fmt::format("is {}, not a text file", file_kind(st.st_mode)));

    std::string text;
    text.reserve(static_cast<size_t>(st.st_size));
    char buffer[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw fail(fmt::format("cannot read ({})", std::strerror(errno)));
        if (n == 0) break;
        text.append(buffer, static_cast<size_t>(n));
    }
    if (text.empty()) throw fail("is empty");
    if (const void* nul = std::memchr(text.data(), '\0', text.size()))
        throw fail(fmt::format("holds binary data, not text (a NUL byte at offset {})",
                               static_cast<const char*>(nul) - text.data()));
    try {
        decode_utf8(text, "text", [](char32_t) {});
    } catch (const std::invalid_argument& e) {
        throw fail(fmt::format("is not UTF-8 text ({})", e.what()));
    }
    return text;
}

// --- TextData -----------------------------------------------------------------------------------

namespace {
const char* split_name(Split split) { return split == Split::train ? "train" : "validation"; }
constexpr int64_t kMaxBatchTokens = int64_t{1} << 28;  // 2 GiB per id vector; far beyond any real batch
}  // namespace

TextData::TextData(std::vector<int64_t> tokens, double train_fraction) {
    check(!tokens.empty(), "TextData: no tokens");
    check(train_fraction > 0.0 && train_fraction <= 1.0, "TextData: train_fraction must be in (0, 1], got {}",
          train_fraction);
    for (size_t i = 0; i < tokens.size(); ++i)
        check(tokens[i] >= 0 && tokens[i] <= std::numeric_limits<int32_t>::max(),
              "TextData: token {} at position {} is outside [0, 2^31)", tokens[i], i);
    // Two bytes a token when the ids allow (every character-level vocabulary), else four.
    const bool narrow = *std::max_element(tokens.begin(), tokens.end()) <= std::numeric_limits<uint16_t>::max();
    if (narrow) narrow_tokens_.assign(tokens.begin(), tokens.end());
    else wide_tokens_.assign(tokens.begin(), tokens.end());
    // As the lecture's n = int(0.9 * len(data)).
    n_train_ = static_cast<int64_t>(std::floor(train_fraction * static_cast<double>(tokens.size())));
}

int64_t TextData::size(Split split) const {
    const auto total = static_cast<int64_t>(narrow_tokens_.empty() ? wide_tokens_.size() : narrow_tokens_.size());
    return split == Split::train ? n_train_ : total - n_train_;
}

Batch TextData::batch(Split split, int64_t B, int64_t T, autograd::Generator& gen) const {
    check(B > 0, "batch: batch size B must be positive, got {}", B);
    check(T > 0, "batch: block size T must be positive, got {}", T);
    check(B <= kMaxBatchTokens / T, "batch: B * T = {} * {} tokens is more than the limit of {}", B, T,
          kMaxBatchTokens);
    const int64_t n = size(split), first = split == Split::train ? 0 : n_train_;
    check(T < n, "batch: block size {} is longer than the {} split ({} tokens; a window and its targets need {})",
          T, split_name(split), n, T + 1);

    Batch out{std::vector<int64_t>(static_cast<size_t>(B * T)), std::vector<int64_t>(static_cast<size_t>(B * T)), B, T};
    const auto fill = [&](const auto& tokens) {
        for (int64_t b = 0; b < B; ++b) {
            const int64_t start = first + gen.randint(n - T);  // the last target is token start + T
            const auto window = tokens.begin() + start;
            std::copy(window, window + T, out.inputs.begin() + b * T);
            std::copy(window + 1, window + T + 1, out.targets.begin() + b * T);
        }
    };
    if (narrow_tokens_.empty()) fill(wide_tokens_);
    else fill(narrow_tokens_);
    return out;
}

}  // namespace nn
