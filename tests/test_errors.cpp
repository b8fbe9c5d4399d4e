// Bad input: every shape, dim and index error throws std::invalid_argument naming the op and the
// shapes. The suite is built in Release, so these also prove the checks survive NDEBUG.
#include <limits>
#include <stdexcept>
#include <vector>

#include <autograd/op.h>

#include "helpers.h"

using namespace autograd;
using Catch::Contains;

TEST_CASE("shape_str formats shapes", "[errors]") {
    REQUIRE(shape_str({2, 3}) == "(2, 3)");
    REQUIRE(shape_str({5}) == "(5)");
    REQUIRE(shape_str({}) == "()");
    REQUIRE(shape_str({2, 1, 3, 4}) == "(2, 1, 3, 4)");
}

TEST_CASE("check() throws std::invalid_argument with the formatted message", "[errors]") {
    REQUIRE_NOTHROW(check(true, "never {}", 1));
    REQUIRE_THROWS_AS(check(false, "op: bad {}", shape_str({2})), std::invalid_argument);
    REQUIRE_THROWS_WITH(check(false, "op: bad {}", shape_str({2})), "op: bad (2)");
}

TEST_CASE("elementwise ops reject non-broadcastable shapes", "[errors]") {
    const Tensor a = zeros({2, 3}), b = zeros({4});
    REQUIRE_THROWS_AS(add(a, b), std::invalid_argument);
    REQUIRE_THROWS_WITH(add(a, b), Contains("add") && Contains("(2, 3)") && Contains("(4)"));
    REQUIRE_THROWS_WITH(mul(a, b), Contains("mul") && Contains("(2, 3)") && Contains("(4)"));
    REQUIRE_THROWS_WITH(sub(a, b), Contains("sub") && Contains("(2, 3)") && Contains("(4)"));
    REQUIRE_THROWS_WITH(div(a, b), Contains("div") && Contains("(2, 3)") && Contains("(4)"));
    REQUIRE_THROWS_WITH(a + zeros({3, 3}), Contains("add") && Contains("(2, 3)") && Contains("(3, 3)"));
    REQUIRE_THROWS_WITH(zeros({2, 1, 4}) * zeros({3, 2}),
                        Contains("mul") && Contains("(2, 1, 4)") && Contains("(3, 2)"));
    // broadcastable shapes do not throw
    REQUIRE_NOTHROW(add(zeros({2, 1, 4}), zeros({3, 1})));
}

TEST_CASE("matmul rejects bad shapes", "[errors]") {
    REQUIRE_THROWS_AS(matmul(zeros({2, 3}), zeros({4, 5})), std::invalid_argument);
    REQUIRE_THROWS_WITH(matmul(zeros({2, 3}), zeros({4, 5})),
                        Contains("matmul") && Contains("(2, 3)") && Contains("(4, 5)"));
    // rank < 2 on either side
    REQUIRE_THROWS_WITH(matmul(zeros({3}), zeros({3, 2})), Contains("matmul") && Contains("(3)") && Contains("(3, 2)"));
    REQUIRE_THROWS_WITH(matmul(zeros({2, 3}), zeros({3})), Contains("matmul") && Contains("(2, 3)") && Contains("(3)"));
    REQUIRE_THROWS_WITH(matmul(scalar(1.0f), zeros({1, 1})), Contains("matmul") && Contains("()"));
    // batch dims that do not broadcast
    REQUIRE_THROWS_WITH(matmul(zeros({2, 3, 4}), zeros({3, 4, 5})),
                        Contains("matmul") && Contains("(2, 3, 4)") && Contains("(3, 4, 5)"));
    REQUIRE_THROWS_WITH(matmul(zeros({2, 2, 3, 4}), zeros({3, 4, 5})),
                        Contains("matmul") && Contains("(2, 2, 3, 4)") && Contains("(3, 4, 5)"));
    REQUIRE_NOTHROW(matmul(zeros({2, 1, 3, 4}), zeros({5, 4, 2})));
}

TEST_CASE("reshape rejects a numel mismatch and two -1", "[errors]") {
    const Tensor t = zeros({2, 3});
    REQUIRE_THROWS_AS(t.reshape({4, 2}), std::invalid_argument);
    REQUIRE_THROWS_WITH(t.reshape({4, 2}), Contains("reshape") && Contains("(2, 3)") && Contains("(4, 2)"));
    REQUIRE_THROWS_WITH(reshape(t, {7}), Contains("reshape") && Contains("(2, 3)") && Contains("(7)"));
    REQUIRE_THROWS_WITH(t.reshape({-1, -1}), Contains("reshape") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(t.reshape({4, -1}), Contains("reshape") && Contains("(2, 3)"));  // 6 is not a multiple of 4
    REQUIRE_THROWS_AS(t.reshape({-2, -3}), std::invalid_argument);
    // a target whose element count overflows 64 bits (it used to wrap around)
    REQUIRE_THROWS_WITH(t.reshape({int64_t{1} << 62, 4, -1}), Contains("reshape") && Contains("overflows"));
}

TEST_CASE("a shape whose element count or byte size overflows is refused where it is made", "[errors]") {
    // (1 << 32)^2 elements wrapped around to numel() == 0; at() then wrote out of bounds
    const int64_t big = int64_t{1} << 32;
    REQUIRE_THROWS_AS(zeros({big, big}), std::invalid_argument);
    REQUIRE_THROWS_WITH(zeros({big, big}), Contains("(4294967296, 4294967296)") && Contains("overflows"));
    REQUIRE_THROWS_WITH(full({int64_t{1} << 62, 2}, 1.0f), Contains("overflows"));  // fits int64, its bytes do not
    REQUIRE(zeros({big, 0, big}).numel() == 0);                                     // 0 elements: a valid empty shape
    REQUIRE(numel_of({int64_t{1} << 30, 4}) == int64_t{1} << 32);
}

TEST_CASE("transpose rejects dims out of range", "[errors]") {
    const Tensor t = zeros({2, 3});
    REQUIRE_THROWS_AS(t.transpose(0, 2), std::invalid_argument);
    REQUIRE_THROWS_WITH(t.transpose(0, 2), Contains("transpose") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(transpose(t, -3, 0), Contains("transpose") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(transpose(zeros({2, 3, 4, 5}), 4, 1), Contains("transpose") && Contains("(2, 3, 4, 5)"));
}

TEST_CASE("slice rejects bad dims and ranges", "[errors]") {
    const Tensor t = zeros({2, 3});
    REQUIRE_THROWS_AS(t.slice(1, 0, 4), std::invalid_argument);
    REQUIRE_THROWS_WITH(t.slice(1, 0, 4), Contains("slice") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(t.slice(1, 2, 1), Contains("slice") && Contains("(2, 3)"));   // start > end
    REQUIRE_THROWS_WITH(slice(t, 2, 0, 1), Contains("slice") && Contains("(2, 3)"));  // dim out of range
    REQUIRE_THROWS_WITH(slice(t, 0, -1, 1), Contains("slice") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(slice(t, 0, 3, 3), Contains("slice") && Contains("(2, 3)"));
}

TEST_CASE("concat and split reject bad input", "[errors]") {
    REQUIRE_THROWS_AS(concat({zeros({2, 3}), zeros({2, 4})}, 0), std::invalid_argument);
    REQUIRE_THROWS_WITH(concat({zeros({2, 3}), zeros({2, 4})}, 0),
                        Contains("concat") && Contains("(2, 3)") && Contains("(2, 4)"));
    REQUIRE_NOTHROW(concat({zeros({2, 3}), zeros({2, 4})}, 1));
    REQUIRE_THROWS_WITH(concat({zeros({2, 3}), zeros({2, 3, 1})}, 0),
                        Contains("concat") && Contains("(2, 3)") && Contains("(2, 3, 1)"));
    REQUIRE_THROWS_WITH(concat({zeros({2, 3}), zeros({2, 3})}, 2), Contains("concat") && Contains("(2, 3)"));
    REQUIRE_THROWS_AS(concat({}, 0), std::invalid_argument);
    REQUIRE_THROWS_WITH(concat({}, 0), Contains("concat"));

    const Tensor x = zeros({4, 6});
    REQUIRE_THROWS_AS(split(x, 0, 1), std::invalid_argument);
    REQUIRE_THROWS_WITH(split(x, 0, 1), Contains("split") && Contains("(4, 6)"));
    REQUIRE_THROWS_WITH(split(x, -2, 1), Contains("split") && Contains("(4, 6)"));
    REQUIRE_THROWS_WITH(split(x, 2, 2), Contains("split") && Contains("(4, 6)"));
    REQUIRE_THROWS_WITH(split(x, std::vector<int64_t>{2, 3}, 1), Contains("split") && Contains("(4, 6)"));  // 5 != 6
    REQUIRE_THROWS_WITH(split(x, std::vector<int64_t>{7, -1}, 1), Contains("split") && Contains("(4, 6)"));
}

TEST_CASE("reductions reject dims out of range", "[errors]") {
    const Tensor t = zeros({2, 3});
    REQUIRE_THROWS_AS(sum(t, 2), std::invalid_argument);
    REQUIRE_THROWS_WITH(sum(t, 2), Contains("sum") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(sum(t, -3, true), Contains("sum") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(mean(t, 2), Contains("mean") && Contains("(2, 3)"));
    REQUIRE_THROWS_AS(mean(t, 5), std::invalid_argument);
    REQUIRE_THROWS_WITH(max(t, 2), Contains("max") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(max(t, -3), Contains("max") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(argmax(t, 2), Contains("argmax") && Contains("(2, 3)"));
    REQUIRE_THROWS_AS(max(scalar(1.0f), 0), std::invalid_argument);
    // an empty dim is reported as max's own, not argmax's
    REQUIRE_THROWS_WITH(max(zeros({2, 0}), 1), Catch::StartsWith("max: dim 1 of shape (2, 0) is empty"));
}

TEST_CASE("softmax and log_softmax reject dims out of range", "[errors]") {
    const Tensor t = zeros({2, 3});
    REQUIRE_THROWS_AS(softmax(t, 2), std::invalid_argument);
    REQUIRE_THROWS_WITH(softmax(t, 2), Contains("softmax") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(softmax(t, -3), Contains("softmax") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(log_softmax(t, 2), Contains("log_softmax") && Contains("(2, 3)"));
}

TEST_CASE("cross_entropy rejects bad targets", "[errors]") {
    const Tensor logits = zeros({2, 3});
    REQUIRE_THROWS_AS(cross_entropy(logits, std::vector<int64_t>{0, 3}), std::invalid_argument);
    REQUIRE_THROWS_WITH(cross_entropy(logits, std::vector<int64_t>{0, 3}),
                        Contains("cross_entropy") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(cross_entropy(logits, std::vector<int64_t>{-1, 0}),
                        Contains("cross_entropy") && Contains("(2, 3)"));
    // wrong count: one target per row
    REQUIRE_THROWS_WITH(cross_entropy(logits, std::vector<int64_t>{0}),
                        Contains("cross_entropy") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(cross_entropy(logits, std::vector<int64_t>{0, 1, 2}),
                        Contains("cross_entropy") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(cross_entropy(zeros({2, 2, 3}), std::vector<int64_t>{0, 1}),
                        Contains("cross_entropy") && Contains("(2, 2, 3)"));
    REQUIRE_THROWS_AS(cross_entropy(scalar(0.0f), std::vector<int64_t>{0}), std::invalid_argument);
}

TEST_CASE("embedding rejects bad ids and weights", "[errors]") {
    const Tensor w = zeros({5, 3});
    const std::vector<int64_t> too_big = {0, 5}, negative = {-1}, ok = {0, 4, 2};
    REQUIRE_THROWS_AS(embedding(w, too_big, {2}), std::invalid_argument);
    REQUIRE_THROWS_WITH(embedding(w, too_big, {2}), Contains("embedding") && Contains("(5, 3)"));
    REQUIRE_THROWS_WITH(embedding(w, negative, {1}), Contains("embedding") && Contains("(5, 3)"));
    REQUIRE_THROWS_WITH(embedding(zeros({5}), ok, {3}), Contains("embedding") && Contains("(5)"));
    REQUIRE_THROWS_WITH(embedding(zeros({5, 3, 2}), ok, {3}), Contains("embedding") && Contains("(5, 3, 2)"));
    // ids_shape must describe the ids
    REQUIRE_THROWS_WITH(embedding(w, ok, {2}), Contains("embedding") && Contains("(2)"));
    REQUIRE_NOTHROW(embedding(w, ok, {3, 1}));
}

TEST_CASE("masked_fill and causal_mask reject bad shapes", "[errors]") {
    REQUIRE_THROWS_AS(masked_fill(zeros({2, 3}), zeros({4}), 0.0f), std::invalid_argument);
    REQUIRE_THROWS_WITH(masked_fill(zeros({2, 3}), zeros({4}), 0.0f),
                        Contains("masked_fill") && Contains("(2, 3)") && Contains("(4)"));
    // the mask must broadcast to x, not the other way round
    REQUIRE_THROWS_WITH(masked_fill(zeros({3}), zeros({2, 3}), 0.0f),
                        Contains("masked_fill") && Contains("(3)") && Contains("(2, 3)"));
    // (more queries than keys: a query would stand before every key)
    REQUIRE_THROWS_AS(causal_mask(zeros({3, 2})), std::invalid_argument);
    REQUIRE_THROWS_WITH(causal_mask(zeros({3, 2})), Contains("causal_mask") && Contains("(3, 2)"));
    REQUIRE_THROWS_WITH(causal_mask(zeros({4, 3, 2})), Contains("causal_mask") && Contains("(4, 3, 2)"));
    // (fewer: the queries are the last positions, after a cache's keys)
    CHECK(causal_mask(zeros({2, 3})).to_vector() == std::vector<float>{0, 0, -INFINITY, 0, 0, 0});
    REQUIRE_THROWS_WITH(causal_mask(zeros({3})), Contains("causal_mask") && Contains("(3)"));
}

TEST_CASE("creation and element access reject bad counts and indices", "[errors]") {
    REQUIRE_THROWS_AS(tensor({1, 2, 3}, {2, 2}), std::invalid_argument);
    REQUIRE_THROWS_WITH(tensor({1, 2, 3}, {2, 2}), Contains("tensor") && Contains("(2, 2)"));
    REQUIRE_THROWS_AS(zeros({2, -1}), std::invalid_argument);
    REQUIRE_THROWS_AS(arange(0.0f, 1.0f, 0.0f), std::invalid_argument);

    const Tensor t = zeros({2, 3});
    REQUIRE_THROWS_AS(t.item(), std::invalid_argument);
    REQUIRE_THROWS_WITH(t.item(), Contains("item") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(t.at({2, 0}), Contains("at") && Contains("(2, 3)"));  // out of bounds
    REQUIRE_THROWS_WITH(t.at({0, 3}), Contains("at") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(t.at({0, -1}), Contains("at") && Contains("(2, 3)"));
    REQUIRE_THROWS_WITH(t.at({0}), Contains("at") && Contains("(2, 3)"));  // wrong rank
    REQUIRE_THROWS_WITH(t.at({0, 0, 0}), Contains("at") && Contains("(2, 3)"));
    Tensor w = zeros({2, 3});
    REQUIRE_THROWS_WITH(w.at({5, 5}) = 1.0f, Contains("at") && Contains("(2, 3)"));
    REQUIRE_THROWS_AS(t.size(2), std::invalid_argument);
    REQUIRE_THROWS_WITH(t.size(-3), Contains("size") && Contains("(2, 3)"));
    REQUIRE_THROWS_AS(zeros({0}).item(), std::invalid_argument);
}

TEST_CASE("normalize_dim names the op", "[errors]") {
    REQUIRE(normalize_dim(-1, 3, "myop") == 2);
    REQUIRE(normalize_dim(0, 3, "myop") == 0);
    REQUIRE_THROWS_WITH(normalize_dim(3, 3, "myop"), Contains("myop"));
    REQUIRE_THROWS_WITH(normalize_dim(-4, 3, "myop"), Contains("myop"));
}

TEST_CASE("backward rejects a non-scalar without a gradient and a wrongly shaped gradient", "[errors]") {
    const Tensor x = zeros({2, 3}).requires_grad_();
    Tensor y = x * 2.0f;
    REQUIRE_THROWS_AS(y.backward(), std::invalid_argument);
    REQUIRE_THROWS_WITH(y.backward(), Contains("backward") && Contains("(2, 3)"));
    REQUIRE_THROWS_AS(y.backward(zeros({3, 2})), std::invalid_argument);
    REQUIRE_THROWS_WITH(y.backward(zeros({3, 2})), Contains("(2, 3)") && Contains("(3, 2)"));
    REQUIRE_NOTHROW(y.backward(ones({2, 3})));  // the failures above left the graph usable
}
