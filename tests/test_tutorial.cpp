// Every claim and number of the tutorial (../shared/seed/07-attention.md), through the library API.
// The lab prints the same measurements; these tests compute them independently of its output.
#include <nn/attention.h>
#include <nn/tutorial/study.h>

#include "helpers.h"

using namespace autograd;

namespace {
Tensor hand_x() { return tensor({0.8f, -0.6f, 0.2f, 1.0f}, {1, 2, 2}); }  // x1, x2 as (B=1, T=2, C=2)
void set_hand_weights(nn::Head& head) {
    std::ranges::copy(std::vector<float>{1, 0, -1, 1}, head.query.weight.data().begin());
    std::ranges::copy(std::vector<float>{0, 1, 1, 0}, head.key.weight.data().begin());
}
}  // namespace

TEST_CASE("cell 1: the average gives the m exactly as much say as the t twenty positions back", "[tutorial]") {
    const int64_t T = 20;  // "the cat sat on the m"
    Generator gen(1);
    const Tensor x = randn({1, T, 4}, gen);
    const Tensor y = nn::Average().forward(x);
    // The last output is the plain mean: each position contributes x/20.
    for (int64_t c = 0; c < 4; ++c) {
        double m = 0;
        for (int64_t j = 0; j < T; ++j) m += x.at({0, j, c}) / 20.0;
        CHECK(y.at({0, T - 1, c}) == Approx(m).margin(1e-6));
    }
}

TEST_CASE("cell 2: the four-entry table", "[tutorial]") {
    const Tensor a = tensor({0.9f, -0.5f, 0.3f, -0.8f}), b = tensor({-0.4f, 0.7f, 0.8f, -0.2f});
    CHECK(sum(a * b).item() == Approx(-0.31).margin(1e-6));
    CHECK(sum(a * a).item() == Approx(1.79).margin(1e-6));
}

TEST_CASE("cell 2: width-16 rows score +16 against themselves and 0 against strangers", "[tutorial]") {
    Generator gen(2);
    const Tensor x = randn({4000, 16}, gen), other = randn({4000, 16}, gen);
    CHECK(mean(sum(x * x, 1)).item() == Approx(16.0).margin(0.5));
    CHECK(std::abs(mean(sum(x * other, 1)).item()) < 0.5);
}

TEST_CASE("cell 2: raw x xT keeps attention at home, random Wq, Wk split it evenly", "[tutorial]") {
    Generator gen(3);
    const auto raw = nn::study::self_share({.n_embd = 16, .head_size = 16, .compare_raw = true}, 8, 300, gen);
    const auto projected = nn::study::self_share({.n_embd = 16, .head_size = 16}, 8, 300, gen);
    CHECK(raw.share.median >= 0.87);
    CHECK(raw.advantage.median > 3.0);
    CHECK(projected.advantage.median > 0.8);
    CHECK(projected.advantage.median < 1.25);
}

TEST_CASE("cell 2: the hand example's queries and keys", "[tutorial]") {
    Generator gen(4);
    nn::Head head({.n_embd = 2, .head_size = 2}, gen);
    set_hand_weights(head);
    CHECK(test::max_abs_diff(head.query.forward(hand_x()), {1.4, -0.6, -0.8, 1.0}) <
          1e-6);                                                                          // q1, q2 = [0.2 - 1.0, 1.0]
    CHECK(test::max_abs_diff(head.key.forward(hand_x()), {-0.6, 0.8, 1.0, 0.2}) < 1e-6);  // k1, k2
}

TEST_CASE("cell 3: the score grid, raw the self wins, projected the stranger wins", "[tutorial]") {
    Generator gen(5);
    nn::Head projected({.n_embd = 2, .head_size = 2, .scaled = false, .causal = false}, gen);
    set_hand_weights(projected);
    projected.forward(hand_x());
    const Tensor& qk = projected.last_scores();
    CHECK(qk.at({0, 0, 1}) == Approx(1.28).margin(1e-6));
    CHECK(qk.at({0, 0, 0}) == Approx(-1.32).margin(1e-6));
    nn::Head raw({.n_embd = 2, .head_size = 2, .scaled = false, .compare_raw = true, .causal = false}, gen);
    raw.forward(hand_x());
    CHECK(raw.last_scores().at({0, 0, 0}) == Approx(1.00).margin(1e-6));
    CHECK(raw.last_scores().at({0, 0, 1}) == Approx(-0.44).margin(1e-6));
}

TEST_CASE("cell 4: the first position's output is exactly its own value", "[tutorial]") {
    Generator gen(6);
    nn::Head head({.n_embd = 16, .head_size = 8}, gen);
    const Tensor x = randn({4, 8, 16}, gen);
    const Tensor out = head.forward(x), v = head.value.forward(x);
    for (int64_t b = 0; b < 4; ++b)
        for (int64_t h = 0; h < 8; ++h) CHECK(out.at({b, 0, h}) == v.at({b, 0, h}));
}

TEST_CASE("cell 5: the spread of raw scores grows like sqrt(width), dividing makes it 1", "[tutorial]") {
    Generator gen(7);
    for (int64_t width : {2, 8, 32, 128}) {
        CHECK(nn::study::score_spread(width, 20000, false, gen) == Approx(std::sqrt(double(width))).epsilon(0.03));
        CHECK(nn::study::score_spread(width, 20000, true, gen) == Approx(1.0).epsilon(0.03));
    }
}

TEST_CASE("cell 5: without the divisor rows sharpen and the gradient through the softmax collapses", "[tutorial]") {
    Generator gen(8);
    const auto divided_2 = nn::study::saturation(2, true, 8, 40, gen);
    const auto divided_128 = nn::study::saturation(128, true, 8, 40, gen);
    const auto raw_2 = nn::study::saturation(2, false, 8, 40, gen);
    const auto raw_128 = nn::study::saturation(128, false, 8, 40, gen);
    CHECK(raw_128.largest_share.median > 0.95);
    CHECK(divided_128.largest_share.median < 0.7);
    CHECK(raw_128.entropy < 0.5 * divided_128.entropy);
    CHECK(divided_128.row_gradient.median > 0.5 * divided_2.row_gradient.median);
    CHECK(raw_128.row_gradient.median < 0.1 * divided_128.row_gradient.median);
    CHECK(raw_128.row_gradient.median < 0.1 * raw_2.row_gradient.median);
    CHECK(raw_128.flat_rows > 0.2);
    CHECK(divided_128.flat_rows < 0.05);
}

TEST_CASE("cell 6: the blend of the tutorial's example", "[tutorial]") {
    const Tensor blend = matmul(tensor({0.9f, 0.1f}, {1, 2}), tensor({0.5f, -1.0f, 1.0f, 0.0f}, {2, 2}));
    CHECK(test::max_abs_diff(blend, {0.55, -0.90}) < 1e-6);
}

TEST_CASE("cell 6: nn::Head equals the six-line composition, outputs and gradients", "[tutorial]") {
    Generator gen(9);
    nn::Head head({.n_embd = 8, .head_size = 4}, gen);
    const Tensor x = randn({2, 6, 8}, gen);
    const Tensor upstream = randn({2, 6, 4}, gen);
    const Tensor out = head.forward(x);
    sum(out * upstream).backward();

    const Tensor Wq = head.query.weight.clone().requires_grad_(), Wk = head.key.weight.clone().requires_grad_(),
                 Wv = head.value.weight.clone().requires_grad_();
    const Tensor Q = matmul(x, Wq), K = matmul(x, Wk), V = matmul(x, Wv);
    const Tensor w = softmax(causal_mask(scale(matmul(Q, K.transpose(1, 2)), 0.5f)), -1);  // 1/sqrt(4)
    const Tensor by_hand = matmul(w, V);
    sum(by_hand * upstream).backward();
    CHECK(test::max_abs_diff(out, by_hand) <= 1e-6);
    CHECK(test::max_abs_diff(head.query.weight.grad(), Wq.grad()) <= 1e-6);
    CHECK(test::max_abs_diff(head.key.weight.grad(), Wk.grad()) <= 1e-6);
    CHECK(test::max_abs_diff(head.value.weight.grad(), Wv.grad()) <= 1e-6);
}
