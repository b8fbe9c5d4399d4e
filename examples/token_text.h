// A token's text made visible on one line of a terminal or a table (heatmap's axes, the tables of lens,
// patch and attribute): a character as one column, GPT-2's pieces of words (" the") as several, their
// spaces, line breaks and tabs shown, other control characters as '?'.
#pragma once

#include <string>

inline std::string visible_token(const std::string& token) {
    std::string out;
    for (const char c : token) {
        if (c == ' ') out += "␣";
        else if (c == '\n') out += "↵";
        else if (c == '\t') out += "⇥";
        else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += '?';
        else out += c;
    }
    return out;
}
