// The fast gemm against the naive reference, the matmul op against a plain triple loop, the choice of
// instruction set, and every instruction set's vector loops (softmax rows, gelu, layer_norm rows, AdamW)
// against a double reference and the portable loops' bits. The tests tagged [isa] also run on emulated
// CPUs without AVX-512 and without AVX (tests/CMakeLists.txt, qemu_*).
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <autograd/kernels.h>
#include <autograd/threads.h>

#include "../autograd/src/vector_loops.h"  // internal header, tested directly
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
    kernels::gemm_naive(true, false, 2, 2, 2, A.data(), B.data(), C.data(), false);  // A^T B
    REQUIRE(C == std::vector<float>{26, 30, 38, 44});
    kernels::gemm_naive(false, true, 2, 2, 2, A.data(), B.data(), C.data(), false);  // A B^T
    REQUIRE(C == std::vector<float>{17, 23, 39, 53});
    kernels::gemm_naive(true, true, 2, 2, 2, A.data(), B.data(), C.data(), false);  // A^T B^T
    REQUIRE(C == std::vector<float>{23, 31, 34, 46});
    kernels::gemm_naive(true, true, 2, 2, 2, A.data(), B.data(), C.data(), true);  // accumulate
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
    const Size sizes[] = {{1, 1, 1},    {3, 5, 7},     {17, 33, 65}, {64, 64, 64}, {1, 1, 100},
                          {1, 37, 1},   {37, 1, 1},    {1, 50, 19},  {50, 1, 19},  {2, 3, 1},
                          {65, 17, 33}, {128, 96, 80}, {31, 129, 7}, {8, 8, 257}};
    Generator gen(21);
    for (const Size& s : sizes) {
        const std::vector<float> A = random_values(s.M * s.K, gen);
        const std::vector<float> B = random_values(s.K * s.N, gen);
        const std::vector<float> C0 = random_values(s.M * s.N, gen);
        for (bool trans_a : {false, true})
            for (bool trans_b : {false, true})
                for (bool accumulate : {false, true}) {
                    INFO("M " << s.M << " N " << s.N << " K " << s.K << " trans_a " << trans_a << " trans_b " << trans_b
                              << " accumulate " << accumulate);
                    std::vector<float> fast = C0, ref = C0;
                    kernels::gemm(trans_a, trans_b, s.M, s.N, s.K, A.data(), B.data(), fast.data(), accumulate);
                    kernels::gemm_naive(trans_a, trans_b, s.M, s.N, s.K, A.data(), B.data(), ref.data(), accumulate);
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
                        INFO(kernels::isa_name(isa) << " M " << M << " N " << N << " K " << K << " trans_a " << trans_a
                                                    << " trans_b " << trans_b << " accumulate " << accumulate);
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
    // Larger than one K block and one N block of every kernel, not multiples of any tile; a transposed A
    // read in place (130 x 70) and one packed for its row stride (530 x 70); B exactly one AVX-512 or AVX2
    // panel wide, read in place (N 32, 16).
    struct Size {
        int64_t M, N, K;
    };
    const Size sizes[] = {{37, 1030, 400}, {130, 70, 800}, {530, 70, 500}, {200, 32, 300},
                          {200, 16, 300},  {1, 600, 9},    {200, 1, 513}};
    Generator gen(25);
    for (kernels::Isa isa : kernels::available_isas())
        for (const Size& s : sizes) {
            const std::vector<float> A = random_values(s.M * s.K, gen), B = random_values(s.K * s.N, gen);
            const std::vector<float> C0 = random_values(s.M * s.N, gen);
            for (bool trans_a : {false, true})
                for (bool trans_b : {false, true})
                    for (bool accumulate : {false, true}) {
                        INFO(kernels::isa_name(isa)
                             << " M " << s.M << " N " << s.N << " K " << s.K << " trans_a " << trans_a << " trans_b "
                             << trans_b << " accumulate " << accumulate);
                        std::vector<float> fast = C0, ref = C0;
                        kernels::gemm_with(isa, trans_a, trans_b, s.M, s.N, s.K, A.data(), B.data(), fast.data(),
                                           accumulate);
                        kernels::gemm_naive(trans_a, trans_b, s.M, s.N, s.K, A.data(), B.data(), ref.data(),
                                            accumulate);
                        REQUIRE(max_abs(fast, ref) <= 1e-6 * double(s.K) + 1e-6);
                    }
        }
}

TEST_CASE("gemm is deterministic: the same bits twice and for 1, 2 and 3 threads", "[kernels]") {
    struct Size {
        int64_t M, N, K;
    };
    // Threads split the rows when M >= N, else the columns; both with several panels per thread, edge
    // tiles and two K blocks, and the last two with more columns than one N block (1028: 4 columns past
    // two blocks, which a transposed A computes as a strip).
    const Size sizes[] = {{301, 97, 450}, {97, 301, 450}, {40, 1100, 450}, {40, 1028, 300}};
    Generator gen(26);
    const int saved = num_threads();
    for (const Size& s : sizes) {
        const std::vector<float> A = random_values(s.M * s.K, gen), B = random_values(s.K * s.N, gen);
        const std::vector<float> C0 = random_values(s.M * s.N, gen);
        for (kernels::Isa isa : kernels::available_isas())
            for (int layout = 0; layout < 4; ++layout) {
                const bool trans_a = (layout & 1) != 0, trans_b = (layout & 2) != 0;
                INFO(kernels::isa_name(isa)
                     << " M " << s.M << " N " << s.N << " trans_a " << trans_a << " trans_b " << trans_b);
                std::vector<float> first;
                for (int threads : {1, 1, 2, 3}) {
                    set_num_threads(threads);
                    std::vector<float> C = C0;
                    kernels::gemm_with(isa, trans_a, trans_b, s.M, s.N, s.K, A.data(), B.data(), C.data(), true);
                    if (first.empty()) {
                        std::vector<float> ref = C0;
                        kernels::gemm_naive(trans_a, trans_b, s.M, s.N, s.K, A.data(), B.data(), ref.data(), true);
                        REQUIRE(max_abs(C, ref) <= 1e-6 * double(s.K) + 1e-6);
                        first = C;
                    }
                    INFO("threads " << threads);
                    REQUIRE(C == first);  // bit-identical, not just close
                }
            }
    }
    set_num_threads(saved);
}

TEST_CASE("the kernels use the best instruction set, or the one TINYGPT_ISA names", "[kernels][isa]") {
    const std::vector<kernels::Isa> isas = kernels::available_isas();
    REQUIRE(!isas.empty());
    REQUIRE(isas.front() == kernels::Isa::portable);
    REQUIRE(kernels::isa_name(kernels::Isa::avx512) == "avx512");
    const char* forced = std::getenv("TINYGPT_ISA");
    if (forced != nullptr && *forced != '\0') REQUIRE(kernels::isa_name(kernels::active_isa()) == forced);
    else REQUIRE(kernels::active_isa() == isas.back());
}

// Hidden: the ctest parallel_for_bad_isa runs it alone with TINYGPT_ISA=avx3 (the choice is made once a
// process). A body that asks for the set inside the threads would end the process (an exception may not
// leave an OpenMP region); parallel_for asks first, so the error reaches the caller.
TEST_CASE("parallel_for chooses the instruction set before its threads start: a bad TINYGPT_ISA reaches the caller",
          "[.][bad_isa]") {
    const int saved = num_threads();
    set_num_threads(2);
    CHECK_THROWS_WITH(parallel_for(1 << 16, 1024, [](int64_t, int64_t) { (void)kernels::active_isa(); }),
                      Catch::Contains("TINYGPT_ISA=avx3: not an instruction set"));
    CHECK_THROWS_WITH(parallel_for_segments(std::vector<int64_t>{1 << 15, 1 << 15}, 1024,
                                            [](size_t, int64_t, int64_t) { (void)kernels::active_isa(); }),
                      Catch::Contains("TINYGPT_ISA=avx3"));
    set_num_threads(saved);
}

TEST_CASE("set_isa switches every kernel and refuses what the CPU cannot run", "[kernels][isa]") {
    const kernels::Isa saved = kernels::active_isa();
    for (const kernels::Isa isa : kernels::available_isas()) {
        kernels::set_isa(isa);
        REQUIRE(kernels::active_isa() == isa);
        REQUIRE(&detail::vector_loops() == &detail::vector_loops(isa));
    }
    for (const kernels::Isa isa : {kernels::Isa::avx2, kernels::Isa::avx512}) {
        const std::vector<kernels::Isa> isas = kernels::available_isas();
        if (std::find(isas.begin(), isas.end(), isa) != isas.end()) continue;
        REQUIRE_THROWS_WITH(kernels::set_isa(isa),
                            Catch::Contains("cannot run") && Catch::Contains(std::string(kernels::isa_name(isa))));
        REQUIRE_THROWS_WITH(detail::vector_loops(isa), Catch::Contains("cannot run"));
    }
    kernels::set_isa(saved);
}

// --- the small-product path (gemm_small.h) and gemm_batched ---------------------------------------------

TEST_CASE("every ISA's small path matches gemm_naive, and the blocked path bit for bit", "[kernels][isa]") {
    // Rows around each ISA's row tiles (up to 8 rows), columns around the vector widths (4, 8, 16) and
    // column blocks (8, 24, 64), K short and past one K block (256 / 384): masked edges everywhere.
    const int64_t Ns[] = {1, 7, 8, 9, 15, 16, 17, 31, 33, 65};
    const int64_t Ks[] = {1, 2, 5, 8, 16, 31, 40};
    Generator gen(27);
    int64_t checked = 0;
    auto check_shape = [&](kernels::Isa isa, int64_t M, int64_t N, int64_t K) {
        const std::vector<float> A = random_values(M * K, gen), B = random_values(K * N, gen);
        const std::vector<float> C0 = random_values(M * N, gen);
        for (int layout = 0; layout < 4; ++layout)
            for (bool accumulate : {false, true}) {
                const bool trans_a = (layout & 1) != 0, trans_b = (layout & 2) != 0;
                INFO(kernels::isa_name(isa) << " M " << M << " N " << N << " K " << K << " trans_a " << trans_a
                                            << " trans_b " << trans_b << " accumulate " << accumulate);
                std::vector<float> small = C0, blocked = C0, ref = C0;
                kernels::gemm_with(isa, trans_a, trans_b, M, N, K, A.data(), B.data(), small.data(), accumulate,
                                   kernels::GemmPath::small);
                kernels::gemm_with(isa, trans_a, trans_b, M, N, K, A.data(), B.data(), blocked.data(), accumulate,
                                   kernels::GemmPath::blocked);
                kernels::gemm_naive(trans_a, trans_b, M, N, K, A.data(), B.data(), ref.data(), accumulate);
                const double diff = max_abs(small, ref), tol = 1e-6 * double(K) + 1e-6;
                INFO("max abs diff " << diff << " tolerance " << tol);
                REQUIRE(diff <= tol);
                REQUIRE(small == blocked);  // the same operations in the same order: the size threshold is invisible
                ++checked;
            }
    };
    for (kernels::Isa isa : kernels::available_isas()) {
        for (int64_t M = 1; M <= 13; ++M)
            for (int64_t N : Ns)
                for (int64_t K : Ks) check_shape(isa, M, N, K);
        for (int64_t K : {255, 257, 383, 385, 800}) check_shape(isa, 9, 33, K);  // several K blocks
        // one row (a sampled token's product, read row after row): several K blocks, past a chunk of columns
        for (int64_t K : {3, 257, 800}) check_shape(isa, 1, 1100, K);
        check_shape(isa, 70, 130, 24);   // several column blocks
        check_shape(isa, 150, 66, 400);  // last columns computed as a strip when A is transposed: rows past 64
    }
    REQUIRE(checked > 0);
}

// A sampled token's products (nn's decoders ask for the small path by name): a few rows against a B of a
// quarter million floats or more are split by columns across the threads. Each thread's range starts at
// a whole column block (8, 24 or 64 columns), so every N below leaves a ragged last block somewhere.
TEST_CASE("the small path's few-row products give the same bits on 1, 2 and 3 threads", "[kernels][isa][threads]") {
    const int saved = num_threads();
    Generator gen(31);
    int64_t checked = 0;
    for (kernels::Isa isa : kernels::available_isas())
        for (const auto& [M, N, K] :
             {std::array<int64_t, 3>{1, 2304, 768}, {1, 1069, 300}, {1, 1000, 3000}, {3, 1000, 263}, {8, 2051, 129}})
            for (bool accumulate : {false, true}) {
                const std::vector<float> A = random_values(M * K, gen), B = random_values(K * N, gen);
                const std::vector<float> C0 = random_values(M * N, gen);
                INFO(kernels::isa_name(isa) << " M " << M << " N " << N << " K " << K << " accumulate " << accumulate);
                REQUIRE(N * K >= (int64_t(1) << 18));  // past the split's threshold
                std::vector<float> one = C0, ref = C0;
                set_num_threads(1);
                kernels::gemm_with(isa, false, false, M, N, K, A.data(), B.data(), one.data(), accumulate,
                                   kernels::GemmPath::small);
                kernels::gemm_naive(false, false, M, N, K, A.data(), B.data(), ref.data(), accumulate);
                REQUIRE(max_abs(one, ref) <= 1e-6 * double(K) + 1e-6);
                for (int threads : {2, 3}) {
                    set_num_threads(threads);
                    std::vector<float> split = C0;
                    kernels::gemm_with(isa, false, false, M, N, K, A.data(), B.data(), split.data(), accumulate,
                                       kernels::GemmPath::small);
                    INFO(threads << " threads");
                    REQUIRE(split == one);
                    ++checked;
                }
            }
    set_num_threads(saved);
    REQUIRE(checked > 0);
}

// A sampled token's products with B transposed (its tied logits, its scores against cached keys) are dot
// products of rows, B read in place, eight rows at a time: every N below leaves a ragged group and every
// K a masked last vector; each sum is its own on any thread and in any group.
TEST_CASE(
    "every ISA's dot products of rows (a few rows times B transposed) match gemm_naive, the same bits on 1, 2, 3 "
    "threads",
    "[kernels][isa][threads]") {
    const int saved = num_threads();
    Generator gen(32);
    int64_t checked = 0;
    for (kernels::Isa isa : kernels::available_isas())
        for (const auto& [M, N, K] :
             {std::array<int64_t, 3>{1, 50, 768}, {1, 5003, 77}, {3, 17, 5}, {8, 1031, 300}, {1, 9, 1}})
            for (bool accumulate : {false, true}) {
                const std::vector<float> A = random_values(M * K, gen), B = random_values(N * K, gen);
                const std::vector<float> C0 = random_values(M * N, gen);
                INFO(kernels::isa_name(isa) << " M " << M << " N " << N << " K " << K << " accumulate " << accumulate);
                std::vector<float> one = C0, ref = C0;
                set_num_threads(1);
                kernels::gemm_with(isa, false, true, M, N, K, A.data(), B.data(), one.data(), accumulate);
                kernels::gemm_naive(false, true, M, N, K, A.data(), B.data(), ref.data(), accumulate);
                REQUIRE(max_abs(one, ref) <= 1e-6 * double(K) + 1e-6);
                for (int threads : {2, 3}) {
                    set_num_threads(threads);
                    std::vector<float> split = C0;
                    kernels::gemm_with(isa, false, true, M, N, K, A.data(), B.data(), split.data(), accumulate);
                    INFO(threads << " threads");
                    REQUIRE(split == one);
                    ++checked;
                }
                // B's last row alone (a group of one) gives the bits it gave in its group
                set_num_threads(1);
                float alone = C0[N - 1];
                kernels::gemm_with(isa, false, true, 1, 1, K, A.data(), B.data() + (N - 1) * K, &alone, accumulate);
                CHECK(alone == one[N - 1]);
            }
    set_num_threads(saved);
    REQUIRE(checked > 0);
}

namespace {
// gemm_batched's operands: `batches` matrices of A, B and C, with index lists (empty = batch i).
struct Batched {
    int64_t M, N, K, batches;
    std::vector<int64_t> a_index, b_index, c_index;
};
int64_t matrices(const std::vector<int64_t>& index, int64_t batches) {
    return index.empty() ? batches : *std::max_element(index.begin(), index.end()) + 1;
}
}  // namespace

TEST_CASE("gemm_batched matches a loop of gemm, bit for bit, for 1, 2 and 3 threads", "[kernels][isa]") {
    std::vector<int64_t> repeat3, every;  // 80 batches onto 3 matrices; and 80 onto themselves, reversed
    for (int64_t i = 0; i < 80; ++i) repeat3.push_back(i % 3), every.push_back(79 - i);
    const Batched cases[] = {
        {8, 8, 32, 32, {}, {}, {}},         // attention per batch: too little work to split
        {32, 32, 32, 80, {}, {}, every},    // enough to split (2^21 multiply-adds), every output its own
        {32, 33, 31, 80, repeat3, {}, {}},  // a broadcast A
        {32, 32, 32, 80, {}, {}, repeat3},  // gradients of a broadcast operand: outputs shared
        {9, 65, 47, 80, {}, repeat3, repeat3},
        {160, 140, 120, 3, {}, {}, {}},  // few large products: each split by rows instead
    };
    Generator gen(28);
    const int saved = num_threads();
    for (const Batched& c : cases) {
        const std::vector<float> A = random_values(matrices(c.a_index, c.batches) * c.M * c.K, gen);
        const std::vector<float> B = random_values(matrices(c.b_index, c.batches) * c.K * c.N, gen);
        const std::vector<float> C0 = random_values(matrices(c.c_index, c.batches) * c.M * c.N, gen);
        auto at = [](const std::vector<int64_t>& index, int64_t i) { return index.empty() ? i : index[i]; };
        for (int layout = 0; layout < 4; ++layout)
            for (bool accumulate : {false, true}) {
                const bool trans_a = (layout & 1) != 0, trans_b = (layout & 2) != 0;
                std::vector<float> loop = C0;
                set_num_threads(1);
                for (int64_t i = 0; i < c.batches; ++i)
                    kernels::gemm(trans_a, trans_b, c.M, c.N, c.K, A.data() + at(c.a_index, i) * c.M * c.K,
                                  B.data() + at(c.b_index, i) * c.K * c.N, loop.data() + at(c.c_index, i) * c.M * c.N,
                                  accumulate);
                for (int threads : {1, 2, 3}) {
                    INFO("M " << c.M << " N " << c.N << " K " << c.K << " batches " << c.batches << " trans_a "
                              << trans_a << " trans_b " << trans_b << " accumulate " << accumulate << " threads "
                              << threads);
                    set_num_threads(threads);
                    std::vector<float> batched = C0;
                    kernels::gemm_batched(trans_a, trans_b, c.M, c.N, c.K, c.batches, A.data(), c.a_index, B.data(),
                                          c.b_index, batched.data(), c.c_index, accumulate);
                    REQUIRE(batched == loop);
                }
            }
    }
    set_num_threads(saved);
    std::vector<float> C(4);
    REQUIRE_THROWS(kernels::gemm_batched(false, false, 1, 1, 1, 2, C.data(), std::vector<int64_t>{0}, C.data(), {},
                                         C.data(), {}, false));
}

TEST_CASE("gemm at the model's small shapes gives the same bits for 1, 2 and 3 threads", "[kernels][isa]") {
    // Shapes on both sides of the small-path thresholds, some of which switch path with the thread count.
    struct Size {
        int64_t M, N, K;
    };
    const Size sizes[] = {{8, 8, 32}, {32, 65, 256}, {256, 32, 32}, {64, 16, 512}, {64, 128, 300}, {65, 16, 512}};
    Generator gen(29);
    const int saved = num_threads();
    for (const Size& s : sizes) {
        const std::vector<float> A = random_values(s.M * s.K, gen), B = random_values(s.K * s.N, gen);
        const std::vector<float> C0 = random_values(s.M * s.N, gen);
        for (int layout = 0; layout < 4; ++layout) {
            const bool trans_a = (layout & 1) != 0, trans_b = (layout & 2) != 0;
            std::vector<float> first;
            for (int threads : {1, 2, 3}) {
                INFO("M " << s.M << " N " << s.N << " K " << s.K << " trans_a " << trans_a << " trans_b " << trans_b
                          << " threads " << threads);
                set_num_threads(threads);
                std::vector<float> C = C0;
                kernels::gemm(trans_a, trans_b, s.M, s.N, s.K, A.data(), B.data(), C.data(), true);
                if (first.empty()) first = C;
                REQUIRE(C == first);
            }
        }
    }
    set_num_threads(saved);
}

// --- threads -----------------------------------------------------------------------------------------------

TEST_CASE("parallel_for_segments visits every element of every array once, for 1, 2 and 3 threads", "[threads]") {
    // empty arrays among them, arrays smaller and larger than the grain, pieces crossing array ends
    const std::vector<int64_t> sizes = {0, 5, 70000, 0, 1, 33000, 16384, 3};
    const int saved = num_threads();
    for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        std::vector<std::vector<int>> visits;
        for (int64_t n : sizes) visits.emplace_back(static_cast<size_t>(n), 0);
        std::atomic<int> bad_pieces = 0;  // (Catch's assertions are for the test's own thread)
        parallel_for_segments(sizes, kMinElementsPerThread, [&](size_t i, int64_t begin, int64_t end) {
            if (i >= sizes.size() || begin < 0 || begin >= end || end > sizes[i]) {
                ++bad_pieces;
                return;
            }
            for (int64_t k = begin; k < end; ++k) ++visits[i][static_cast<size_t>(k)];
        });
        REQUIRE(bad_pieces == 0);
        for (size_t i = 0; i < sizes.size(); ++i) {
            INFO("threads " << threads << " array " << i);
            REQUIRE(std::all_of(visits[i].begin(), visits[i].end(), [](int v) { return v == 1; }));
        }
    }
    set_num_threads(saved);
    int calls = 0;
    parallel_for_segments(std::vector<int64_t>{}, kMinElementsPerThread, [&](size_t, int64_t, int64_t) { ++calls; });
    REQUIRE(calls == 0);
}

// --- softmax rows (softmax_rows.h) ------------------------------------------------------------------------

namespace {
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    // (memcmp with no bytes still wants real pointers, and an empty vector's data() is null)
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
}  // namespace

TEST_CASE("every instruction set's softmax rows match a double reference, and their backward the portable bits",
          "[kernels][softmax][isa]") {
    using detail::RowStats;
    const detail::VectorLoops& portable = detail::vector_loops(kernels::Isa::portable);

    constexpr float kInf = std::numeric_limits<float>::infinity();
    Generator gen(41);
    // every length through three vectors (masked last vectors, the sum's whole blocks of 8 and its tail),
    // cross_entropy's 65 and two long rows
    std::vector<int64_t> lengths;
    for (int64_t n = 0; n <= 50; ++n) lengths.push_back(n);
    for (int64_t n : {64, 65, 100, 257}) lengths.push_back(n);
    for (const int64_t n : lengths)
        for (const float factor : {1.0f, 0.17677669f, -0.5f, 3.0f})
            for (int kind = 0; kind < 5; ++kind) {
                // 0: N(0, 1); 1: N(0, 30^2), exps down to subnormals and 0; 2: some masked (factor * x =
                // -inf); 3: all masked; 4: a NaN
                std::vector<float> x(static_cast<size_t>(n));
                for (float& v : x) v = gen.normal(0.0f, kind == 1 ? 30.0f : 1.0f);
                const float masked = factor > 0 ? -kInf : kInf;
                for (size_t k = 0; k < x.size(); ++k) {
                    if (kind == 2 && (k % 3 == 1 || k + 1 == x.size())) x[k] = masked;
                    if (kind == 3) x[k] = masked;
                }
                if (kind == 4 && n > 0) x[static_cast<size_t>(n / 2)] = std::numeric_limits<float>::quiet_NaN();

                // the reference: the same shifted inputs (factor * x - max, rounded to float as the rows
                // compute them), exp and the sum in double
                float max = -kInf;
                for (float v : x) max = std::max(max, factor * v);
                std::vector<double> ref(x.size());
                double total = 0.0;
                for (size_t k = 0; k < x.size(); ++k) total += ref[k] = std::exp(double(factor * x[k] - max));

                for (const kernels::Isa isa : kernels::available_isas()) {
                    const auto row = detail::vector_loops(isa).softmax_row;
                    INFO(kernels::isa_name(isa) << ": n " << n << " factor " << factor << " kind " << kind);
                    std::vector<float> y(x.size(), -1.0f), in_place = x;
                    const RowStats stats = row(x.data(), factor, n, y.data());
                    row(in_place.data(), factor, n, in_place.data());
                    REQUIRE(same_bits(in_place, y));
                    if (kind == 4) {
                        for (float v : y) REQUIRE(std::isnan(v));
                        continue;
                    }
                    REQUIRE(stats.max == max);
                    if (max == -kInf) {  // every entry masked (or none)
                        REQUIRE(stats.sum_exp == 0.0);
                        for (float v : y) REQUIRE(v == 0.0f);
                        continue;
                    }
                    REQUIRE(std::abs(stats.sum_exp - total) <= 2e-7 * total);
                    // exp within about 1 ulp, then the reciprocal and the product rounded: 3e-7 relative,
                    // and a few subnormal steps for values below 2^-126
                    for (size_t k = 0; k < x.size(); ++k)
                        REQUIRE(std::abs(y[k] - ref[k] / total) <= 3e-7 * ref[k] / total + 1e-44);
                }

                // backward, the same arithmetic in all: with the row's weights and a random upstream
                // gradient, written fresh and added
                std::vector<float> y(x.size()), dy(x.size());
                portable.softmax_row(x.data(), factor, n, y.data());
                for (float& v : dy) v = gen.normal();
                for (const bool overwrite : {true, false}) {
                    std::vector<float> dx_portable(x.size());
                    for (float& v : dx_portable) v = gen.normal();
                    const std::vector<float> dx_start = dx_portable;
                    portable.softmax_backward_row(y.data(), dy.data(), factor, n, dx_portable.data(), overwrite);
                    for (const kernels::Isa isa : kernels::available_isas()) {
                        INFO(kernels::isa_name(isa) << " backward: n " << n << " factor " << factor << " kind " << kind
                                                    << " overwrite " << overwrite);
                        std::vector<float> dx = dx_start;
                        detail::vector_loops(isa).softmax_backward_row(y.data(), dy.data(), factor, n, dx.data(),
                                                                       overwrite);
                        REQUIRE(same_bits(dx, dx_portable));
                    }
                }
            }
}

TEST_CASE("every instruction set's exp_shifted_row (causal_attention's weights) matches exp in double",
          "[kernels][softmax][isa]") {
    // exp(factor * s - shift), the argument rounded to float as the rows compute it: fast_exp within about
    // 1 ulp (the AVX-512 row's fused multiply-adds too), 0 far below, and only the first n written
    Generator gen(42);
    for (const int64_t n : {1, 7, 15, 16, 17, 33, 64, 65}) {
        std::vector<float> s(static_cast<size_t>(n));
        for (float& v : s) v = gen.normal(0.0f, 20.0f);
        const float factor = 0.125f, shift = 1.5f;
        for (const kernels::Isa isa : kernels::available_isas()) {
            INFO(kernels::isa_name(isa) << ", n " << n);
            std::vector<float> p(static_cast<size_t>(n) + 3, -1.0f);
            detail::vector_loops(isa).exp_shifted_row(s.data(), factor, shift, n, p.data());
            for (int64_t k = 0; k < n; ++k) {
                const double expected = std::exp(double(factor * s[k] - shift));
                REQUIRE(std::abs(p[k] - expected) <= 2e-7 * expected + 1e-44);
            }
            for (size_t k = static_cast<size_t>(n); k < p.size(); ++k) REQUIRE(p[k] == -1.0f);
        }
    }
}

TEST_CASE(
    "every instruction set's gelu, silu, layer_norm, attention gradient, AdamW and sum-of-squares loops give the "
    "portable bits",
    "[kernels][isa]") {
    // The loops are one source compiled per instruction set, without fused multiply-adds and with fixed
    // reduction lanes: vectorized, they must still compute exactly what the baseline build computes.
    // Lengths around every vector width and the reductions' blocks of 8 and 16, from an offset (unaligned).
    const detail::VectorLoops& portable = detail::vector_loops(kernels::Isa::portable);
    Generator gen(53);
    int64_t compared = 0;
    for (const int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 100, 257}) {
        const int64_t begin = n % 3;  // loops over [begin, n)
        std::vector<float> x(n), dy(n), gain(n), bias(n), seed(n);
        for (float& v : x) v = gen.normal(0.0f, 3.0f);
        for (float& v : dy) v = gen.normal();
        for (float& v : gain) v = gen.normal(1.0f, 0.3f);
        for (float& v : bias) v = gen.normal();
        for (float& v : seed) v = gen.normal();
        x[static_cast<size_t>(n / 2)] = 40.0f;  // gelu's saturated tail
        for (const kernels::Isa isa : kernels::available_isas()) {
            if (isa == kernels::Isa::portable) continue;
            const detail::VectorLoops& loops = detail::vector_loops(isa);
            INFO(kernels::isa_name(isa) << ", n " << n);
            // run(f) calls f on the portable loops, then on isa's, each on a fresh copy of out, and
            // compares what they wrote
            auto compare = [&](const char* what, std::vector<float> start, auto&& run) {
                INFO(what);
                std::vector<float> expected = start, got = std::move(start);
                run(portable, expected);
                run(loops, got);
                REQUIRE(same_bits(got, expected));
                ++compared;
            };
            compare("gelu_forward", seed,
                    [&](const auto& L, auto& out) { L.gelu_forward(x.data(), out.data(), begin, n); });
            for (const bool overwrite : {true, false})
                compare("gelu_backward", seed, [&](const auto& L, auto& out) {
                    L.gelu_backward(x.data(), dy.data(), out.data(), begin, n, overwrite);
                });
            compare("gelu_in_place", x,
                    [&](const auto& L, auto& out) { L.gelu_in_place(out.data(), nullptr, begin, n); });
            compare("gelu_in_place's slope", seed, [&](const auto& L, auto& out) {
                std::vector<float> y = x;
                L.gelu_in_place(y.data(), out.data(), begin, n);
                out.insert(out.end(), y.begin(), y.end());
            });
            compare("gelu_tanh_forward", seed,
                    [&](const auto& L, auto& out) { L.gelu_tanh_forward(x.data(), out.data(), begin, n); });
            for (const bool overwrite : {true, false})
                compare("gelu_tanh_backward", seed, [&](const auto& L, auto& out) {
                    L.gelu_tanh_backward(x.data(), dy.data(), out.data(), begin, n, overwrite);
                });
            compare("gelu_tanh_in_place's slope", seed, [&](const auto& L, auto& out) {
                std::vector<float> y = x;
                L.gelu_tanh_in_place(y.data(), out.data(), begin, n);
                out.insert(out.end(), y.begin(), y.end());
            });
            compare("silu_forward", seed,
                    [&](const auto& L, auto& out) { L.silu_forward(x.data(), out.data(), begin, n); });
            for (const bool overwrite : {true, false})
                compare("silu_backward", seed, [&](const auto& L, auto& out) {
                    L.silu_backward(x.data(), dy.data(), out.data(), begin, n, overwrite);
                });
            compare("times_slope", seed,
                    [&](const auto& L, auto& out) { L.times_slope(dy.data(), x.data(), out.data(), begin, n); });
            // layer_norm: one row of n channels (with the mean and rstd it keeps), then its input gradient
            compare("normalize_rows", seed, [&](const auto& L, auto& out) {
                float mean = 0.0f, rstd = 0.0f;
                L.normalize_rows(x.data(), gain.data(), bias.data(), n, 1e-5f, 0, 1, out.data(), &mean, &rstd);
                out.push_back(mean);
                out.push_back(rstd);
            });
            for (const bool overwrite : {true, false})
                compare("input_gradient_rows", seed, [&](const auto& L, auto& out) {
                    const float mean = 0.3f, rstd = 1.7f;
                    L.input_gradient_rows(x.data(), dy.data(), gain.data(), &mean, &rstd, n, 0, 1, out.data(),
                                          overwrite);
                });
            compare("scores_gradient_row", dy, [&](const auto& L, auto& out) {
                L.scores_gradient_row(seed.data() + begin, 0.4f, 0.125f, n - begin, out.data());
            });
            compare("adamw_update", x, [&](const auto& L, auto& out) {
                std::vector<float> m = seed, v(n);
                for (size_t k = 0; k < v.size(); ++k) v[k] = seed[k] * seed[k];
                const kernels::AdamWStep step{0.999f, 0.9f, 0.95f, 0.1f, 0.05f, 3e-3f, 0.7f, 1e-8f};
                L.adamw_update(out.data(), dy.data(), m.data(), v.data(), begin, n, step);
                out.insert(out.end(), m.begin(), m.end());
                out.insert(out.end(), v.begin(), v.end());
            });
            compare("sum_of_squares", {}, [&](const auto& L, auto& out) {
                const double total = L.sum_of_squares(x.data(), begin, n);
                out.push_back(static_cast<float>(total));
                out.push_back(static_cast<float>(total - static_cast<double>(out.back())));  // the double's low bits
            });
        }
    }
    if (kernels::available_isas().size() == 1) WARN("this CPU runs the portable loops only: nothing to compare");
    else REQUIRE(compared > 0);
}
