// Inspecting the graph: to_dot (golden text, NaN highlighted, rendered by Graphviz when installed),
// gradient hooks, and anomaly mode naming the op and the caller's line.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "helpers.h"
#include "temp_dir.h"

using namespace autograd;

namespace {

// y = sum(relu(x @ w + b)) on numbers small enough to differentiate by hand (see the golden test).
struct SmallGraph {
    Tensor x = tensor({1, 2, 0, 0, 1, -1}, {2, 3}).set_name("x");                   // (2, 3), data
    Tensor w = tensor({1, 0, 0, 1, 1, -1}, {3, 2}).requires_grad_().set_name("w");  // (3, 2)
    Tensor b = tensor({0.5f, -1.0f}).requires_grad_().set_name("b");                // (2)
    Tensor y = sum(relu(add(matmul(x, w), b)));
};

// Runs f, which must throw std::runtime_error; returns its message.
template <typename F>
std::string runtime_error_of(F&& f) {
    try {
        f();
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    FAIL("no std::runtime_error was thrown");
    return {};
}

std::string here(int line) { return fmt::format("{}:{}", __FILE__, line); }

}  // namespace

// --- to_dot ------------------------------------------------------------------------------------------

TEST_CASE("to_dot: the golden graph of sum(relu(x @ w + b)) after backward(retain_graph)", "[graph]") {
    SmallGraph g;
    g.y.backward(/*retain_graph=*/true);
    // By hand: x @ w = [[1, 2], [-1, 2]]; + b = [[1.5, 1], [-0.5, 1]]; relu = [[1.5, 1], [0, 1]]; y = 3.5.
    // Gradients: dy/drelu = ones (norm 2); relu passes 3 of 4, so dadd = dmatmul = [[1, 1], [0, 1]]
    // (norm sqrt 3 = 1.732); db = column sums [1, 2] (sqrt 5 = 2.236); dw = x^T @ dadd =
    // [[1, 1], [2, 3], [0, -1]] (sqrt 16 = 4); y's own gradient is the seed 1; x takes none.
    REQUIRE(g.y.item() == 3.5f);
    REQUIRE(g.w.grad().to_vector() == std::vector<float>{1, 1, 2, 3, 0, -1});
    REQUIRE(g.b.grad().to_vector() == std::vector<float>{1, 2});

    // Ids follow the walk from y: x, w (matmul's inputs), matmul, b, add, relu, sum. x is data: dashed.
    const std::string expected =
        "digraph autograd {\n"
        "  graph [label=\"y = sum(relu(x @ w + b)), \\\"golden\\\"\", labelloc=t, fontname=\"Helvetica\"];\n"
        "  node [fontname=\"Helvetica\", fontsize=10];\n"
        "  n0 [label=\"x\\n(2, 3)\", shape=ellipse, style=dashed];\n"
        "  n1 [label=\"w\\n(3, 2)\\ngrad norm 4\", shape=ellipse];\n"
        "  n2 [label=\"matmul\\n(2, 2)\\ngrad norm 1.732\", shape=box];\n"
        "  n0 -> n2;\n"
        "  n1 -> n2;\n"
        "  n3 [label=\"b\\n(2)\\ngrad norm 2.236\", shape=ellipse];\n"
        "  n4 [label=\"add\\n(2, 2)\\ngrad norm 1.732\", shape=box];\n"
        "  n2 -> n4;\n"
        "  n3 -> n4;\n"
        "  n5 [label=\"relu\\n(2, 2)\\ngrad norm 2\", shape=box];\n"
        "  n4 -> n5;\n"
        "  n6 [label=\"sum\\n()\\ngrad norm 1\", shape=box];\n"
        "  n5 -> n6;\n"
        "}\n";
    REQUIRE(to_dot(g.y, {.title = "y = sum(relu(x @ w + b)), \"golden\""}) == expected);

    // Without gradient norms and title; the same again (stable), and "input"/"constant" for unnamed leaves.
    const std::string plain = to_dot(g.y, {.show_grad_norms = false});
    REQUIRE(plain == to_dot(g.y, {.show_grad_norms = false}));
    REQUIRE(plain.find("grad norm") == std::string::npos);
    REQUIRE(plain.find("graph [label") == std::string::npos);
    REQUIRE(plain.find("  n1 [label=\"w\\n(3, 2)\", shape=ellipse];\n") != std::string::npos);
    const Tensor u = tensor({1, 2}).requires_grad_();
    const std::string unnamed = to_dot(mul(u, tensor({3, 4})));
    REQUIRE(unnamed.find("  n0 [label=\"input\\n(2)\", shape=ellipse];\n") != std::string::npos);
    REQUIRE(unnamed.find("  n1 [label=\"constant\\n(2)\", shape=ellipse, style=dashed];\n") != std::string::npos);
}

TEST_CASE("to_dot: a tensor used twice draws two edges, and names are escaped", "[graph]") {
    const Tensor v = tensor({1, 2}).requires_grad_().set_name("a \"quoted\\name\"\nline two");
    const std::string dot = to_dot(mul(v, v));
    REQUIRE(dot.find("  n0 [label=\"a \\\"quoted\\\\name\\\"\\nline two\\n(2)\", shape=ellipse];\n") !=
            std::string::npos);
    REQUIRE(dot.find("  n0 -> n1;\n  n0 -> n1;\n") != std::string::npos);
}

TEST_CASE("to_dot: after a plain backward the graph is released and says so", "[graph]") {
    SmallGraph g;
    g.y.backward();
    REQUIRE(to_dot(g.y) ==
            "digraph autograd {\n"
            "  node [fontname=\"Helvetica\", fontsize=10];\n"
            "  n0 [label=\"sum\\n()\\ngrad norm 1\\n(graph released)\", shape=box];\n"
            "}\n");
}

TEST_CASE("to_dot: NaN and inf are filled red and named", "[graph]") {
    const Tensor x = tensor({-1, 4}).requires_grad_().set_name("x");
    const Tensor y = log(x);  // log(-1) is NaN
    REQUIRE(to_dot(y).find(
                "  n1 [label=\"log\\n(2)\\nNaN in values\", shape=box, style=filled, fillcolor=\"#ff8080\"];\n") !=
            std::string::npos);

    const Tensor z = tensor({0, 4}).requires_grad_().set_name("z");
    const Tensor s = sum(sqrt(z));  // finite, but d sqrt(z)/dz at 0 is inf
    s.backward(/*retain_graph=*/true);
    const std::string dot = to_dot(s);
    REQUIRE(dot.find("  n0 [label=\"z\\n(2)\\ngrad norm inf\\ninf in grad\", shape=ellipse, style=filled, "
                     "fillcolor=\"#ff8080\"];\n") != std::string::npos);
    REQUIRE(dot.find("  n1 [label=\"sqrt\\n(2)\\ngrad norm 1.414\", shape=box];\n") != std::string::npos);
}

TEST_CASE("to_dot: Graphviz renders the output", "[graph]") {
    if (std::system("command -v dot > /dev/null 2>&1") != 0) {
        WARN("Graphviz `dot` is not installed: rendering skipped (dev/setup installs it)");
        return;
    }
    SmallGraph g;
    g.y.backward(true);
    const Tensor bad = log(tensor({-1.0f}).requires_grad_().set_name("needs \"escaping\" \\ here"));
    const test::TempDir dir("to_dot");
    for (const auto& [name, text] :
         {std::pair{"small", to_dot(g.y, {.title = "a \"title\""})}, std::pair{"nan", to_dot(bad)}}) {
        const auto dot_file = dir.write(std::string(name) + ".dot", text);
        const auto svg_file = dir.path / (std::string(name) + ".svg");
        INFO(text);
        REQUIRE(std::system(fmt::format("dot -Tsvg '{}' -o '{}'", dot_file.string(), svg_file.string()).c_str()) == 0);
        REQUIRE(test::read_bytes(svg_file).find("<svg") != std::string::npos);
    }
}

// --- hooks -------------------------------------------------------------------------------------------

TEST_CASE("a leaf's hook sees its complete gradient, once per backward", "[graph]") {
    const Tensor w = tensor({1, 2, 3}).requires_grad_();
    std::vector<std::vector<float>> seen;
    const HookHandle handle = w.register_hook([&](const Tensor& grad) { seen.push_back(grad.to_vector()); });
    REQUIRE(handle.active());
    // w reaches y along two ops: d/dw (2w + w*w) = 2 + 2w. The hook fires after both contributions.
    sum(add(scale(w, 2.0f), mul(w, w))).backward();
    REQUIRE(seen == std::vector<std::vector<float>>{{4, 6, 8}});
    // A second backward: fires again; a leaf's gradient includes what earlier calls accumulated.
    sum(scale(w, 2.0f)).backward();
    REQUIRE(seen.size() == 2);
    REQUIRE(seen[1] == std::vector<float>{6, 8, 10});
}

TEST_CASE("a non-leaf's hook fires before its op's backward and can change the gradient", "[graph]") {
    const Tensor w = tensor({1, 2, 3}).requires_grad_();
    const Tensor h = scale(w, 3.0f);  // h = 3w
    const Tensor y = sum(mul(h, h));  // dy/dh = 2h = 6w = [6, 12, 18]
    std::vector<float> seen;
    bool w_grad_present = true;
    h.register_hook([&](const Tensor& grad) {
        seen = grad.to_vector();
        w_grad_present = w.grad().defined();     // h's backward (the only way to w) has not run yet
        for (float& v : grad.data()) v *= 2.0f;  // in place: flows on into scale's backward
    });
    y.backward();
    REQUIRE(seen == std::vector<float>{6, 12, 18});
    REQUIRE_FALSE(w_grad_present);
    REQUIRE(h.grad().to_vector() == std::vector<float>{12, 24, 36});   // h's stored gradient is the doubled one
    REQUIRE(w.grad().to_vector() == std::vector<float>{36, 72, 108});  // 3 * 2 * 6w

    // A leaf hook that zeroes its gradient leaves zero in grad().
    const Tensor v = tensor({1, 2}).requires_grad_();
    v.register_hook([](const Tensor& grad) { std::fill(grad.data().begin(), grad.data().end(), 0.0f); });
    sum(scale(v, 5.0f)).backward();
    REQUIRE(v.grad().to_vector() == std::vector<float>{0, 0});
}

TEST_CASE("a backward() called from a hook runs a pass of its own and leaves the outer walk intact", "[graph]") {
    // The outer graph's intermediates are held by the graph alone, and the inner graph shares its leaf:
    // the inner pass must not disturb what the outer walk still has to visit (it marks tensors too).
    const Tensor w = tensor({1, 2, 3}).requires_grad_();
    const Tensor v = tensor({5, 7, 11}).requires_grad_();
    Tensor inner = sum(mul(w, v));  // d/dw = v, d/dv = w
    Tensor outer;
    int fired = 0;
    {
        const Tensor h = scale(w, 3.0f);
        const Tensor m = mul(h, h);
        m.register_hook([&](const Tensor&) {
            ++fired;
            inner.backward();  // w's gradient gets v here, before the outer walk reaches w
        });
        outer = sum(add(m, scale(v, 2.0f)));  // d/dw = 18w, d/dv = 2
    }
    outer.backward();
    REQUIRE(fired == 1);
    REQUIRE(w.grad().to_vector() == std::vector<float>{5 + 18, 7 + 36, 11 + 54});
    REQUIRE(v.grad().to_vector() == std::vector<float>{1 + 2, 2 + 2, 3 + 2});
    REQUIRE_THROWS_WITH(outer.backward(), Catch::Contains("already released"));
    REQUIRE_THROWS_WITH(inner.backward(), Catch::Contains("already released"));
}

TEST_CASE("removed hooks fire no more, remove() is idempotent and works inside a hook", "[graph]") {
    const Tensor w = tensor({1, 2}).requires_grad_();
    const auto step = [&] { sum(scale(w, 2.0f)).backward(); };
    int first = 0, second = 0, self_removing = 0, removed_by_other = 0;
    HookHandle h1 = w.register_hook([&](const Tensor&) { ++first; });
    HookHandle h_other;
    HookHandle h_self;
    h_self = w.register_hook([&](const Tensor&) {
        ++self_removing;
        h_self.remove();   // removes itself mid-backward
        h_other.remove();  // and a hook registered after it, which then does not fire in this pass
    });
    h_other = w.register_hook([&](const Tensor&) { ++removed_by_other; });
    HookHandle h2 = w.register_hook([&](const Tensor&) { ++second; });

    step();
    REQUIRE(first == 1);
    REQUIRE(self_removing == 1);
    REQUIRE(removed_by_other == 0);
    REQUIRE(second == 1);  // later hooks still run in the pass where an earlier one removed itself
    REQUIRE_FALSE(h_self.active());
    REQUIRE_FALSE(h_other.active());

    h1.remove();
    h1.remove();  // idempotent
    REQUIRE_FALSE(h1.active());
    REQUIRE(h2.active());
    step();
    REQUIRE(first == 1);
    REQUIRE(self_removing == 1);
    REQUIRE(second == 2);

    HookHandle none;
    REQUIRE_FALSE(none.active());
    none.remove();  // harmless

    // A handle outliving its tensor is inactive.
    HookHandle orphan;
    {
        const Tensor t = scalar(1.0f).requires_grad_();
        orphan = t.register_hook([](const Tensor&) {});
        REQUIRE(orphan.active());
    }
    REQUIRE_FALSE(orphan.active());
    orphan.remove();
}

TEST_CASE("register_hook needs a tensor that requires a gradient", "[graph]") {
    const Tensor c = tensor({1, 2});
    REQUIRE_THROWS_AS(c.register_hook([](const Tensor&) {}), std::invalid_argument);
}

// --- anomaly mode --------------------------------------------------------------------------------------

TEST_CASE("anomaly mode: log of a negative names the op, the shapes and this line", "[graph]") {
    const Tensor x = tensor({1, -1, 2, 3}, {2, 2}).requires_grad_();
    const AnomalyGuard anomalies;
    int line = 0;
    const std::string message = runtime_error_of([&] {
        line = __LINE__ + 1;  // (the next line)
        (void)autograd::log(x);
    });
    INFO(message);
    REQUIRE(message.find("'log'") != std::string::npos);
    REQUIRE(message.find("forward") != std::string::npos);
    REQUIRE(message.find("NaN (element 1 of its output (2, 2)); input (2, 2)") != std::string::npos);
    REQUIRE(message.find("test_graph.cpp") != std::string::npos);
    REQUIRE(message.find(here(line)) != std::string::npos);
}

TEST_CASE("anomaly mode: an infinite gradient names the op and the backward", "[graph]") {
    const Tensor x = tensor({0, 4}).requires_grad_();
    const AnomalyGuard anomalies;
    const int line = __LINE__ + 1;
    const Tensor y = sum(autograd::sqrt(x));  // forward fine: sqrt(0) = 0; backward 0.5 / 0 = inf
    const std::string message = runtime_error_of([&] { y.backward(); });
    INFO(message);
    REQUIRE(message.find("the backward of 'sqrt' produced inf (element 0 of the gradient of input 0, shape (2))") !=
            std::string::npos);
    REQUIRE(message.find(here(line)) != std::string::npos);
    // The graph is left intact, so it can be drawn with the bad gradient highlighted.
    REQUIRE(to_dot(y).find("inf in grad") != std::string::npos);
    REQUIRE(to_dot(y).find("(graph released)") == std::string::npos);
}

TEST_CASE("anomaly mode: composite ops and Tensor methods report the caller's line", "[graph]") {
    const AnomalyGuard anomalies;
    const Tensor nan_input = tensor({1, NAN, 2});
    int line = 0;
    // mean is scale(sum(x)): the NaN shows in sum, reported at this line, noting the input held it
    std::string message = runtime_error_of([&] {
        line = __LINE__ + 1;  // (the next line)
        (void)mean(nan_input);
    });
    INFO(message);
    REQUIRE(message.find("'sum'") != std::string::npos);
    REQUIRE(message.find("(input 0 already held NaN)") != std::string::npos);
    REQUIRE(message.find(here(line)) != std::string::npos);

    message = runtime_error_of([&] {
        line = __LINE__ + 1;  // (the next line)
        (void)nan_input.reshape({3, 1});
    });
    REQUIRE(message.find("'reshape'") != std::string::npos);
    REQUIRE(message.find(here(line)) != std::string::npos);

    // exp overflowing from finite inputs is an inf anomaly
    message = runtime_error_of([&] {
        line = __LINE__ + 1;  // (the next line)
        (void)autograd::exp(tensor({1, 100}));
    });
    REQUIRE(message.find("the forward of 'exp' produced inf (element 1") != std::string::npos);
    REQUIRE(message.find(here(line)) != std::string::npos);

    // The documented gap: an operator records its own location, not this line.
    message = runtime_error_of([&] { (void)(tensor({1.0f}) / tensor({0.0f})); });
    REQUIRE(message.find("'div'") != std::string::npos);
    REQUIRE(message.find("elementwise.cpp") != std::string::npos);
}

TEST_CASE("anomaly mode: the causal mask's -inf is intended, and off means no checks", "[graph]") {
    Generator gen(3);
    const Tensor scores = randn({2, 4, 4}, gen).requires_grad_();
    const Tensor upstream = randn({2, 4, 4}, gen);
    {
        const AnomalyGuard anomalies;
        REQUIRE(anomaly_mode());
        const Tensor masked = causal_mask(scale(scores, 0.5f));                    // -inf above the diagonal
        const Tensor loss = sum(mul(softmax(scale(masked, 2.0f), -1), upstream));  // -inf carried through scale
        REQUIRE_NOTHROW(loss.backward());
        REQUIRE(test::all_finite(scores.grad()));
    }
    REQUIRE_FALSE(anomaly_mode());  // the guard restored it

    // Off: the same NaN and inf pass silently, as before.
    const Tensor x = tensor({0, -1}).requires_grad_();
    Tensor y;
    REQUIRE_NOTHROW(y = sum(autograd::log(x)));
    REQUIRE(std::isnan(y.item()));
    REQUIRE_NOTHROW(y.backward());

    set_anomaly_mode(true);
    REQUIRE(anomaly_mode());
    set_anomaly_mode(false);
    REQUIRE_FALSE(anomaly_mode());
}

TEST_CASE("to_dot notes the causal mask's -inf without highlighting it, and highlights a NaN", "[graph]") {
    const Tensor scores = tensor({1, 2, 3, 4}, {2, 2}).requires_grad_();
    const Tensor masked = causal_mask(scores);  // -inf above the diagonal, on purpose
    const std::string dot = to_dot(sum(softmax(masked, -1)));
    CHECK_THAT(dot, Catch::Contains("inf from the mask"));
    CHECK_THAT(dot, !Catch::Contains("#ff8080"));
    const std::string bad = to_dot(sum(autograd::log(scores - 5.0f)));  // log of negatives: NaN
    CHECK_THAT(bad, Catch::Contains("NaN in values") && Catch::Contains("#ff8080"));
}
