// Graph export: the graph that made a tensor, as Graphviz DOT.
//
//     Tensor loss = sum(relu(matmul(x, w) + b));
//     loss.backward(/*retain_graph=*/true);        // or export before backward()
//     std::ofstream("graph.dot") << to_dot(loss, {.title = "one layer"});
//     // dot -Tsvg graph.dot -o graph.svg
//
// One node per tensor, ids n0, n1, ... in topological order from the leaves (a depth-first walk from
// the root that visits each op's inputs in order), so the same computation always prints the same
// text. Edges run input -> op, one per use (x * x draws two). Labels, one item per line:
// - an op result (box): the op name, then the output shape;
// - a leaf (ellipse): its name() (Module::named_parameters() names parameters "blocks.0.ln1.gain"),
//   or "input" when unnamed and requiring a gradient, "constant" when not; then its shape. Leaves
//   that take no gradient (data, masks) are drawn dashed;
// - then, with show_grad_norms and when the tensor holds a gradient, "grad norm 0.1234" (the L2 norm,
//   4 significant digits);
// - a tensor whose values or gradient hold NaN or an infinity is filled red and says so:
//   "NaN in values", "inf in grad" (NaN is named when both are present).
// A named op result shows its name as an extra first line.
//
// backward() releases the graph it walked (unless retain_graph = true): an op whose graph was
// released is drawn alone, labelled "(graph released)", without its inputs. So export before
// backward(), or backward(retain_graph = true) first to see the gradient norms on every node.
#pragma once

#include <string>

namespace autograd {

class Tensor;

struct DotOptions {
    std::string title = "";       // drawn above the graph; none when empty
    bool show_grad_norms = true;  // the "grad norm" line
};

// The graph that produced `root` (root itself included, even when it is a leaf), as DOT text
// accepted by `dot -Tsvg`. Labels are escaped, so any parameter name is safe.
std::string to_dot(const Tensor& root, const DotOptions& options = {});

}  // namespace autograd
