// Tensor storage: a per-thread cache of freed blocks, keyed by size (see detail::buffer_allocate).
#include <cstdint>
#include <limits>
#include <new>
#include <unordered_map>
#include <vector>

#include "autograd/tensor.h"

namespace autograd {

namespace {
constexpr std::align_val_t kAlignment{64};
constexpr size_t kSmallest = 1;  // every size: a cached block beats malloc + free even for a scalar
constexpr size_t kCacheLimit = size_t(256) << 20;  // bytes kept per thread; beyond it blocks are freed

struct BufferCache {
    std::unordered_map<size_t, std::vector<void*>> free_blocks;  // bytes -> blocks of that size
    size_t cached_bytes = 0;

    void release_all() {
        for (auto& [bytes, blocks] : free_blocks)
            for (void* block : blocks) ::operator delete(block, kAlignment);
        free_blocks.clear();
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
    if (BufferCache* c = bytes >= kSmallest ? this_thread_cache() : nullptr) {
        const auto it = c->free_blocks.find(bytes);
        if (it != c->free_blocks.end() && !it->second.empty()) {
            block = it->second.back();
            it->second.pop_back();
            c->cached_bytes -= bytes;
        }
    }
    if (!block) block = ::operator new(bytes, kAlignment);
#ifndef NDEBUG
    auto* values = static_cast<float*>(block);
    for (size_t i = 0; i < bytes / sizeof(float); ++i) values[i] = std::numeric_limits<float>::quiet_NaN();
#endif
    return block;
}

void buffer_release(void* block, size_t bytes) noexcept {
    if (!block) return;
    BufferCache* c = bytes >= kSmallest ? this_thread_cache() : nullptr;
    if (c && c->cached_bytes + bytes <= kCacheLimit) {
        try {
            c->free_blocks[bytes].push_back(block);
            c->cached_bytes += bytes;
            return;
        } catch (const std::bad_alloc&) {  // no room to remember it: free it instead
        }
    }
    ::operator delete(block, kAlignment);
}

}  // namespace detail

void release_cached_buffers() {
    if (BufferCache* c = this_thread_cache()) c->release_all();
}

}  // namespace autograd
