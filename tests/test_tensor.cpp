// Tensor basics: creation, shapes, element access, views and copies, the random generator, printing.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "helpers.h"

using namespace autograd;
using test::max_abs_diff;

namespace {

// Deepest nesting of '[' in s, and whether the brackets balance.
int bracket_depth(const std::string& s, bool& balanced) {
    int depth = 0, deepest = 0;
    balanced = true;
    for (char ch : s) {
        if (ch == '[') deepest = std::max(deepest, ++depth);
        if (ch == ']' && --depth < 0) balanced = false;
    }
    if (depth != 0) balanced = false;
    return deepest;
}

}  // namespace

TEST_CASE("zeros, ones, full and scalar make leaves of the given shape", "[tensor]") {
    const Tensor z = zeros({2, 3});
    REQUIRE(z.shape() == Shape{2, 3});
    REQUIRE(z.dim() == 2);
    REQUIRE(z.numel() == 6);
    REQUIRE(z.to_vector() == std::vector<float>(6, 0.0f));
    REQUIRE_FALSE(z.requires_grad());
    REQUIRE(z.is_leaf());
    REQUIRE(std::string(z.op()) == "leaf");

    REQUIRE(ones({4}).to_vector() == std::vector<float>(4, 1.0f));
    const Tensor f = full({3, 1, 2}, 3.5f);
    REQUIRE(f.shape() == Shape{3, 1, 2});
    REQUIRE(f.to_vector() == std::vector<float>(6, 3.5f));

    const Tensor s = scalar(2.5f);
    REQUIRE(s.shape().empty());
    REQUIRE(s.dim() == 0);
    REQUIRE(s.numel() == 1);
    REQUIRE(s.item() == 2.5f);

    const Tensor zl = zeros_like(f);
    REQUIRE(zl.shape() == f.shape());
    REQUIRE(zl.to_vector() == std::vector<float>(6, 0.0f));

    REQUIRE_FALSE(Tensor().defined());
    REQUIRE(z.defined());
}

TEST_CASE("Under ShapesOnlyGuard, tensors have a shape and no values, and nothing is drawn", "[tensor]") {
    using Catch::Matchers::Contains;
    Generator gen(7), untouched(7);
    Tensor huge, small, drawn;
    {
        const ShapesOnlyGuard shapes_only;
        CHECK(is_shapes_only());
        huge = zeros({int64_t{1} << 40, int64_t{1} << 40});  // 2^80 values: their count overflows 64 bits
        small = scalar(3.0f);
        drawn = randn({1000, 1000}, gen);
        CHECK(tensor({1.0f, 2.0f}).has_values() == false);
        CHECK_THROWS_WITH(full({-1}, 0.0f), Contains("negative dimension"));  // shapes are still checked
    }
    CHECK_FALSE(is_shapes_only());
    CHECK(huge.shape() == Shape{int64_t{1} << 40, int64_t{1} << 40});
    CHECK(drawn.shape() == Shape{1000, 1000});
    CHECK(gen.next_u64() == untouched.next_u64());  // randn drew nothing
    CHECK_FALSE(huge.has_values());
    CHECK(huge.numel() == 0);
    // reading the values, directly or through an op, is a clear error, not a read of nothing
    CHECK_THROWS_WITH(huge.data(), Contains("holds no values") && Contains("ShapesOnlyGuard"));
    CHECK_THROWS_WITH(small.item(), Contains("tensor of shape () holds no values"));
    CHECK_THROWS_WITH(drawn + drawn, Contains("holds no values"));
    CHECK_THROWS_WITH(small.reshape({1}), Contains("reshape"));
    // outside the guard, creation is as before
    CHECK(zeros({2}).has_values());
    CHECK(scalar(3.0f).item() == 3.0f);
    // a structure too large to hold is refused before it is built
    const ShapesOnlyGuard limited(2);
    zeros({4});
    zeros({4});
    CHECK_THROWS_AS(zeros({4}), std::length_error);
}

TEST_CASE("tensor() takes row-major values, rank 4 works", "[tensor]") {
    const Tensor t = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    REQUIRE(t.shape() == Shape{2, 3});
    REQUIRE(t.at({0, 0}) == 1.0f);
    REQUIRE(t.at({0, 2}) == 3.0f);
    REQUIRE(t.at({1, 0}) == 4.0f);
    REQUIRE(t.at({1, 2}) == 6.0f);
    REQUIRE(t.size(0) == 2);
    REQUIRE(t.size(1) == 3);
    REQUIRE(t.size(-1) == 3);
    REQUIRE(t.size(-2) == 2);

    const Tensor v = tensor({7, 8, 9});
    REQUIRE(v.shape() == Shape{3});
    REQUIRE(v.to_vector() == std::vector<float>{7, 8, 9});

    // rank 4: element (i, j, k, l) of shape (2, 3, 4, 5) sits at ((i*3 + j)*4 + k)*5 + l
    const Tensor r4 = arange(120).reshape({2, 3, 4, 5});
    REQUIRE(r4.dim() == 4);
    REQUIRE(r4.at({1, 2, 3, 4}) == 119.0f);
    REQUIRE(r4.at({1, 0, 2, 1}) == static_cast<float>(((1 * 3 + 0) * 4 + 2) * 5 + 1));

    const Tensor one = tensor({42.0f}, {1, 1});
    REQUIRE(one.item() == 42.0f);
}

TEST_CASE("arange", "[tensor]") {
    REQUIRE(arange(5).to_vector() == std::vector<float>{0, 1, 2, 3, 4});
    REQUIRE(arange(5).shape() == Shape{5});
    REQUIRE(arange(1.0f, 2.0f, 0.25f).to_vector() == std::vector<float>{1.0f, 1.25f, 1.5f, 1.75f});
    REQUIRE(arange(2.0f, 5.0f).to_vector() == std::vector<float>{2, 3, 4});
    // the end is excluded even when the step does not divide the range: 0, 0.3, 0.6, 0.9
    const Tensor a = arange(0.0f, 1.0f, 0.3f);
    REQUIRE(a.numel() == 4);
    REQUIRE(max_abs_diff(a, {0.0, 0.3, 0.6, 0.9}) < 1e-6);
    REQUIRE(arange(0).numel() == 0);
}

TEST_CASE("at() reads and writes through the handle", "[tensor]") {
    Tensor t = zeros({2, 3});
    t.at({1, 2}) = 7.0f;
    t.at({0, 1}) = -2.0f;
    REQUIRE(t.data()[5] == 7.0f);
    REQUIRE(t.data()[1] == -2.0f);
    const Tensor& ct = t;
    REQUIRE(ct.at({1, 2}) == 7.0f);

    // data() is writable too
    t.data()[0] = 1.5f;
    REQUIRE(t.at({0, 0}) == 1.5f);

    Tensor s = scalar(1.0f);
    s.at({}) = 3.0f;
    REQUIRE(s.item() == 3.0f);
}

TEST_CASE("reshape infers -1 and shares storage", "[tensor]") {
    const Tensor t = arange(6).reshape({2, 3});
    const Tensor r = t.reshape({3, -1});
    REQUIRE(r.shape() == Shape{3, 2});
    REQUIRE(r.to_vector() == t.to_vector());
    REQUIRE(t.reshape({-1}).shape() == Shape{6});
    REQUIRE(t.reshape({1, -1, 1}).shape() == Shape{1, 6, 1});
    REQUIRE(reshape(t, {-1, 2}).shape() == Shape{3, 2});

    r.data()[0] = 100.0f;  // the reshape views the same storage
    REQUIRE(t.at({0, 0}) == 100.0f);

    const Tensor s = scalar(4.0f).reshape({1, 1});
    REQUIRE(s.shape() == Shape{1, 1});
    REQUIRE(s.reshape({}).shape().empty());
}

TEST_CASE("transpose swaps two dims", "[tensor]") {
    const Tensor t = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    const Tensor tt = t.transpose(0, 1);
    REQUIRE(tt.shape() == Shape{3, 2});
    for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 3; ++j) REQUIRE(tt.at({j, i}) == t.at({i, j}));
    REQUIRE(tt.to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});  // contiguous row-major result
    REQUIRE(t.transpose(-1, -2).to_vector() == tt.to_vector());
    REQUIRE(t.transpose(1, 1).to_vector() == t.to_vector());

    const Tensor r3 = arange(24).reshape({2, 3, 4});
    const Tensor r3t = transpose(r3, 0, 2);
    REQUIRE(r3t.shape() == Shape{4, 3, 2});
    for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 3; ++j)
            for (int64_t k = 0; k < 4; ++k) REQUIRE(r3t.at({k, j, i}) == r3.at({i, j, k}));
}

TEST_CASE("slice takes start to end (exclusive) along a dim", "[tensor]") {
    const Tensor t = arange(12).reshape({3, 4});
    const Tensor cols = t.slice(1, 1, 3);
    REQUIRE(cols.shape() == Shape{3, 2});
    REQUIRE(cols.to_vector() == std::vector<float>{1, 2, 5, 6, 9, 10});
    const Tensor rows = t.slice(0, 2, 3);
    REQUIRE(rows.shape() == Shape{1, 4});
    REQUIRE(rows.to_vector() == std::vector<float>{8, 9, 10, 11});
    REQUIRE(t.slice(-1, 3, 4).to_vector() == std::vector<float>{3, 7, 11});
    REQUIRE(slice(t, 0, 0, 3).to_vector() == t.to_vector());

    const Tensor r3 = arange(24).reshape({2, 3, 4});
    const Tensor mid = r3.slice(1, 1, 2);
    REQUIRE(mid.shape() == Shape{2, 1, 4});
    REQUIRE(mid.to_vector() == std::vector<float>{4, 5, 6, 7, 16, 17, 18, 19});
}

TEST_CASE("a copy shares storage, clone() does not, detach() shares storage without the graph", "[tensor]") {
    Tensor a = tensor({1, 2, 3});
    Tensor copy = a;
    copy.data()[0] = 10.0f;
    REQUIRE(a.data()[0] == 10.0f);
    REQUIRE(copy.impl() == a.impl());

    Tensor c = a.clone();
    REQUIRE(c.to_vector() == a.to_vector());
    c.data()[1] = -5.0f;
    REQUIRE(a.data()[1] == 2.0f);
    REQUIRE(c.is_leaf());

    // copies share the gradient and the requires_grad flag
    a.requires_grad_();
    REQUIRE(copy.requires_grad());
    sum(a * 2.0f).backward();
    REQUIRE(copy.grad().defined());
    REQUIRE(copy.grad().to_vector() == std::vector<float>{2, 2, 2});

    // detach: same storage, a leaf without a gradient
    const Tensor y = a * 3.0f;
    REQUIRE(y.requires_grad());
    REQUIRE_FALSE(y.is_leaf());
    const Tensor d = y.detach();
    REQUIRE(d.is_leaf());
    REQUIRE_FALSE(d.requires_grad());
    REQUIRE(d.to_vector() == y.to_vector());
    d.data()[2] = 0.5f;
    REQUIRE(y.data()[2] == 0.5f);

    // a clone of a tensor in a graph is a new leaf with its own storage
    const Tensor yc = y.clone();
    REQUIRE(yc.is_leaf());
    REQUIRE(yc.impl() != y.impl());
    REQUIRE(yc.contiguous().impl() == yc.impl());
}

TEST_CASE("names label tensors", "[tensor]") {
    Tensor w = zeros({2});
    REQUIRE(w.name().empty());
    w.set_name("fc.weight");
    REQUIRE(w.name() == "fc.weight");
}

TEST_CASE("Generator: same seed same stream, different seeds differ", "[tensor]") {
    Generator g1(7), g2(7), g3(8);
    bool any_diff = false;
    for (int i = 0; i < 100; ++i) {
        const uint64_t a = g1.next_u64(), b = g2.next_u64(), c = g3.next_u64();
        REQUIRE(a == b);
        any_diff = any_diff || (a != c);
    }
    REQUIRE(any_diff);

    Generator h1(123), h2(123), h3(124);
    std::vector<float> n1, n2, n3;
    for (int i = 0; i < 50; ++i) {
        n1.push_back(h1.normal());
        n2.push_back(h2.normal());
        n3.push_back(h3.normal());
    }
    REQUIRE(n1 == n2);
    REQUIRE(n1 != n3);

    // manual_seed restarts the stream
    Generator g(5);
    const float first = g.uniform();
    g.uniform();
    g.manual_seed(5);
    REQUIRE(g.uniform() == first);
}

TEST_CASE("Generator: state() and set_state() resume the stream exactly", "[tensor]") {
    Generator g(2024);
    g.normal();  // an odd number of normals leaves a Box-Muller spare waiting
    g.uniform();
    const Generator::State saved = g.state();

    auto draw = [](Generator& gen) {
        std::vector<double> out;
        for (int i = 0; i < 7; ++i) {
            out.push_back(gen.normal());
            out.push_back(gen.uniform());
            out.push_back(static_cast<double>(gen.randint(1000)));
            out.push_back(static_cast<double>(gen.next_u64() % 1000003));
        }
        return out;
    };
    const std::vector<double> first = draw(g);
    g.set_state(saved);
    REQUIRE(g.state() == saved);
    REQUIRE(draw(g) == first);

    Generator other(1);  // a different generator picks up the same stream from the saved state
    other.set_state(saved);
    REQUIRE(draw(other) == first);
}

namespace {

// The mean, the variance and the share of draws in `region` of n draws of `draw`.
struct Moments {
    double mean = 0, variance = 0, in_region = 0;
};
template <typename Draw, typename Region>
Moments moments_of(int n, Draw draw, Region region) {
    double s = 0.0, s2 = 0.0;
    int inside = 0;
    for (int i = 0; i < n; ++i) {
        const double x = draw();
        s += x;
        s2 += x * x;
        if (region(x)) ++inside;
    }
    const double mean = s / n;
    return {mean, s2 / n - mean * mean, inside / static_cast<double>(n)};
}

}  // namespace

TEST_CASE("Generator: normal() has mean 0 and std 1", "[tensor]") {
    Generator g(11);
    bool finite = true;
    const Moments m = moments_of(
        100000,
        [&] {
            const double x = g.normal();
            finite = finite && std::isfinite(x);
            return x;
        },
        [](double x) { return std::abs(x) < 1.0; });
    REQUIRE(finite);
    // standard errors: mean 1/sqrt(n) = 0.0032, std 1/sqrt(2n) = 0.0022; allow about 5 of them
    REQUIRE(std::abs(m.mean) < 0.016);
    REQUIRE(std::abs(std::sqrt(m.variance) - 1.0) < 0.012);
    // P(|x| < 1) = 0.6827 for a normal, standard error 0.0015 (rules out e.g. a scaled uniform)
    REQUIRE(std::abs(m.in_region - 0.6827) < 0.008);

    Generator h(3);
    double hs = 0.0;
    for (int i = 0; i < 10000; ++i) hs += h.normal(5.0f, 2.0f);
    REQUIRE(std::abs(hs / 10000 - 5.0) < 0.1);  // standard error 0.02
}

TEST_CASE("Generator: uniform() is in 0 to 1 (exclusive) and flat", "[tensor]") {
    Generator g(99);
    bool in_range = true;
    const Moments m = moments_of(
        100000,
        [&] {
            const float u = g.uniform();
            in_range = in_range && u >= 0.0f && u < 1.0f;
            return double(u);
        },
        [](double u) { return u < 0.1; });
    REQUIRE(in_range);
    REQUIRE(std::abs(m.mean - 0.5) < 0.005);           // standard error 0.0009
    REQUIRE(std::abs(m.variance - 1.0 / 12) < 0.003);  // variance of U(0, 1)
    REQUIRE(std::abs(m.in_region - 0.1) < 0.005);      // standard error 0.00095

    for (int i = 0; i < 1000; ++i) {
        const float u = g.uniform(-3.0f, 2.0f);
        REQUIRE(u >= -3.0f);
        REQUIRE(u < 2.0f);
    }
}

TEST_CASE("Generator: randint(n) is in range and roughly unbiased", "[tensor]") {
    Generator g(4);
    const int n = 60000;
    std::vector<int> counts(6, 0);
    for (int i = 0; i < n; ++i) {
        const int64_t r = g.randint(6);
        REQUIRE(r >= 0);
        REQUIRE(r < 6);
        ++counts[static_cast<size_t>(r)];
    }
    for (int c : counts) REQUIRE(std::abs(c - 10000) < 500);  // binomial std 91

    for (int i = 0; i < 100; ++i) REQUIRE(g.randint(1) == 0);

    // n = 3 * 2^61 does not divide 2^64: a plain next_u64() % n would return values below n/2 with
    // probability 0.5625 instead of 0.5
    const int64_t big = int64_t{3} << 61;
    int upper = 0;
    for (int i = 0; i < 10000; ++i) {
        const int64_t r = g.randint(big);
        REQUIRE(r >= 0);
        REQUIRE(r < big);
        if (r >= big / 2) ++upper;
    }
    REQUIRE(std::abs(upper - 5000) < 300);  // binomial std 50
}

TEST_CASE("randn and rand: shapes, ranges, and row-major draws from the generator", "[tensor]") {
    Generator g(42);
    const Tensor n = randn({3, 4, 5}, g);
    REQUIRE(n.shape() == Shape{3, 4, 5});
    REQUIRE_FALSE(n.requires_grad());
    REQUIRE(test::all_finite(n));
    const Tensor u = rand({2, 7}, g, -2.0f, 3.0f);
    REQUIRE(u.shape() == Shape{2, 7});
    for (float v : u.data()) {
        REQUIRE(v >= -2.0f);
        REQUIRE(v < 3.0f);
    }

    Generator a(8), b(8);
    const Tensor t = randn({2, 3}, a);
    for (float v : t.data()) REQUIRE(v == b.normal());
    const Tensor r = rand({4}, a);
    for (float v : r.data()) REQUIRE(v == b.uniform());

    Generator c(8), d(8);
    REQUIRE(randn({10}, c).to_vector() == randn({10}, d).to_vector());

    Generator e(1);
    const Tensor big = randn({100, 100}, e, 3.0f, 0.5f);
    double s = 0.0;
    for (float v : big.data()) s += v;
    REQUIRE(std::abs(s / 10000 - 3.0) < 0.03);  // standard error 0.005
}

TEST_CASE("fmt prints small tensors whole with the element format", "[tensor]") {
    const std::string s = fmt::format("{:.2f}", tensor({1, 2, 3, 4}, {2, 2}));
    INFO(s);
    for (const char* v : {"1.00", "2.00", "3.00", "4.00"}) REQUIRE(s.find(v) != std::string::npos);
    REQUIRE(s.find("1.00") < s.find("2.00"));
    REQUIRE(s.find("2.00") < s.find("3.00"));
    REQUIRE(s.find("3.00") < s.find("4.00"));
    REQUIRE(s.find("1.000") == std::string::npos);  // the precision was honoured
    REQUIRE(s.find("...") == std::string::npos);
    bool balanced = false;
    REQUIRE(bracket_depth(s, balanced) == 2);  // a 2-D tensor nests two deep
    REQUIRE(balanced);
    REQUIRE(std::count(s.begin(), s.end(), '[') == 3);  // the outer list and two rows

    const std::string v = fmt::format("{:.1f}", tensor({-1.5f, 0.25f, 2.0f}));
    INFO(v);
    REQUIRE(v.find("-1.5") != std::string::npos);
    REQUIRE(v.find("2.0") != std::string::npos);
    REQUIRE(bracket_depth(v, balanced) == 1);

    const std::string r3 = fmt::format("{:.0f}", arange(8).reshape({2, 2, 2}));
    INFO(r3);
    REQUIRE(bracket_depth(r3, balanced) == 3);
    REQUIRE(balanced);
}

TEST_CASE("fmt default format and scalars", "[tensor]") {
    const std::string d = fmt::format("{}", tensor({1.5f, -2.0f}));
    INFO(d);
    REQUIRE(d.find("1.5000") != std::string::npos);  // "{:.4f}" by default
    REQUIRE(d.find("-2.0000") != std::string::npos);
    const std::string s = fmt::format("{}", scalar(2.5f));
    INFO(s);
    REQUIRE(s.find("2.5000") != std::string::npos);
    const std::string e = fmt::format("{:.3e}", tensor({12340.0f}));
    INFO(e);
    REQUIRE(e.find("1.234e+04") != std::string::npos);
}

TEST_CASE("fmt summarizes large tensors", "[tensor]") {
    const Tensor big = arange(10000).reshape({100, 100});
    const std::string s = fmt::format("{:.1f}", big);
    INFO(s);
    REQUIRE(s.find("...") != std::string::npos);
    // printed whole it would need at least 10000 * 4 characters
    REQUIRE(s.size() < 2000);
    REQUIRE(s.find("0.0") != std::string::npos);     // first element
    REQUIRE(s.find("9999.0") != std::string::npos);  // last element
    REQUIRE(s.find("5050.0") == std::string::npos);  // an element in the middle is elided
    bool balanced = false;
    REQUIRE(bracket_depth(s, balanced) == 2);
    REQUIRE(balanced);

    // the threshold: up to 1000 elements print whole
    REQUIRE(fmt::format("{:.0f}", arange(1000)).find("...") == std::string::npos);
    REQUIRE(fmt::format("{:.0f}", arange(1001)).find("...") != std::string::npos);
}

TEST_CASE("Shape holds up to 8 dimensions inline and reads as the vector it replaced", "[tensor]") {
    Shape s{2, 3};
    s.push_back(4);
    s.insert(s.begin(), 1);  // {1, 2, 3, 4}
    REQUIRE(s.size() == 4);
    REQUIRE(std::vector<int64_t>(s) == std::vector<int64_t>{1, 2, 3, 4});
    s.erase(s.begin() + 1);  // {1, 3, 4}
    REQUIRE(s == Shape{1, 3, 4});
    REQUIRE(s != Shape{1, 3});
    REQUIRE(Shape{1, 3} < s);
    const std::span<const int64_t> view(s);
    REQUIRE((view.size() == 3 && view[2] == 4));
    REQUIRE(Shape(std::vector<int64_t>{5, 6}) == Shape{5, 6});

    const std::vector<int64_t> nine(Shape::kMaxDims + 1, 1);
    REQUIRE(Shape(nine.begin(), nine.end() - 1).size() == Shape::kMaxDims);
    REQUIRE_THROWS_WITH(Shape(nine.begin(), nine.end()), Catch::Contains("at most 8 dimensions, asked for 9"));
    REQUIRE_THROWS_WITH(zeros(nine), Catch::Contains("at most 8 dimensions"));
}
