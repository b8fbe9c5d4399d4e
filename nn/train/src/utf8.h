// UTF-8 checks shared by the tokenizers (private to nn/train/src).
#pragma once

#include <cstdint>
#include <string_view>

namespace nn::detail {

// Throws std::invalid_argument "<who>: invalid UTF-8 at byte offset N: <reason>" at the first invalid
// sequence of `text` (N counted from `base`), as the character tokenizer does.
void check_utf8(std::string_view text, const char* who, uint64_t base = 0);

}  // namespace nn::detail
