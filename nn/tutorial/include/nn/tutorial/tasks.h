// Built-in data for offline demos and tests.
#pragma once

#include <string>

#include <autograd/random.h>

namespace nn {

// The copy task: `records` lines, each a random 4-letter word (letters a-h) written 8 times,
// e.g. "cfab cfab cfab cfab cfab cfab cfab cfab\n". After the first word every character repeats the
// one 5 places back, so a model that reads 5 characters back predicts almost all of them, while a model
// that reads only the last character (the bigram) knows the word's letters no better than chance: it
// stays near ln 8 = 2.08 nats on each letter. What nobody can predict is the first word of each line.
std::string copy_task_text(int64_t records, autograd::Generator& gen);

}  // namespace nn
