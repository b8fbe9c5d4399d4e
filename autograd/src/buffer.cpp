// Tensor storage: a per-thread cache of freed blocks, keyed by size (see detail::buffer_allocate).
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <new>
#include <unordered_map>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#endif
#endif

#include "autograd/detail/buffer.h"
#include "autograd/tensor.h"

namespace autograd {

namespace {
// Small blocks (graph nodes, tensor records, scalars) come in 16-byte classes from an array of free
// lists; larger ones by exact size from a map, 64-byte aligned for the SIMD kernels. A free list is
// threaded through the cached blocks themselves (each holds the next one's address): taking or giving
// back a block is two moves, with no bookkeeping vector to grow.
constexpr size_t kClass = 16, kSmallMax = 1024;
constexpr std::align_val_t kAlignment{64};
// A thread keeps up to as many freed bytes as it ever had in use at once (at least kCacheFloor), so a
// training step's whole working set comes back the next step: GPT-2 small's 1.5 GB of gradients and
// activations, refetched from the system each step, cost page faults and zeroing that took half its
// time under a fixed 256 MiB. Blocks of sizes no longer asked for hold at most that much.
constexpr size_t kCacheFloor = size_t(256) << 20;

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

// Under AddressSanitizer a cached block is poisoned: a use after free still reports, pool or not.
#if defined(__SANITIZE_ADDRESS__)
#define TINYGPT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TINYGPT_ASAN 1
#endif
#endif
#if defined(TINYGPT_ASAN)
void poison(void* block, size_t bytes) { __asan_poison_memory_region(block, bytes); }
void unpoison(void* block, size_t bytes) { __asan_unpoison_memory_region(block, bytes); }
#else
void poison(void*, size_t) {}
void unpoison(void*, size_t) {}
#endif

// A free list of cached blocks of one size (zero-byte blocks have no room for a link: never cached).
struct FreeList {
    void* head = nullptr;
    void push(void* block, size_t bytes) {
        *static_cast<void**>(block) = head;
        poison(block, bytes);
        head = block;
    }
    void* pop(size_t bytes) {
        void* block = head;
        unpoison(block, bytes);
        head = *static_cast<void**>(block);
        return block;
    }
    template <typename F>
    void drain(size_t bytes, F&& release) {
        while (head) release(pop(bytes));
    }
};

struct BufferCache {
    std::array<FreeList, kSmallMax / kClass + 1> small;  // by 16-byte class
    std::unordered_map<size_t, FreeList> large;          // by exact size
    size_t cached_bytes = 0;
    size_t live_bytes = 0;  // handed out by this thread and not given back to it
    size_t peak_live_bytes = 0;

    size_t limit() const { return std::max(kCacheFloor, peak_live_bytes); }

    FreeList& blocks_of(size_t bytes) { return is_small(bytes) ? small[small_class(bytes)] : large[bytes]; }

    void release_all() {
        for (size_t c = 0; c < small.size(); ++c)
            small[c].drain(c * kClass, [&](void* block) { system_release(block, c * kClass); });
        for (auto& entry : large) {  // (not a structured binding: clang cannot capture one)
            const size_t bytes = entry.first;
            entry.second.drain(bytes, [bytes](void* block) { system_release(block, bytes); });
        }
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
    if (BufferCache* c = this_thread_cache(); c && bytes != 0) {
        c->live_bytes += footprint(bytes);
        c->peak_live_bytes = std::max(c->peak_live_bytes, c->live_bytes);
        FreeList& blocks = c->blocks_of(bytes);
        if (blocks.head) {
            block = blocks.pop(footprint(bytes));
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
    if (c && bytes != 0) c->live_bytes -= std::min(c->live_bytes, footprint(bytes));  // (another thread's block)
    if (c && bytes != 0 && c->cached_bytes + footprint(bytes) <= c->limit()) {
        try {
            c->blocks_of(bytes).push(block, footprint(bytes));
            c->cached_bytes += footprint(bytes);
            return;
        } catch (const std::bad_alloc&) {  // no room for a new size in the map: free it instead
        }
    }
    system_release(block, bytes);
}

}  // namespace detail

void release_cached_buffers() {
    if (BufferCache* c = this_thread_cache()) {
        c->release_all();
        c->peak_live_bytes = c->live_bytes;
    }
}

size_t cached_buffer_bytes() {
    const BufferCache* c = this_thread_cache();
    return c ? c->cached_bytes : 0;
}

}  // namespace autograd
