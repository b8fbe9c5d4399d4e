#include "nn/kv_cache.h"

#include <algorithm>

#include <autograd/ops.h>

#include "nn/models.h"

namespace nn {

using namespace autograd;

std::pair<Tensor, Tensor> KVCache::append(int64_t heads, int64_t head, const Tensor& k, const Tensor& v) {
    check(k.dim() == 3 && k.size(0) == 1 && v.dim() == 3 && v.size(0) == 1 && v.size(1) == k.size(1),
          "KVCache: k {} and v {} must be (1, T, H) each: a cache continues one sequence", shape_str(k.shape()),
          shape_str(v.shape()));
    const int64_t T = k.size(1);
    if (keys_.empty())  // the first append fixes the heads and their widths
        for (int64_t h = 0; h < heads; ++h) {
            keys_.push_back(zeros({capacity_, k.size(2)}));
            values_.push_back(zeros({capacity_, v.size(2)}));
        }
    check(
        heads == static_cast<int64_t>(keys_.size()) && head >= 0 && head < heads && keys_[0].size(1) == k.size(2) &&
            values_[0].size(1) == v.size(2),
        "KVCache: head {} of {} with keys {} and values {} wide, in a cache of {} heads of keys {} and values {} wide",
        head, heads, k.size(2), v.size(2), keys_.size(), keys_[0].size(1), values_[0].size(1));
    check(length_ + T <= capacity_, "KVCache: {} more positions after {} pass its capacity of {}", T, length_,
          capacity_);
    const Tensor &keys = keys_[static_cast<size_t>(head)], &values = values_[static_cast<size_t>(head)];
    const int64_t Hk = keys.size(1), Hv = values.size(1);
    std::copy(k.data().begin(), k.data().end(), keys.data().begin() + length_ * Hk);
    std::copy(v.data().begin(), v.data().end(), values.data().begin() + length_ * Hv);
    return {leading_rows(keys, length_ + T).reshape({1, length_ + T, Hk}),
            leading_rows(values, length_ + T).reshape({1, length_ + T, Hv})};
}

void KVCache::advance(int64_t T) {
    check(T >= 0 && length_ + T <= capacity_, "KVCache: advancing {} past {} of {} positions", T, length_, capacity_);
    length_ += T;
}

ModelCache::ModelCache(LanguageModel& model, int64_t capacity) : model_(&model), capacity_(capacity) {
    check(model.can_cache(),
          "ModelCache: this model does not say it can continue a sequence from caches (can_cache())");
    check(capacity > 0 && capacity <= model.block_size(), "ModelCache: {} positions for a block of {}", capacity,
          model.block_size());
    for (const auto& [name, module] : model.named_modules())
        if (auto* caching = dynamic_cast<CachingModule*>(const_cast<Module*>(module))) modules_.push_back(caching);
    caches_.assign(modules_.size(), KVCache(capacity));
}

void ModelCache::clear() {
    for (KVCache& c : caches_) c.clear();
    length_ = 0;
}

UsingCache::UsingCache(LanguageModel& model, ModelCache& cache) : model_(model) { model.use_cache(&cache); }
UsingCache::~UsingCache() { model_.use_cache(nullptr); }

}  // namespace nn
