// Inside the library: where tensor storage comes from. Not for users; op authors get Buffer through
// <autograd/op.h>. Defined in autograd/src/buffer.cpp.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace autograd {

namespace detail {
// Tensor storage comes from here: a per-thread cache of freed blocks by size, because a training step
// allocates the same sizes step after step (no page faults, no trips to malloc for big blocks). Blocks
// are 64-byte aligned. Debug builds fill every new block with NaN, so an op that reads a value it never
// wrote shows up in the tests.
void* buffer_allocate(size_t bytes);
void buffer_release(void* block, size_t bytes) noexcept;

template <typename T>
struct BufferAllocator {
    using value_type = T;
    BufferAllocator() = default;
    template <typename U>
    BufferAllocator(const BufferAllocator<U>&) {}  // NOLINT(google-explicit-constructor): rebinding
    T* allocate(size_t n) { return static_cast<T*>(buffer_allocate(n * sizeof(T))); }
    void deallocate(T* p, size_t n) noexcept { buffer_release(p, n * sizeof(T)); }
    // Buffer(n) leaves the values unset (they are about to be written): no memset per op.
    template <typename U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
    friend bool operator==(const BufferAllocator&, const BufferAllocator&) { return true; }
};

// make_shared from the same cache (tensor records, graph nodes, buffer handles are made per op).
template <typename T, typename... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
    return std::allocate_shared<T>(BufferAllocator<T>(), std::forward<Args>(args)...);
}
}  // namespace detail

// A tensor's values (and its gradient's): contiguous float32, row-major. `Buffer b(n)` is n values
// left unset, for an op to overwrite; `Buffer b(n, 0.0f)` is n zeros.
using Buffer = std::vector<float, detail::BufferAllocator<float>>;

}  // namespace autograd
