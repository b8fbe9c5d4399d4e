// tinygpt autograd, the whole library for users: a float32 tensor that remembers how it was made, so
// gradients can flow back.
//
//     #include <autograd/autograd.h>
//     using namespace autograd;
//
//     Generator gen(42);
//     Tensor x = randn({4, 3}, gen);                         // (N, C) inputs
//     Tensor w = randn({3, 2}, gen).requires_grad_();        // (C, K) a parameter
//     Tensor loss = cross_entropy(matmul(x, w), {0, 1, 1, 0});
//     loss.backward();                                       // w.grad() now holds dloss/dw, shape (3, 2)
//     fmt::print("loss {:.4f}\ngrad\n{:.3f}\n", loss.item(), w.grad());
//
// What each header holds (each can be included alone):
// - tensor.h: the Tensor handle, creating tensors, grad mode; the semantics, stated once
// - ops.h: the ops (add, matmul, softmax, cross_entropy, ...), with the shape legend
// - random.h: Generator, randn, rand;  format.h: fmt::format("{:.3f}", t)
// - hooks.h: register_hook's handles;  anomaly.h: the op that made a NaN;  graph.h: to_dot()
// - gradcheck.h: an op's gradient against finite differences;  threads.h: set_num_threads()
// Not included here: op.h (for writing your own op: make_result, GradContext), kernels.h (the raw
// float kernels under the ops), and detail/ (the library's inside).
#pragma once

#include "autograd/tensor.h"     // IWYU pragma: export
#include "autograd/ops.h"        // IWYU pragma: export
#include "autograd/random.h"     // IWYU pragma: export
#include "autograd/format.h"     // IWYU pragma: export
#include "autograd/hooks.h"      // IWYU pragma: export
#include "autograd/anomaly.h"    // IWYU pragma: export
#include "autograd/graph.h"      // IWYU pragma: export
#include "autograd/gradcheck.h"  // IWYU pragma: export
#include "autograd/threads.h"    // IWYU pragma: export
