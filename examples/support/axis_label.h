// How the pages (figure, train --report, the web page) write a token on a map's axis: character by
// character, each as itself but the invisible ones: ␣ a space, ↵ a line break, ⇥ a tab, and the control
// pictures ␀ to ␟ and ␡ the other control characters. A byte that does not belong to a UTF-8 character
// (a GPT-2 token can hold part of one) is written \xNN. So "é" is one label, not \xc3 and \xa9, and a
// label is always UTF-8.
//
//     axis::label(" the");  // "␣the"
//     axis::label("é");     // "é"
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace axis {

// The length of the UTF-8 character starting at s[i], or 0 when the bytes there are not one.
inline size_t utf8_length(std::string_view s, size_t i) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char lead = byte(0);
    const size_t n = lead < 0x80                    ? 1
                     : lead >= 0xC2 && lead <= 0xDF ? 2
                     : lead >= 0xE0 && lead <= 0xEF ? 3
                     : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                    : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k)
        if ((byte(k) & 0xC0) != 0x80) return 0;
    // the second byte's range that excludes overlong forms, surrogates and code points past U+10FFFF
    if ((lead == 0xE0 && byte(1) < 0xA0) || (lead == 0xED && byte(1) >= 0xA0) || (lead == 0xF0 && byte(1) < 0x90) ||
        (lead == 0xF4 && byte(1) >= 0x90))
        return 0;
    return n;
}

inline std::string label(std::string_view token) {
    std::string out;
    for (size_t i = 0; i < token.size();) {
        const auto c = static_cast<unsigned char>(token[i]);
        const size_t n = utf8_length(token, i);
        if (c == ' ') out += "␣";
        else if (c == '\n') out += "↵";
        else if (c == '\t') out += "⇥";
        else if (c < 0x20) out += {'\xE2', '\x90', static_cast<char>(0x80 + c)};  // U+2400 + c
        else if (c == 0x7F) out += "␡";
        else if (n == 0) out += fmt::format("\\x{:02x}", c);
        else out += token.substr(i, n);
        i += n == 0 ? 1 : n;
    }
    return out;
}

}  // namespace axis
