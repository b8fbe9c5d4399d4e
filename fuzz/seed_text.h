// The text the seed training checkpoints of fuzz/corpus/checkpoint were trained on (make_seeds.cpp), so
// the checkpoint target's resume reaches past the data fingerprint.
#pragma once

#include <string_view>

namespace fuzz {
inline constexpr std::string_view kSeedText = "hello world, hello there\nthe quick brown fox jumps over the lazy dog\n";
}
