// How many threads the kernels may use. Work is split by output rows, each computed by one thread
// in the same order as on one thread, so results are identical for any thread count.
#pragma once

namespace autograd {

void set_num_threads(int n);  // n >= 1; the default is 1
int num_threads();

}  // namespace autograd
