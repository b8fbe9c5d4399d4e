// embedding: gather rows of a table; the backward scatter-adds, so repeated ids accumulate.
#include "autograd/op.h"
#include "autograd/ops.h"

namespace autograd {

Tensor embedding(const Tensor& weight, std::span<const int64_t> ids, const Shape& ids_shape, SourceLocation where) {
    check(weight.dim() == 2, "embedding: weight must be (V, C), got shape {}", shape_str(weight.shape()));
    check(numel_of(ids_shape) == static_cast<int64_t>(ids.size()), "embedding: {} ids do not fill ids shape {}",
          ids.size(), shape_str(ids_shape));
    const int64_t V = weight.shape()[0], C = weight.shape()[1];
    for (size_t i = 0; i < ids.size(); ++i)
        check(ids[i] >= 0 && ids[i] < V, "embedding: id {} at position {} is outside [0, {}) for weight {}", ids[i], i,
              V, shape_str(weight.shape()));
    Shape out_shape = ids_shape;  // (ids_shape..., C)
    out_shape.push_back(C);
    Buffer out(ids.size() * C);
    const float* table = weight.data().data();
    for (size_t i = 0; i < ids.size(); ++i) std::copy_n(table + ids[i] * C, C, out.data() + i * C);
    // the ids, for the backward only (no copy without a graph: cached decoding allocates nothing)
    std::vector<int64_t> rows;
    if (is_grad_enabled() && weight.requires_grad()) rows.assign(ids.begin(), ids.end());
    return make_result(
        "embedding", std::move(out_shape), std::move(out), {weight},
        [rows = std::move(rows), C](const GradContext& g) {
            auto gw = g.grad(0);
            for (size_t i = 0; i < rows.size(); ++i)
                for (int64_t c = 0; c < C; ++c) gw[rows[i] * C + c] += g.dout[i * C + c];
        },
        where);
}

}  // namespace autograd
