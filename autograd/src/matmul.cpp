// matmul: (..., M, K) @ (..., K, N) -> (broadcast(...), M, N), with its backward.
#include "autograd/kernels.h"
#include "autograd/op.h"
#include "autograd/ops.h"
#include "bf16_weights.h"
#include "broadcast.h"

namespace autograd {

namespace {
// Where each result batch reads its operands: offsets (in matrices) into a's and b's batches.
struct BatchPlan {
    Shape batch;                            // broadcast leading dims
    int64_t batches = 1;                    // their product
    std::vector<int64_t> a_batch, b_batch;  // per result batch: index of the a / b matrix; empty: the batch's own
};

BatchPlan plan_batches(const Shape& a_lead, const Shape& b_lead, const Shape& a, const Shape& b) {
    BatchPlan plan;
    detail::Broadcast bc;
    try {
        bc = detail::broadcast(a_lead, b_lead, "matmul");
    } catch (const std::invalid_argument&) {
        check(false, "matmul: batch dims of {} and {} cannot be broadcast together", shape_str(a), shape_str(b));
    }
    plan.batch = bc.out;
    const int64_t n = numel_of(bc.out);
    plan.batches = n;
    // nothing stretched (as many matrices as batches, leading 1s aside): no index lists, no allocation
    if (numel_of(a_lead) == n && numel_of(b_lead) == n) return plan;
    plan.a_batch.resize(n);
    plan.b_batch.resize(n);
    bc.for_each([&](int64_t i, int64_t ia, int64_t ib) {
        plan.a_batch[i] = ia;
        plan.b_batch[i] = ib;
    });
    return plan;
}
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, SourceLocation where) {
    const Shape &as = a.shape(), &bs = b.shape();
    check(as.size() >= 2 && bs.size() >= 2, "matmul: both operands need rank >= 2, got {} and {}", shape_str(as),
          shape_str(bs));
    const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    check(bs[bs.size() - 2] == K, "matmul: shapes {} and {} cannot be multiplied ({} columns vs {} rows)",
          shape_str(as), shape_str(bs), K, bs[bs.size() - 2]);

    // (..., M, K) @ (K, N): fold all leading dims into the rows, one big product.
    if (bs.size() == 2) {
        Shape out_shape(as.begin(), as.end() - 1);
        const int64_t R = numel_of(out_shape);
        out_shape.push_back(N);
        Buffer out(R * N);
        kernels::gemm_in_precision(false, false, R, N, K, {a.data().data()}, detail::weight_operand(b), out.data(),
                                   false);
        return make_result(
            "matmul", std::move(out_shape), std::move(out), {a, b},
            [R, N, K](const GradContext& g) {
                // dA (R, K) += dC (R, N) @ B^T;   dB (K, N) += A^T @ dC
                if (g.needs(0)) {
                    const auto da = g.grad_target(0);
                    kernels::gemm_in_precision(false, true, R, K, N, {g.dout.data()},
                                               detail::weight_operand(g.inputs[1]), da.values.data(), !da.fresh);
                }
                if (g.needs(1))
                    kernels::gemm_in_precision(true, false, K, N, R, {g.inputs[0].data().data()}, {g.dout.data()},
                                               g.grad(1).data(), true);
            },
            where);
    }

    BatchPlan plan = plan_batches(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2), as, bs);
    Shape out_shape = plan.batch;
    out_shape.push_back(M);
    out_shape.push_back(N);
    const int64_t batches = plan.batches;
    Buffer out(batches * M * N);
    // (an empty index list is batch i itself: the result's batches, and dout's)
    kernels::gemm_batched(false, false, M, N, K, batches, a.data().data(), plan.a_batch, b.data().data(), plan.b_batch,
                          out.data(), {}, false);
    return make_result(
        "matmul", std::move(out_shape), std::move(out), {a, b},
        [a_batch = std::move(plan.a_batch), b_batch = std::move(plan.b_batch), batches, M, N, K](const GradContext& g) {
            const float *x = g.inputs[0].data().data(), *w = g.inputs[1].data().data(), *dc = g.dout.data();
            // dA_i += dC_i @ B_i^T;  dB_i += A_i^T @ dC_i. A broadcast operand's matrix is reused by several
            // batches: gemm_batched sums their gradients into it in batch order.
            // An operand with as many matrices as there are batches is not broadcast: each of its gradient's
            // values is written once. A broadcast one sums several batches into each matrix, onto zeros.
            const auto target = [&](size_t i) {
                const int64_t size = i == 0 ? M * K : K * N;
                const bool once = size > 0 && g.inputs[i].numel() / size == batches;
                return once ? g.grad_target(i) : GradContext::Target{g.grad(i), false};
            };
            if (g.needs(0)) {
                const auto da = target(0);
                kernels::gemm_batched(false, true, M, K, N, batches, dc, {}, w, b_batch, da.values.data(), a_batch,
                                      !da.fresh);
            }
            if (g.needs(1)) {
                const auto db = target(1);
                kernels::gemm_batched(true, false, K, N, M, batches, x, a_batch, dc, {}, db.values.data(), b_batch,
                                      !db.fresh);
            }
        },
        where);
}

}  // namespace autograd
