#include "nn/tutorial/tasks.h"

#include <autograd/check.h>

namespace nn {

std::string copy_task_text(int64_t records, autograd::Generator& gen) {
    autograd::check(records > 0, "copy_task_text: records must be positive, got {}", records);
    constexpr int kRepeats = 8;
    std::string text;
    text.reserve(static_cast<size_t>(records) * 5 * kRepeats);
    for (int64_t r = 0; r < records; ++r) {
        std::string word(4, ' ');
        for (char& c : word) c = static_cast<char>('a' + gen.randint(8));
        for (int k = 0; k < kRepeats; ++k) text += word + (k + 1 < kRepeats ? ' ' : '\n');
    }
    return text;
}

}  // namespace nn
