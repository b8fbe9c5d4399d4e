// The attention lab's six cells (examples/lab.cpp prints them; the page in examples/web/ shows them):
// each computed by the library, printed as a small table unless asked for JSON, and checked. Nothing is
// trained; every random draw comes from one seeded generator.
//
// Shape legend: B batch (independent windows), T window length, C row width, H head width.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <nn/attention.h>
#include <nn/tutorial/study.h>
#include <nlohmann/json.hpp>

#include "lab_cells.h"

using namespace autograd;

namespace {

using Json = nlohmann::ordered_json;  // keys in the order written

// What a check expects of its measured value, as `--json` shows it and as the check applies it: exactly
// a number or a bool, within a tolerance of a target ({"target", "tolerance"}: |value − target| <
// tolerance), or a range ({"above", "at_least", "below", "at_most"}, any of them). Applied to an array it
// must hold for every element; a target that is an array pairs with the value element by element.
class Expected {
public:
    static Expected exactly(Json v) { return Expected(std::move(v)); }
    static Expected near(Json target, double tolerance) {
        return Expected({{"target", std::move(target)}, {"tolerance", tolerance}});
    }
    struct Bounds {
        std::optional<double> above = std::nullopt, at_least = std::nullopt, below = std::nullopt,
                              at_most = std::nullopt;
    };
    static Expected range(const Bounds& b) {
        Json spec = Json::object();
        for (const auto& [key, bound] :
             {std::pair{"above", b.above}, {"at_least", b.at_least}, {"below", b.below}, {"at_most", b.at_most}})
            if (bound) spec[key] = *bound;
        return Expected(std::move(spec));
    }

    const Json& json() const { return spec_; }
    bool holds(const Json& value) const {
        if (!value.is_array()) return holds_element(value, spec_.contains("target") ? spec_["target"] : spec_);
        for (size_t i = 0; i < value.size(); ++i) {
            const Json& target = spec_.is_object() ? spec_.value("target", Json()) : spec_;
            if (!holds_element(value[i], target.is_array() ? target.at(i) : target)) return false;
        }
        return true;
    }

private:
    explicit Expected(Json spec) : spec_(std::move(spec)) {}
    // `target` is this element's (a number or bool for exactly; the number for near)
    bool holds_element(const Json& v, const Json& target) const {
        if (!spec_.is_object()) return v == target;  // a NaN (null in the JSON) equals nothing
        if (!v.is_number()) return false;
        const double x = v.get<double>();
        const auto bound = [&](const char* key) { return spec_[key].get<double>(); };
        if (spec_.contains("target")) return std::abs(x - target.get<double>()) < bound("tolerance");
        return (!spec_.contains("above") || x > bound("above")) &&
               (!spec_.contains("at_least") || x >= bound("at_least")) &&
               (!spec_.contains("below") || x < bound("below")) &&
               (!spec_.contains("at_most") || x <= bound("at_most"));
    }
    Json spec_;
};

// Collects each cell, and prints it with its ✓/✗ lines when asked: per cell the measured values and the
// checks, each with an id (stable snake_case, unique in the lab), its claim, the value it measured, what
// it expected and whether it passed.
class Report {
public:
    explicit Report(bool print) : print_(print) {}

    void cell(int number, std::string_view title) {
        cells_.push_back({{"cell", number}, {"title", title}, {"values", Json::object()}, {"checks", Json::array()}});
        print("\n{}. {}\n", number, title);
    }
    template <typename... Args>
    void print(fmt::format_string<Args...> format, Args&&... args) const {
        if (print_) fmt::print(format, std::forward<Args>(args)...);
    }
    void value(const std::string& key, Json v) { cells_.back()["values"][key] = std::move(v); }

    // One check of one measured value; `detail` follows the claim in brackets on the ✓/✗ line.
    void check(std::string_view id, std::string_view claim, Json measured, const Expected& expected,
               std::string_view detail = {}) {
        const bool ok = expected.holds(measured);
        record(id, claim, std::move(measured), expected.json(), ok, detail);
    }
    // One check of several named values, each with its own expectation; it passes when all hold.
    struct Part {
        std::string name;
        Json value;
        Expected expected;
    };
    void check(std::string_view id, std::string_view claim, const std::vector<Part>& parts,
               std::string_view detail = {}) {
        Json measured = Json::object(), expected = Json::object();
        bool ok = true;
        for (const Part& p : parts) {
            ok = p.expected.holds(p.value) && ok;
            measured[p.name] = p.value;
            expected[p.name] = p.expected.json();
        }
        record(id, claim, std::move(measured), std::move(expected), ok, detail);
    }

    // The JSON `lab --json` prints; with printing on, the summary line is printed too.
    Json result(uint64_t seed) const {
        print("\n{} passed, {} failed\n", passed_, failed_);
        return {{"seed", seed}, {"passed", passed_}, {"failed", failed_}, {"cells", cells_}};
    }

private:
    void record(std::string_view id, std::string_view claim, Json measured, Json expected, bool ok,
                std::string_view detail) {
        (ok ? passed_ : failed_)++;
        cells_.back()["checks"].push_back({{"id", id},
                                           {"claim", claim},
                                           {"value", std::move(measured)},
                                           {"expected", std::move(expected)},
                                           {"passed", ok}});
        print("  {} {}{}\n", ok ? "✓" : "✗", claim, detail.empty() ? std::string() : fmt::format(" ({})", detail));
    }

    bool print_;
    Json cells_ = Json::array();
    int passed_ = 0, failed_ = 0;
};

double max_abs_diff(const Tensor& a, const Tensor& b) {
    double worst = 0.0;
    for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, double(std::abs(a.data()[i] - b.data()[i])));
    return worst;
}

// The tutorial's hand example: two positions of width 2 and the two matrices it makes up.
Tensor hand_x() { return tensor({0.8f, -0.6f, 0.2f, 1.0f}, {1, 2, 2}); }  // (B=1, T=2, C=2)
void set_hand_weights(nn::Head& head) {
    std::ranges::copy(std::vector<float>{1, 0, -1, 1}, head.query.weight.data().begin());  // Wq (C, H)
    std::ranges::copy(std::vector<float>{0, 1, 1, 0}, head.key.weight.data().begin());     // Wk (C, H)
}

// --- 1 ------------------------------------------------------------------------------------------------
void average_cell(Report& r) {
    r.cell(1, "The average that nearly works");
    const std::string window = "the cat sat on the m";
    const auto T = static_cast<int64_t>(window.size());
    // One-hot rows make the output of the average exactly its weights: row i, column j = j's say in i.
    Tensor identity = zeros({1, T, T});
    for (int64_t i = 0; i < T; ++i) identity.at({0, i, i}) = 1.0f;
    const Tensor say = nn::Average().forward(identity);  // (1, T, T)
    r.print("  predicting after \"{}\", the say of each position in the last row:\n  ", window);
    for (char c : window) r.print(" {:>5}", c == ' ' ? std::string("␣") : std::string(1, c));
    r.print("\n  ");
    for (int64_t j = 0; j < T; ++j) r.print(" {:5.3f}", say.at({0, T - 1, j}));
    r.print("\n");
    const double m_share = say.at({0, T - 1, T - 1}), t_share = say.at({0, T - 1, 0});
    r.value("m_share", m_share);
    r.value("t_share", t_share);
    r.check("m_share_is_one_twentieth", "the m gets 1/20 of the say", m_share, Expected::near(1.0 / 20.0, 1e-7),
            fmt::format("{:.6f}", m_share));
    r.check("t_share_equals_m_share", "the t twenty positions back gets exactly as much", t_share,
            Expected::exactly(m_share));
}

// --- 2 ------------------------------------------------------------------------------------------------
void self_matching_cell(Report& r, Generator& gen) {
    r.cell(2, "The self-matching failure and the three matrices that fix it");
    const Tensor a = tensor({0.9f, -0.5f, 0.3f, -0.8f}), b = tensor({-0.4f, 0.7f, 0.8f, -0.2f});
    const Tensor ab = a * b, aa = a * a;
    r.print("  entry   a      b     a×b    a×a\n");
    for (int64_t i = 0; i < 4; ++i)
        r.print("  {}     {:5.1f}  {:5.1f}  {:5.2f}  {:5.2f}\n", i + 1, a.at({i}), b.at({i}), ab.at({i}), aa.at({i}));
    const double a_dot_b = sum(ab).item(), a_dot_a = sum(aa).item();
    r.print("  sum                 {:5.2f}  {:5.2f}\n", a_dot_b, a_dot_a);
    r.value("a_dot_b", a_dot_b);
    r.value("a_dot_a", a_dot_a);
    r.check("hand_dot_products", "a·b = −0.31 and a·a = 1.79",
            {{"a_dot_b", a_dot_b, Expected::near(-0.31, 1e-6)}, {"a_dot_a", a_dot_a, Expected::near(1.79, 1e-6)}});

    // Width-16 rows of everyday size: a row against itself piles up to ~16, against a stranger ~0.
    const int64_t rows = 4000;
    const Tensor x = randn({rows, 16}, gen), other = randn({rows, 16}, gen);  // (N, C)
    const double self_score = mean(sum(x * x, 1)).item(), stranger_score = mean(sum(x * other, 1)).item();
    r.print("  width 16, {} rows: self score averages {:+.2f}, a stranger's {:+.2f}\n", rows, self_score,
            stranger_score);
    r.value("self_score_mean", self_score);
    r.value("stranger_score_mean", stranger_score);
    r.check("self_score_near_width_stranger_near_zero", "self ≈ +16, stranger ≈ 0",
            {{"self_score_mean", self_score, Expected::near(16.0, 0.5)},
             {"stranger_score_mean", stranger_score, Expected::near(0.0, 0.5)}});

    // Through a head: raw x xᵀ (divided by √16) against random untrained Wq, Wk. T = 8, causal.
    const int64_t T = 8, windows = 500;
    const auto raw = nn::study::self_share({.n_embd = 16, .head_size = 16, .compare_raw = true}, T, windows, gen);
    const auto projected = nn::study::self_share({.n_embd = 16, .head_size = 16}, T, windows, gen);
    const auto fraction_at_least = [&](double level) {
        return double(std::ranges::count_if(raw.shares, [&](double s) { return s >= level; })) /
               double(raw.shares.size());
    };
    r.print("  self-share of each looking row, {} windows of {} rows:\n", windows, T);
    r.print("                       min     median   rows ≥68%  rows ≥87%  advantage (1 = even split)\n");
    r.print("  raw x·xᵀ / √16      {:6.3f}   {:6.3f}   {:6.1f}%    {:6.1f}%    {:6.2f}\n", raw.share.min,
            raw.share.median, 100 * fraction_at_least(0.68), 100 * fraction_at_least(0.87), raw.advantage.median);
    r.print("  random Wq, Wk       {:6.3f}   {:6.3f}                          {:6.2f}\n", projected.share.min,
            projected.share.median, projected.advantage.median);
    r.print("  (the tutorial's one figure window saw ≥ 68% in every row and ≥ 87% in most)\n");
    r.value("raw_self_share_min", raw.share.min);
    r.value("raw_self_share_median", raw.share.median);
    r.value("raw_rows_at_least_68", fraction_at_least(0.68));
    r.value("raw_rows_at_least_87", fraction_at_least(0.87));
    r.value("raw_advantage_median", raw.advantage.median);
    r.value("projected_self_share_median", projected.share.median);
    r.value("projected_advantage_median", projected.advantage.median);
    r.check("raw_rows_keep_most_for_themselves", "raw: most rows keep ≥ 87% of their attention for themselves",
            raw.share.median, Expected::range({.at_least = 0.87}));
    r.check("projected_self_share_near_even_split",
            "through random Wq, Wk the self-share falls back to about an even split", projected.advantage.median,
            Expected::range({.above = 0.8, .below = 1.25}));

    // The hand example.
    nn::Head head({.n_embd = 2, .head_size = 2}, gen);
    set_hand_weights(head);
    const Tensor q = head.query.forward(hand_x()), k = head.key.forward(hand_x());  // (1, 2, 2)
    r.print(
        "  x1 = [0.8, −0.6], x2 = [0.2, 1.0] → q1 = [{:.1f}, {:.1f}], k1 = [{:.1f}, {:.1f}], k2 = [{:.1f}, {:.1f}]\n",
        q.at({0, 0, 0}), q.at({0, 0, 1}), k.at({0, 0, 0}), k.at({0, 0, 1}), k.at({0, 1, 0}), k.at({0, 1, 1}));
    const std::vector<double> q1 = {q.at({0, 0, 0}), q.at({0, 0, 1})}, k1 = {k.at({0, 0, 0}), k.at({0, 0, 1})},
                              k2 = {k.at({0, 1, 0}), k.at({0, 1, 1})};
    r.value("q1", q1);
    r.value("k1", k1);
    r.value("k2", k2);
    r.check("hand_queries_and_keys", "q1 = [1.4, −0.6], k1 = [−0.6, 0.8], k2 = [1.0, 0.2]",
            {{"q1", q1, Expected::near({1.4, -0.6}, 1e-6)},
             {"k1", k1, Expected::near({-0.6, 0.8}, 1e-6)},
             {"k2", k2, Expected::near({1.0, 0.2}, 1e-6)}});
}

// --- 3 ------------------------------------------------------------------------------------------------
void score_grid_cell(Report& r, Generator& gen) {
    r.cell(3, "Everything against everything");
    // The bare grid: no divisor, no mask, so every pair shows.
    nn::Head projected({.n_embd = 2, .head_size = 2, .scaled = false, .causal = false}, gen);
    set_hand_weights(projected);
    nn::Head raw({.n_embd = 2, .head_size = 2, .scaled = false, .compare_raw = true, .causal = false}, gen);
    projected.forward(hand_x());
    raw.forward(hand_x());
    const Tensor& qk = projected.last_scores();  // (1, 2, 2): Q Kᵀ
    const Tensor& xx = raw.last_scores();        // (1, 2, 2): x xᵀ
    r.print("  Q Kᵀ          k1      k2        x xᵀ          x1      x2\n");
    for (int64_t i = 0; i < 2; ++i)
        r.print("  q{}       {:6.2f}  {:6.2f}        x{}        {:6.2f}  {:6.2f}\n", i + 1, qk.at({0, i, 0}),
                qk.at({0, i, 1}), i + 1, xx.at({0, i, 0}), xx.at({0, i, 1}));
    const double q1k1 = qk.at({0, 0, 0}), q1k2 = qk.at({0, 0, 1}), x1x1 = xx.at({0, 0, 0}), x1x2 = xx.at({0, 0, 1});
    r.value("q1_dot_k1", q1k1);
    r.value("q1_dot_k2", q1k2);
    r.value("x1_dot_x1", x1x1);
    r.value("x1_dot_x2", x1x2);
    r.check("hand_projected_scores", "q1·k2 = 1.28, q1·k1 = −1.32",
            {{"q1_dot_k2", q1k2, Expected::near(1.28, 1e-6)}, {"q1_dot_k1", q1k1, Expected::near(-1.32, 1e-6)}});
    r.check("hand_raw_scores", "x1·x1 = 1.00, x1·x2 = −0.44",
            {{"x1_dot_x1", x1x1, Expected::near(1.00, 1e-6)}, {"x1_dot_x2", x1x2, Expected::near(-0.44, 1e-6)}});
    r.check("raw_self_wins_projected_stranger_wins", "raw, the self-match wins; projected, the stranger wins",
            {{"raw_self_minus_stranger", x1x1 - x1x2, Expected::range({.above = 0.0})},
             {"projected_stranger_minus_self", q1k2 - q1k1, Expected::range({.above = 0.0})}});
}

// --- 4 ------------------------------------------------------------------------------------------------
void mask_cell(Report& r, Generator& gen) {
    r.cell(4, "The mask and its two guarantees");
    const int64_t B = 4, T = 8, C = 16;
    nn::Head head({.n_embd = C, .head_size = C}, gen);
    const Tensor x = randn({B, T, C}, gen);
    const Tensor out = head.forward(x);       // (B, T, H)
    const Tensor& w = head.last_attention();  // (B, T, T)
    r.print("  shares of window 0 (row = position looking, column = position looked at):\n");
    for (int64_t i = 0; i < T; ++i) {
        r.print("  ");
        for (int64_t j = 0; j < T; ++j) r.print(" {:5.3f}", w.at({0, i, j}));
        r.print("\n");
    }
    double worst_row = 0.0, largest_above = 0.0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i) {
            double row = 0.0;
            for (int64_t j = 0; j < T; ++j) {
                row += w.at({b, i, j});
                if (j > i) largest_above = std::max(largest_above, double(std::abs(w.at({b, i, j}))));
            }
            worst_row = std::max(worst_row, std::abs(row - 1.0));
        }
    const Tensor v = head.value.forward(x);  // (B, T, H)
    const double first_diff = max_abs_diff(out.slice(1, 0, 1), v.slice(1, 0, 1));
    r.value("worst_row_sum_error", worst_row);
    r.check("row_shares_sum_to_one", "every row of shares sums to 1", worst_row, Expected::range({.at_most = 1e-6}),
            fmt::format("worst error {:.1e}", worst_row));
    r.check("above_diagonal_is_zero", "everything above the diagonal is exactly 0", largest_above,
            Expected::exactly(0.0));
    r.check("first_output_is_own_value", "the first position's output equals its own value exactly", first_diff,
            Expected::exactly(0.0));

    // The mask put to work: a prefix reads nothing after it, so its attention rows, keys and values never
    // change as characters follow, and generate keeps them (nn/decoder.h: a key-value cache).
    r.print("  the cache the mask allows: the first 5 rows of a window of 8, then of the window cut to 5\n");
    const auto masked = nn::study::prefix_stability({.n_embd = C, .head_size = C}, 5, T, gen);
    const auto unmasked = nn::study::prefix_stability({.n_embd = C, .head_size = C, .causal = false}, 5, T, gen);
    r.value("prefix_attention_change", masked.attention_change);
    r.value("prefix_attention_change_without_mask", unmasked.attention_change);
    r.check("prefix_rows_unchanged", "a prefix's attention rows and outputs do not change when more characters follow",
            {{"attention_change", masked.attention_change, Expected::range({.at_most = 1e-6})},
             {"output_change", masked.output_change, Expected::range({.at_most = 1e-5})}},
            fmt::format("largest change {:.1e}; without the mask {:.2f}", masked.attention_change,
                        unmasked.attention_change));
    Json saving = Json::object();
    r.print("  multiply-adds per character, nanoGPT's shakespeare_char model (6 blocks, 384 wide, vocabulary 65):\n");
    for (int64_t window : {8, 32, 64, 128, 256}) {
        const auto cost = nn::study::cache_cost(384, 6, 65, window);
        r.print("    window {:3}: {:6.1f} M without the cache, {:5.2f} M with it: {:5.1f}x\n", window,
                cost.uncached / 1e6, cost.cached / 1e6, cost.saving());
        saving[std::to_string(window)] = {{"uncached", cost.uncached}, {"cached", cost.cached}};
    }
    r.value("cache_multiply_adds", saving);
    const double at_256 = nn::study::cache_cost(384, 6, 65, 256).saving();
    r.check("cache_saving_grows_with_window", "at a window of 256 the cache does more than 100x less work", at_256,
            Expected::range({.above = 100}));
}

// --- 5 ------------------------------------------------------------------------------------------------
void divisor_cell(Report& r, Generator& gen) {
    r.cell(5, "The divisor, measured");
    const std::vector<int64_t> widths = {2, 8, 32, 128};
    const std::vector<double> tutorial = {1.42, 2.84, 5.62, 11.25};
    const int64_t pairs = 20000;
    r.print("  head width   raw spread (tutorial, √width)   after ÷√width\n");
    std::vector<double> raw_spreads, divided_spreads, raw_over_sqrt_width;
    for (size_t i = 0; i < widths.size(); ++i) {
        const double raw = nn::study::score_spread(widths[i], pairs, false, gen);
        const double divided = nn::study::score_spread(widths[i], pairs, true, gen);
        const double theory = std::sqrt(double(widths[i]));
        r.print("  {:>10}   {:6.2f} ({:5.2f}, {:5.2f})          {:5.2f}\n", widths[i], raw, tutorial[i], theory,
                divided);
        raw_spreads.push_back(raw);
        divided_spreads.push_back(divided);
        raw_over_sqrt_width.push_back(raw / theory);
    }
    r.value("widths", std::vector<double>(widths.begin(), widths.end()));
    r.value("raw_spread", raw_spreads);
    r.value("divided_spread", divided_spreads);
    r.check("raw_spread_grows_as_sqrt_width", "the raw spread grows like √width (each within 3%)", raw_over_sqrt_width,
            Expected::near(1.0, 0.03));
    r.check("divided_spread_is_one", "after dividing by √width the spread is 1.00 (each within 3%)", divided_spreads,
            Expected::near(1.0, 0.03));

    // One window at width 16, the same head with and without the divisor: every looking row sharpens.
    const int64_t T = 8, C = 16;
    nn::Head with({.n_embd = C, .head_size = C}, gen);
    nn::Head without({.n_embd = C, .head_size = C, .scaled = false}, gen);
    for (auto [from, to] :
         {std::pair{&with.query, &without.query}, {&with.key, &without.key}, {&with.value, &without.value}}) {
        for (float& v : from->weight.data()) v = gen.normal(0.0f, 1.0f / std::sqrt(float(C)));  // everyday-size q, k
        std::ranges::copy(from->weight.data(), to->weight.data().begin());
    }
    const Tensor x = randn({1, T, C}, gen);
    with.forward(x);
    without.forward(x);
    const Tensor largest_with = max(with.last_attention(), -1), largest_without = max(without.last_attention(), -1);
    r.print("  width 16, one window: largest share per looking row\n  with ÷√16    ");
    for (int64_t i = 1; i < T; ++i) r.print(" {:4.2f}", largest_with.at({0, i}));
    r.print("\n  without      ");
    for (int64_t i = 1; i < T; ++i) r.print(" {:4.2f}", largest_without.at({0, i}));
    r.print("\n  (the tutorial's figure: 0.32–0.75 with the divisor, past 0.77 without)\n");
    std::vector<double> sharpening;  // per looking row: largest share without the divisor − with it
    for (int64_t i = 1; i < T; ++i)
        sharpening.push_back(double(largest_without.at({0, i})) - double(largest_with.at({0, i})));
    r.check("no_divisor_sharpens_every_row", "without the divisor every looking row sharpens", sharpening,
            Expected::range({.at_least = 0.0}));

    // Why it matters: the gradient that comes back through the softmax, read off the graph.
    r.print("  gradient through the softmax ({} random heads per width, window {}):\n", 50, T);
    r.print("  width  divisor  largest share  entropy  row gradient (median)  flat rows  |dWq|   |dWk|\n");
    std::map<std::pair<int64_t, bool>, nn::study::Saturation> table;
    for (int64_t width : {2, 8, 32, 128})
        for (bool divided : {true, false}) {
            const auto s = nn::study::saturation(width, divided, T, 50, gen);
            table[{width, divided}] = s;
            r.print("  {:>5}  {:>7}  {:13.2f}  {:7.3f}  {:21.2e}  {:8.0f}%  {:6.2f}  {:6.2f}\n", width,
                    divided ? "÷√H" : "none", s.largest_share.median, s.entropy, s.row_gradient.median,
                    100 * s.flat_rows, s.grad_query, s.grad_key);
            const std::string key = fmt::format("width_{}_{}", width, divided ? "divided" : "raw");
            r.value(key + "_row_gradient_median", s.row_gradient.median);
            r.value(key + "_flat_rows", s.flat_rows);
            r.value(key + "_grad_query", s.grad_query);
            r.value(key + "_grad_key", s.grad_key);
            r.value(key + "_largest_share_median", s.largest_share.median);
        }
    r.print(
        "  (|dWq|, |dWk| are whole-matrix norms: without the divisor they come from the few rows that\n"
        "   are not yet flat, so the typical row's gradient is the one that tells the story)\n");
    const auto median = [&](int64_t width, bool divided) { return table[{width, divided}].row_gradient.median; };
    std::vector<double> steady;  // widths 8, 32, 128 against width 2, with the divisor
    for (int64_t width : {8, 32, 128}) steady.push_back(median(width, true) / median(2, true));
    r.check("divided_row_gradient_steady", "with the divisor the typical row's gradient does not fall as width grows",
            steady, Expected::range({.at_least = 0.5}));
    r.check("raw_row_gradient_collapses", "without it the gradient collapses as width grows (width 128: under a tenth)",
            {{"width_128_raw_over_divided", median(128, false) / median(128, true), Expected::range({.below = 0.1})},
             {"width_128_over_width_2_raw", median(128, false) / median(2, false), Expected::range({.below = 0.1})}});
}

// --- 6 ------------------------------------------------------------------------------------------------
void whole_head_cell(Report& r, Generator& gen) {
    r.cell(6, "The whole head");
    const int64_t B = 2, T = 6, C = 8, H = 4;
    nn::Head head({.n_embd = C, .head_size = H}, gen);
    const Tensor x = randn({B, T, C}, gen).requires_grad_();
    const Tensor upstream = randn({B, T, H}, gen);
    const Tensor out = head.forward(x);
    sum(out * upstream).backward();
    const std::vector<Tensor> head_grads = {x.grad().clone(), head.query.weight.grad().clone(),
                                            head.key.weight.grad().clone(), head.value.weight.grad().clone()};

    // The same six lines by hand, on copies of the same weights.
    const Tensor xs = x.detach().clone().requires_grad_(), Wq = head.query.weight.clone().requires_grad_(),
                 Wk = head.key.weight.clone().requires_grad_(), Wv = head.value.weight.clone().requires_grad_();
    const Tensor Q = matmul(xs, Wq), K = matmul(xs, Wk), V = matmul(xs, Wv);                // (B, T, H)
    const Tensor scores = scale(matmul(Q, K.transpose(1, 2)), 1.0f / std::sqrt(float(H)));  // (B, T, T)
    const Tensor w = softmax(causal_mask(scores), -1);
    const Tensor by_hand = matmul(w, V);  // (B, T, H)
    sum(by_hand * upstream).backward();
    const double out_diff = max_abs_diff(out, by_hand);
    double grad_diff = 0.0;
    const std::vector<Tensor> hand_grads = {xs.grad(), Wq.grad(), Wk.grad(), Wv.grad()};
    for (size_t i = 0; i < hand_grads.size(); ++i)
        grad_diff = std::max(grad_diff, max_abs_diff(head_grads[i], hand_grads[i]));
    r.print("  nn::Head against the six lines by hand: outputs differ by {:.1e}, gradients by {:.1e}\n", out_diff,
            grad_diff);
    r.value("output_max_diff", out_diff);
    r.value("gradient_max_diff", grad_diff);
    r.check("head_is_the_composition", "nn::Head is the composition: same outputs, same gradients",
            {{"output_max_diff", out_diff, Expected::range({.at_most = 1e-6})},
             {"gradient_max_diff", grad_diff, Expected::range({.at_most = 1e-6})}});

    const Tensor shares = tensor({0.9f, 0.1f}, {1, 2});
    const Tensor values = tensor({0.5f, -1.0f, 1.0f, 0.0f}, {2, 2});  // rows v1, v2
    const Tensor blend = matmul(shares, values);                      // (1, 2)
    r.print("  shares [0.9, 0.1] over v1 = [0.5, −1.0], v2 = [1.0, 0.0] → [{:.2f}, {:.2f}]\n", blend.at({0, 0}),
            blend.at({0, 1}));
    const std::vector<double> blended = {blend.at({0, 0}), blend.at({0, 1})};
    r.value("blend", blended);
    r.check("blend_of_values", "the blend is [0.55, −0.90]", blended, Expected::near({0.55, -0.90}, 1e-6));
}

}  // namespace

nlohmann::ordered_json lab::run(uint64_t seed, int only, bool print) {
    Report report(print);
    report.print("The attention lab: tutorial part 7, computed by tinygpt. Seed {}.\n", seed);
    // Each cell draws from its own stream, so `--cell N` prints what the full run prints for N.
    const auto stream = [seed](int cell) { return Generator(seed + 0x9E3779B97F4A7C15ull * cell); };
    if (!only || only == 1) average_cell(report);
    if (!only || only == 2) {
        Generator gen = stream(2);
        self_matching_cell(report, gen);
    }
    if (!only || only == 3) {
        Generator gen = stream(3);
        score_grid_cell(report, gen);
    }
    if (!only || only == 4) {
        Generator gen = stream(4);
        mask_cell(report, gen);
    }
    if (!only || only == 5) {
        Generator gen = stream(5);
        divisor_cell(report, gen);
    }
    if (!only || only == 6) {
        Generator gen = stream(6);
        whole_head_cell(report, gen);
    }
    return report.result(seed);
}
