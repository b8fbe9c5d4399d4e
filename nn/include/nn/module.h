// nn::Module: a module is its parameters plus forward(). Each parameter is registered once, by name;
// that one list drives the optimizer, checkpoints and gradient reports.
//
//     struct TwoLayer : nn::Module {
//         nn::Linear first{{.in = 8, .out = 16}}, second{{.in = 16, .out = 4}};
//         TwoLayer() { register_module("first", first); register_module("second", second); }
//         Tensor forward(const Tensor& x) { return second.forward(relu(first.forward(x))); }
//     };
//     TwoLayer m;  m.named_parameters();  // first.weight, first.bias, second.weight, second.bias
//
// Modules hold registered children by address, so a Module can be neither copied nor moved: keep
// modules as members, or in std::unique_ptr when their number is chosen at run time.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <autograd/tensor.h>

namespace nn {

using autograd::Shape;
using autograd::Tensor;

class Module {
public:
    Module() = default;
    virtual ~Module() = default;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    // Parameters of this module and its children, depth first in registration order, named
    // "child.grandchild.param".
    std::vector<std::pair<std::string, Tensor>> named_parameters() const;
    std::vector<Tensor> parameters() const;
    // Names of the parameters that take weight decay: matrices that multiply (Linear weights) by
    // default; biases, norm gains and embedding tables are registered without it.
    std::vector<std::string> decayed_parameter_names() const;
    int64_t parameter_count() const;  // number of scalars
    void zero_grad();

    void train(bool on = true);  // also sets every child
    void eval() { train(false); }
    bool is_training() const { return training_; }

protected:
    // Marks the tensor as requiring a gradient, names it, and returns it (assign it to a member).
    // `decay`: whether optimizers apply weight decay to it.
    Tensor register_parameter(std::string name, Tensor value, bool decay = false);
    template <typename M>
    M& register_module(std::string name, M& child) {
        children_.emplace_back(std::move(name), &child);
        return child;
    }

private:
    struct Parameter {
        std::string name;
        Tensor value;
        bool decay;
    };
    void collect(const std::string& prefix, std::vector<const Parameter*>& out,
                 std::vector<std::string>& names) const;
    std::vector<Parameter> params_;
    std::vector<std::pair<std::string, Module*>> children_;
    bool training_ = true;
};

}  // namespace nn
