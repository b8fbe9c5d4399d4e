// Tensors as the JSON the pages read (examples/figure, examples/web): numbers held as floats, as the
// tensors hold them, so each is written in its shortest form; keys in the order written; a value that is
// not finite (a masked score, -inf) is written as null.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <autograd/tensor.h>
#include <nlohmann/json.hpp>

namespace page_json {

using Json = nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool, int64_t, uint64_t, float>;

// A (1, R, K) or (R, K) tensor as R rows of K numbers.
inline Json rows_of(const autograd::Tensor& t) {
    const int64_t R = t.size(-2), K = t.size(-1);
    const auto values = t.data();
    Json rows = Json::array();
    for (int64_t r = 0; r < R; ++r)
        rows.push_back(std::vector<float>(values.begin() + r * K, values.begin() + (r + 1) * K));
    return rows;
}

}  // namespace page_json
