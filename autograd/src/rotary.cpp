// rotary: rotary position embeddings (RoPE, Su et al. 2021), the position signal of the Llama family, and
// rotary_permute, which carries a q or k projection from one pairing of the features to the other.
// The composition rotary replaces (Hugging Face's x * cos + rotate_half(x) * sin: two slices, a neg, a
// concat, two muls and an add) would make six full-size tensors; this makes one, and its backward is
// the inverse rotation of the gradient with the same table.
//
// Shape legend: B batch, T time, n heads, H head width (even), H/2 pairs per head.
#include <algorithm>
#include <cmath>
#include <utility>

#include "autograd/op.h"
#include "autograd/ops.h"
#include "autograd/threads.h"
#include "fast_math.h"

namespace autograd {

namespace {

// The features that pair i of a head rotates together.
std::pair<int64_t, int64_t> pair_of(RotaryLayout layout, int64_t i, int64_t half) {
    return layout == RotaryLayout::interleaved ? std::pair{2 * i, 2 * i + 1} : std::pair{i, i + half};
}

// Rotates every (B, T, n) row's pairs by the table's angles for its position t: out = R(sign * angle) in,
// for the forward (sign 1) and the backward (sign -1: the inverse rotation, R's transpose). cos, sin: (T, half).
void rotate_rows(const float* in, float* out, bool overwrite, const float* cos, const float* sin, float sign, int64_t T,
                 int64_t n, int64_t H, RotaryLayout layout, int64_t begin, int64_t end) {
    const int64_t half = H / 2;
    for (int64_t row = begin; row < end; ++row) {  // row = (b, t, head), flattened
        const int64_t t = (row / n) % T;
        const float *c = cos + t * half, *s = sin + t * half, *x = in + row * H;
        float* y = out + row * H;
        for (int64_t i = 0; i < half; ++i) {
            const auto [a, b] = pair_of(layout, i, half);
            const float ya = x[a] * c[i] - sign * x[b] * s[i], yb = sign * x[a] * s[i] + x[b] * c[i];
            y[a] = overwrite ? ya : y[a] + ya;
            y[b] = overwrite ? yb : y[b] + yb;
        }
    }
}

}  // namespace

Tensor rotary(const Tensor& x, int64_t start_position, float theta, RotaryLayout layout, SourceLocation where) {
    check(x.dim() == 4, "rotary: input must be (B, T, n_head, H), got shape {}", shape_str(x.shape()));
    const int64_t T = x.size(1), n = x.size(2), H = x.size(3), half = H / 2;
    check(H > 0 && H % 2 == 0, "rotary: head width H {} must be even and positive (pairs of features rotate), input {}",
          H, shape_str(x.shape()));
    check(start_position >= 0, "rotary: start position {} must not be negative (input {})", start_position,
          shape_str(x.shape()));
    check(std::isfinite(theta) && theta > 0.0f, "rotary: theta {} must be positive and finite (input {})", theta,
          shape_str(x.shape()));

    // the table: pair i at position p turns by p * theta^(-2i/H), in float as run.c's
    // `1.0f / powf(10000.0f, head_dim / (float)head_size)` and Hugging Face's inv_freq (both float32)
    Buffer cos(T * half), sin(T * half);  // (T, H/2)
    for (int64_t i = 0; i < half; ++i) {
        const float frequency = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(H));
        for (int64_t t = 0; t < T; ++t) {
            const float angle = static_cast<float>(start_position + t) * frequency;
            cos[t * half + i] = std::cos(angle);
            sin[t * half + i] = std::sin(angle);
        }
    }
    const int64_t rows = x.numel() / std::max<int64_t>(H, 1);  // B * T * n
    Buffer out(x.numel());                                     // (B, T, n, H)
    const float* src = x.data().data();
    parallel_for(rows, rows_per_thread(H), [&](int64_t begin, int64_t end) {
        rotate_rows(src, out.data(), true, cos.data(), sin.data(), 1.0f, T, n, H, layout, begin, end);
    });
    return make_result(
        "rotary", x.shape(), std::move(out), {x},
        [T, n, H, layout, rows, cos = std::move(cos), sin = std::move(sin)](const GradContext& g) {
            // y = R x per pair, R orthogonal: dx = R^T dy, the rotation by -angle
            const GradContext::Target gx = g.grad_target(0);
            parallel_for(rows, rows_per_thread(H), [&](int64_t begin, int64_t end) {
                rotate_rows(g.dout.data(), gx.values.data(), gx.fresh, cos.data(), sin.data(), -1.0f, T, n, H, layout,
                            begin, end);
            });
        },
        where);
}

Tensor rotary_permute(const Tensor& weight, int64_t n_head, RotaryLayout from, RotaryLayout to, SourceLocation where) {
    check(weight.dim() >= 1 && n_head > 0 && weight.size(-1) % n_head == 0 && (weight.size(-1) / n_head) % 2 == 0,
          "rotary_permute: the last dim of {} must be n_head {} heads of an even width", shape_str(weight.shape()),
          n_head);
    if (from == to) return weight;
    // each head's H features as (H/2, 2) pairs (interleaved) or (2, H/2) halves: swapping those two dims
    // is the reordering (Hugging Face's view(n_head, H/2, 2, dim).transpose(1, 2), on the other axis)
    const int64_t half = weight.size(-1) / n_head / 2;
    Shape heads(weight.shape().begin(), weight.shape().end() - 1);
    heads.push_back(n_head);
    heads.push_back(from == RotaryLayout::interleaved ? half : 2);
    heads.push_back(from == RotaryLayout::interleaved ? 2 : half);
    return reshape(transpose(reshape(weight, heads, where), -1, -2, where), weight.shape(), where);
}

}  // namespace autograd
