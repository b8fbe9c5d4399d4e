// How many threads the kernels may use. Work is split by output rows, matrices or elements, each computed by one
// thread in the same order as on one thread, so results are identical for any thread count (the tests
// train a GPT on 1, 2 and 3 threads and compare the bits).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <span>

namespace autograd {

void set_num_threads(int n);  // n >= 1; the default is 1
int num_threads();

// Calls body(begin, end) on disjoint ranges covering [0, n): one contiguous range per thread, or the
// whole range on the calling thread when n < 2 * grain (work too small to pay for waking a thread).
// Each index belongs to exactly one call, so a body that writes only its own indices gives the same
// bits for any thread count. Called from inside another parallel_for, it runs on the calling thread.
// The kernels' instruction set (kernels::active_isa()) is chosen before any thread starts, so a body
// may call the kernels without asking for it first: a bad TINYGPT_ISA throws to the caller.
// Grain for plain elementwise loops: below this many elements per thread, waking one costs more than it
// saves (measured with bench_train_step on 2 threads).
inline constexpr int64_t kMinElementsPerThread = 16384;
// Grain for the causal attention rows, which evaluate an exp per element, some 20 times an add's cost:
// fewer elements pay for a thread (the small model's 16 x 32 x 32 scores are split from here on).
inline constexpr int64_t kMinExpsPerThread = 2048;
// The grain for a loop over rows of `row_length` elements each: at least one row.
inline int64_t rows_per_thread(int64_t row_length, int64_t elements_per_thread = kMinElementsPerThread) {
    return row_length >= elements_per_thread ? 1 : elements_per_thread / (row_length > 0 ? row_length : 1);
}
namespace detail {
// parallel_for's split across threads (threads.cpp); the body goes into a std::function only here.
void parallel_for_split(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body);
}  // namespace detail
// A template so that the usual small loop calls its body directly: wrapping a lambda in a std::function
// allocates once it captures more than two references, and an op on a few elements paid that per call.
template <typename Body>
void parallel_for(int64_t n, int64_t grain, Body&& body) {
    if (n <= 0) return;
    if (n / std::max<int64_t>(grain, 1) <= 1 || num_threads() <= 1) {
        body(int64_t{0}, n);
        return;
    }
    detail::parallel_for_split(n, grain, std::forward<Body>(body));
}
// parallel_for over the elements of several arrays at once (an optimizer's tensors): body(i, begin, end)
// on pieces [begin, end) of array i, which has sizes[i] elements. The pieces cover every element once and
// are split across threads by the total count, in one parallel region (many small arrays, each too small
// to split, then still share the threads).
void parallel_for_segments(std::span<const int64_t> sizes, int64_t grain,
                           const std::function<void(size_t i, int64_t begin, int64_t end)>& body);

}  // namespace autograd
