#include "autograd/threads.h"

#include <algorithm>
#include <vector>

#include <omp.h>

#include "autograd/check.h"
#include "autograd/kernels.h"

namespace autograd {

namespace {
int thread_count = 1;
}  // namespace

void set_num_threads(int n) {
    check(n >= 1, "set_num_threads: need at least one thread, got {}", n);
    thread_count = n;
}
int num_threads() { return thread_count; }

void detail::parallel_for_split(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
    if (n <= 0) return;
    const int64_t threads = std::min<int64_t>(num_threads(), n / std::max<int64_t>(grain, 1));
    if (threads <= 1 || omp_in_parallel()) {
        body(0, n);
        return;
    }
    // The kernels' instruction set is chosen here, before the region, if no kernel has chosen it yet:
    // a bad TINYGPT_ISA then throws on the calling thread. An exception must not leave an OpenMP
    // region (it terminates), so no body has to ask for it first.
    (void)kernels::active_isa();
#pragma omp parallel num_threads(static_cast <int>(threads))
    {
        const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
        const int64_t begin = n * t / count, end = n * (t + 1) / count;
        if (begin < end) body(begin, end);
    }
}

void parallel_for_segments(std::span<const int64_t> sizes, int64_t grain,
                           const std::function<void(size_t i, int64_t begin, int64_t end)>& body) {
    std::vector<int64_t> start(sizes.size() + 1, 0);  // array i holds elements [start[i], start[i + 1])
    for (size_t i = 0; i < sizes.size(); ++i) start[i + 1] = start[i] + sizes[i];
    parallel_for(start.back(), grain, [&](int64_t begin, int64_t end) {
        auto i = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), begin) - start.begin() - 1);
        for (; i < sizes.size() && start[i] < end; ++i) {
            const int64_t lo = std::max(begin, start[i]), hi = std::min(end, start[i + 1]);
            if (lo < hi) body(i, lo - start[i], hi - start[i]);
        }
    });
}

}  // namespace autograd
