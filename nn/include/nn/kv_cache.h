// What a model keeps while it decodes one token at a time (nn/decoder.h): in each attention module, the
// keys and values of the positions it has read, so that the next forward computes its new positions only.
// Why that is exact: the causal mask. Row i of attention reads positions <= i only, so the keys, values
// and outputs of positions already seen never change when more tokens follow.
//
// The caches belong to whoever decodes, not to the model: a ModelCache is made for a model and handed to
// it for the forwards that continue its sequence (LanguageModel::use_cache), so that two decoders can
// share one model, and a forward outside them reads its whole window as always.
//
// Shape legend: T time (new positions), L positions cached before them, H head width.
//
//     nn::ModelCache cache(model, model.block_size());
//     { nn::UsingCache use(model, cache);  model.forward(prompt, 1, T); }   // (1, 1, V): the last position's logits
//     { nn::UsingCache use(model, cache);  model.forward(next, 1, 1); }     // reads one new position
//
// Inside an attention module's forward (heads of width H each):
//     auto [keys, values] = cache->append(n_head, h, k, v);   // k, v: (1, T, H) -> (1, L + T, H) each
//     ... causal_attention(q, keys, values, factor) ...        // q: (1, T, H), the last T of L + T positions
//     cache->advance(T);                                       // after every head appended its rows
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <autograd/tensor.h>

namespace nn {

class LanguageModel;

// One module's keys and values, for `capacity` positions; its storage is made at the first append.
class KVCache {
public:
    explicit KVCache(int64_t capacity) : capacity_(capacity) {}
    int64_t length() const { return length_; }  // L: positions held
    int64_t capacity() const { return capacity_; }
    void clear() { length_ = 0; }

    // Writes head `head`'s k (1, T, Hk) and v (1, T, Hv) of positions L .. L + T - 1 (`heads` heads in all,
    // their widths fixed by the first append), and returns that head's keys and values of positions
    // 0 .. L + T - 1, (1, L + T, Hk) and (1, L + T, Hv): views of the cache, not copies.
    // std::invalid_argument when the rows would pass the capacity or do not fit the first ones' shape.
    std::pair<autograd::Tensor, autograd::Tensor> append(int64_t heads, int64_t head, const autograd::Tensor& k,
                                                         const autograd::Tensor& v);
    void advance(int64_t T);  // L += T, once every head has appended its T rows

private:
    std::vector<autograd::Tensor> keys_, values_;  // per head: (capacity, Hk), (capacity, Hv)
    int64_t capacity_ = 0, length_ = 0;
};

// A module that mixes positions (attention, the running average) and reads the KVCache it is handed
// while its model continues a sequence (nullptr: none, its forward reads the whole window).
class CachingModule {
public:
    virtual ~CachingModule() = default;
    virtual void use_cache(KVCache* cache) = 0;
};

// The caches of one model for one sequence: a KVCache for every CachingModule in it (found by walking
// its modules), and how many positions they hold. Made for a model that can_cache(), of capacity at most
// its block; the model must outlive it.
class ModelCache {
public:
    ModelCache(LanguageModel& model, int64_t capacity);
    int64_t length() const { return length_; }
    int64_t capacity() const { return capacity_; }
    void clear();  // the next ids start at position 0

private:
    friend class LanguageModel;
    const LanguageModel* model_;
    std::vector<CachingModule*> modules_;
    std::vector<KVCache> caches_;  // caches_[i] is modules_[i]'s
    int64_t capacity_, length_ = 0;
};

// Hands a model its cache for the forwards in this scope (LanguageModel::use_cache), and takes it back.
class UsingCache {
public:
    UsingCache(LanguageModel& model, ModelCache& cache);
    ~UsingCache();
    UsingCache(const UsingCache&) = delete;
    UsingCache& operator=(const UsingCache&) = delete;

private:
    LanguageModel& model_;
};

}  // namespace nn
