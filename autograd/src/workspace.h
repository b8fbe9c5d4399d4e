// The kernels' packing buffers (private to autograd/src; for kernels.cpp and kernels_bf16.cpp, not the
// per-instruction-set units, which take no standard library code).
#pragma once

#include <cstdint>
#include <vector>

namespace autograd::kernels::detail {

// At least `count` Ts, 64-byte aligned, reused across calls on the calling thread (one buffer per T).
template <class T>
T* thread_workspace(int64_t count) {
    thread_local std::vector<T> buffer;
    const size_t need = static_cast<size_t>(count) + 64 / sizeof(T);
    if (buffer.size() < need) buffer.assign(need, T{});
    const auto address = reinterpret_cast<uintptr_t>(buffer.data());
    return buffer.data() + ((64 - address % 64) % 64) / sizeof(T);
}

}  // namespace autograd::kernels::detail
