// Sample text from a checkpoint saved by examples/train.
//
//   generate run.safetensors --prompt "ROMEO:" --chars 300 --temperature 0.8 --top-k 10 --seed 7
//
// Exit status: 0 done, 1 a bad checkpoint or prompt or a failed write (message on stderr), 2 bad arguments.
#include <cstdint>
#include <optional>
#include <string>

#include <cli.h>
#include <nn/train/sample.h>
#include <nn/train/trainer.h>

namespace {

struct Options {
    std::string checkpoint;
    std::optional<std::string> prompt;
    int64_t chars = 500, top_k = 0, seed = 1;
    float temperature = 1.0f;
};

int run(const Options& o) {
    nn::TrainedModel trained = nn::load_trained_model(o.checkpoint);
    const std::string start = o.prompt.value_or(nn::default_prompt(trained.tokenizer));
    autograd::Generator gen(static_cast<uint64_t>(o.seed));
    const auto produced = nn::generate(*trained.model, trained.tokenizer.encode(start), o.chars,
                                       {.temperature = o.temperature, .top_k = o.top_k}, gen);
    fmt::print("{}{}\n", start, trained.tokenizer.decode(produced));
    return 0;  // cli::run checks that standard output was written
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    cli::Parser p("generate", "CKPT [options]", "Sample text from a checkpoint saved by train.");
    p.positional("CKPT", "a checkpoint saved by train --out", [&o](const cli::Value& v) { o.checkpoint = v.file(); });
    p.option("--prompt", "TEXT", "what the sample starts from (default a newline, or the first character)",
             [&o](const cli::Value& v) { o.prompt = v.nonempty(); });
    p.option("--chars", "N", "characters to sample                      (default 500)",
             [&o](const cli::Value& v) { o.chars = v.integer(0, 1 << 24); });
    p.option("--temperature", "X", "sampling temperature                      (default 1)",
             [&o](const cli::Value& v) { o.temperature = v.number(0.0, 100.0, true); });
    p.option("--top-k", "K", "the K most likely characters only; 0 (or more than the vocabulary) = all",
             [&o](const cli::Value& v) { o.top_k = v.integer(0, 1 << 24); });
    p.option("--seed", "S", "sampling seed                             (default 1)",
             [&o](const cli::Value& v) { o.seed = v.integer(0, INT64_MAX); });
    return cli::run(p, argc, argv, [&o] { return run(o); });
}
