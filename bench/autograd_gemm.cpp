// bench_autograd's gemm: the kernels of every instruction set this CPU runs, and the other libraries' sgemm
// built in, each first checked against kernels::gemm_naive, then timed at a few shapes and at every shape of
// a training step (gemm/<kernel>/<layout>/<M>x<N>x<K>; bench_autograd.cpp's header says how to read them).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include <autograd/autograd.h>
#include <autograd/kernels.h>

#if defined(TINYGPT_BENCH_OPENBLAS)
#include <cblas.h>
#include <dlfcn.h>
#endif
#if defined(TINYGPT_BENCH_BLIS)
#include <blis.h>
#endif
#if defined(TINYGPT_BENCH_LIBXSMM)
#include <libxsmm.h>
#endif
#if defined(TINYGPT_BENCH_ONEDNN)
#include <oneapi/dnnl/dnnl.h>
#endif
#if defined(TINYGPT_BENCH_OPENBLAS) || defined(TINYGPT_BENCH_BLIS) || defined(TINYGPT_BENCH_ONEDNN)
#include <omp.h>
#endif

#include "autograd_parts.h"

namespace bench_autograd {

using namespace autograd;

// --- the kernel check, run before any timing -------------------------------------------------------

struct GemmCase {
    int64_t M, N, K;
};

// How far fast is from gemm_naive's C = op(A) @ op(B) (+ C0), as the worst ratio of difference to tolerance
// (infinity for a NaN), and where. The tolerance per element is 4 * K * FLT_EPSILON * sum_k |a_ik * b_kj|
// (plus |C0| when accumulating): a float dot product of length K is within about K * eps/2 of that
// magnitude, so this is loose for rounding and tight for a bug.
struct Mismatch {
    double ratio = 0.0;
    int64_t at = 0;
    float fast = 0.0f, naive = 0.0f;
};
Mismatch compare_to_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const std::vector<float>& A,
                          const std::vector<float>& B, const std::vector<float>& C0, const std::vector<float>& fast,
                          bool accumulate) {
    std::vector<float> naive = C0;
    kernels::gemm_naive(trans_a, trans_b, M, N, K, A.data(), B.data(), naive.data(), accumulate);
    // magnitude: sum_k |a| |b| (+ |C0|), from the naive kernel on absolute values
    std::vector<float> absA(A), absB(B), magnitude(static_cast<size_t>(M * N), 0.0f);
    for (float& x : absA) x = std::abs(x);
    for (float& x : absB) x = std::abs(x);
    kernels::gemm_naive(trans_a, trans_b, M, N, K, absA.data(), absB.data(), magnitude.data(), false);
    Mismatch worst;
    for (int64_t i = 0; i < M * N; ++i) {
        const double mag = magnitude[i] + (accumulate ? std::abs(C0[i]) : 0.0f);
        const double tol = 4.0 * static_cast<double>(K) * std::numeric_limits<float>::epsilon() * mag + 1e-30;
        const double ratio = std::abs(double(fast[i]) - double(naive[i])) / tol;
        if (!(ratio <= worst.ratio))  // also catches NaN
            worst = {std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio, i, fast[i], naive[i]};
    }
    return worst;
}

// A C to start from: random when accumulating, else NaN (the old contents must be ignored).
std::vector<float> start_c(int64_t M, int64_t N, bool accumulate, Generator& gen) {
    return accumulate ? uniform_values(M * N, gen)
                      : std::vector<float>(static_cast<size_t>(M * N), std::numeric_limits<float>::quiet_NaN());
}

// Compares gemm with gemm_naive on every case, layout and accumulate mode (tolerance: compare_to_naive).
// Returns the number of mismatching cases (0 when all agree); prints each failure to stderr.
int check_gemm(kernels::Isa isa, double& worst_ratio) {
    const GemmCase cases[] = {{1, 1, 1}, {3, 5, 7}, {17, 13, 9}, {5, 1, 300}, {64, 65, 32}, {256, 32, 65}};
    Generator gen(1234);
    int failures = 0;
    worst_ratio = 0.0;
    for (const auto& [M, N, K] : cases)
        for (int layout = 0; layout < 4; ++layout)
            for (bool accumulate : {false, true}) {
                const bool trans_a = (layout & 1) != 0, trans_b = (layout & 2) != 0;
                const std::vector<float> A = uniform_values(M * K, gen), B = uniform_values(K * N, gen);
                const std::vector<float> C0 = start_c(M, N, accumulate, gen);
                std::vector<float> fast = C0;
                kernels::gemm_with(isa, trans_a, trans_b, M, N, K, A.data(), B.data(), fast.data(), accumulate);
                const Mismatch worst = compare_to_naive(trans_a, trans_b, M, N, K, A, B, C0, fast, accumulate);
                worst_ratio = std::max(worst_ratio, worst.ratio);
                if (worst.ratio > 1.0) {
                    ++failures;
                    fmt::print(
                        stderr,
                        "gemm check FAILED ({}): trans_a={} trans_b={} M={} N={} K={} accumulate={}: at C({}, {}) "
                        "fast {} vs naive {} (difference is {:.3g}x the tolerance)\n",
                        kernels::isa_name(isa), trans_a, trans_b, M, N, K, accumulate, worst.at / N, worst.at % N,
                        worst.fast, worst.naive, worst.ratio);
                }
            }
    return failures;
}

// --- 1. the raw kernels --------------------------------------------------------------------------------

enum class Layout { NN, NT, TN };

const char* layout_name(Layout l) { return l == Layout::NN ? "NN" : l == Layout::NT ? "NT" : "TN"; }

// C (M, N) = op(A) @ op(B) with the layout's transposes. accumulate as the matmul op uses it: the
// forward overwrites, the backward products add into the gradient.
using GemmFn = std::function<void(bool, bool, int64_t, int64_t, int64_t, const float*, const float*, float*, bool)>;

// --- the other libraries' sgemm, each on one thread (set in main) and in our row-major convention -------

// A library's gemm for one layout and shape, prepared once as the library is meant to be used (libxsmm
// generates its kernel here); empty when the library has none for it. The layout fixes accumulate: NN
// overwrites, NT and TN add into C, as in the matmul op.
using GemmMaker = std::function<GemmFn(Layout, int64_t M, int64_t N, int64_t K)>;
struct Peer {
    const char* name;
    GemmMaker make;
};

#if defined(TINYGPT_BENCH_OPENBLAS)
// OpenBLAS's own cblas_sgemm, looked up in its library (setup_peers): BLIS exports a cblas_sgemm too, and
// the dynamic linker bound the plain name to BLIS's even with OpenBLAS first on the link line.
decltype(&cblas_sgemm) openblas_sgemm = nullptr;

void openblas_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
                   float* C, bool accumulate) {
    openblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                   static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), 1.0f, A,
                   static_cast<blasint>(trans_a ? M : K), B, static_cast<blasint>(trans_b ? K : N),
                   accumulate ? 1.0f : 0.0f, C, static_cast<blasint>(N));
}
#endif

#if defined(TINYGPT_BENCH_BLIS)
// BLIS's typed API takes row and column strides: row-major operands as stored, with its transpose flags.
void blis_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
               bool accumulate) {
    float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    bli_sgemm(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, M, N, K,
              &alpha, const_cast<float*>(A), trans_a ? M : K, 1, const_cast<float*>(B), trans_b ? K : N, 1, &beta, C, N,
              1);
}
#endif

#if defined(TINYGPT_BENCH_ONEDNN)
// oneDNN's dnnl_sgemm is row-major, as ours.
void onednn_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
                 bool accumulate) {
    dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, 1.0f, A, trans_a ? M : K, B, trans_b ? K : N,
               accumulate ? 1.0f : 0.0f, C, N);
}
#endif

#if defined(TINYGPT_BENCH_LIBXSMM)
// libxsmm's JIT kernel (1.17: libxsmm_smmdispatch), column-major: our row-major C (M, N) = op(A) @ op(B)
// is its C^T (N, M) = op(B)^T @ op(A)^T, with B as its first operand. A row-major (K, N) B is a
// column-major (N, K) op(B)^T as it is; a transposed A, stored (K, M), is its second operand transposed
// (TRANS_B, which its JIT supports). A transposed B would be its first operand transposed, which 1.17's
// JIT does not generate: NT first copies B (N, K) into (K, N) with libxsmm_otrans, timed with the call.
GemmFn libxsmm_gemm_for(Layout layout, int64_t M, int64_t N, int64_t K) {
    const auto blas = [](int64_t v) { return static_cast<libxsmm_blasint>(v); };
    const libxsmm_blasint m = blas(N), n = blas(M), k = blas(K), lda = m, ldb = blas(layout == Layout::TN ? M : K),
                          ldc = m;
    const float alpha = 1.0f, beta = layout == Layout::NN ? 0.0f : 1.0f;
    const int flags = layout == Layout::TN ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
    const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
    const libxsmm_smmfunction kernel = libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch);
    if (kernel == nullptr) return {};
    auto transposed = std::make_shared<std::vector<float>>(layout == Layout::NT ? size_t(K * N) : 0);
    return [kernel, transposed](bool, bool trans_b, int64_t, int64_t n_cols, int64_t k_depth, const float* A,
                                const float* B, float* C, bool) {
        if (trans_b) {  // B stored (N, K) = column-major (K, N) -> column-major (N, K) = row-major (K, N)
            const auto k_blas = static_cast<libxsmm_blasint>(k_depth), n_blas = static_cast<libxsmm_blasint>(n_cols);
            libxsmm_otrans(transposed->data(), B, sizeof(float), k_blas, n_blas, k_blas, n_blas);
            B = transposed->data();
        }
        kernel(B, A, C);
    };
}
#endif

const std::vector<Peer>& peers() {
    [[maybe_unused]] auto plain = [](GemmFn fn) { return [fn](Layout, int64_t, int64_t, int64_t) { return fn; }; };
    static const std::vector<Peer> list = {
#if defined(TINYGPT_BENCH_OPENBLAS)
        {"openblas", plain(openblas_gemm)},
#endif
#if defined(TINYGPT_BENCH_BLIS)
        {"blis", plain(blis_gemm)},
#endif
#if defined(TINYGPT_BENCH_LIBXSMM)
        {"libxsmm", libxsmm_gemm_for},
#endif
#if defined(TINYGPT_BENCH_ONEDNN)
        {"onednn", plain(onednn_gemm)},
#endif
    };
    return list;
}

// One thread for every library (ours is on one unless a benchmark sets more), and what each is: OpenBLAS's
// kernel and the library its cblas_sgemm resolved to (BLIS exports one too), BLIS's kernel set, libxsmm's
// JIT target, oneDNN's version. Returns them for the benchmark context.
std::string setup_peers() {
    std::string about;
#if defined(TINYGPT_BENCH_OPENBLAS) || defined(TINYGPT_BENCH_BLIS) || defined(TINYGPT_BENCH_ONEDNN)
    omp_set_num_threads(1);  // oneDNN (and BLIS's OpenMP build) start as many threads as OpenMP allows
#endif
#if defined(TINYGPT_BENCH_OPENBLAS)
    openblas_set_num_threads(1);
    Dl_info info{};  // the library openblas_get_config (OpenBLAS's alone) is in
    if (dladdr(reinterpret_cast<void*>(&openblas_get_config), &info) != 0 && info.dli_fname != nullptr)
        if (void* library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD))
            openblas_sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(library, "cblas_sgemm"));
    if (openblas_sgemm == nullptr) openblas_sgemm = &cblas_sgemm;  // (static OpenBLAS: the name is its)
    Dl_info from{};
    const bool found = dladdr(reinterpret_cast<void*>(openblas_sgemm), &from) != 0 && from.dli_fname != nullptr;
    about += fmt::format("openblas: {} ({}, cblas_sgemm from {}); ", openblas_get_corename(), openblas_get_config(),
                         found ? from.dli_fname : "?");
#endif
#if defined(TINYGPT_BENCH_BLIS)
    bli_thread_set_num_threads(1);
    about += fmt::format("blis {}: {}; ", bli_info_get_version_str(), bli_arch_string(bli_arch_query_id()));
#endif
#if defined(TINYGPT_BENCH_LIBXSMM)
    libxsmm_init();
    about += fmt::format("libxsmm {}: {}; ", LIBXSMM_VERSION, libxsmm_get_target_arch());
#endif
#if defined(TINYGPT_BENCH_ONEDNN)
    const dnnl_version_t* v = dnnl_version();
    about += fmt::format("onednn {}.{}.{}; ", v->major, v->minor, v->patch);
#endif
    return about.empty() ? "none" : about.substr(0, about.size() - 2);
}

// Each library's gemm against gemm_naive in the three layouts (with their accumulate modes), on shapes
// with edges and on the largest step shapes' kinds. Returns the number of mismatching cases.
int check_peers() {
    const GemmCase cases[] = {{1, 1, 1},    {3, 5, 7},     {17, 13, 9},    {5, 1, 300},
                              {64, 65, 32}, {256, 32, 65}, {100, 300, 257}};
    Generator gen(4321);
    int failures = 0;
    for (const Peer& peer : peers()) {
        double worst_ratio = 0.0;
        int missing = 0;
        for (const auto& [M, N, K] : cases)
            for (Layout layout : {Layout::NN, Layout::NT, Layout::TN}) {
                const bool trans_a = layout == Layout::TN, trans_b = layout == Layout::NT,
                           accumulate = layout != Layout::NN;
                const GemmFn fn = peer.make(layout, M, N, K);
                if (!fn) {
                    ++missing;
                    continue;
                }
                const std::vector<float> A = uniform_values(M * K, gen), B = uniform_values(K * N, gen);
                const std::vector<float> C0 = start_c(M, N, accumulate, gen);
                std::vector<float> fast = C0;
                fn(trans_a, trans_b, M, N, K, A.data(), B.data(), fast.data(), accumulate);
                const Mismatch worst = compare_to_naive(trans_a, trans_b, M, N, K, A, B, C0, fast, accumulate);
                worst_ratio = std::max(worst_ratio, worst.ratio);
                if (worst.ratio > 1.0) {
                    ++failures;
                    fmt::print(stderr,
                               "gemm check FAILED ({}): {} M={} N={} K={}: at C({}, {}) {} vs naive {} "
                               "(difference is {:.3g}x the tolerance)\n",
                               peer.name, layout_name(layout), M, N, K, worst.at / N, worst.at % N, worst.fast,
                               worst.naive, worst.ratio);
                }
            }
        fmt::print(stderr, "gemm check ({}): worst difference {:.3f}x the tolerance{}\n", peer.name, worst_ratio,
                   missing ? fmt::format(" ({} shapes without a kernel)", missing) : "");
    }
    return failures;
}

void BM_gemm(benchmark::State& state, const GemmFn& gemm, Layout layout, int64_t M, int64_t N, int64_t K) {
    const bool trans_a = layout == Layout::TN, trans_b = layout == Layout::NT;
    const bool accumulate = layout != Layout::NN;
    Generator gen(7);
    const std::vector<float> A = uniform_values(M * K, gen), B = uniform_values(K * N, gen);
    std::vector<float> C(static_cast<size_t>(M * N), 0.0f);
    for (auto _ : state) {
        gemm(trans_a, trans_b, M, N, K, A.data(), B.data(), C.data(), accumulate);
        benchmark::DoNotOptimize(C.data());
        benchmark::ClobberMemory();
    }
    set_gflops(state, 2.0 * double(M) * double(N) * double(K));
}

// Registers gemm/<kernel>/<layout>/MxNxK with a label saying what it is in the model. <kernel> is each
// implementation this CPU runs (portable, avx2, avx512: gemm uses the last), then openblas when the
// bench was built with it, and with all_peers every other library built in (peers()); with naive, the
// reference alone. A name already registered (a step shape, registered first) is not registered again.
void register_gemm(bool naive, Layout layout, int64_t M, int64_t N, int64_t K, const std::string& label,
                   bool all_peers = false) {
    static std::set<std::string> registered;
    auto add = [&](std::string_view kernel, GemmFn fn) {
        const std::string name = fmt::format("gemm/{}/{}/{}x{}x{}", kernel, layout_name(layout), M, N, K);
        if (!registered.insert(name).second) return;
        auto run = [layout, M, N, K, label, fn](benchmark::State& state) {
            state.SetLabel(label);
            BM_gemm(state, fn, layout, M, N, K);
        };
        benchmark::RegisterBenchmark(name.c_str(), run)->Unit(benchmark::kMicrosecond);
    };
    if (naive) return add("naive", kernels::gemm_naive);
    for (kernels::Isa isa : kernels::available_isas())
        add(kernels::isa_name(isa),
            [isa](bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                  bool acc) { kernels::gemm_with(isa, ta, tb, m, n, k, a, b, c, acc); });
    for (const Peer& peer : peers())
        if (all_peers || std::string_view(peer.name) == "openblas")
            if (GemmFn fn = peer.make(layout, M, N, K)) add(peer.name, std::move(fn));
}

// One linear layer of the model, x (R, C) @ w (C, H), as its three gemms.
struct Linear {
    int64_t R, C, H;
    const char* what;
};

void register_kernel_benchmarks() {
    // Small config: B*T = 8*32 = 256 rows, C = 32, vocab 65. Larger: B*T = 12*64 = 768, C = 128, MLP 4C.
    const Linear model[] = {
        {256, 32, 32, "small: qkv/proj"}, {256, 32, 65, "small: lm head"},    {768, 128, 128, "large: qkv/proj"},
        {768, 128, 512, "large: mlp up"}, {768, 512, 128, "large: mlp down"}, {768, 128, 65, "large: lm head"},
    };
    for (const auto& [R, C, H, what] : model) {
        const bool small = R * C * H <= 256 * 32 * 65;
        for (bool naive : {false, true}) {
            if (naive && !small) continue;  // the reference is slow; time it only where it is cheap
            register_gemm(naive, Layout::NN, R, H, C, fmt::format("{} fwd ({},{})@({},{})", what, R, C, C, H));
            register_gemm(naive, Layout::NT, R, C, H, fmt::format("{} dx=dy@w^T", what));
            register_gemm(naive, Layout::TN, C, H, R, fmt::format("{} dw=x^T@dy", what));
        }
    }
    for (int64_t n : {64, 128, 256, 512, 1024}) {
        register_gemm(false, Layout::NN, n, n, n, "square");
        if (n <= 128) register_gemm(true, Layout::NN, n, n, n, "square");
        if (n == 256 || n == 1024) {
            register_gemm(false, Layout::NT, n, n, n, "square");
            register_gemm(false, Layout::TN, n, n, n, "square");
        }
    }
}

// The gemm calls of one training step of each bench/train_step.h model and of nanoGPT's shakespeare_char
// config ({gpt, vocab 65, n_embd 384, n_head 6, n_layer 6, block 256}, batch 4), as logged from a real
// step (with the fused causal_attention_weights; counted again after it replaced the composed head): mostly
// small products (per attention head, per batch), which the blocked kernel's 12x32 tile and packing fit
// badly. (layout, M, N, K, calls per step); NN overwrites, NT and TN accumulate, as in the matmul op (the
// real step also overwrites in the first of the calls into a fresh gradient, and in the attention's).
struct StepGemm {
    Layout layout;
    int64_t M, N, K, calls;
};
struct StepGemms {
    const char* model;
    std::vector<StepGemm> gemms;
};

const std::vector<StepGemms>& step_gemms() {
    using enum Layout;
    static const std::vector<StepGemms> steps = {
        {"tutorial",  // one head, C 32, T 8, B 32: per batch q @ k^T (NT), weights @ v and their gradients,
                      // then 3 + 1 Linears
         {{NT, 8, 8, 32, 64},
          {NN, 8, 32, 8, 64},
          {TN, 8, 32, 8, 64},
          {NN, 256, 32, 32, 3},
          {NT, 256, 32, 32, 3},
          {TN, 32, 32, 256, 3},
          {NN, 256, 65, 32, 1},
          {NT, 256, 32, 65, 1},
          {TN, 32, 65, 256, 1}}},
        {"small",  // C 64, 4 heads of 16, T 32, B 16, 4 layers
         {{NT, 32, 32, 16, 512},
          {NN, 32, 16, 32, 512},
          {TN, 32, 16, 32, 512},
          {NN, 512, 16, 64, 48},
          {NT, 512, 64, 16, 48},
          {TN, 64, 16, 512, 48},
          {NN, 512, 64, 64, 4},
          {NT, 512, 64, 64, 4},
          {TN, 64, 64, 512, 4},
          {NN, 512, 256, 64, 4},
          {NT, 512, 64, 256, 4},
          {TN, 64, 256, 512, 4},
          {NN, 512, 64, 256, 4},
          {NT, 512, 256, 64, 4},
          {TN, 256, 64, 512, 4},
          {NN, 512, 65, 64, 1},
          {NT, 512, 64, 65, 1},
          {TN, 64, 65, 512, 1}}},
        {"baby",  // C 128, 4 heads of 32, T 64, B 12, 4 layers
         {{NT, 64, 64, 32, 384},
          {NN, 64, 32, 64, 384},
          {TN, 64, 32, 64, 384},
          {NN, 768, 32, 128, 48},
          {NT, 768, 128, 32, 48},
          {TN, 128, 32, 768, 48},
          {NN, 768, 128, 128, 4},
          {NT, 768, 128, 128, 4},
          {TN, 128, 128, 768, 4},
          {NN, 768, 512, 128, 4},
          {NT, 768, 128, 512, 4},
          {TN, 128, 512, 768, 4},
          {NN, 768, 128, 512, 4},
          {NT, 768, 512, 128, 4},
          {TN, 512, 128, 768, 4},
          {NN, 768, 65, 128, 1},
          {NT, 768, 128, 65, 1},
          {TN, 128, 65, 768, 1}}},
        {"shakespeare_char",  // nanoGPT's config: C 384, 6 heads of 64, T 256, B 4, 6 layers
         {{NT, 256, 256, 64, 288},
          {NN, 256, 64, 256, 288},
          {TN, 256, 64, 256, 288},
          {NN, 1024, 64, 384, 108},
          {NT, 1024, 384, 64, 108},
          {TN, 384, 64, 1024, 108},
          {NN, 1024, 384, 384, 6},
          {NT, 1024, 384, 384, 6},
          {TN, 384, 384, 1024, 6},
          {NN, 1024, 1536, 384, 6},
          {NT, 1024, 384, 1536, 6},
          {TN, 384, 1536, 1024, 6},
          {NN, 1024, 384, 1536, 6},
          {NT, 1024, 1536, 384, 6},
          {TN, 1536, 384, 1024, 6},
          {NN, 1024, 65, 384, 1},
          {NT, 1024, 384, 65, 1},
          {TN, 384, 65, 1024, 1}}},
    };
    return steps;
}

// gemm_step/<model>/<kernel>/threads:N: every gemm call of one step of the model, in the counts above (one
// gemm call per batch matrix, as the matmul op made them before kernels::gemm_batched), on N threads.
void BM_gemm_step(benchmark::State& state, kernels::Isa isa, const StepGemms& step) {
    set_num_threads(static_cast<int>(state.range(0)));
    struct Operands {
        StepGemm g;
        std::vector<float> A, B, C;
    };
    Generator gen(8);
    std::vector<Operands> calls;
    double flops = 0;
    for (const StepGemm& g : step.gemms) {
        calls.push_back({g, uniform_values(g.M * g.K, gen), uniform_values(g.K * g.N, gen),
                         std::vector<float>(static_cast<size_t>(g.M * g.N), 0.0f)});
        flops += 2.0 * double(g.M * g.N * g.K * g.calls);
    }
    for (auto _ : state)
        for (Operands& c : calls)
            for (int64_t i = 0; i < c.g.calls; ++i) {
                kernels::gemm_with(isa, c.g.layout == Layout::TN, c.g.layout == Layout::NT, c.g.M, c.g.N, c.g.K,
                                   c.A.data(), c.B.data(), c.C.data(), c.g.layout != Layout::NN);
                benchmark::ClobberMemory();
            }
    set_num_threads(1);
    set_gflops(state, flops);
}

void register_step_benchmarks() {
    for (const StepGemms& step : step_gemms()) {
        for (kernels::Isa isa : kernels::available_isas())
            benchmark::RegisterBenchmark(fmt::format("gemm_step/{}/{}", step.model, kernels::isa_name(isa)).c_str(),
                                         BM_gemm_step, isa, std::cref(step))
                ->ArgName("threads")
                ->Arg(1)
                ->Arg(2)
                ->UseRealTime()
                ->Unit(benchmark::kMicrosecond);
    }
    // every shape of every step, on each of our kernels and each library's, labelled with its calls per step
    // ("step: small 512 calls, baby 4 calls": bench/gemm_peers.sh reads it)
    std::vector<std::pair<StepGemm, std::string>> shapes;
    for (const StepGemms& step : step_gemms())
        for (const StepGemm& g : step.gemms) {
            auto same = std::find_if(shapes.begin(), shapes.end(), [&g](const auto& s) {
                return s.first.layout == g.layout && s.first.M == g.M && s.first.N == g.N && s.first.K == g.K;
            });
            const std::string calls = fmt::format("{} {} calls", step.model, g.calls);
            if (same == shapes.end()) shapes.emplace_back(g, "step: " + calls);
            else same->second += ", " + calls;
        }
    for (const auto& [g, label] : shapes) register_gemm(false, g.layout, g.M, g.N, g.K, label, true);
}

}  // namespace bench_autograd
