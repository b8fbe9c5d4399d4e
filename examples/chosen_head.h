// The head a tool shows (heatmap, figure): --layer L --head N among a checkpoint's heads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nn/attention.h>
#include <nn/model_registry.h>

namespace tools {

// Head `head` of layer `layer` of the model whose heads (nn::attention_heads) are `heads`. Throws
// std::runtime_error naming the checkpoint when the model has no head, or not that one (saying how many
// it has).
inline nn::AttentionHead chosen_head(const std::vector<nn::AttentionHead>& heads, int64_t layer, int64_t head,
                                     const std::string& checkpoint, nn::ModelKind kind) {
    if (heads.empty())
        throw std::runtime_error(fmt::format("{}: a {} model has no attention head to show", checkpoint, kind));
    const auto chosen =
        std::ranges::find_if(heads, [&](const nn::AttentionHead& h) { return h.layer == layer && h.head == head; });
    if (chosen != heads.end()) return *chosen;
    const int64_t layers = heads.back().layer + 1;
    const auto per_layer = std::ranges::count_if(heads, [](const nn::AttentionHead& h) { return h.layer == 0; });
    throw std::runtime_error(fmt::format(
        "{}: no head {} in layer {}: this {} model has {} layer{} of {} head{} (numbered from 0)", checkpoint, head,
        layer, kind, layers, layers == 1 ? "" : "s", per_layer, per_layer == 1 ? "" : "s"));
}

}  // namespace tools
