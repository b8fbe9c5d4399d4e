// Checks the DOM of the figure page, as headless Chromium rendered it, against the library's numbers.
//
//   figure_dom_check FIGURE_JSON DOM_HTML "raw=1&scale=0&row=3&step=2"
//
// FIGURE_JSON is what `figure --json` printed; DOM_HTML is `chromium --dump-dom` of the page opened at
// that fragment (or without one: the state given is then the page's defaults). Every number the page
// shows is an element <td class="..." data-m="KIND" data-i="I" data-j="J">text</td> (see
// examples/web/figure.html); each must equal the library's number to the precision shown, every cell of
// each table that the step shows must be there exactly once, and nothing else may be. Also checked: the
// state the page applied (<main data-*>, the checkboxes, the caption's step), the highlighted row and the
// greyed masked cells. Exit status 0 when all hold, 1 otherwise (each problem on stderr).
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

int problems = 0;
// printf-style, checked by the compiler
__attribute__((format(printf, 1, 2))) void problem(const char* format, ...) {
    if (++problems <= 30) {
        std::va_list args;
        va_start(args, format);
        std::fprintf(stderr, "figure_dom_check: ");
        std::vfprintf(stderr, format, args);
        std::fprintf(stderr, "\n");
        va_end(args);
    }
}

std::string read_file(const char* path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "figure_dom_check: cannot read %s\n", path);
        std::exit(1);
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The number a cell shows ("−1.23", "0.40", "−∞"), against the library's (null for −∞): equal to the
// precision shown, which must be at least two decimals.
bool shows(const std::string& text, const json& expected, std::string& why) {
    if (expected.is_null()) {
        why = "expected −∞";
        return text == "−∞";
    }
    std::string t = text;
    if (t.starts_with("−")) t = "-" + t.substr(std::string("−").size());
    const auto dot = t.find('.');
    const size_t decimals = dot == std::string::npos ? 0 : t.size() - dot - 1;
    char* end = nullptr;
    const double shown = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0' || decimals < 2) {
        why = "not a number with at least two decimals";
        return false;
    }
    const double want = expected.get<double>();
    const double tolerance = 0.5 * std::pow(10.0, -double(decimals)) + 1e-6;
    why = "expected " + std::to_string(want);
    return std::abs(shown - want) <= tolerance;
}

bool has_word(const std::string& list, const std::string& word) {
    std::istringstream s(list);
    std::string w;
    while (s >> w)
        if (w == word) return true;
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: figure_dom_check FIGURE_JSON DOM_HTML STATE\n");
        return 2;
    }
    const json data = json::parse(read_file(argv[1]));
    const std::string dom = read_file(argv[2]);
    std::map<std::string, int> want;
    {
        const std::string state = argv[3];
        const std::regex pair_re("([a-z]+)=([0-9]+)");
        for (auto it = std::sregex_iterator(state.begin(), state.end(), pair_re); it != std::sregex_iterator(); ++it)
            want[(*it)[1]] = std::stoi((*it)[2]);
    }
    const int raw = want.at("raw"), scale = want.at("scale"), row = want.at("row"), step = want.at("step");
    const int T = data.at("window").get<int>(), H = data.at("head_size").get<int>();
    const json& st = data.at("states").at(2 * raw + scale);
    if (st.at("raw").get<bool>() != (raw == 1) || st.at("scale").get<bool>() != (scale == 1))
        problem("states[] is out of order");

    // The state the page applied.
    std::smatch m;
    if (!std::regex_search(dom, m, std::regex("<main [^>]*>"))) problem("no <main> element");
    const std::string main_tag = m.str();
    for (const auto& [key, value] : want) {
        const std::string attribute = "data-" + key + "=\"" + std::to_string(value) + "\"";
        if (main_tag.find(attribute) == std::string::npos)
            problem("<main> does not carry %s: %s", attribute.c_str(), main_tag.c_str());
    }
    for (const auto& [id, on] : {std::pair{"raw", raw}, std::pair{"scale", scale}}) {
        if (!std::regex_search(dom, m, std::regex(std::string("<input [^>]*id=\"") + id + "\"[^>]*>")))
            problem("no checkbox #%s", id);
        else if ((m.str().find("checked") != std::string::npos) != (on == 1))
            problem("checkbox #%s is %s, the fragment says %d", id, on ? "unticked" : "ticked", on);
    }
    if (!std::regex_search(dom, m, std::regex("id=\"caption\" data-step=\"([0-9])\"")) || std::stoi(m[1]) != step)
        problem("the caption is not for step %d", step);

    // Every number shown.
    const int stage = std::min(step, 3);  // the grid shows the shares again at the blend
    const char* stage_kinds[] = {"scores", "scaled", "masked", "shares"};
    std::map<std::string, std::set<std::pair<int, int>>> seen;
    int checked = 0;
    const std::regex cell_re(
        "<td class=\"([^\"]*)\" data-m=\"([a-z]+)\" data-i=\"([0-9]+)\" data-j=\"([0-9]+)\"[^>]*>([^<]*)</td>");
    for (auto it = std::sregex_iterator(dom.begin(), dom.end(), cell_re); it != std::sregex_iterator(); ++it) {
        const std::string cls = (*it)[1], kind = (*it)[2], text = (*it)[5];
        const int i = std::stoi((*it)[3]), j = std::stoi((*it)[4]);
        const std::string where = kind + "[" + std::to_string(i) + "][" + std::to_string(j) + "]";
        if (!seen[kind].insert({i, j}).second) problem("%s is shown twice", where.c_str());
        json expected;
        bool is_masked = false;
        if (kind == "grid") {
            if (i >= T || j >= T) {
                problem("%s is outside the grid", where.c_str());
                continue;
            }
            expected = st.at(stage_kinds[stage]).at(i).at(j);
            is_masked = stage >= 2 && st.at("masked").at(i).at(j).is_null();
            if (has_word(cls, "sel") != (i == row))
                problem("%s: highlighted is '%s' for row %d", where.c_str(), cls.c_str(), row);
            if (has_word(cls, "masked") != is_masked) problem("%s: masked is '%s'", where.c_str(), cls.c_str());
        } else if (kind == "scores" || kind == "scaled" || kind == "masked" || kind == "shares") {
            const int s = kind == "scores" ? 0 : kind == "scaled" ? 1 : kind == "masked" ? 2 : 3;
            if (s > stage) problem("%s is shown at step %d", where.c_str(), step);
            if (i != row || j >= T) {
                problem("%s is not on row %d", where.c_str(), row);
                continue;
            }
            expected = st.at(kind).at(i).at(j);
            is_masked = s >= 2 && st.at("masked").at(i).at(j).is_null();
            if (has_word(cls, "masked") != is_masked) problem("%s: masked is '%s'", where.c_str(), cls.c_str());
        } else if (kind == "sum") {
            if (i >= T || j != 0) {
                problem("%s is not a row", where.c_str());
                continue;
            }
            expected = st.at("row_sums").at(i);
        } else if (kind == "rowsum") {
            if (i != row || j != 0) {
                problem("%s is not row %d", where.c_str(), row);
                continue;
            }
            expected = st.at("row_sums").at(i);
        } else if (kind == "weight") {
            if (i != row || j >= T) {
                problem("%s is not on row %d", where.c_str(), row);
                continue;
            }
            expected = st.at("shares").at(i).at(j);
        } else if (kind == "values") {
            if (i >= T || j >= H) {
                problem("%s is outside the values", where.c_str());
                continue;
            }
            expected = st.at("values").at(i).at(j);
        } else if (kind == "output") {
            if (i != row || j >= H) {
                problem("%s is not on row %d", where.c_str(), row);
                continue;
            }
            expected = st.at("output").at(i).at(j);
        } else {
            problem("unknown kind of number %s", where.c_str());
            continue;
        }
        std::string why;
        if (!shows(text, expected, why)) problem("%s shows '%s', %s", where.c_str(), text.c_str(), why.c_str());
        ++checked;
    }

    // Exactly the tables this step shows, complete.
    const auto count = [&](const std::string& kind) { return seen.count(kind) ? int(seen[kind].size()) : 0; };
    std::map<std::string, int> expected_counts = {{"grid", T * T},
                                                  {"sum", step >= 3 ? T : 0},
                                                  {"rowsum", step >= 3 ? 1 : 0},
                                                  {"weight", step == 4 ? T : 0},
                                                  {"values", step == 4 ? T * H : 0},
                                                  {"output", step == 4 ? H : 0}};
    for (int s = 0; s < 4; ++s) expected_counts[stage_kinds[s]] = s <= stage ? T : 0;
    for (const auto& [kind, n] : expected_counts)
        if (count(kind) != n)
            problem("%d %s numbers shown at step %d, expected %d", count(kind), kind.c_str(), step, n);

    if (problems > 0) {
        std::fprintf(stderr, "figure_dom_check: %s: %d problems\n", argv[3], problems);
        return 1;
    }
    std::printf("figure_dom_check: %s: %d numbers shown, all equal to the library's to the precision shown\n", argv[3],
                checked);
    return 0;
}
