// JSON embedded in an HTML page's <script> element, as every page the examples write embeds its data
// (train --report, induction --report, figure): the one place that makes it safe there.
#pragma once

#include <string>
#include <string_view>

namespace html {

// `json` with every "<", ">" and "&" written as \u003c, \u003e and \u0026. Outside strings JSON has none
// of them, and inside a string the escape is the same character to JSON.parse, so the data reads back
// unchanged; but no "</script>", "<!--" or "<script" in a path, a prompt or a sample can end the element
// or put the HTML parser into its script-escape states (which blank the page).
inline std::string script_safe(std::string_view json) {
    std::string out;
    out.reserve(json.size());
    for (const char c : json) {
        if (c == '<') out += "\\u003c";
        else if (c == '>') out += "\\u003e";
        else if (c == '&') out += "\\u0026";
        else out += c;
    }
    return out;
}

}  // namespace html
