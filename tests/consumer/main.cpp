// Uses the installed package: a gradient through matmul must come out as the hand-computed value,
// an attention head from tinygpt::nn must produce causal rows that sum to 1, and an optimizer step from
// tinygpt::train must move a weight against its gradient, the character tokenizer of tinygpt::tokenizers
// must give a text back from its ids; an op of its own, written with the installed <autograd/op.h> (which
// includes autograd/detail/), must pass its gradient back.
#include <cmath>
#include <utility>

#include <autograd/autograd.h>
#include <autograd/op.h>
#include <nn/attention.h>
#include <nn/tokenizers/char_tokenizer.h>
#include <nn/train/optim.h>

// y = 3 x, so dy/dx = 3
autograd::Tensor triple(const autograd::Tensor& x) {
    using namespace autograd;
    Buffer out(x.numel());
    for (size_t i = 0; i < out.size(); ++i) out[i] = 3.0f * x.data()[i];
    return make_result("triple", x.shape(), std::move(out), {x}, [](const GradContext& g) {
        auto dx = g.grad(0);
        for (size_t i = 0; i < dx.size(); ++i) dx[i] += 3.0f * g.dout[i];
    });
}

int main() {
    using namespace autograd;
    Tensor w = tensor({1, 2, 3, 4}, {2, 2}).requires_grad_();
    Tensor x = tensor({1, 1}, {1, 2});
    sum(matmul(x, w)).backward();  // d/dw sum(x @ w) = x^T @ ones: every entry 1
    for (float g : w.grad().data())
        if (g != 1.0f) return 1;

    Generator gen(1);
    nn::Head head({.n_embd = 4, .head_size = 2}, gen);
    Tensor out = head.forward(randn({1, 3, 4}, gen));
    const Tensor& shares = head.last_attention();  // (1, 3, 3)
    if (shares.at({0, 0, 1}) != 0.0f ||
        std::abs(shares.at({0, 2, 0}) + shares.at({0, 2, 1}) + shares.at({0, 2, 2}) - 1.0f) > 1e-6f)
        return 1;
    nn::SGD sgd(head, {.lr = 0.1f});
    sum(out * out).backward();
    const Tensor weight = head.parameters().front();
    const float before = weight.data()[0];
    sgd.step();
    if (weight.data()[0] == before) return 1;
    const nn::CharTokenizer characters = nn::CharTokenizer::from_text("abca");
    if (characters.vocab_size() != 3 || characters.decode(characters.encode("cab")) != "cab") return 1;
    Tensor v = tensor({1, -2}).requires_grad_();
    sum(triple(v)).backward();
    if (v.grad().at({0}) != 3.0f || v.grad().at({1}) != 3.0f) return 1;
    fmt::print("consumer: linked tinygpt::autograd, tinygpt::nn, tinygpt::tokenizers and tinygpt::train, gradient {}\n",
               w.grad());
    return 0;
}
