// The worked example at the top of autograd/include/autograd/autograd.h, built and run by the tests.
// (It takes no arguments; support/cli.h gives it --help and --version like every program here.)
#include <autograd/autograd.h>
#include <cli.h>
using namespace autograd;

struct Options {};  // none: the parser gives it --help and --version

int example(const Options&) {
    Generator gen(42);
    Tensor x = randn({4, 3}, gen);                   // (N, C) inputs
    Tensor w = randn({3, 2}, gen).requires_grad_();  // (C, K) a parameter
    Tensor loss = cross_entropy(matmul(x, w), {0, 1, 1, 0});
    loss.backward();  // w.grad() now holds dloss/dw, shape (3, 2)
    fmt::print("loss {:.4f}\ngrad\n{:.3f}\n", loss.item(), w.grad());
    return 0;
}

cli::Parser make_parser(Options&) {
    return cli::Parser("quickstart", "", "The worked example of autograd/tensor.h: a loss, its backward, a gradient.");
}

int main(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, example); }
