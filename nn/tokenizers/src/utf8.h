// UTF-8 decoding and encoding shared by the tokenizers and the text-file reader (private to nn/tokenizers/src).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <autograd/check.h>
#include <fmt/format.h>

namespace nn::detail {

inline constexpr char32_t kMaxCodePoint = 0x10FFFF;

inline bool is_scalar_value(char32_t c) { return c <= kMaxCodePoint && !(c >= 0xD800 && c <= 0xDFFF); }

// The code point at s[i] and its length in bytes, or why the bytes there are not UTF-8.
struct Decoded {
    char32_t code_point = 0;
    size_t length = 0;
    std::string error;  // empty when valid
};

inline Decoded decode_one(std::string_view s, size_t i) {
    const auto lead = static_cast<unsigned char>(s[i]);
    if (lead < 0x80) return {lead, 1, {}};
    if (lead < 0xC0) return {0, 0, fmt::format("unexpected continuation byte 0x{:02X}", lead)};
    if (lead < 0xC2) return {0, 0, fmt::format("overlong encoding (lead byte 0x{:02X})", lead)};
    if (lead >= 0xF5)
        return {0, 0,
                fmt::format("byte 0x{:02X} never appears in UTF-8 (it would start a code point past U+10FFFF)", lead)};
    const size_t length = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    char32_t c = lead & (length == 2 ? 0x1Fu : length == 3 ? 0x0Fu : 0x07u);
    for (size_t k = 1; k < length; ++k) {
        if (i + k >= s.size())
            return {0, 0,
                    fmt::format("truncated sequence (lead byte 0x{:02X} needs {} bytes, the input ends after {})", lead,
                                length, k == 1 ? "1 byte" : fmt::format("{} bytes", k))};
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80)
            return {0, 0,
                    fmt::format("truncated sequence (lead byte 0x{:02X} needs {} bytes, byte {} is 0x{:02X})", lead,
                                length, k + 1, b)};
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
        autograd::check(d.error.empty(), "{}: invalid UTF-8 at byte offset {}: {}", who, base + i, d.error);
        emit(d.code_point);
        i += d.length;
    }
}

inline void append_utf8(std::string& out, char32_t c) {
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

// Throws std::invalid_argument "<who>: invalid UTF-8 at byte offset N: <reason>" at the first invalid
// sequence of `text` (N counted from `base`), as the character tokenizer does.
inline void check_utf8(std::string_view text, const char* who, uint64_t base = 0) {
    decode_utf8(
        text, who, [](char32_t) {}, base);
}

// Characters in valid UTF-8: the bytes that are not continuation bytes.
inline size_t count_characters(std::string_view text) {
    size_t n = 0;
    for (const char b : text) n += (static_cast<unsigned char>(b) & 0xC0) != 0x80;
    return n;
}

}  // namespace nn::detail
