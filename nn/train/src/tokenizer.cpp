#include "nn/train/tokenizer.h"

namespace nn {

Tokenizer::~Tokenizer() = default;

}  // namespace nn
