// A tensor seen around one dim as (outer, n, inner): element (o, k, i) sits at (o * n + k) * inner + i.
// Reductions, softmax, slicing and concatenation along a dim all walk this view.
#pragma once

#include "autograd/check.h"

namespace autograd::detail {

struct Axis {
    int64_t outer = 1, n = 1, inner = 1;
    int64_t at(int64_t o, int64_t k, int64_t i) const { return (o * n + k) * inner + i; }
};

inline Axis axis_of(const Shape& shape, int64_t dim) {
    Axis a;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
        if (d < dim) a.outer *= shape[d];
        else if (d == dim) a.n = shape[d];
        else a.inner *= shape[d];
    }
    return a;
}

// normalize_dim for an op on a tensor of this shape: the error names the op and the shape.
inline int64_t dim_of(const Shape& shape, int64_t dim, const char* op) {
    const auto rank = static_cast<int64_t>(shape.size());
    const int64_t d = dim < 0 ? dim + rank : dim;
    check(d >= 0 && d < rank, "{}: dim {} out of range for a tensor of shape {}", op, dim, shape_str(shape));
    return d;
}

}  // namespace autograd::detail
