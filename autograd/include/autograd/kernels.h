// Raw float kernels under the ops. Each fast kernel has a naive reference beside it, and the tests
// check one against the other.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace autograd::kernels {

// C (M, N) = op(A) @ op(B), or C += ... when accumulate. All row-major and contiguous:
// A is (M, K), or (K, M) when trans_a;  B is (K, N), or (N, K) when trans_b.
// Runs the active_isa() implementation on up to num_threads() threads (small products on one).
// Results are bit-identical for any thread count with the same implementation.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
          bool accumulate);

// Many products of one shape: C_i = op(A_i) @ op(B_i) (or C_i += ...) for each batch i, where
// A_i = A + a_index[i] * M * K, B_i = B + b_index[i] * K * N, C_i = C + c_index[i] * M * N; an empty
// index list means matrix i. Batches with the same c_index add into their C matrix in increasing i.
// With num_threads() > 1, batches are split across threads (all batches of one C matrix on one thread),
// so results are bit-identical for any thread count.
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, int64_t batches, const float* A,
                  std::span<const int64_t> a_index, const float* B, std::span<const int64_t> b_index, float* C,
                  std::span<const int64_t> c_index, bool accumulate);

// The instruction sets the kernels are built for: portable is plain C++ (any CPU); avx2 needs AVX2 +
// FMA; avx512 needs AVX-512F. Every kernel (gemm, softmax rows, the elementwise and row loops of gelu,
// layer_norm, linear_gelu, AdamW) has one implementation per instruction set, each in its own translation
// unit compiled with that set's flags (autograd/src/*_avx2.cpp, *_avx512.cpp), and they all follow one
// choice, made at run time from what the CPU reports: the best it runs, or the environment variable
// TINYGPT_ISA=portable|avx2|avx512 when set (refused, naming what the CPU runs, when it cannot run it).
// On one instruction set, results are bit-identical for any thread count. Across them, only the gemm
// sums (different tiles and K blocks) and the AVX-512 softmax rows' exp (fused multiply-adds) differ:
// within float rounding; the other loops give the same bits on every set.
enum class Isa { portable, avx2, avx512 };
std::string_view isa_name(Isa isa);  // "portable", "avx2", "avx512"
std::vector<Isa> available_isas();   // those this CPU runs, portable first, best last
Isa active_isa();                    // the one every kernel uses now (TINYGPT_ISA, or the best)
void set_isa(Isa isa);               // use another from now on; throws if this CPU cannot run it
// Each instruction set's gemm has two paths with identical results: small products run unpacked with the
// C tile in registers (gemm_small.h), the rest cache-blocked and packed (gemm_blocked.h); automatic picks
// by size. The small path runs on the calling thread, but for a product of a few rows asked of it by name
// (GemmPath::small) that reads a large B: its K blocks (one row) or its columns are then split across
// the threads. Automatic sends a product of a few rows (up to 8: a sampled token's) to the small path, or,
// with B transposed, to dot products of A's rows with B's read in place (its own sums: within float
// rounding of the two paths).
enum class GemmPath { automatic, small, blocked };
inline constexpr int64_t kFewRows = 8;  // the "few rows" above: a sampled token's products
// gemm with a given implementation (and path), for tests and benchmarks; throws if this CPU cannot run it.
void gemm_with(Isa isa, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
               float* C, bool accumulate, GemmPath path = GemmPath::automatic);
// The reference: three loops, double accumulation.
void gemm_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
                bool accumulate);

// --- bfloat16 products (precision.h) -------------------------------------------------------------
// bfloat16: a float's upper 16 bits. to_bf16 rounds to nearest, ties to even (a NaN stays a NaN);
// from_bf16 is exact.
uint16_t to_bf16(float x);
void to_bf16(const float* x, uint16_t* out, int64_t n);  // each of n values
float from_bf16(uint16_t bits);

// One operand of a bf16 product: its float values, and optionally bf16 the same values already rounded
// (to_bf16 of each, in the same layout), which the product then reads instead of rounding them again.
struct Bf16Operand {
    const float* values;
    const uint16_t* bf16 = nullptr;
};

// The bf16 kernels. Each computes every element of C (M, N) = op(A) @ op(B) (+ C) the same way, so all
// give the same bits: k in blocks of kBf16BlockK from 0; in a block, acc = 0, then for each pair of k
// (2p, 2p + 1; a K left odd padded with a zero pair) acc = (acc + a(2p+1) b(2p+1)) + a(2p) b(2p) in
// float32, each product added exactly (a fused multiply-add: even one past float32's range) and each sum
// rounded to nearest even, with denormal inputs and results read and written as zero (AVX512_BF16's
// vdpbf16ps, exactly, on the AMD Zen 5 we test on); then C = acc for the first block unless
// accumulating, else C += acc. avx512_bf16 is that instruction; avx512 and avx2 compute the same sums
// with float32 fused multiply-adds, portable in double (x86: other CPUs keep denormals).
// Operands as gemm's.
enum class Bf16Kernel { portable, avx2, avx512, avx512_bf16 };
inline constexpr int64_t kBf16BlockK = 512;
std::string_view bf16_kernel_name(Bf16Kernel kernel);
std::vector<Bf16Kernel> available_bf16_kernels();  // those this CPU runs, portable first, best last
// The one bf16 products use: the active instruction set's, avx512_bf16 with avx512 where the CPU has it.
Bf16Kernel active_bf16_kernel();
// The bf16 product with a given kernel (for tests and benchmarks); throws if this CPU cannot run it.
void gemm_bf16_with(Bf16Kernel kernel, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, Bf16Operand A,
                    Bf16Operand B, float* C, bool accumulate);
// The bf16 product with the active kernel, on up to num_threads() threads (the same bits for any count).
void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, Bf16Operand A, Bf16Operand B, float* C,
               bool accumulate);
// The reference: inputs rounded by to_bf16, three loops, double accumulation.
void gemm_bf16_naive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
                     float* C, bool accumulate);

// gemm in the precision matmul_precision() says, for the ops: float32 is gemm; bf16 is gemm_bf16 with
// the weights' copies of a Bf16WeightScope where given.
void gemm_in_precision(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, Bf16Operand A, Bf16Operand B,
                       float* C, bool accumulate);

}  // namespace autograd::kernels
