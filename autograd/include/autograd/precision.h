// The precision of products (issue 44). In float32 (the default) every matmul multiplies floats. In bf16
// the products with a weight, those of linear, linear_gelu(_tanh), matmul_transposed and matmul by a 2-D
// right operand, forward and backward (99% of a GPT's arithmetic at T 64), round both operands to
// bfloat16 (round to nearest, ties to even) and accumulate in float32, as llm.c's mixed precision and
// PyTorch's autocast do. Float32 stays: their results, the master weights, the gradients' sums, the
// optimizer, norms, softmax, the attention products (batched matmuls and the fused attention ops: a
// score rounded to 8 bits moves the softmax's weights by up to 0.4% of its logit), the loss and every
// reduction.
//
// Every bf16 kernel gives the same bits as the portable one (kernels.h, "bfloat16 products"): the CPU's
// bfloat16 dot products (AVX512_BF16) where it has them, else float32 fused multiply-adds that round the
// same way (AVX-512F, AVX2), at about float32's speed, or the portable kernel's double sums.
#pragma once

#include <optional>
#include <string_view>

namespace autograd {

enum class Precision { float32, bf16 };
std::string_view precision_name(Precision precision);             // "float32", "bf16"
std::optional<Precision> parse_precision(std::string_view name);  // nullopt unless one of the names
inline constexpr std::string_view kPrecisionNames = "float32 or bf16";

// The process-wide setting (products on every thread follow it), float32 until set.
Precision matmul_precision();
void set_matmul_precision(Precision precision);

// Sets the precision while alive, restores the previous one after.
class MatmulPrecisionGuard {
public:
    explicit MatmulPrecisionGuard(Precision precision);
    ~MatmulPrecisionGuard();
    MatmulPrecisionGuard(const MatmulPrecisionGuard&) = delete;
    MatmulPrecisionGuard& operator=(const MatmulPrecisionGuard&) = delete;

private:
    Precision previous_;
};

// While one is alive, bf16 products round each weight (a leaf tensor, such as a parameter) to bfloat16
// once, on its first product, and read that copy in every later one, instead of rounding it again per
// product: once a training step (forward and backward, all micro-batches), once for a whole generation.
// The copies hold their tensors and are freed with the scope. The weights must not change while it is
// alive (open it after the optimizer's step, close it before the next); a leaf written in place inside
// would be read stale. Scopes nest (the outermost owns the copies); not for concurrent use from threads.
class Bf16WeightScope {
public:
    Bf16WeightScope();
    ~Bf16WeightScope();
    Bf16WeightScope(const Bf16WeightScope&) = delete;
    Bf16WeightScope& operator=(const Bf16WeightScope&) = delete;
};

// Which kernel runs bf16 products here ("avx512_bf16", "avx512", "avx2" or "portable"), and a sentence
// for --help: whether this CPU multiplies bfloat16 itself or rounds at float32 speed.
std::string_view bf16_kernel_in_use();
std::string_view bf16_speed_note();

}  // namespace autograd
