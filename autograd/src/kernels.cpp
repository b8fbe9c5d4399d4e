#include "autograd/kernels.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include <omp.h>

#include "autograd/check.h"
#include "autograd/detail/optimizer_kernels.h"
#include "autograd/threads.h"
#include "gemm_blocked.h"
#include "gemm_small.h"
#include "kernels_isa.h"
#include "vector_loops.h"
#include "workspace.h"

namespace autograd::kernels {

void gemm_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
                bool accumulate) {
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; ++k) {
                const float a = trans_a ? A[k * M + i] : A[i * K + k];
                const float b = trans_b ? B[j * K + k] : B[k * N + j];
                acc += double(a) * double(b);
            }
            C[i * N + j] = static_cast<float>(accumulate ? C[i * N + j] + acc : acc);
        }
}

namespace detail {
namespace {

// The portable micro-kernel: a 4 x 8 tile in GCC/Clang vector-extension registers of 4 floats, which the
// compiler maps to whatever the baseline target has (SSE2 on x86-64, NEON on arm64).
struct Portable {
    static constexpr int64_t MR = 4, NR = 8, KC = 256, NC = 1024;
    static constexpr bool kInPlace = false;  // A and B always packed: a[k][MR], b[k][NR]
    typedef float v4 __attribute__((vector_size(16)));
    static void tile(int64_t kb, const float* __restrict a, int64_t, int64_t, const float* __restrict b, int64_t,
                     float* __restrict c, int64_t ldc, bool overwrite, int64_t) {
        v4 acc[MR][2] = {};
        for (int64_t k = 0; k < kb; ++k) {
            v4 b0, b1;
            __builtin_memcpy(&b0, b + k * NR, sizeof b0);
            __builtin_memcpy(&b1, b + k * NR + 4, sizeof b1);
            for (int64_t r = 0; r < MR; ++r) {
                const float av = a[k * MR + r];
                acc[r][0] += av * b0;
                acc[r][1] += av * b1;
            }
        }
        for (int64_t r = 0; r < MR; ++r)
            for (int64_t j = 0; j < NR; ++j) {
                const float v = acc[r][j / 4][j % 4];
                c[r * ldc + j] = overwrite ? v : c[r * ldc + j] + v;
            }
    }
};

// The portable small-path vector: the same v4 and the same "acc += a * b" as Portable::tile.
struct PortableVec {
    typedef float reg __attribute__((vector_size(16)));
    using mask = int64_t;  // lanes in use, from the first
    static constexpr int64_t W = 4, kAccumulators = 8, kMaxVectors = 2, kMaxRows = 8;
    static constexpr bool kFreeMasks = false;
    static mask mask_first(int64_t n) { return n; }
    static reg zero() { return reg{}; }
    static reg broadcast(const float* p) { return reg{*p, *p, *p, *p}; }
    static reg load(const float* p) {
        reg v;
        __builtin_memcpy(&v, p, sizeof v);
        return v;
    }
    static reg load(const float* p, mask n) {
        reg v = {};
        for (int64_t i = 0; i < n; ++i) v[i] = p[i];
        return v;
    }
    static void store(float* p, reg v) { __builtin_memcpy(p, &v, sizeof v); }
    static void store(float* p, reg v, mask n) {
        for (int64_t i = 0; i < n; ++i) p[i] = v[i];
    }
    static reg fma(reg a, reg b, reg acc) { return acc + a * b; }
    static reg add(reg a, reg b) { return a + b; }
};

}  // namespace

bool cpu_has(Isa isa) {
#if defined(TINYGPT_X86_KERNELS)
    switch (isa) {
        case Isa::portable:
            return true;
        case Isa::avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case Isa::avx512:
            return __builtin_cpu_supports("avx512f");
    }
    return false;
#else
    return isa == Isa::portable;
#endif
}

}  // namespace detail

std::string_view isa_name(Isa isa) {
    switch (isa) {
        case Isa::portable:
            return "portable";
        case Isa::avx2:
            return "avx2";
        case Isa::avx512:
            return "avx512";
    }
    return "unknown";
}

std::vector<Isa> available_isas() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512})
        if (detail::cpu_has(isa)) out.push_back(isa);
    return out;
}

namespace {

std::string isa_list(const std::vector<Isa>& isas) {
    std::string out;
    for (const Isa isa : isas) out += (out.empty() ? "" : ", ") + std::string(isa_name(isa));
    return out;
}

// TINYGPT_ISA when set, else the best this CPU runs.
Isa initial_isa() {
    const std::vector<Isa> available = available_isas();
    const char* forced = std::getenv("TINYGPT_ISA");
    if (forced == nullptr || *forced == '\0') return available.back();
    for (const Isa isa : {Isa::portable, Isa::avx2, Isa::avx512}) {
        if (isa_name(isa) != forced) continue;
        check(detail::cpu_has(isa), "TINYGPT_ISA={}: this CPU cannot run it (it runs {})", forced, isa_list(available));
        return isa;
    }
    throw std::invalid_argument(
        fmt::format("TINYGPT_ISA={}: not an instruction set (portable, avx2 or avx512)", forced));
}

constexpr int kNotChosen = -1;
std::atomic<int> chosen_isa{kNotChosen};

}  // namespace

Isa active_isa() {
    int isa = chosen_isa.load(std::memory_order_relaxed);
    if (isa == kNotChosen) {  // the first call: several threads may get here, and all choose the same
        int expected = kNotChosen;
        chosen_isa.compare_exchange_strong(expected, static_cast<int>(initial_isa()));
        isa = chosen_isa.load();
    }
    return static_cast<Isa>(isa);
}

void set_isa(Isa isa) {
    check(detail::cpu_has(isa), "set_isa: this CPU cannot run {} (it runs {})", isa_name(isa),
          isa_list(available_isas()));
    chosen_isa.store(static_cast<int>(isa));
}

namespace {

// The thresholds below were measured with bench_train_step (bench/README.md, "The kernels' thresholds");
// detail::kThreadWork (kernels_isa.h) is when a gemm is worth splitting across threads.
using detail::kThreadWork;
// Batches of small products split across threads from fewer: each thread takes whole products, with
// no shared packing and no barrier but the join.
constexpr int64_t kBatchThreadWork = int64_t(1) << 19;
// A product of at most kFewRows rows (a sampled token's) reads all of B for little arithmetic: the small
// path, or with B transposed dot products of rows (dot_rows); from kStreamFloats floats of B (1 MiB),
// two threads reading a half each beat one.
constexpr int64_t kStreamFloats = int64_t(1) << 18;
// Below this many multiply-adds the unpacked small path is the faster one.
constexpr int64_t kSmallWork = int64_t(1) << 18;
// With AVX-512 also below this many when N leaves 1-4 columns past the last 32-wide tile, which the
// blocked path pads to a half tile of 16 and the small path masks.
constexpr int64_t kSmallWorkNarrowEdge = int64_t(1) << 20;

// Where the small path is faster, measured on the three bench/train_step.h models' gemms: every product
// below kSmallWork; with AVX-512, those below kSmallWorkNarrowEdge with 1-4 columns past the last tile;
// and on one thread the weight gradients A^T @ dC of a narrow layer (M <= 64 rows, up to 128 columns, any
// K). Both paths give the same bits, so the choice never changes a result.
bool small_is_faster(Isa isa, const detail::GemmArgs& g) {
    const int64_t work = g.M * g.N * g.K;
    if (work < kSmallWork) return true;
    if (isa == Isa::avx512 && work < kSmallWorkNarrowEdge && g.N % 32 != 0 && g.N % 32 <= 4) return true;
    return g.threads == 1 && g.trans_a && !g.trans_b && g.M <= 64 && g.N <= 128;
}

// One gemm (M, N, K >= 0) with the given implementation, path and thread count.
void run_gemm(Isa isa, GemmPath path, detail::GemmArgs g) {
    if (g.M == 0 || g.N == 0) return;
    if (g.K == 0) {
        if (!g.accumulate) std::fill(g.C, g.C + g.M * g.N, 0.0f);
        return;
    }
    if (path == GemmPath::small || (path == GemmPath::automatic && small_is_faster(isa, g))) {
        g.work = detail::thread_workspace<float>(detail::small_workspace_floats(g));
        switch (isa) {
#if defined(TINYGPT_X86_KERNELS)
            case Isa::avx512:
                detail::gemm_small_avx512(g);
                return;
            case Isa::avx2:
                detail::gemm_small_avx2(g);
                return;
#else
            case Isa::avx512:
            case Isa::avx2:
#endif
            case Isa::portable:
                detail::gemm_small<detail::PortableVec>(g, detail::Portable::KC);
                return;
        }
    }
    switch (isa) {
#if defined(TINYGPT_X86_KERNELS)
        case Isa::avx512:
            g.work = detail::thread_workspace<float>(detail::gemm_workspace_avx512(g.threads));
            detail::gemm_avx512(g);
            return;
        case Isa::avx2:
            g.work = detail::thread_workspace<float>(detail::gemm_workspace_avx2(g.threads));
            detail::gemm_avx2(g);
            return;
#else
        case Isa::avx512:
        case Isa::avx2:
#endif
        case Isa::portable:
            g.work = detail::thread_workspace<float>(detail::workspace_floats<detail::Portable>(g.threads));
            detail::gemm_blocked<detail::Portable, detail::PortableVec>(g);
            return;
    }
}

}  // namespace

namespace {

// C (M, N) (+)= A (M, K) @ B (N, K)^T for a few rows of A: every C(i, n) a dot product of A's row i with
// B's row n, read in place (the other paths copy a transposed B first: for a sampled token's tied
// logits, all of GPT-2's 154 MB token table, every token). The instruction set's dot_rows_range
// (gemm_small.h); rows of B are split across threads from a quarter million floats each (two cores
// stream a table faster than one), and each sum is its own on any thread.
void dot_rows(Isa isa, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C, bool accumulate,
              int threads) {
    const detail::GemmArgs g{false, true, M, N, K, A, B, C, accumulate, nullptr, threads};
    const auto rows = [&](int64_t begin, int64_t end) {
        switch (isa) {
#if defined(TINYGPT_X86_KERNELS)
            case Isa::avx512:
                return detail::dot_rows_avx512(g, begin, end);
            case Isa::avx2:
                return detail::dot_rows_avx2(g, begin, end);
#else
            case Isa::avx512:
            case Isa::avx2:
#endif
            case Isa::portable:
                return detail::dot_rows_range<detail::PortableVec>(g, begin, end);
        }
    };
    if (threads > 1) parallel_for(N, rows_per_thread(M * K, int64_t(1) << 18), rows);
    else rows(0, N);
}

// Whether a product of a few rows (a sampled token's) with B transposed is dot_rows' (the same choice in
// gemm and gemm_batched, so that the two give the same bits).
bool dot_rows_fit(GemmPath path, bool trans_a, bool trans_b, int64_t M) {
    return path == GemmPath::automatic && M <= kFewRows && !trans_a && trans_b;
}

}  // namespace

void gemm_with(Isa isa, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
               float* C, bool accumulate, GemmPath path) {
    check(detail::cpu_has(isa), "gemm_with: this CPU cannot run the {} kernel", isa_name(isa));
    // A few rows (a sampled token's products) read all of B for little arithmetic: B in place, unpacked.
    if (dot_rows_fit(path, trans_a, trans_b, M)) return dot_rows(isa, M, N, K, A, B, C, accumulate, num_threads());
    if (path == GemmPath::automatic && M <= kFewRows && !trans_a) path = GemmPath::small;
    // Threads only where each gets real work; the split never changes the result.
    const bool streams_b = path == GemmPath::small && M <= kFewRows && N * K >= kStreamFloats;
    const int threads = M * N * K >= kThreadWork || streams_b ? num_threads() : 1;
    run_gemm(isa, path, {trans_a, trans_b, M, N, K, A, B, C, accumulate, nullptr, threads});
}

void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, int64_t batches, const float* A,
                  std::span<const int64_t> a_index, const float* B, std::span<const int64_t> b_index, float* C,
                  std::span<const int64_t> c_index, bool accumulate) {
    for (const auto index : {a_index, b_index, c_index})
        check(index.empty() || static_cast<int64_t>(index.size()) == batches,
              "gemm_batched: {} batches but an index list of {}", batches, index.size());
    const Isa isa = active_isa();
    auto product = [&](int64_t i, int threads) {
        const int64_t ia = a_index.empty() ? i : a_index[i], ib = b_index.empty() ? i : b_index[i];
        const int64_t ic = c_index.empty() ? i : c_index[i];
        if (dot_rows_fit(GemmPath::automatic, trans_a, trans_b, M))
            return dot_rows(isa, M, N, K, A + ia * M * K, B + ib * K * N, C + ic * M * N, accumulate, threads);
        run_gemm(
            isa, GemmPath::automatic,
            {trans_a, trans_b, M, N, K, A + ia * M * K, B + ib * K * N, C + ic * M * N, accumulate, nullptr, threads});
    };
    // Split the batches when there are enough of them and the products are each too small to split.
    const int64_t work = M * N * K;
    const int threads = work * batches >= kBatchThreadWork ? int(std::min<int64_t>(num_threads(), batches)) : 1;
    if (threads <= 1 || work >= kThreadWork) {
        for (int64_t i = 0; i < batches; ++i) product(i, work >= kThreadWork ? num_threads() : 1);
        return;
    }
    // Output matrix c goes to thread c % threads: it alone adds into it, in increasing i.
#pragma omp parallel num_threads(threads)
    {
        const int tid = omp_get_thread_num(), team = omp_get_num_threads();
        for (int64_t i = 0; i < batches; ++i)
            if ((c_index.empty() ? i : c_index[i]) % team == tid) product(i, 1);
    }
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
          bool accumulate) {
    gemm_with(active_isa(), trans_a, trans_b, M, N, K, A, B, C, accumulate);
}

}  // namespace autograd::kernels

namespace autograd::detail {

namespace {
const VectorLoops& table_of(kernels::Isa isa) {
    switch (isa) {
#if defined(TINYGPT_X86_KERNELS)
        case kernels::Isa::avx512:
            return vector_loops_avx512;
        case kernels::Isa::avx2:
            return vector_loops_avx2;
#else
        case kernels::Isa::avx512:
        case kernels::Isa::avx2:
#endif
        case kernels::Isa::portable:
            break;
    }
    return vector_loops_portable;
}
}  // namespace

const VectorLoops& vector_loops(kernels::Isa isa) {
    check(kernels::detail::cpu_has(isa), "vector_loops: this CPU cannot run the {} loops", kernels::isa_name(isa));
    return table_of(isa);
}

// active_isa() was checked against the CPU when it was chosen: no second check on the ops' path.
const VectorLoops& vector_loops() { return table_of(kernels::active_isa()); }

}  // namespace autograd::detail

namespace autograd::kernels {

void adamw_update(float* p, const float* g, float* m, float* v, int64_t begin, int64_t end, const AdamWStep& step) {
    autograd::detail::vector_loops().adamw_update(p, g, m, v, begin, end, step);
}

double sum_of_squares(const float* g, int64_t begin, int64_t end) {
    return autograd::detail::vector_loops().sum_of_squares(g, begin, end);
}

}  // namespace autograd::kernels
