// The fast gemm against the naive reference, and the matmul op against a plain triple loop.
#include <cmath>
#include <vector>

#include <autograd/kernels.h>
#include <autograd/threads.h>

#include "helpers.h"

using namespace autograd;

namespace {

std::vector<float> random_values(int64_t n, Generator& gen) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = gen.uniform(-1.0f, 1.0f);
    return v;
}

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double d = std::abs(double(a[i]) - double(b[i]));
        if (!std::isfinite(d)) return INFINITY;
        worst = std::max(worst, d);
    }
    return worst;
}

}  // namespace

TEST_CASE("gemm_naive against hand products for every transpose combination", "[kernels]") {
    const std::vector<float> A = {1, 2, 3, 4};  // [[1, 2], [3, 4]]
    const std::vector<float> B = {5, 6, 7, 8};  // [[5, 6], [7, 8]]
    std::vector<float> C(4);
    kernels::gemm_naive(false, false, 2, 2, 2, A.data(), B.data(), C.data(), false);
    REQUIRE(C == std::vector<float>{19, 22, 43, 50});
    kernels::gemm_naive(true, false, 2, 2, 2, A.data(), B.data(), C.data(), false);   // A^T B
    REQUIRE(C == std::vector<float>{26, 30, 38, 44});
    kernels::gemm_naive(false, true, 2, 2, 2, A.data(), B.data(), C.data(), false);   // A B^T
    REQUIRE(C == std::vector<float>{17, 23, 39, 53});
    kernels::gemm_naive(true, true, 2, 2, 2, A.data(), B.data(), C.data(), false);    // A^T B^T
    REQUIRE(C == std::vector<float>{23, 31, 34, 46});
    kernels::gemm_naive(true, true, 2, 2, 2, A.data(), B.data(), C.data(), true);     // accumulate
    REQUIRE(C == std::vector<float>{46, 62, 68, 92});

    // non-square: (2, 3) @ (3, 1)
    const std::vector<float> A2 = {1, 2, 3, 4, 5, 6}, B2 = {1, 0, -1};
    std::vector<float> C2 = {100, 100};
    kernels::gemm_naive(false, false, 2, 1, 3, A2.data(), B2.data(), C2.data(), false);
    REQUIRE(C2 == std::vector<float>{-2, -2});
    // the same with A stored transposed as (3, 2)
    const std::vector<float> A2t = {1, 4, 2, 5, 3, 6};
    kernels::gemm_naive(true, false, 2, 1, 3, A2t.data(), B2.data(), C2.data(), false);
    REQUIRE(C2 == std::vector<float>{-2, -2});
}

TEST_CASE("gemm matches gemm_naive: all transposes, accumulate, odd sizes", "[kernels]") {
    struct Size {
        int64_t M, N, K;
    };
    const Size sizes[] = {{1, 1, 1},   {3, 5, 7},    {17, 33, 65}, {64, 64, 64}, {1, 1, 100}, {1, 37, 1},
                          {37, 1, 1},  {1, 50, 19},  {50, 1, 19},  {2, 3, 1},   {65, 17, 33}, {128, 96, 80},
                          {31, 129, 7}, {8, 8, 257}};
    Generator gen(21);
    for (const Size& s : sizes) {
        const std::vector<float> A = random_values(s.M * s.K, gen);
        const std::vector<float> B = random_values(s.K * s.N, gen);
        const std::vector<float> C0 = random_values(s.M * s.N, gen);
        for (bool trans_a : {false, true})
            for (bool trans_b : {false, true})
                for (bool accumulate : {false, true}) {
                    INFO("M " << s.M << " N " << s.N << " K " << s.K << " trans_a " << trans_a << " trans_b "
                              << trans_b << " accumulate " << accumulate);
                    std::vector<float> fast = C0, ref = C0;
                    kernels::gemm(trans_a, trans_b, s.M, s.N, s.K, A.data(), B.data(), fast.data(), accumulate);
                    kernels::gemm_naive(trans_a, trans_b, s.M, s.N, s.K, A.data(), B.data(), ref.data(),
                                        accumulate);
                    // inputs are in [-1, 1]: float rounding grows at most about linearly in K
                    const double tol = 1e-5 * double(s.K) + 1e-6;
                    const double diff = max_abs(fast, ref);
                    INFO("max abs diff " << diff << " tolerance " << tol);
                    REQUIRE(diff <= tol);
                }
    }
}

TEST_CASE("gemm_naive agrees with a direct double loop (the reference is itself checked)", "[kernels]") {
    Generator gen(22);
    const int64_t M = 5, N = 4, K = 6;
    const std::vector<float> A = random_values(M * K, gen), B = random_values(K * N, gen);
    for (bool trans_a : {false, true})
        for (bool trans_b : {false, true}) {
            std::vector<float> C(static_cast<size_t>(M * N));
            kernels::gemm_naive(trans_a, trans_b, M, N, K, A.data(), B.data(), C.data(), false);
            for (int64_t m = 0; m < M; ++m)
                for (int64_t n = 0; n < N; ++n) {
                    double s = 0.0;
                    for (int64_t k = 0; k < K; ++k) {
                        const float a = trans_a ? A[static_cast<size_t>(k * M + m)] : A[static_cast<size_t>(m * K + k)];
                        const float b = trans_b ? B[static_cast<size_t>(n * K + k)] : B[static_cast<size_t>(k * N + n)];
                        s += double(a) * b;
                    }
                    REQUIRE(C[static_cast<size_t>(m * N + n)] == Approx(s).margin(1e-6));
                }
        }
}

TEST_CASE("matmul op matches a naive loop on a batched broadcast case", "[kernels]") {
    Generator gen(23);
    // a: (2, 1, 3, 4)  b: (5, 4, 2)  ->  (2, 5, 3, 2)
    const Tensor a = rand({2, 1, 3, 4}, gen, -1.0f, 1.0f);
    const Tensor b = rand({5, 4, 2}, gen, -1.0f, 1.0f);
    const Tensor c = matmul(a, b);
    REQUIRE(c.shape() == Shape{2, 5, 3, 2});
    for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 5; ++j)
            for (int64_t m = 0; m < 3; ++m)
                for (int64_t n = 0; n < 2; ++n) {
                    double s = 0.0;
                    for (int64_t k = 0; k < 4; ++k) s += double(a.at({i, 0, m, k})) * b.at({j, k, n});
                    REQUIRE(c.at({i, j, m, n}) == Approx(s).margin(1e-5));
                }

    // larger, with the fast kernel's blocking in play: (3, 33, 70) @ (70, 41)
    const Tensor x = rand({3, 33, 70}, gen, -1.0f, 1.0f);
    const Tensor w = rand({70, 41}, gen, -1.0f, 1.0f);
    const Tensor y = matmul(x, w);
    REQUIRE(y.shape() == Shape{3, 33, 41});
    double worst = 0.0;
    for (int64_t bt = 0; bt < 3; ++bt)
        for (int64_t m = 0; m < 33; ++m)
            for (int64_t n = 0; n < 41; ++n) {
                double s = 0.0;
                for (int64_t k = 0; k < 70; ++k) s += double(x.at({bt, m, k})) * w.at({k, n});
                worst = std::max(worst, std::abs(s - y.at({bt, m, n})));
            }
    REQUIRE(worst < 1e-5 * 70);

    // (B, T, H) @ (B, H, T) with a gradient against the naive formula dA = dC @ B^T
    const Tensor p = rand({2, 3, 4}, gen, -1.0f, 1.0f).requires_grad_();
    const Tensor q = rand({2, 4, 3}, gen, -1.0f, 1.0f).requires_grad_();
    const Tensor up = randn({2, 3, 3}, gen);
    Tensor r = matmul(p, q);
    r.backward(up);
    for (int64_t bt = 0; bt < 2; ++bt)
        for (int64_t m = 0; m < 3; ++m)
            for (int64_t k = 0; k < 4; ++k) {
                double s = 0.0;
                for (int64_t n = 0; n < 3; ++n) s += double(up.at({bt, m, n})) * q.at({bt, k, n});
                REQUIRE(p.grad().at({bt, m, k}) == Approx(s).margin(1e-5));
            }
    for (int64_t bt = 0; bt < 2; ++bt)
        for (int64_t k = 0; k < 4; ++k)
            for (int64_t n = 0; n < 3; ++n) {
                double s = 0.0;
                for (int64_t m = 0; m < 3; ++m) s += double(p.at({bt, m, k})) * up.at({bt, m, n});
                REQUIRE(q.grad().at({bt, k, n}) == Approx(s).margin(1e-5));
            }
}

TEST_CASE("every available gemm implementation matches gemm_naive on edge sizes", "[kernels]") {
    // Sizes straddle each micro-kernel's tile (4x16, 6x16, 12x32) and blocking (KC 256/384, NC 512/1024).
    const int64_t sizes[] = {1, 3, 7, 15, 17, 31, 33, 63, 65, 127, 129, 255, 257};
    Generator gen(24);
    int64_t checked = 0;
    for (kernels::Isa isa : kernels::available_isas())
        for (int64_t M : sizes)
            for (int64_t N : sizes)
                for (int64_t K : sizes) {
                    // every M and N with a few K, plus big K on small tiles: keeps this under a second
                    const bool big = M * N * K > 65 * 65 * 65;
                    if (big && !(K == 257 && M <= 33 && N <= 33)) continue;
                    if ((M + 3 * N + 7 * K) % 5 != 0 && M > 3 && N > 3) continue;
                    const std::vector<float> A = random_values(M * K, gen), B = random_values(K * N, gen);
                    const std::vector<float> C0 = random_values(M * N, gen);
                    const int layout = int((M + N + K) % 4);  // one transpose case per shape, all four in turn
                    const bool trans_a = (layout & 1) != 0, trans_b = (layout & 2) != 0;
                    for (bool accumulate : {false, true}) {
                        INFO(kernels::isa_name(isa) << " M " << M << " N " << N << " K " << K << " trans_a "
                                                    << trans_a << " trans_b " << trans_b << " accumulate " << accumulate);
                        std::vector<float> fast = C0, ref = C0;
                        kernels::gemm_with(isa, trans_a, trans_b, M, N, K, A.data(), B.data(), fast.data(), accumulate);
                        kernels::gemm_naive(trans_a, trans_b, M, N, K, A.data(), B.data(), ref.data(), accumulate);
                        const double tol = 1e-6 * double(K) + 1e-6;
                        const double diff = max_abs(fast, ref);
                        INFO("max abs diff " << diff << " tolerance " << tol);
                        REQUIRE(diff <= tol);
                        ++checked;
                    }
                }
    REQUIRE(checked > 0);
}

TEST_CASE("every gemm implementation handles all transposes on blocked sizes", "[kernels]") {
    // Larger than one K block and one N block of every kernel, not multiples of any tile.
    struct Size {
        int64_t M, N, K;
    };
    const Size sizes[] = {{37, 1030, 400}, {130, 70, 800}, {1, 600, 9}, {200, 1, 513}};
    Generator gen(25);
    for (kernels::Isa isa : kernels::available_isas())
        for (const Size& s : sizes) {
            const std::vector<float> A = random_values(s.M * s.K, gen), B = random_values(s.K * s.N, gen);
            const std::vector<float> C0 = random_values(s.M * s.N, gen);
            for (bool trans_a : {false, true})
                for (bool trans_b : {false, true})
                    for (bool accumulate : {false, true}) {
                        INFO(kernels::isa_name(isa) << " M " << s.M << " N " << s.N << " K " << s.K << " trans_a "
                                                    << trans_a << " trans_b " << trans_b << " accumulate " << accumulate);
                        std::vector<float> fast = C0, ref = C0;
                        kernels::gemm_with(isa, trans_a, trans_b, s.M, s.N, s.K, A.data(), B.data(), fast.data(),
                                           accumulate);
                        kernels::gemm_naive(trans_a, trans_b, s.M, s.N, s.K, A.data(), B.data(), ref.data(), accumulate);
                        REQUIRE(max_abs(fast, ref) <= 1e-6 * double(s.K) + 1e-6);
                    }
        }
}

TEST_CASE("gemm is deterministic: the same bits twice and for 1, 2 and 3 threads", "[kernels]") {
    Generator gen(26);
    const int64_t M = 301, N = 97, K = 450;  // several row panels per thread, edge tiles, two K blocks
    const std::vector<float> A = random_values(M * K, gen), B = random_values(K * N, gen);
    const std::vector<float> C0 = random_values(M * N, gen);
    const int saved = num_threads();
    for (kernels::Isa isa : kernels::available_isas())
        for (int layout = 0; layout < 4; ++layout) {
            const bool trans_a = (layout & 1) != 0, trans_b = (layout & 2) != 0;
            INFO(kernels::isa_name(isa) << " trans_a " << trans_a << " trans_b " << trans_b);
            std::vector<float> first;
            for (int threads : {1, 1, 2, 3}) {
                set_num_threads(threads);
                std::vector<float> C = C0;
                kernels::gemm_with(isa, trans_a, trans_b, M, N, K, A.data(), B.data(), C.data(), true);
                if (first.empty()) first = C;
                INFO("threads " << threads);
                REQUIRE(C == first);  // bit-identical, not just close
            }
        }
    set_num_threads(saved);
}

TEST_CASE("gemm lists its implementations and uses the best", "[kernels]") {
    const std::vector<kernels::Isa> isas = kernels::available_isas();
    REQUIRE(!isas.empty());
    REQUIRE(isas.front() == kernels::Isa::portable);
    REQUIRE(kernels::gemm_isa() == isas.back());
    REQUIRE(kernels::isa_name(kernels::Isa::avx512) == "avx512");
}
