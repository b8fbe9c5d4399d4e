// The inspection examples from the outside: gradflow, heatmap and plot_loss run as programs (their
// paths come from CMake), their output is parsed and checked against the library; and the SVG chart
// they share, unit by unit, and the axis labels of the pages. Exit codes of bad invocations are tested in CMake (cli/expect_exit.cmake).
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <autograd/autograd.h>
#include <nn/models.h>
#include <nn/tutorial/study.h>
#include <nn/train/trainer.h>

#include "axis_label.h"
#include "svg_chart.h"
#include "temp_dir.h"

namespace {

struct Run {
    int code = -1;
    std::string out, err;
};

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// Runs `program args` through the shell (with `env` settings in front), stdout captured, stderr to a file.
Run run(const std::string& env, const std::string& program, const std::vector<std::string>& args,
        const test::TempDir& dir) {
    std::string cmd = env;
    if (!cmd.empty()) cmd += ' ';
    cmd += quote(program);
    for (const auto& a : args) {
        cmd += ' ';
        cmd += quote(a);
    }
    const auto err_path = dir.path / "stderr.txt";
    cmd += " 2>";
    cmd += quote(err_path.string());
    Run r;
    std::FILE* pipe = popen(cmd.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
    const int status = pclose(pipe);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = test::read_bytes(err_path);
    return r;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// UTF-8 code points of a line, each as its own string (the heatmap's labels include "␣").
std::vector<std::string> code_points(const std::string& s) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        out.push_back(s.substr(i, len));
        i += len;
    }
    return out;
}

bool have(const char* tool) { return std::system(fmt::format("command -v {} >/dev/null 2>&1", tool).c_str()) == 0; }

// A well-formed SVG document: xmllint agrees when it is installed; the outline is checked always.
void require_svg(const std::filesystem::path& path, const std::vector<std::string>& must_contain) {
    const std::string svg = test::read_bytes(path);
    INFO(path.string());
    REQUIRE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    REQUIRE(svg.ends_with("</svg>\n"));
    for (const auto& s : must_contain) {
        INFO("looking for " << s);
        CHECK(svg.find(s) != std::string::npos);
    }
    CHECK(svg.find("@font-face") == std::string::npos);
    CHECK(svg.find("<script") == std::string::npos);
    if (have("xmllint")) CHECK(std::system(fmt::format("xmllint --noout {}", quote(path.string())).c_str()) == 0);
}

const std::string kShades = ".:-=+*#%@";  // the heatmap's ASCII ramp, without the blank of masked cells

// The grid of an ASCII heatmap: per row its label and its cells (each the one character drawn twice).
struct Grid {
    std::vector<std::string> labels;
    std::vector<std::vector<std::string>> cells;
};
Grid parse_grid(const std::string& out, size_t T) {
    const auto lines = lines_of(out);
    REQUIRE(lines.size() >= 4 + T);
    // line 0: whose attention; 1: how to read it; 2: blank; 3: the column labels; then T rows.
    Grid g;
    const auto header = code_points(lines[3]);
    REQUIRE(header.size() == 4 + 2 * T - 1);
    for (size_t i = 0; i < T; ++i) {
        const auto cps = code_points(lines[4 + i]);
        INFO("row " << i << ": '" << lines[4 + i] << "'");
        REQUIRE(cps.size() == 4 + 2 * T);
        CHECK(cps[0] == " ");
        CHECK(cps[1] == " ");
        CHECK(cps[3] == " ");
        CHECK(cps[2] == header[4 + 2 * i]);  // the row's label is the column's
        g.labels.push_back(cps[2]);
        std::vector<std::string> row;
        for (size_t j = 0; j < T; ++j) {
            CHECK(cps[4 + 2 * j] == cps[5 + 2 * j]);
            row.push_back(cps[4 + 2 * j]);
        }
        g.cells.push_back(row);
    }
    CHECK(lines[4 + T].empty());
    return g;
}

// The causal triangle: blank above the diagonal, a shade on and below it.
void require_triangle(const Grid& g) {
    for (size_t i = 0; i < g.cells.size(); ++i)
        for (size_t j = 0; j < g.cells.size(); ++j) {
            INFO("cell " << i << ", " << j << ": '" << g.cells[i][j] << "'");
            if (j > i) CHECK(g.cells[i][j] == " ");
            else CHECK((g.cells[i][j].size() == 1 && kShades.find(g.cells[i][j][0]) != std::string::npos));
        }
}

// The shade the heatmap draws for a share.
char shade_of(double share) {
    const int k = std::clamp(static_cast<int>(std::ceil(share * 9.0 - 1e-9)), 1, 9);
    return kShades[static_cast<size_t>(k - 1)];
}

}  // namespace

// --- svg_chart ------------------------------------------------------------------------------------------

TEST_CASE("svg_chart: linear ranges and ticks land on 1, 2, 5 x 10^k", "[svg]") {
    const auto r = chart::nice_range(0.13, 2.21, chart::Scale::linear);
    CHECK(r.lo == 0.0);
    CHECK(r.hi == Approx(2.5));
    const auto t = chart::ticks(0.0, 2.5, chart::Scale::linear);
    REQUIRE(t.size() == 6);
    for (size_t i = 0; i < t.size(); ++i) CHECK(t[i] == Approx(0.5 * double(i)));
    const auto steps = chart::ticks(0.0, 1500.0, chart::Scale::linear);
    CHECK(steps == std::vector<double>{0, 500, 1000, 1500});
    // A degenerate range is widened, and negative ticks never print as "-0".
    const auto flat = chart::nice_range(3.0, 3.0, chart::Scale::linear);
    CHECK(flat.lo < 3.0);
    CHECK(flat.hi > 3.0);
    for (double v : chart::ticks(-1.0, 1.0, chart::Scale::linear)) CHECK(chart::tick_label(v, 0.5) != "-0.0");
}

TEST_CASE("svg_chart: log ranges round to decades, ticks are powers of ten, with 2 and 5 on short ranges", "[svg]") {
    const auto r = chart::nice_range(3.78e-4, 89.2, chart::Scale::log);
    CHECK(r.lo == Approx(1e-4));
    CHECK(r.hi == Approx(100));
    const auto t = chart::ticks(1e-4, 100, chart::Scale::log);
    REQUIRE(t.size() == 7);
    for (size_t i = 0; i < t.size(); ++i) CHECK(t[i] == Approx(std::pow(10.0, double(i) - 4)));
    CHECK(chart::ticks(1, 100, chart::Scale::log) == std::vector<double>{1, 2, 5, 10, 20, 50, 100});
    CHECK(chart::ticks(1e-20, 1e20, chart::Scale::log).size() <= 9);  // many decades: every other one or fewer
    CHECK_THROWS_AS(chart::nice_range(0.0, 1.0, chart::Scale::log), std::invalid_argument);
}

TEST_CASE("svg_chart: tick labels are readable numbers", "[svg]") {
    CHECK(chart::tick_label(0.0, 0.5) == "0");
    CHECK(chart::tick_label(0.25, 0.05) == "0.25");
    CHECK(chart::tick_label(1.5, 0.5) == "1.5");
    CHECK(chart::tick_label(1500, 500) == "1500");
    CHECK(chart::tick_label(0.001, 0) == "0.001");
    CHECK(chart::tick_label(100, 0) == "100");
    CHECK(chart::tick_label(1e-4, 0) == "10⁻⁴");
    CHECK(chart::tick_label(1e6, 0) == "10⁶");
    CHECK(chart::tick_label(2e-5, 0) == "2×10⁻⁵");
}

TEST_CASE("svg_chart: a document with escaped names, broken lines where a log axis cannot place a point", "[svg]") {
    chart::LineChart c{.title = "a < b & c", .x = {.label = "x"}, .y = {.label = "y", .scale = chart::Scale::log}};
    c.series.push_back({.name = "one \"quoted\"", .x = {1, 2, 3, 4, 5}, .y = {1, 10, 0, 100, 1000}});
    c.series.push_back({.name = "two", .x = {1, 2}, .y = {5, NAN}, .dashed = true, .markers = true});
    const std::string svg = chart::to_svg(c);
    CHECK(svg.find("a &lt; b &amp; c") != std::string::npos);
    CHECK(svg.find("one &quot;quoted&quot;") != std::string::npos);
    CHECK(svg.find("stroke-dasharray") != std::string::npos);
    // Series one is two runs (the 0 breaks it): "M.. L.. M.. L..".
    const auto first = svg.find("<path d=\"M");
    REQUIRE(first != std::string::npos);
    const std::string d = svg.substr(first, svg.find('"', first + 9) - first);
    CHECK(std::count(d.begin(), d.end(), 'M') == 2);
    CHECK(std::count(d.begin(), d.end(), 'L') == 2);

    test::TempDir dir("svg_chart_document");
    chart::write_svg(c, dir.path / "c.svg");
    require_svg(dir.path / "c.svg", {"one &quot;quoted&quot;", "two"});
    CHECK_THROWS_WITH(chart::write_svg(c, dir.path / "no" / "such" / "dir.svg"), Catch::Contains("dir.svg"));
    c.series.push_back({.name = "bad", .x = {1, 2}, .y = {1}});
    CHECK_THROWS_WITH(chart::to_svg(c), Catch::Contains("'bad' has 2 x values but 1 y values"));
}

// --- gradflow -------------------------------------------------------------------------------------------

TEST_CASE("axis::label: a token character by character, the invisible ones made visible, a byte of no character in hex",
          "[pages]") {
    CHECK(axis::label("a") == "a");
    CHECK(axis::label(" the") == "␣the");
    CHECK(axis::label("é") == "é");  // one character, not \xc3 \xa9
    CHECK(axis::label("日本") == "日本");
    CHECK(axis::label("a\nb\t") == "a↵b⇥");
    CHECK(axis::label(std::string("\0\x1f\x7f", 3)) == "␀␟␡");
    CHECK(axis::label("\xc3") == "\\xc3");  // a GPT-2 token can hold part of a character
    CHECK(axis::label("\xe6\x97") == "\\xe6\\x97");
    CHECK(axis::label("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate is no character
    CHECK(axis::label("\xc0\xaf") == "\\xc0\\xaf");           // nor an overlong form
}

TEST_CASE("gradflow: --json holds the study's table, which is nn::study::saturation's and shows its claims",
          "[gradflow]") {
    test::TempDir dir("gradflow_json");
    const Run r = run("", GRADFLOW_EXE, {"--json", "--steps", "0", "--seed", "3"}, dir);
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["seed"] == 3);
    const int64_t trials = j["trials"], window = j["window"];
    const auto& study = j["study"];
    REQUIRE(study.size() == 16);
    std::map<std::pair<int64_t, bool>, nlohmann::json> row;
    for (const auto& s : study) row[{s["width"].get<int64_t>(), s["divided"].get<bool>()}] = s;
    const std::vector<int64_t> widths = {2, 4, 8, 16, 32, 64, 128, 256};
    for (int64_t w : widths)
        for (bool d : {true, false}) REQUIRE(row.count({w, d}) == 1);
    CHECK(j["training"]["runs"].empty());

    // Two rows, recomputed by the library from the stream the program names.
    for (auto [w, d] : {std::pair<int64_t, bool>{8, true}, {128, false}}) {
        const auto& s = row[{w, d}];
        autograd::Generator gen(s["stream"].get<uint64_t>());
        const auto direct = nn::study::saturation(w, d, window, trials, gen);
        INFO("width " << w << (d ? " divided" : " raw"));
        CHECK(s["row_gradient_median"].get<double>() == Approx(direct.row_gradient.median).epsilon(1e-5));
        CHECK(s["grad_query"].get<double>() == Approx(direct.grad_query).epsilon(1e-5));
        CHECK(s["grad_key"].get<double>() == Approx(direct.grad_key).epsilon(1e-5));
        CHECK(s["flat_rows"].get<double>() == Approx(direct.flat_rows).epsilon(1e-5));
        CHECK(s["largest_share_median"].get<double>() == Approx(direct.largest_share.median).epsilon(1e-5));
        CHECK(s["entropy"].get<double>() == Approx(direct.entropy).epsilon(1e-5));
    }

    const auto g = [&](int64_t w, bool d, const char* key) { return row[{w, d}][key].get<double>(); };
    for (int64_t w : widths) {
        INFO("width " << w);
        // With the divisor the typical row's gradient stays steady; no row is flat.
        CHECK(g(w, true, "row_gradient_median") >= 0.5 * g(2, true, "row_gradient_median"));
        CHECK(g(w, true, "flat_rows") < 0.05);
    }
    for (size_t i = 3; i < widths.size(); ++i) {  // without it, from width 8 on: sharper rows, smaller row gradients
        INFO("width " << widths[i]);
        CHECK(g(widths[i], false, "row_gradient_median") < g(widths[i - 1], false, "row_gradient_median"));
        CHECK(g(widths[i], false, "largest_share_median") > g(widths[i - 1], false, "largest_share_median"));
        CHECK(g(widths[i], false, "entropy") < g(widths[i - 1], false, "entropy"));
    }
    CHECK(g(128, false, "row_gradient_median") < 0.1 * g(128, true, "row_gradient_median"));
    CHECK(g(128, false, "row_gradient_median") < 0.1 * g(2, false, "row_gradient_median"));
    CHECK(g(128, false, "flat_rows") > 0.2);
    // ... while the whole-matrix norms do not collapse.
    CHECK(g(128, false, "grad_query") >= g(128, true, "grad_query"));
    CHECK(g(128, false, "grad_key") >= g(128, true, "grad_key"));
}

TEST_CASE("gradflow: a short training run, the table, the CSV, both charts and the graph", "[gradflow]") {
    test::TempDir dir("gradflow_files");
    const auto p = [&](const char* name) { return (dir.path / name).string(); };
    const Run r = run("", GRADFLOW_EXE,
                      {"--steps", "10", "--trials", "4", "--csv", p("g.csv"), "--svg", p("g.svg"), "--train-svg",
                       p("t.svg"), "--dot", p("head.dot")},
                      dir);
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("  width  divisor     |dWq|     |dWk|  row gradient  flat rows  largest share  entropy") !=
          std::string::npos);
    CHECK(r.out.find("With the divisor the typical row passes back") != std::string::npos);
    CHECK(r.out.find("Training a width-128 head: validation loss") != std::string::npos);
    CHECK(r.out.find("wrote " + p("t.svg")) != std::string::npos);

    const auto csv = lines_of(test::read_bytes(p("g.csv")));
    REQUIRE(csv.size() == 17);
    CHECK(csv[0] ==
          "width,divided,grad_query,grad_key,row_gradient_median,row_gradient_min,row_gradient_max,flat_rows,"
          "largest_share_median,entropy");
    CHECK(csv[1].starts_with("2,1,"));
    CHECK(csv[16].starts_with("256,0,"));

    require_svg(p("g.svg"), {"typical row's gradient, ÷√H", "typical row's gradient, no divisor", "|dWq|, ÷√H",
                             "|dWq|, no divisor", "head width H"});
    require_svg(p("t.svg"), {"with ÷√H", "without the divisor", "validation loss"});

    const std::string dot = test::read_bytes(p("head.dot"));
    CHECK(dot.starts_with("digraph"));
    for (const char* s : {"query.weight", "key.weight", "value.weight", "softmax", "grad norm"}) {
        INFO(s);
        CHECK(dot.find(s) != std::string::npos);
    }
    if (have("dot"))
        CHECK(std::system(fmt::format("dot -Tsvg {} -o {}", quote(p("head.dot")), quote(p("head.svg"))).c_str()) == 0);

    const Run j = run("", GRADFLOW_EXE, {"--steps", "10", "--trials", "2", "--json"}, dir);
    REQUIRE(j.code == 0);
    const auto runs = nlohmann::json::parse(j.out)["training"]["runs"];
    REQUIRE(runs.size() == 2);
    CHECK(runs[0]["divided"] == true);
    CHECK(runs[1]["divided"] == false);
    for (const auto& run_ : runs) {
        CHECK(run_["step"].size() == 10);  // evaluated every max(1, steps / 20) steps
        for (double v : run_["val_loss"]) CHECK(std::isfinite(v));
        CHECK(run_["val_loss"].back().get<double>() < run_["val_loss"].front().get<double>());
    }
}

// --- heatmap --------------------------------------------------------------------------------------------

TEST_CASE("heatmap: without colour, T rows of T cells, blank above the diagonal", "[heatmap]") {
    test::TempDir dir("heatmap_ascii");
    const std::string prompt = "the cat sat";
    for (const char* env : {"NO_COLOR=1", "env -u NO_COLOR"}) {  // NO_COLOR, or stdout not a terminal
        const Run r = run(env, HEATMAP_EXE, {"--prompt", prompt}, dir);
        INFO(env << "\n" << r.out << r.err);
        REQUIRE(r.code == 0);
        CHECK(r.out.find("\x1b[") == std::string::npos);
        const Grid g = parse_grid(r.out, prompt.size());
        CHECK(g.labels == std::vector<std::string>{"t", "h", "e", "␣", "c", "a", "t", "␣", "s", "a", "t"});
        require_triangle(g);
        CHECK(g.cells[0][0] == "@");  // the first position sees only itself
        CHECK(r.out.find("blank: masked (the future)") != std::string::npos);
    }
    const Run same = run("NO_COLOR=1", HEATMAP_EXE, {"--prompt", prompt}, dir);
    const Run other = run("NO_COLOR=1", HEATMAP_EXE, {"--prompt", prompt, "--seed", "2"}, dir);
    CHECK(same.out == run("NO_COLOR=1", HEATMAP_EXE, {"--prompt", prompt}, dir).out);  // seeded
    CHECK(same.out != other.out);

    const Run colour = run("", HEATMAP_EXE, {"--prompt", "abc", "--color", "always"}, dir);
    REQUIRE(colour.code == 0);
    CHECK(colour.out.find("\x1b[48;2;") != std::string::npos);
    CHECK(colour.out.find('@') == std::string::npos);
}

TEST_CASE("heatmap: a trained GPT's head, the same shares the library computes, errors exit 1", "[heatmap]") {
    test::TempDir dir("heatmap_checkpoint");
    const std::string ckpt = (dir.path / "gpt.safetensors").string();
    const Run trained = run("", TRAIN_EXE,
                            {"--model", "gpt", "--n-embd", "16", "--n-head", "2", "--n-layer", "2", "--block", "8",
                             "--steps", "3", "--eval-iters", "1", "--sample", "0", "--out", ckpt},
                            dir);
    INFO(trained.err);
    REQUIRE(trained.code == 0);

    const std::string prompt = "abc abcd";  // the copy task's letters, 8 = the block
    const Run r =
        run("NO_COLOR=1", HEATMAP_EXE, {"--prompt", prompt, "--checkpoint", ckpt, "--layer", "1", "--head", "1"}, dir);
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("head 1 of layer 1 of the trained gpt model") != std::string::npos);
    const Grid g = parse_grid(r.out, prompt.size());
    require_triangle(g);

    nn::TrainedModel loaded = nn::load_trained_model(ckpt);
    auto& gpt = dynamic_cast<nn::GPT&>(*loaded.model);
    const auto ids = loaded.tokenizer->encode(prompt);
    {
        autograd::NoGradGuard no_grad;
        gpt.forward(ids, 1, static_cast<int64_t>(ids.size()));
    }
    const autograd::Tensor& w = gpt.blocks[1]->attention.heads[1]->last_attention();  // (1, T, T)
    for (int64_t i = 0; i < int64_t(prompt.size()); ++i)
        for (int64_t j = 0; j <= i; ++j) {
            INFO("cell " << i << ", " << j << ": share " << w.at({0, i, j}));
            CHECK(g.cells[i][j] == std::string(1, shade_of(w.at({0, i, j}))));
        }

    const auto fails = [&](std::vector<std::string> args, const std::string& message) {
        args.insert(args.end(), {"--checkpoint", ckpt});
        const Run bad = run("NO_COLOR=1", HEATMAP_EXE, args, dir);
        INFO(bad.err);
        CHECK(bad.code == 1);
        CHECK(bad.err.find(message) != std::string::npos);
        CHECK(bad.out.empty());
    };
    fails({"--prompt", "abcZ"}, "Z");
    fails({"--prompt", "abcdabcda"}, "the prompt has 9 characters, more than the model's block of 8");
    fails({"--prompt", "ab", "--layer", "2"}, "no head 0 in layer 2: this gpt model has 2 layers of 2 heads");
    fails({"--prompt", "ab", "--head", "2"}, "no head 2 in layer 0");
}

// --- plot_loss ------------------------------------------------------------------------------------------

TEST_CASE("plot_loss: train and validation loss from a training CSV, malformed CSVs name the file and line", "[plot]") {
    test::TempDir dir("plot_loss");
    const auto csv = dir.write("run.csv",
                               "step,train_loss,val_loss,lr,grad_norm,tokens_per_s\n"
                               "250,0.873900,0.875100,0.00975,0.41,150000.0\n"
                               "500,0.837000,0.828900,0.00905,0.38,151000.0\n"
                               "750,0.818700,0.818400,0.00794,0.35,152000.0\n");
    const Run r = run("", PLOT_LOSS_EXE, {csv.string(), "--title", "copy task"}, dir);
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out == fmt::format("wrote {}: 3 points, steps 250 to 750, last train loss 0.8187, val loss 0.8184\n",
                               (dir.path / "run.svg").string()));
    require_svg(dir.path / "run.svg", {"copy task", "train", "validation", "step", ">500<"});

    const auto fails = [&](const std::string& name, const std::string& content, const std::string& message) {
        const auto path = dir.write(name, content);
        const Run bad = run("", PLOT_LOSS_EXE, {path.string(), "--out", (dir.path / "bad.svg").string()}, dir);
        INFO(name << ": " << bad.err);
        CHECK(bad.code == 1);
        CHECK(bad.err.find(path.string() + message) != std::string::npos);
    };
    fails("empty.csv", "", ": empty");
    fails("header.csv", "step,loss\n1,2\n", ":1: the header has no 'train_loss' column");
    fails("short.csv", "step,train_loss,val_loss\n1,2,3\n2,3\n", ":3: 2 fields, but the header has 3");
    fails("word.csv", "step,train_loss,val_loss\n1,2,3\n2,oops,3\n", ":3: train_loss is 'oops', not a number");
    fails("order.csv", "step,train_loss,val_loss\n5,2,3\n4,2,3\n", ":3: step 4 does not follow step 5");
    fails("rows.csv", "step,train_loss,val_loss\n", ": a header but no rows");
    CHECK_FALSE(std::filesystem::exists(dir.path / "bad.svg"));
}

TEST_CASE(
    "train --csv --log-every: a row at step 0 and every N steps, evaluations where they were, and plot_loss draws it",
    "[plot]") {
    test::TempDir dir("log_every");
    const std::string csv = (dir.path / "run.csv").string();
    const Run trained = run("", TRAIN_EXE,
                            {"--model", "bigram", "--steps", "12", "--eval-every", "6", "--eval-iters", "1",
                             "--log-every", "4", "--sample", "0", "--csv", csv},
                            dir);
    INFO(trained.err);
    REQUIRE(trained.code == 0);
    const auto lines = lines_of(test::read_bytes(csv));
    REQUIRE(lines.size() == 6);
    CHECK(lines[0] == "step,batch_loss,train_loss,val_loss,lr,grad_norm,tokens_per_s");
    // the columns present in each row: step 0 evaluated before any step, 4 and 8 logged, 6 and 12 evaluated
    const auto present = [&](size_t row) {
        std::vector<std::string> fields;
        std::string field;
        std::istringstream in(lines[row]);
        while (std::getline(in, field, ',')) fields.push_back(field);
        if (lines[row].ends_with(",")) fields.push_back("");
        std::string mask;
        for (const auto& f : fields) mask += f.empty() ? '-' : 'x';
        return fields.front() + ":" + mask;
    };
    CHECK(present(1) == "0:x-xxx--");
    CHECK(present(2) == "4:xx--xxx");
    CHECK(present(3) == "6:xxxxxxx");
    CHECK(present(4) == "8:xx--xxx");
    CHECK(present(5) == "12:xxxxxxx");

    const Run plotted = run("", PLOT_LOSS_EXE, {csv, "--out", (dir.path / "run.svg").string()}, dir);
    INFO(plotted.err);
    REQUIRE(plotted.code == 0);
    CHECK(plotted.out.starts_with(
        fmt::format("wrote {}: 5 points, steps 0 to 12, last train loss", (dir.path / "run.svg").string())));
    require_svg(dir.path / "run.svg", {"train (batch)", "3 evaluations, steps 0 to 12", ">0<"});

    // --log-every writes rows to the log: without one it is refused
    const Run refused = run("", TRAIN_EXE, {"--model", "bigram", "--steps", "2", "--log-every", "1"}, dir);
    CHECK(refused.code == 2);
    CHECK(refused.err == "train: --log-every needs --csv or --report: it writes rows to those; see --help\n");
}
