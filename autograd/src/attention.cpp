// causal_attention: softmax(causal_mask(factor * q k^T)) @ v in one op, FlashAttention's way (Dao et al.,
// 2022): the scores are made a block of queries against a block of keys at a time, the softmax kept
// online (a running max and sum per row), and nothing of size T x T is kept for backward, only the
// output and each row's log-sum-exp. The backward recomputes each block's weights from q, k and that
// log-sum-exp. Key blocks wholly above the diagonal are never visited: half the products of the
// composition, which computes the full T x T and masks it.
//
// Shape legend: B batch, T time (of the queries; Tk of the keys, T <= Tk: the queries are the last T
// positions, as when a cache holds the keys of those before), H head width; a block is up to kBlock
// queries (rows i0 ..) by up to kBlock keys (columns j0 ..), nq x nk.
#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/kernels.h"
#include "autograd/op.h"
#include "autograd/ops.h"
#include "autograd/threads.h"
#include "fast_math.h"
#include "vector_loops.h"

namespace autograd {

namespace {
// Queries and keys per block: a 64 x 64 block of scores (16 KB) and the 64-row slices of q, k, v for
// H = 64 (16 KB each) sit in L1/L2 together.
constexpr int64_t kBlock = 64;

// The keys the query at position i sees in the key block starting at j0 (of nk keys): all of them below
// the diagonal, i - j0 + 1 on it, none when the block starts after it.
int64_t visible_keys(int64_t i, int64_t j0, int64_t nk) { return std::clamp<int64_t>(i - j0 + 1, 0, nk); }

// C (M, N) (+)= op(A) @ op(B), one block's product on the calling thread (the small-product path: the
// operands sit in L1, and a block must not spread over threads: the ops parallelise over blocks).
// A few queries against a key block (a decoded token's row) take gemm's automatic choice instead: dot
// products of the keys read in place (kernels.h), where the small path would first copy the block
// transposed for one row's sake (11% of GPT-2 small's decoding time); too little work to leave the thread.
void block_gemm(kernels::Isa isa, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                const float* B, float* C, bool accumulate) {
    const bool few_queries = M <= kernels::kFewRows && !trans_a && trans_b;
    kernels::gemm_with(isa, trans_a, trans_b, M, N, K, A, B, C, accumulate,
                       few_queries ? kernels::GemmPath::automatic : kernels::GemmPath::small);
}
}  // namespace

Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, float factor, SourceLocation where) {
    check(q.dim() == 3 && k.dim() == 3 && k.shape() == v.shape() && q.size(0) == k.size(0) && q.size(2) == k.size(2) &&
              q.size(1) > 0 && q.size(1) <= k.size(1) && q.size(2) > 0,
          "causal_attention: q {}, k {} and v {} must be (B, Tq, H), (B, Tk, H) and (B, Tk, H) with 0 < Tq <= Tk and H "
          "> 0",
          shape_str(q.shape()), shape_str(k.shape()), shape_str(v.shape()));
    // the queries are the last Tq of the Tk positions: query i (position shift + i) sees keys j <= shift + i
    const int64_t B = q.size(0), T = q.size(1), Tk = k.size(1), H = q.size(2), shift = Tk - T;
    const int64_t blocks = (T + kBlock - 1) / kBlock;  // per sequence, of queries
    const kernels::Isa isa = kernels::active_isa();
    const auto softmax_row = detail::vector_loops().softmax_row;
    const float *qv = q.data().data(), *kv = k.data().data(), *vv = v.data().data();
    Buffer out(static_cast<size_t>(B * T * H));  // (B, T, H)
    Buffer lse(static_cast<size_t>(B * T));      // (B, T): log sum_j exp(factor * q_i . k_j), over j <= i

    // Each (sequence, query block) on one thread, its key blocks in increasing order: the same bits for
    // any thread count.
    parallel_for(B * blocks, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> scores(kBlock * kBlock), weights(kBlock * kBlock), block_out(kBlock * H);
        std::vector<float> block_max(kBlock);
        std::vector<double> block_sum(kBlock), row_max(kBlock), row_sum(kBlock);
        for (int64_t unit = begin; unit < end; ++unit) {
            const int64_t b = unit / blocks, i0 = unit % blocks * kBlock, nq = std::min(kBlock, T - i0);
            const float* q_rows = qv + (b * T + i0) * H;    // (nq, H)
            float* o_rows = out.data() + (b * T + i0) * H;  // (nq, H): the output of the keys so far, normalised
            std::fill(o_rows, o_rows + nq * H, 0.0f);
            std::fill(row_max.begin(), row_max.end(), -HUGE_VAL);
            std::fill(row_sum.begin(), row_sum.end(), 0.0);
            for (int64_t j0 = 0; j0 < shift + i0 + nq; j0 += kBlock) {
                const int64_t nk = std::min(kBlock, Tk - j0);
                // scores (nq, nk) = q rows @ k rows^T; weights = their softmax over the visible keys of
                // the block alone (zeros after them), with that softmax's max and sum per row
                block_gemm(isa, false, true, nq, nk, H, q_rows, kv + (b * Tk + j0) * H, scores.data(), false);
                for (int64_t r = 0; r < nq; ++r) {
                    const int64_t visible = visible_keys(shift + i0 + r, j0, nk);
                    float* w = weights.data() + r * nk;
                    const detail::RowStats stats = softmax_row(scores.data() + r * nk, factor, visible, w);
                    std::fill(w + visible, w + nk, 0.0f);
                    block_max[r] = stats.max;
                    block_sum[r] = stats.sum_exp;
                }
                // block_out (nq, H) = weights @ v rows; then each output row is the two softmaxes' mix,
                // weighted by their shares of the merged sum (the first block's share is exactly 1)
                block_gemm(isa, false, false, nq, H, nk, weights.data(), vv + (b * Tk + j0) * H, block_out.data(),
                           false);
                for (int64_t r = 0; r < nq; ++r) {
                    const double merged_max = std::max(row_max[r], double(block_max[r]));
                    const double old_part = row_sum[r] == 0.0 ? 0.0 : row_sum[r] * std::exp(row_max[r] - merged_max);
                    const double new_part =
                        block_sum[r] == 0.0 ? 0.0 : block_sum[r] * std::exp(block_max[r] - merged_max);
                    const double merged_sum = old_part + new_part;
                    // (a row whose scores are all -inf so far has no share to give: it stays zeros, as in softmax)
                    const auto keep = merged_sum == 0.0 ? 0.0f : static_cast<float>(old_part / merged_sum);
                    const auto take = merged_sum == 0.0 ? 0.0f : static_cast<float>(new_part / merged_sum);
                    float* o = o_rows + r * H;
                    const float* n = block_out.data() + r * H;
                    for (int64_t h = 0; h < H; ++h) o[h] = keep * o[h] + take * n[h];
                    row_max[r] = merged_max;
                    row_sum[r] = merged_sum;
                }
            }
            for (int64_t r = 0; r < nq; ++r)
                lse[b * T + i0 + r] = static_cast<float>(row_max[r] + std::log(row_sum[r]));
        }
    });

    return make_result(
        "causal_attention", {B, T, H}, std::move(out), {q, k, v},
        [B, T, Tk, H, shift, factor, lse = std::move(lse)](const GradContext& g) {
            // With P = the weights (recomputed per block: P_ij = exp(factor * q_i . k_j - lse_i), j <= i) and
            // D_i = sum_h dout_ih * out_ih (= sum_j P_ij dP_ij):
            //   dv_j += P_ij dout_i;  dP_ij = dout_i . v_j;  dS_ij = factor * P_ij (dP_ij - D_i);
            //   dq_i += dS_ij k_j;  dk_j += dS_ij q_i
            const bool need_q = g.needs(0), need_k = g.needs(1), need_v = g.needs(2);
            float* dq = need_q ? g.grad(0).data() : nullptr;
            float* dk = need_k ? g.grad(1).data() : nullptr;
            float* dv = need_v ? g.grad(2).data() : nullptr;
            const float *q_in = g.inputs[0].data().data(), *k_in = g.inputs[1].data().data(),
                        *v_in = g.inputs[2].data().data();
            const float *out_in = g.out.data(), *dout = g.dout.data();
            const kernels::Isa backward_isa = kernels::active_isa();
            const auto exp_shifted_row = detail::vector_loops().exp_shifted_row;
            const auto scores_gradient_row = detail::vector_loops().scores_gradient_row;
            // One sequence per thread, its blocks in a fixed order: every gradient row is summed the same
            // way for any thread count (q, k and v may be one tensor: all three only add).
            parallel_for(B, 1, [&](int64_t begin, int64_t end) {
                std::vector<float> scores(kBlock * kBlock), probs(kBlock * kBlock), dprobs(kBlock * kBlock);
                std::vector<float> d(static_cast<size_t>(T));
                for (int64_t b = begin; b < end; ++b) {
                    const int64_t base = b * T * H,
                                  kbase = b * Tk * H;  // sequence b's (T, H) in q, out; (Tk, H) in k, v
                    for (int64_t i = 0; i < T; ++i)
                        d[i] = static_cast<float>(detail::sum_in_double(
                            H, [&](int64_t h) { return double(dout[base + i * H + h]) * out_in[base + i * H + h]; }));
                    for (int64_t j0 = 0; j0 < Tk; j0 += kBlock) {
                        const int64_t nk = std::min(kBlock, Tk - j0);
                        const float *k_rows = k_in + kbase + j0 * H, *v_rows = v_in + kbase + j0 * H;  // (nk, H)
                        // the query block holding position j0 (the diagonal block) and those below it
                        for (int64_t i0 = std::max<int64_t>(0, j0 - shift) / kBlock * kBlock; i0 < T; i0 += kBlock) {
                            const int64_t nq = std::min(kBlock, T - i0);
                            const float *q_rows = q_in + base + i0 * H, *dout_rows = dout + base + i0 * H;  // (nq, H)
                            block_gemm(backward_isa, false, true, nq, nk, H, q_rows, k_rows, scores.data(), false);
                            for (int64_t r = 0; r < nq; ++r) {
                                const float row_lse = lse[b * T + i0 + r];
                                // (a row of -inf scores has lse -inf and weights 0, as in the forward)
                                const int64_t visible =
                                    row_lse == -HUGE_VALF ? 0 : visible_keys(shift + i0 + r, j0, nk);
                                const float* s = scores.data() + r * nk;
                                float* p = probs.data() + r * nk;
                                exp_shifted_row(s, factor, row_lse, visible, p);
                                std::fill(p + visible, p + nk, 0.0f);
                            }
                            if (dv)
                                block_gemm(backward_isa, true, false, nk, H, nq, probs.data(), dout_rows,
                                           dv + kbase + j0 * H, true);
                            if (!dq && !dk) continue;
                            block_gemm(backward_isa, false, true, nq, nk, H, dout_rows, v_rows, dprobs.data(), false);
                            for (int64_t r = 0; r < nq; ++r)  // dP becomes dS in place
                                scores_gradient_row(probs.data() + r * nk, d[i0 + r], factor, nk,
                                                    dprobs.data() + r * nk);
                            if (dq)
                                block_gemm(backward_isa, false, false, nq, H, nk, dprobs.data(), k_rows,
                                           dq + base + i0 * H, true);
                            if (dk)
                                block_gemm(backward_isa, true, false, nk, H, nq, dprobs.data(), q_rows,
                                           dk + kbase + j0 * H, true);
                        }
                    }
                }
            });
        },
        where);
}

}  // namespace autograd
