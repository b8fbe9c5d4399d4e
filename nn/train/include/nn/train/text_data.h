// Random (B, T) training batches with next-token targets, from a token stream split into training and
// validation.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <autograd/random.h>
#include <nn/tokenizers/token_ids.h>

namespace nn {

enum class Split { train, validation };

// One batch, row-major (B, T): targets[b * T + t] is the token that follows inputs[b * T + t].
struct Batch {
    std::vector<int64_t> inputs, targets;  // each (B, T)
    int64_t B = 0, T = 0;
};

// A token stream read in order, as llm.c's validation and `evaluate` read it: window i is tokens
// [iBT, (i+1)BT + 1), its first B T as (B, T) inputs and the same shifted by one as targets.
// consecutive_windows is how many whole ones the stream holds; window i must be one of them.
int64_t consecutive_windows(const TokenIds& ids, int64_t B, int64_t T);
Batch consecutive_window(const TokenIds& ids, int64_t i, int64_t B, int64_t T);

// A token stream split in two: the first `train_fraction` (floor) for training, the rest for
// validation, as in Karpathy's "Let's build GPT" lecture. The ids are kept as given (one copy, no
// separate split copies).
class TextData {
public:
    explicit TextData(TokenIds tokens, double train_fraction = 0.9);
    // Separate streams, as nanoGPT's train.bin and val.bin.
    TextData(TokenIds train, TokenIds validation);
    explicit TextData(const std::vector<int64_t>& tokens, double train_fraction = 0.9);

    int64_t size(Split split) const;  // tokens in the split
    // The whole stream, training split first; with a separate validation stream, the training stream.
    const TokenIds& tokens() const { return tokens_; }
    const TokenIds* separate_validation() const { return validation_ ? &*validation_ : nullptr; }
    // The split's ids [first, first + count) into out, widened; the range must be inside the split.
    void copy(Split split, int64_t first, int64_t count, int64_t* out) const;
    // B windows of T tokens at start positions drawn uniformly with gen.randint (one draw per row, in
    // row order), each with its T next-token targets. Needs T + 1 tokens in the split.
    Batch batch(Split split, int64_t B, int64_t T, autograd::Generator& gen) const;

private:
    TokenIds tokens_;
    std::optional<TokenIds> validation_;
    int64_t n_train_ = 0;
};

}  // namespace nn
