// Tensor storage: a per-thread cache of freed blocks, keyed by size (see detail::buffer_allocate).
#include <array>
#include <cstdint>
#include <limits>
#include <new>
#include <unordered_map>
#include <vector>

#include "autograd/detail/buffer.h"
#include "autograd/tensor.h"

namespace autograd {

namespace {
// Small blocks (graph nodes, tensor records, scalars) come in 16-byte classes from an array of free
// lists; larger ones by exact size from a map, 64-byte aligned for the SIMD kernels.
constexpr size_t kClass = 16, kSmallMax = 1024;
constexpr std::align_val_t kAlignment{64};
constexpr size_t kCacheLimit = size_t(256) << 20;  // bytes kept per thread; beyond it blocks are freed

size_t small_class(size_t bytes) { return (bytes + kClass - 1) / kClass; }
bool is_small(size_t bytes) { return bytes <= kSmallMax; }
size_t footprint(size_t bytes) { return is_small(bytes) ? small_class(bytes) * kClass : bytes; }

void* system_allocate(size_t bytes) {
    return is_small(bytes) ? ::operator new(small_class(bytes) * kClass) : ::operator new(bytes, kAlignment);
}
void system_release(void* block, size_t bytes) noexcept {
    if (is_small(bytes)) ::operator delete(block);
    else ::operator delete(block, kAlignment);
}

struct BufferCache {
    std::array<std::vector<void*>, kSmallMax / kClass + 1> small;  // by 16-byte class
    std::unordered_map<size_t, std::vector<void*>> large;          // by exact size
    size_t cached_bytes = 0;

    std::vector<void*>& blocks_of(size_t bytes) { return is_small(bytes) ? small[small_class(bytes)] : large[bytes]; }

    void release_all() {
        for (size_t c = 0; c < small.size(); ++c) {
            for (void* block : small[c]) system_release(block, c * kClass);
            small[c].clear();
        }
        for (auto& [bytes, blocks] : large)
            for (void* block : blocks) system_release(block, bytes);
        large.clear();
        cached_bytes = 0;
    }
};

// The cache of this thread, and whether the thread is past its destruction (a tensor freed by another
// thread-local or static destructor then goes straight back to the system).
thread_local BufferCache* cache = nullptr;
thread_local bool cache_gone = false;

struct CacheOwner {
    BufferCache storage;
    CacheOwner() { cache = &storage; }
    ~CacheOwner() {
        storage.release_all();
        cache = nullptr;
        cache_gone = true;
    }
};

BufferCache* this_thread_cache() {
    if (!cache && !cache_gone) thread_local CacheOwner owner;
    return cache;
}
}  // namespace

namespace detail {

void* buffer_allocate(size_t bytes) {
    void* block = nullptr;
    if (BufferCache* c = this_thread_cache()) {
        std::vector<void*>& blocks = c->blocks_of(bytes);
        if (!blocks.empty()) {
            block = blocks.back();
            blocks.pop_back();
            c->cached_bytes -= footprint(bytes);
        }
    }
    if (!block) block = system_allocate(bytes);
#ifndef NDEBUG
    auto* values = static_cast<float*>(block);
    for (size_t i = 0; i < bytes / sizeof(float); ++i) values[i] = std::numeric_limits<float>::quiet_NaN();
#endif
    return block;
}

void buffer_release(void* block, size_t bytes) noexcept {
    if (!block) return;
    BufferCache* c = this_thread_cache();
    if (c && c->cached_bytes + footprint(bytes) <= kCacheLimit) {
        try {
            c->blocks_of(bytes).push_back(block);
            c->cached_bytes += footprint(bytes);
            return;
        } catch (const std::bad_alloc&) {  // no room to remember it: free it instead
        }
    }
    system_release(block, bytes);
}

}  // namespace detail

void release_cached_buffers() {
    if (BufferCache* c = this_thread_cache()) c->release_all();
}

}  // namespace autograd
