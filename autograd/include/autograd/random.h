// A seeded random generator of our own: the same seed gives the same numbers on every standard library
// and machine (std::normal_distribution differs between libstdc++ and libc++).
#pragma once

#include <cstdint>

#include "autograd/check.h"

namespace autograd {

class Tensor;

class Generator {
public:
    // Everything needed to resume the stream exactly (saved in training checkpoints).
    struct State {
        uint64_t counter = 0;
        bool has_spare = false;  // Box-Muller makes normals in pairs; the second waits here
        float spare = 0.0f;
        bool operator==(const State&) const = default;
    };

    explicit Generator(uint64_t seed = 0) { manual_seed(seed); }
    void manual_seed(uint64_t seed) { state_ = State{seed, false, 0.0f}; }

    uint64_t next_u64();                   // splitmix64: passes BigCrush, one add and three mixes
    float uniform();                       // [0, 1), 24 random bits
    float uniform(float low, float high);  // [low, high)
    float normal();                        // mean 0, std 1 (Box-Muller)
    float normal(float mean, float std) { return mean + std * normal(); }
    int64_t randint(int64_t n);  // [0, n), unbiased

    State state() const { return state_; }
    void set_state(const State& state) { state_ = state; }

private:
    State state_;
};

// The process-wide generator used where none is passed (module initialization). manual_seed() reseeds it.
Generator& default_generator();
void manual_seed(uint64_t seed);

// Tensors of random values; each draws from `gen` in row-major order.
Tensor randn(const Shape& shape, Generator& gen, float mean = 0.0f, float std = 1.0f);
Tensor rand(const Shape& shape, Generator& gen, float low = 0.0f, float high = 1.0f);

}  // namespace autograd
