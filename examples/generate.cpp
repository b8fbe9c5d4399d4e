// Sample text from a checkpoint saved by examples/train.
//
//   generate run.safetensors --prompt "ROMEO:" --chars 300 --temperature 0.8 --top-k 10 --seed 7
//
// Exit status: 0 done, 1 a bad checkpoint or prompt (message on stderr), 2 bad arguments.
#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include <nn/train/sample.h>
#include <nn/train/trainer.h>

namespace {

constexpr const char* kUsage = R"(usage: generate CKPT [options]
  --prompt TEXT        what the sample starts from (default a newline, or the first character)
  --chars N            characters to sample                      (default 500)
  --temperature X      sampling temperature                      (default 1)
  --top-k K            the K most likely characters only; 0 = all (default 0)
  --seed S             sampling seed                             (default 1)
  --help               this text
)";

[[noreturn]] void usage_error(const std::string& problem) {
    fmt::print(stderr, "generate: {}\n\n{}", problem, kUsage);
    std::exit(2);
}

int64_t to_int(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
    char* end = nullptr;
    errno = 0;  // strtoll clamps a number out of its range and says so only here
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max)
        usage_error(fmt::format("{} needs a whole number from {} to {}, got '{}'", flag, min, max, text));
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    ::signal(SIGPIPE, SIG_IGN);  // a closed pipe on stdout is a failed write, reported, not a silent death
    std::optional<std::string> checkpoint, prompt;
    int64_t chars = 500, top_k = 0, seed = 1;
    float temperature = 1.0f;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            fmt::print("{}", kUsage);
            return 0;
        }
        if (!arg.starts_with("--")) {
            if (checkpoint) usage_error(fmt::format("unexpected argument '{}'", arg));
            checkpoint = arg;
            continue;
        }
        if (i + 1 >= argc) usage_error(fmt::format("{} needs a value", arg));
        const std::string value = argv[++i];
        if (arg == "--prompt") prompt = value;
        else if (arg == "--chars") chars = to_int(arg, value, 0, 1 << 24);
        else if (arg == "--top-k") top_k = to_int(arg, value, 0, 1 << 24);
        else if (arg == "--seed") seed = to_int(arg, value, 0, INT64_MAX);
        else if (arg == "--temperature") {
            char* end = nullptr;
            temperature = std::strtof(value.c_str(), &end);
            if (value.empty() || *end != '\0' || !(temperature > 0.0f) || temperature > 100.0f)
                usage_error(fmt::format("--temperature needs a number above 0 and at most 100, got '{}'", value));
        } else usage_error(fmt::format("unknown flag '{}'", arg));
    }
    if (!checkpoint) usage_error("no checkpoint given");
    if (prompt && prompt->empty()) usage_error("--prompt needs at least one character");

    try {
        nn::TrainedModel trained = nn::load_trained_model(*checkpoint);
        const std::string start = prompt.value_or(nn::default_prompt(trained.tokenizer));
        autograd::Generator gen(static_cast<uint64_t>(seed));
        const auto produced = nn::generate(*trained.model, trained.tokenizer.encode(start), chars,
                                           {.temperature = temperature, .top_k = top_k}, gen);
        fmt::print("{}{}\n", start, trained.tokenizer.decode(produced));
        // (stdout is buffered: a full disk or a closed pipe shows only when it is flushed)
        if (std::fflush(stdout) != 0 || std::ferror(stdout))
            throw std::runtime_error(fmt::format("cannot write the text to standard output ({})", std::strerror(errno)));
    } catch (const std::exception& e) {
        fmt::print(stderr, "generate: {}\n", e.what());
        return 1;
    }
    return 0;
}
