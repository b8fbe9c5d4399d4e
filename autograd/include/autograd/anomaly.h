// Anomaly mode: find the op where a NaN or an infinity is born.
//
//     AnomalyGuard anomalies;              // or set_anomaly_mode(true) for the whole program
//     Tensor y = log(x);                   // x holds a negative value: throws std::runtime_error
//     // "anomaly: the forward of 'log' produced NaN (element 3 of its output (2, 4)); input (2, 4);
//     //  log was called at train.cpp:42 in function 'int main()'"
//     // and from backward(): "anomaly: the backward of 'sqrt' produced inf (element 0 of the gradient
//     //  of input 0, shape (2)); output (2), input (2); sqrt was called at ..."
//
// While on, every op checks its forward result and backward() checks every gradient each op's
// backward produces; the first non-finite one throws std::runtime_error naming the op, forward or
// backward, the shapes of its inputs and output, and the source location the op was called from
// (see ops.h for the one gap: operators such as a + b record the operator's own location). A backward
// anomaly is thrown before backward() returns, so before any optimizer step can write a NaN into a
// parameter. The graph is left intact then (not released), so to_dot() (graph.h) can still draw it.
//
// What counts as an anomaly: NaN anywhere; an infinity in a forward result only when no input holds
// one (masked_fill's fill value counts as an input, so causal_mask's -inf is fine, and so is a -inf
// carried through scale or add); an infinity in any gradient.
//
// Off by default. When off the cost is one branch per op and one per backward node. The mode is
// global to the process (not per thread), so setting it in main() covers every thread.
#pragma once

namespace autograd {

void set_anomaly_mode(bool on);
bool anomaly_mode();

// Turns anomaly mode on (or to `on`) while it lives, then restores the previous mode.
class AnomalyGuard {
public:
    explicit AnomalyGuard(bool on = true) : previous_(anomaly_mode()) { set_anomaly_mode(on); }
    ~AnomalyGuard() { set_anomaly_mode(previous_); }
    AnomalyGuard(const AnomalyGuard&) = delete;
    AnomalyGuard& operator=(const AnomalyGuard&) = delete;

private:
    bool previous_;
};

}  // namespace autograd
