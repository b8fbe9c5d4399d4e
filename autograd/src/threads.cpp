#include "autograd/threads.h"

#include <algorithm>

#include <omp.h>

namespace autograd {

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
    if (n <= 0) return;
    const int64_t threads = std::min<int64_t>(num_threads(), n / std::max<int64_t>(grain, 1));
    if (threads <= 1 || omp_in_parallel()) {
        body(0, n);
        return;
    }
#pragma omp parallel num_threads(static_cast<int>(threads))
    {
        const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
        const int64_t begin = n * t / count, end = n * (t + 1) / count;
        if (begin < end) body(begin, end);
    }
}

}  // namespace autograd
