// bfloat16 products (precision.h, kernels.h "bfloat16 products"): the rounding, every bf16 kernel bit
// for bit against a scalar statement of the sums they promise (and that statement against the double
// reference), the weights' copies, and the ops in bf16. The tests tagged [isa] also run on emulated CPUs
// (qemu: Haswell runs the avx2 kernel, Nehalem the portable one).
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include <autograd/kernels.h>
#include <autograd/ops.h>
#include <autograd/precision.h>
#include <autograd/threads.h>

#include "helpers.h"

using namespace autograd;
using kernels::Bf16Kernel;

namespace {

std::vector<float> random_values(int64_t n, Generator& gen, float scale = 1.0f) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = scale * gen.uniform(-1.0f, 1.0f);
    return v;
}

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

// A denormal as vdpbf16ps reads and writes it: zero of its sign.
float flushed(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

// acc + a * b with the product exact and one rounding, then flushed: a product of two bfloat16 and a
// float added in double are exact, or round to the same float, and double holds every such product.
float fused(float acc, float a, float b) { return flushed(static_cast<float>(double(acc) + double(a) * double(b))); }

// One element of the bf16 product as kernels.h states it, one scalar operation at a time: blocks of
// kBf16BlockK, pairs in order, acc = (acc + odd product) + even product, denormals flushed.
float spec_element(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
                   int64_t i, int64_t j, float c, bool accumulate) {
    const auto a = [&](int64_t k) {
        return k < K ? flushed(kernels::from_bf16(kernels::to_bf16(trans_a ? A[k * M + i] : A[i * K + k]))) : 0.0f;
    };
    const auto b = [&](int64_t k) {
        return k < K ? flushed(kernels::from_bf16(kernels::to_bf16(trans_b ? B[j * K + k] : B[k * N + j]))) : 0.0f;
    };
    for (int64_t k0 = 0; k0 < K; k0 += kernels::kBf16BlockK) {
        float acc = 0.0f;
        for (int64_t k = k0; k < std::min(K, k0 + kernels::kBf16BlockK); k += 2) {
            acc = fused(acc, a(k + 1), b(k + 1));
            acc = fused(acc, a(k), b(k));
        }
        c = k0 == 0 && !accumulate ? acc : flushed(flushed(c) + acc);
    }
    return K == 0 && !accumulate ? 0.0f : c;
}

// The same for a product of at most 8 rows with B transposed (kernels.h: its own sums): per block, 16
// lanes, lane l summing pairs l, l + 16, ... (K padded with zeros to whole groups of 16 pairs), then the
// lanes added (l + 8, + 4, + 2, + 1).
float spec_dot_element(bool trans_a, int64_t M, int64_t K, const float* A, const float* B, int64_t i, int64_t j,
                       float c, bool accumulate) {
    const auto a = [&](int64_t k) {
        return k < K ? flushed(kernels::from_bf16(kernels::to_bf16(trans_a ? A[k * M + i] : A[i * K + k]))) : 0.0f;
    };
    const auto b = [&](int64_t k) {
        return k < K ? flushed(kernels::from_bf16(kernels::to_bf16(B[j * K + k]))) : 0.0f;
    };
    const int64_t padded = (K + 31) / 32 * 32;
    for (int64_t k0 = 0; k0 < K; k0 += kernels::kBf16BlockK) {
        float lanes[16] = {};
        for (int64_t k = k0; k < std::min(padded, k0 + kernels::kBf16BlockK); k += 32)
            for (int l = 0; l < 16; ++l) {
                lanes[l] = fused(lanes[l], a(k + 2 * l + 1), b(k + 2 * l + 1));
                lanes[l] = fused(lanes[l], a(k + 2 * l), b(k + 2 * l));
            }
        for (int half = 8; half >= 1; half /= 2)
            for (int l = 0; l < half; ++l) lanes[l] = flushed(lanes[l] + lanes[l + half]);
        c = k0 == 0 && !accumulate ? lanes[0] : flushed(flushed(c) + lanes[0]);
    }
    return K == 0 && !accumulate ? 0.0f : c;
}

std::vector<float> spec_product(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                                const std::vector<float>& A, const std::vector<float>& B, std::vector<float> C,
                                bool accumulate) {
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
            C[i * N + j] =
                M <= kernels::kFewRows && trans_b
                    ? spec_dot_element(trans_a, M, K, A.data(), B.data(), i, j, C[i * N + j], accumulate)
                    : spec_element(trans_a, trans_b, M, N, K, A.data(), B.data(), i, j, C[i * N + j], accumulate);
    return C;
}

// The operand's values rounded, as a Bf16WeightScope's copy holds them.
std::vector<uint16_t> rounded(const std::vector<float>& values) {
    std::vector<uint16_t> out(values.size());
    for (size_t i = 0; i < values.size(); ++i) out[i] = kernels::to_bf16(values[i]);
    return out;
}

}  // namespace

TEST_CASE("to_bf16 rounds to nearest, ties to even, and keeps NaN, infinities and signs", "[bf16]") {
    CHECK(kernels::to_bf16(1.0f) == 0x3f80);
    CHECK(kernels::to_bf16(from_bits(0x3f808000)) == 0x3f80);  // a tie: down to the even 0x3f80
    CHECK(kernels::to_bf16(from_bits(0x3f818000)) == 0x3f82);  // a tie: up to the even 0x3f82
    CHECK(kernels::to_bf16(from_bits(0x3f808001)) == 0x3f81);  // past the tie: up
    CHECK(kernels::to_bf16(from_bits(0x3f807fff)) == 0x3f80);  // below it: down
    CHECK(kernels::to_bf16(-2.5f) == 0xc020);
    CHECK(kernels::to_bf16(from_bits(0x7f7fffff)) == 0x7f80);  // the largest float rounds to infinity
    CHECK(kernels::to_bf16(INFINITY) == 0x7f80);
    CHECK(kernels::to_bf16(-INFINITY) == 0xff80);
    CHECK(std::isnan(kernels::from_bf16(kernels::to_bf16(NAN))));
    CHECK(std::isnan(kernels::from_bf16(kernels::to_bf16(from_bits(0x7f800001)))));  // not rounded into infinity
    for (uint32_t bits = 0; bits < 0x10000; bits += 7) {  // from_bf16 is exact, and rounding it changes nothing
        const auto h = static_cast<uint16_t>(bits);
        CHECK(std::bit_cast<uint32_t>(kernels::from_bf16(h)) == uint32_t{h} << 16);
        if (!std::isnan(kernels::from_bf16(h))) CHECK(kernels::to_bf16(kernels::from_bf16(h)) == h);
    }
}

TEST_CASE("the stated bf16 sums are the double reference's within float rounding", "[bf16]") {
    // (so that the bit-for-bit tests below hold the kernels to the right thing)
    Generator gen(44);
    for (const int64_t K : {1, 7, 512, 1100}) {
        const int64_t M = 5, N = 6;
        const std::vector<float> A = random_values(M * K, gen), B = random_values(K * N, gen);
        const std::vector<float> C0 = random_values(M * N, gen);
        for (const bool accumulate : {false, true})
            for (const bool trans_b : {false, true}) {  // (M 5: with B transposed, the few-row sums)
                std::vector<float> ref = C0;
                kernels::gemm_bf16_naive(false, trans_b, M, N, K, A.data(), B.data(), ref.data(), accumulate);
                const std::vector<float> spec = spec_product(false, trans_b, M, N, K, A, B, C0, accumulate);
                for (size_t e = 0; e < ref.size(); ++e) REQUIRE(std::abs(spec[e] - ref[e]) <= 1e-6 * double(K) + 1e-6);
            }
        // and the rounding matters: the float32 product is farther from the bf16 reference than that
        if (K >= 512) {
            std::vector<float> exact(M * N), ref(M * N);
            kernels::gemm_naive(false, false, M, N, K, A.data(), B.data(), exact.data(), false);
            kernels::gemm_bf16_naive(false, false, M, N, K, A.data(), B.data(), ref.data(), false);
            double worst = 0.0;
            for (size_t e = 0; e < ref.size(); ++e) worst = std::max(worst, double(std::abs(exact[e] - ref[e])));
            CHECK(worst > 1e-3);
        }
    }
}

TEST_CASE("every bf16 kernel gives the stated sums bit for bit: transposes, edges, two K blocks, threads",
          "[bf16][isa]") {
    struct Size {
        int64_t M, N, K;
    };
    // edge tiles in both directions, K odd and over one block (two blocks, the second odd), a product
    // split by rows and one split by columns, one row (a decoded token's)
    // (and the few-row paths: 1 to 8 rows, K a whole number of lane groups or not, over one block)
    const Size sizes[] = {{1, 1, 1},   {13, 33, 7},    {25, 70, 1029}, {40, 600, 300}, {300, 40, 96},
                          {1, 97, 64}, {8, 150, 1029}, {3, 700, 96},   {1, 2, 530}};
    Generator gen(4400);
    const int saved = num_threads();
    for (const Size& s : sizes) {
        const std::vector<float> A = random_values(s.M * s.K, gen), B = random_values(s.K * s.N, gen);
        const std::vector<float> C0 = random_values(s.M * s.N, gen);
        for (int layout = 0; layout < 8; ++layout) {
            const bool trans_a = (layout & 1) != 0, trans_b = (layout & 2) != 0, accumulate = (layout & 4) != 0;
            const std::vector<float> spec = spec_product(trans_a, trans_b, s.M, s.N, s.K, A, B, C0, accumulate);
            for (const Bf16Kernel kernel : kernels::available_bf16_kernels())
                for (const int threads : {1, 2, 3}) {
                    INFO(kernels::bf16_kernel_name(kernel)
                         << " M " << s.M << " N " << s.N << " K " << s.K << " trans_a " << trans_a << " trans_b "
                         << trans_b << " accumulate " << accumulate << " threads " << threads);
                    set_num_threads(threads);
                    std::vector<float> C = C0;
                    kernels::gemm_bf16_with(kernel, trans_a, trans_b, s.M, s.N, s.K, {A.data()}, {B.data()}, C.data(),
                                            accumulate);
                    REQUIRE(std::memcmp(C.data(), spec.data(), C.size() * sizeof(float)) == 0);
                }
        }
    }
    set_num_threads(saved);
}

TEST_CASE("every bf16 kernel gives the same bits on denormals, tiny and huge products, and NaN", "[bf16][isa]") {
    // values from 2^-140 to 2^100: denormal bfloat16 inputs, products and sums that underflow or overflow
    const int64_t M = 14, N = 35, K = 40;
    Generator gen(4401);
    std::vector<float> A(M * K), B(K * N);
    const auto scaled = [&](float lowest, float highest) {  // (one draw after the other, in this order)
        const float mantissa = gen.uniform(-1.0f, 1.0f);
        return std::ldexp(mantissa, static_cast<int>(gen.uniform(lowest, highest)));
    };
    for (float& x : A) x = scaled(-140.0f, 100.0f);
    for (float& x : B) x = scaled(-60.0f, 40.0f);
    A[3] = NAN;
    // row 1, column 0: its first pair's odd product is past float32's range, its even product too, with
    // the other sign: +inf once added exactly (vdpbf16ps), NaN had each product been rounded to infinity
    A[1 * K + 0] = 1e30f, A[1 * K + 1] = 1e30f;
    B[0 * K + 0] = -1e30f, B[0 * K + 1] = 1e30f;
    const std::vector<float> C0 = random_values(M * N, gen, 1e-37f);
    for (const bool accumulate : {false, true}) {
        const std::vector<float> spec = spec_product(false, true, M, N, K, A, B, C0, accumulate);
        for (const Bf16Kernel kernel : kernels::available_bf16_kernels()) {
            INFO(kernels::bf16_kernel_name(kernel) << " accumulate " << accumulate);
            std::vector<float> C = C0;
            kernels::gemm_bf16_with(kernel, false, true, M, N, K, {A.data()}, {B.data()}, C.data(), accumulate);
            for (size_t e = 0; e < C.size(); ++e) {
                INFO("element " << e << ": " << C[e] << " stated " << spec[e]);
                // (a NaN is a NaN: its payload is not part of the promise)
                REQUIRE((std::isnan(C[e]) ? std::isnan(spec[e])
                                          : std::bit_cast<uint32_t>(C[e]) == std::bit_cast<uint32_t>(spec[e])));
            }
        }
    }
}

TEST_CASE("a bf16 product reads an operand's rounded copy to the same bits as its floats", "[bf16][isa]") {
    struct Size {
        int64_t M, N, K;
    };
    // blocked; a few rows with whole vectors of columns and K a whole number of lane groups over two
    // blocks (B's copy read in place, four pairs at a time), and with neither
    const Size sizes[] = {{30, 50, 70}, {1, 64, 1088}, {5, 70, 1029}};
    Generator gen(4402);
    for (const Size& s : sizes)
        for (const Bf16Kernel kernel : kernels::available_bf16_kernels())
            for (int layout = 0; layout < 4; ++layout) {
                const int64_t M = s.M, N = s.N, K = s.K;
                const std::vector<float> A = random_values(M * K, gen), B = random_values(K * N, gen);
                const std::vector<uint16_t> A16 = rounded(A), B16 = rounded(B);
                const bool trans_a = (layout & 1) != 0, trans_b = (layout & 2) != 0;
                INFO(kernels::bf16_kernel_name(kernel)
                     << " M " << M << " trans_a " << trans_a << " trans_b " << trans_b);
                std::vector<float> from_floats(M * N), from_copies(M * N);
                kernels::gemm_bf16_with(kernel, trans_a, trans_b, M, N, K, {A.data()}, {B.data()}, from_floats.data(),
                                        false);
                kernels::gemm_bf16_with(kernel, trans_a, trans_b, M, N, K, {A.data(), A16.data()},
                                        {B.data(), B16.data()}, from_copies.data(), false);
                REQUIRE(from_copies == from_floats);
            }
}

TEST_CASE("the active bf16 kernel follows the instruction set, and the precision parses its names only",
          "[bf16][isa]") {
    const std::vector<Bf16Kernel> kernels_here = kernels::available_bf16_kernels();
    REQUIRE(kernels_here.front() == Bf16Kernel::portable);
    const kernels::Isa saved = kernels::active_isa();
    kernels::set_isa(kernels::Isa::portable);
    CHECK(kernels::active_bf16_kernel() == Bf16Kernel::portable);
    kernels::set_isa(saved);
    // the active set's: with avx512, the best this CPU runs (TINYGPT_ISA may name a lower set)
    const Bf16Kernel expected = saved == kernels::Isa::avx512 ? kernels_here.back()
                                : saved == kernels::Isa::avx2 ? Bf16Kernel::avx2
                                                              : Bf16Kernel::portable;
    CHECK(kernels::active_bf16_kernel() == expected);
    CHECK(parse_precision("bf16") == Precision::bf16);
    CHECK(parse_precision("float32") == Precision::float32);
    CHECK_FALSE(parse_precision("fp16").has_value());
    CHECK_FALSE(parse_precision("BF16").has_value());
    CHECK(matmul_precision() == Precision::float32);  // the default
}

TEST_CASE("in bf16 the weight ops multiply rounded operands, forward and backward, and float32 is unchanged",
          "[bf16]") {
    const int64_t R = 6, K = 20, N = 9;
    Generator gen(4403);
    const Tensor x = tensor(random_values(R * K, gen), {2, 3, K}).requires_grad_();
    const Tensor w = tensor(random_values(K * N, gen), {K, N}).requires_grad_();
    const Tensor wt = tensor(random_values(N * K, gen), {N, K}).requires_grad_();
    const Tensor bias = tensor(random_values(N, gen), {N}).requires_grad_();
    const Tensor upstream = tensor(random_values(R * N, gen), {2, 3, N});
    struct Case {
        const char* name;
        std::function<Tensor()> run;
        const Tensor* weight;
        bool transposed;
    };
    const std::vector<Case> cases = {
        {"matmul", [&] { return matmul(x, w); }, &w, false},
        {"linear", [&] { return linear(x, w, bias) - bias; }, &w, false},
        {"matmul_transposed", [&] { return matmul_transposed(x, wt); }, &wt, true},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        const Tensor& weight = *c.weight;
        const std::vector<float> xv = x.to_vector(), wv = weight.to_vector(), dy = upstream.to_vector();
        std::vector<float> y_ref(R * N), dx_ref(R * K), dw_ref(K * N);
        // y = x @ op(w);  dx = dy @ op(w)^T;  dw = x^T @ dy (or dy^T @ x for a transposed weight)
        kernels::gemm_bf16_naive(false, c.transposed, R, N, K, xv.data(), wv.data(), y_ref.data(), false);
        kernels::gemm_bf16_naive(false, !c.transposed, R, K, N, dy.data(), wv.data(), dx_ref.data(), false);
        if (c.transposed) kernels::gemm_bf16_naive(true, false, N, K, R, dy.data(), xv.data(), dw_ref.data(), false);
        else kernels::gemm_bf16_naive(true, false, K, N, R, xv.data(), dy.data(), dw_ref.data(), false);
        for (const Precision precision : {Precision::bf16, Precision::float32}) {
            const MatmulPrecisionGuard guard(precision);
            x.zero_grad();
            weight.zero_grad();
            const Tensor y = c.run();
            y.backward(upstream);
            const double tolerance = 1e-5;
            const double bf16_apart = 1e-4;  // float32 is this much from the rounded products, at least once
            const auto compare = [&](const std::vector<float>& got, const std::vector<float>& ref) {
                double worst = 0.0;
                for (size_t e = 0; e < got.size(); ++e) worst = std::max(worst, double(std::abs(got[e] - ref[e])));
                if (precision == Precision::bf16) CHECK(worst <= tolerance);
                else CHECK(worst > bf16_apart);
            };
            compare(y.to_vector(), y_ref);
            compare(x.grad().to_vector(), dx_ref);
            compare(weight.grad().to_vector(), dw_ref);
        }
    }
}

TEST_CASE("a Bf16WeightScope rounds each weight once and reads that copy until it closes", "[bf16]") {
    const int64_t K = 16, N = 8;
    Generator gen(4404);
    const Tensor x = tensor(random_values(2 * K, gen), {2, K});
    const Tensor w = tensor(random_values(K * N, gen), {K, N}).requires_grad_();
    const MatmulPrecisionGuard guard(Precision::bf16);
    const std::vector<float> before = matmul(x, w).to_vector();
    {
        const Bf16WeightScope scope;
        REQUIRE(matmul(x, w).to_vector() == before);  // the copy gives the same bits as rounding per product
        for (float& v : w.data()) v *= 2.0f;          // (which a scope forbids: here it shows the copy is read)
        CHECK(matmul(x, w).to_vector() == before);
        const Tensor computed = w * 1.0f;  // not a leaf: never copied, always read afresh
        CHECK(matmul(x, computed).to_vector() != before);
    }
    const std::vector<float> after = matmul(x, w).to_vector();  // the scope closed: the new values
    for (size_t e = 0; e < before.size(); ++e) CHECK(after[e] == 2.0f * before[e]);
}
