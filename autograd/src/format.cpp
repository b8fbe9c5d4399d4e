#include "autograd/format.h"

#include <fmt/args.h>

#include "autograd/tensor.h"

namespace autograd {

namespace {
constexpr int64_t kSummarizeAbove = 1000;  // elements; like PyTorch's print threshold
constexpr int64_t kEdgeItems = 3;          // shown at each end of a dim when summarized

struct Printer {
    const Tensor& t;
    std::string_view element_format;
    bool summarize;
    std::string out;

    void element(float v) { out += fmt::vformat(element_format, fmt::make_format_args(v)); }

    // Prints dims [d, rank) of the block starting at flat offset `base`.
    void block(size_t d, int64_t base, int indent) {
        const Shape& shape = t.shape();
        const int64_t n = shape[d];
        int64_t stride = 1;
        for (size_t k = d + 1; k < shape.size(); ++k) stride *= shape[k];
        const bool last_dim = d + 1 == shape.size();
        out += '[';
        for (int64_t i = 0; i < n; ++i) {
            if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
                out += last_dim ? "..., " : fmt::format("...,\n{:{}}", "", indent + 1);
                i = n - kEdgeItems - 1;
                continue;
            }
            if (last_dim) element(t.data()[base + i]);
            else block(d + 1, base + i * stride, indent + 1);
            if (i + 1 < n) {
                if (last_dim) out += ", ";
                else out += fmt::format(",{}{:{}}", std::string(shape.size() - d - 1, '\n'), "", indent + 1);
            }
        }
        out += ']';
    }
};
}  // namespace

std::string format_tensor(const Tensor& t, std::string_view element_format) {
    if (!t.defined()) return "tensor(undefined)";
    if (t.dim() == 0) return fmt::vformat(element_format, fmt::make_format_args(t.data()[0]));
    Printer p{t, element_format, t.numel() > kSummarizeAbove, {}};
    p.block(0, 0, 0);
    if (p.summarize) p.out += fmt::format(" shape {}", shape_str(t.shape()));
    return p.out;
}

}  // namespace autograd
