// bfloat16 products: the precision setting, the weights' copies, the portable bf16 tile and the choice
// of kernel (precision.h, kernels.h "bfloat16 products").
#include <algorithm>
#if defined(TINYGPT_X86_KERNELS)
#include <cpuid.h>
#endif
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "autograd/check.h"
#include "autograd/kernels.h"
#include "autograd/precision.h"
#include "autograd/tensor.h"
#include "autograd/threads.h"
#include "bf16_weights.h"
#include "gemm_bf16.h"
#include "kernels_isa.h"
#include "workspace.h"

namespace autograd {

std::string_view precision_name(Precision precision) { return precision == Precision::bf16 ? "bf16" : "float32"; }

std::optional<Precision> parse_precision(std::string_view name) {
    for (const Precision p : {Precision::float32, Precision::bf16})
        if (precision_name(p) == name) return p;
    return std::nullopt;
}

namespace {
std::atomic<Precision> current_precision{Precision::float32};
}  // namespace

Precision matmul_precision() { return current_precision.load(std::memory_order_relaxed); }
void set_matmul_precision(Precision precision) { current_precision.store(precision); }

MatmulPrecisionGuard::MatmulPrecisionGuard(Precision precision) : previous_(matmul_precision()) {
    set_matmul_precision(precision);
}
MatmulPrecisionGuard::~MatmulPrecisionGuard() { set_matmul_precision(previous_); }

namespace {

// The weights' copies of the outermost live Bf16WeightScope, by their tensors' storage. Each entry
// holds its tensor, so that no other tensor can take its storage's address while it lives. A closing
// scope keeps its copies' memory for the next (a training step asks for the same sizes again: without
// it, a quarter of GPT-2 small's bf16 step went to the system's fresh pages), and frees what that one
// did not reuse.
struct WeightCopies {
    struct Bits {
        std::unique_ptr<uint16_t[]> data;  // (not value-initialized: every element is written)
        size_t size = 0;
    };
    struct Copy {
        Tensor weight;
        Bits bits;
    };
    std::mutex lock;
    int depth = 0;
    std::unordered_map<const float*, Copy> copies;
    std::vector<Bits> spare;

    Bits take(size_t size) {
        for (Bits& b : spare)
            if (b.size == size) {
                Bits out = std::move(b);
                b = std::move(spare.back());
                spare.pop_back();
                return out;
            }
        return {std::unique_ptr<uint16_t[]>(new uint16_t[size]), size};
    }
    void close() {
        spare.clear();
        for (auto& [address, copy] : copies) spare.push_back(std::move(copy.bits));
        copies.clear();
    }
};
WeightCopies& weight_copies() {
    static WeightCopies copies;
    return copies;
}

}  // namespace

Bf16WeightScope::Bf16WeightScope() {
    WeightCopies& w = weight_copies();
    const std::lock_guard hold(w.lock);
    ++w.depth;
}

Bf16WeightScope::~Bf16WeightScope() {
    WeightCopies& w = weight_copies();
    const std::lock_guard hold(w.lock);
    if (--w.depth == 0) w.close();
}

namespace detail {

const uint16_t* bf16_weight_copy(const Tensor& weight) {
    if (matmul_precision() != Precision::bf16 || !weight.is_leaf() || !weight.has_values()) return nullptr;
    WeightCopies& w = weight_copies();
    const std::lock_guard hold(w.lock);
    if (w.depth == 0) return nullptr;
    const std::span<const float> values = weight.data();
    auto [at, fresh] = w.copies.try_emplace(values.data());
    WeightCopies::Copy& copy = at->second;
    if (fresh) {
        copy.weight = weight;
        copy.bits = w.take(values.size());
        uint16_t* bits = copy.bits.data.get();
        parallel_for(
            static_cast<int64_t>(values.size()), rows_per_thread(1, int64_t(1) << 16),
            [&](int64_t begin, int64_t end) { kernels::to_bf16(values.data() + begin, bits + begin, end - begin); });
    }
    return copy.bits.data.get();
}

}  // namespace detail

std::string_view bf16_kernel_in_use() { return kernels::bf16_kernel_name(kernels::active_bf16_kernel()); }

namespace {
// AMX-BF16 (CPUID leaf 7, EDX bit 22; gcc 12's __builtin_cpu_supports does not know it)
bool cpu_has_amx_bf16() {
#if defined(TINYGPT_X86_KERNELS)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << 22)) != 0;
#else
    return false;
#endif
}
}  // namespace

std::string_view bf16_speed_note() {
    const bool dot = kernels::active_bf16_kernel() == kernels::Bf16Kernel::avx512_bf16, amx = cpu_has_amx_bf16();
    if (dot && amx)
        return "this CPU multiplies bfloat16 itself (AVX512_BF16): bf16 products at about twice float32's speed (its "
               "AMX tiles are not used)";
    if (dot) return "this CPU multiplies bfloat16 itself (AVX512_BF16): bf16 products at about twice float32's speed";
    return "no bfloat16 arithmetic in use (no AVX512_BF16, or TINYGPT_ISA below avx512): bf16 gives the same "
           "results at about float32's speed, no faster";
}

}  // namespace autograd

namespace autograd::kernels {

uint16_t to_bf16(float x) { return static_cast<uint16_t>(detail::bf16_bits(x)); }
void to_bf16(const float* x, uint16_t* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint16_t>(detail::bf16_bits(x[i]));
}
float from_bf16(uint16_t bits) {  // (memcpy: the WebAssembly build's libc++ 13 has no std::bit_cast)
    const uint32_t widened = uint32_t{bits} << 16;
    float out;
    std::memcpy(&out, &widened, sizeof out);
    return out;
}

namespace detail {
namespace {

// The portable bf16 arithmetic: GCC/Clang vector-extension registers of 4 floats, its pairs widened
// (gemm_bf16.h WidenedPairs). A baseline CPU has no FMA instruction: kExact adds each product in double,
// where a product of two bfloat16 is exact and its sum with a float rounds as the exact sum does, with
// one rounding back (and a flush, under gemm_bf16.h's FlushDenormals); without it, a multiply and an add,
// the same wherever the product is a normal float (products_normal checks).
template <bool kExact>
struct WidenPortable {
    typedef float reg __attribute__((vector_size(16)));
    typedef uint32_t words __attribute__((vector_size(16)));
    static constexpr int64_t W = 4;
    static reg zero() { return reg{}; }
    static reg load(const float* p) {
        reg v;
        __builtin_memcpy(&v, p, sizeof v);
        return v;
    }
    static void store(float* p, reg v) { __builtin_memcpy(p, &v, sizeof v); }
    static reg add(reg a, reg b) { return a + b; }
    static reg fma(reg a, reg b, reg acc) {
        if constexpr (!kExact) {
            return acc + a * b;
        } else {
            typedef double wide __attribute__((vector_size(32)));
            const wide sum = __builtin_convertvector(acc, wide) +
                             __builtin_convertvector(a, wide) * __builtin_convertvector(b, wide);
            return __builtin_convertvector(sum, reg);
        }
    }
    static words load_words(const uint32_t* p) {
        words w;
        __builtin_memcpy(&w, p, sizeof w);
        return w;
    }
    static words load_halves(const uint16_t* p) { return words{p[0], p[1], p[2], p[3]}; }
    static float add_lanes(const reg* acc) {                  // lanes 4v .. 4v+3 in acc[v] (gemm_bf16.h add_lanes)
        const reg t = (acc[0] + acc[2]) + (acc[1] + acc[3]);  // l + (l + 8), then + 4
        return (t[0] + t[2]) + (t[1] + t[3]);                 // + 2, then + 1
    }
    static words broadcast_word(uint32_t w) { return words{w, w, w, w}; }
    static reg as_floats(words w) { return (reg)w; }
    static reg even(words w) { return (reg)(w << 16); }
    static reg odd(words w) { return (reg)(w & 0xffff0000u); }
};

using PortableExact = Bf16Tiles<WidenedPairs<WidenPortable<true>>, 4, 2>;
using PortableFast = Bf16Tiles<WidenedPairs<WidenPortable<false>>, 4, 2>;

// Whether every product of the operands' values is a normal float (or zero), so that the portable
// kernel may multiply and add: each value zero, denormal (read as zero) or of magnitude in [2^-63, 2^63)
// (rounding to bfloat16 stays within). One pass over A and B, beside M N K multiply-adds.
template <class Source>
bool values_in_range(const Source* values, int64_t n) {
    uint32_t outside = 0;
    for (int64_t i = 0; i < n; ++i) {
        uint32_t bits;
        if constexpr (sizeof(Source) == 4) __builtin_memcpy(&bits, values + i, 4);
        else bits = uint32_t{values[i]} << 16;
        const uint32_t exponent = (bits >> 23) & 0xffu;
        outside |= static_cast<uint32_t>(exponent != 0) & static_cast<uint32_t>(exponent - 64u >= 126u);
    }
    return outside == 0;
}
bool products_normal(const Bf16Args& g) {
    const auto in_range = [](const float* values, const uint16_t* bf16, int64_t n) {
        return bf16 ? values_in_range(bf16, n) : values_in_range(values, n);
    };
    return in_range(g.A, g.A16, g.M * g.K) && in_range(g.B, g.B16, g.K * g.N);
}

bool cpu_has_bf16(Bf16Kernel kernel) {
    switch (kernel) {
        case Bf16Kernel::portable:
            return true;
        case Bf16Kernel::avx2:
            return cpu_has(Isa::avx2);
        case Bf16Kernel::avx512:
            return cpu_has(Isa::avx512);
        case Bf16Kernel::avx512_bf16:
#if defined(TINYGPT_X86_KERNELS)
            return cpu_has(Isa::avx512) && __builtin_cpu_supports("avx512bf16");
#else
            return false;
#endif
    }
    return false;
}

void run_gemm_bf16(Bf16Kernel kernel, Bf16Args g) {
    if (g.M == 0 || g.N == 0) return;
    if (g.K == 0) {
        if (!g.accumulate) std::fill(g.C, g.C + g.M * g.N, 0.0f);
        return;
    }
    switch (kernel) {
#if defined(TINYGPT_X86_KERNELS)
        case Bf16Kernel::avx512_bf16:
            g.work = thread_workspace<uint32_t>(gemm_bf16_workspace_avx512bf16(g.threads, g.K, g.N));
            return gemm_bf16_avx512bf16(g);
        case Bf16Kernel::avx512:
            g.work = thread_workspace<uint32_t>(gemm_bf16_workspace_avx512(g.threads, g.K, g.N));
            return gemm_bf16_avx512(g);
        case Bf16Kernel::avx2:
            g.work = thread_workspace<uint32_t>(gemm_bf16_workspace_avx2(g.threads, g.K, g.N));
            return gemm_bf16_avx2(g);
#else
        case Bf16Kernel::avx512_bf16:
        case Bf16Kernel::avx512:
        case Bf16Kernel::avx2:
#endif
        case Bf16Kernel::portable:
            g.work = thread_workspace<uint32_t>(bf16_workspace_words<PortableExact>(g.threads, g.K, g.N));
            if (products_normal(g)) return gemm_bf16_product<PortableFast>(g);
            return gemm_bf16_product<PortableExact>(g);
    }
}

}  // namespace
}  // namespace detail

std::string_view bf16_kernel_name(Bf16Kernel kernel) {
    switch (kernel) {
        case Bf16Kernel::portable:
            return "portable";
        case Bf16Kernel::avx2:
            return "avx2";
        case Bf16Kernel::avx512:
            return "avx512";
        case Bf16Kernel::avx512_bf16:
            return "avx512_bf16";
    }
    return "unknown";
}

std::vector<Bf16Kernel> available_bf16_kernels() {
    std::vector<Bf16Kernel> out;
    for (const Bf16Kernel k : {Bf16Kernel::portable, Bf16Kernel::avx2, Bf16Kernel::avx512, Bf16Kernel::avx512_bf16})
        if (detail::cpu_has_bf16(k)) out.push_back(k);
    return out;
}

Bf16Kernel active_bf16_kernel() {
    switch (active_isa()) {
        case Isa::avx512:
            return detail::cpu_has_bf16(Bf16Kernel::avx512_bf16) ? Bf16Kernel::avx512_bf16 : Bf16Kernel::avx512;
        case Isa::avx2:
            return Bf16Kernel::avx2;
        case Isa::portable:
            break;
    }
    return Bf16Kernel::portable;
}

void gemm_bf16_with(Bf16Kernel kernel, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, Bf16Operand A,
                    Bf16Operand B, float* C, bool accumulate) {
    check(detail::cpu_has_bf16(kernel), "gemm_bf16_with: this CPU cannot run the {} kernel", bf16_kernel_name(kernel));
    const int threads = M * N * K >= detail::kThreadWork ? num_threads() : 1;
    detail::run_gemm_bf16(
        kernel, {trans_a, trans_b, M, N, K, A.values, A.bf16, B.values, B.bf16, C, accumulate, nullptr, threads});
}

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, Bf16Operand A, Bf16Operand B, float* C,
               bool accumulate) {
    gemm_bf16_with(active_bf16_kernel(), trans_a, trans_b, M, N, K, A, B, C, accumulate);
}

void gemm_bf16_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
                     float* C, bool accumulate) {
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; ++k) {
                const float a = from_bf16(to_bf16(trans_a ? A[k * M + i] : A[i * K + k]));
                const float b = from_bf16(to_bf16(trans_b ? B[j * K + k] : B[k * N + j]));
                acc += double(a) * double(b);
            }
            C[i * N + j] = static_cast<float>(accumulate ? C[i * N + j] + acc : acc);
        }
}

void gemm_in_precision(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, Bf16Operand A, Bf16Operand B,
                       float* C, bool accumulate) {
    if (matmul_precision() == Precision::bf16) return gemm_bf16(trans_a, trans_b, M, N, K, A, B, C, accumulate);
    gemm(trans_a, trans_b, M, N, K, A.values, B.values, C, accumulate);
}

}  // namespace autograd::kernels
