#include "autograd/random.h"

#include <cmath>

#include "autograd/tensor.h"

namespace autograd {

uint64_t Generator::next_u64() {
    // splitmix64 (Steele, Lea, Flood 2014): the state is a counter, so it is trivially saved and restored.
    uint64_t z = (state_.counter += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float Generator::uniform() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }

float Generator::uniform(float low, float high) { return low + (high - low) * uniform(); }

float Generator::normal() {
    if (state_.has_spare) {
        state_.has_spare = false;
        return state_.spare;
    }
    // Box-Muller in double; u1 in (0, 1] so the log is finite.
    const double u1 = (static_cast<double>(next_u64() >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 6.283185307179586476925 * u2;
    state_.spare = static_cast<float>(radius * std::sin(angle));
    state_.has_spare = true;
    return static_cast<float>(radius * std::cos(angle));
}

int64_t Generator::randint(int64_t n) {
    check(n > 0, "randint: upper bound {} must be positive", n);
    // Rejection sampling removes the modulo bias.
    const uint64_t range = static_cast<uint64_t>(n);
    const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    uint64_t r;
    do r = next_u64();
    while (r >= limit);
    return static_cast<int64_t>(r % range);
}

Generator& default_generator() {
    static Generator gen(0);
    return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

Tensor randn(const Shape& shape, Generator& gen, float mean, float std) {
    Tensor t = zeros(shape);
    if (!t.has_values()) return t;  // shapes only: nothing drawn
    for (float& v : t.data()) v = gen.normal(mean, std);
    return t;
}

Tensor rand(const Shape& shape, Generator& gen, float low, float high) {
    Tensor t = zeros(shape);
    if (!t.has_values()) return t;  // shapes only: nothing drawn
    for (float& v : t.data()) v = gen.uniform(low, high);
    return t;
}

}  // namespace autograd
