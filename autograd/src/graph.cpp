// to_dot: the graph behind a tensor as Graphviz DOT, with stable ids and NaN/inf highlighted.
#include "autograd/graph.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "autograd/op.h"

namespace autograd {

namespace {

// A DOT double-quoted string body: backslash and quote escaped, newlines as \n (centered lines),
// other control characters as spaces.
std::string escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '\\' || c == '"') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += ' ';
        } else {
            out += c;
        }
    }
    return out;
}

// "NaN" if any NaN, else "inf" if any infinity, else nullptr.
const char* non_finite(std::span<const float> values) {
    bool inf = false;
    for (float v : values) {
        if (std::isnan(v)) return "NaN";
        inf = inf || std::isinf(v);
    }
    return inf ? "inf" : nullptr;
}

double l2_norm(std::span<const float> values) {
    double total = 0.0;
    for (float v : values) total += double(v) * v;
    return std::sqrt(total);
}

// Every tensor reachable from root, each after all of its inputs (iterative post-order DFS).
std::vector<const TensorImpl*> topological_order(const TensorImpl* root) {
    std::vector<const TensorImpl*> order;
    std::unordered_set<const TensorImpl*> seen{root};
    std::vector<std::pair<const TensorImpl*, size_t>> stack{{root, 0}};  // (tensor, next input to visit)
    while (!stack.empty()) {
        auto& [impl, next] = stack.back();
        const Node* node = impl->grad_fn.get();
        if (node && next < node->inputs.size()) {
            const TensorImpl* input = node->inputs[next++].impl().get();
            if (seen.insert(input).second) stack.emplace_back(input, 0);
        } else {
            order.push_back(impl);
            stack.pop_back();
        }
    }
    return order;
}

}  // namespace

std::string to_dot(const Tensor& root, const DotOptions& options) {
    check(root.defined(), "to_dot: the root tensor is undefined");
    const std::vector<const TensorImpl*> order = topological_order(root.impl().get());
    std::unordered_map<const TensorImpl*, size_t> id;
    for (size_t i = 0; i < order.size(); ++i) id[order[i]] = i;

    std::string out = "digraph autograd {\n";
    if (!options.title.empty())
        out += fmt::format("  graph [label=\"{}\", labelloc=t, fontname=\"Helvetica\"];\n", escape(options.title));
    out += "  node [fontname=\"Helvetica\", fontsize=10];\n";
    for (size_t i = 0; i < order.size(); ++i) {
        const TensorImpl& t = *order[i];
        const Node* node = t.grad_fn.get();
        std::vector<std::string> lines;
        if (node) {
            if (!t.name.empty()) lines.push_back(t.name);
            lines.emplace_back(node->op);
        } else {
            lines.push_back(!t.name.empty() ? t.name : t.requires_grad ? "input" : "constant");
        }
        lines.push_back(shape_str(t.shape));
        if (options.show_grad_norms && t.grad) lines.push_back(fmt::format("grad norm {:.4g}", l2_norm(*t.grad)));
        const char* bad_values = non_finite(*t.data);
        const char* bad_grad = t.grad ? non_finite(*t.grad) : nullptr;
        // Infinities a mask put there (masked_fill's -inf), or carried on from an input, are intended: the
        // same rule anomaly mode applies. They are noted, not highlighted; NaN always is.
        if (bad_values && std::string_view(bad_values) == "inf" && node &&
            (std::string_view(node->op) == "masked_fill" ||
             std::any_of(node->inputs.begin(), node->inputs.end(),
                         [](const Tensor& in) { return non_finite(in.data()) != nullptr; }))) {
            lines.emplace_back("inf from the mask");
            bad_values = nullptr;
        }
        if (bad_values) lines.push_back(fmt::format("{} in values", bad_values));
        if (bad_grad) lines.push_back(fmt::format("{} in grad", bad_grad));
        if (node && node->released) lines.emplace_back("(graph released)");

        std::string label;
        for (const std::string& line : lines) label += (label.empty() ? "" : "\n") + line;
        const bool constant = !node && !t.requires_grad;  // data, masks: dashed
        const bool bad = bad_values || bad_grad;          // filled red
        std::string style = node ? "shape=box" : "shape=ellipse";
        if (bad) style += constant ? R"(, style="filled,dashed")" : ", style=filled";
        else if (constant) style += ", style=dashed";
        if (bad) style += R"(, fillcolor="#ff8080")";
        out += fmt::format("  n{} [label=\"{}\", {}];\n", i, escape(label), style);
        if (node)
            for (const Tensor& input : node->inputs)
                out += fmt::format("  n{} -> n{};\n", id.at(input.impl().get()), i);
    }
    out += "}\n";
    return out;
}

}  // namespace autograd
