// Sample text from a checkpoint saved by examples/train, character by character as it is produced.
//
//   generate run.safetensors --prompt "ROMEO:" --chars 300 --temperature 0.8 --top-k 10 --seed 7
//   generate bpe-run.safetensors --tokens 200       # a GPT-2 BPE model: its tokenizer is in the checkpoint
//   generate run.safetensors --chars 2000 --no-cache --json      # the uncached reference, timed
//   generate gpt2_124M.bin --tokens 20 --prompt "464 3290"     # no tokenizer: token ids in and out
//   generate stories260K.bin --temperature 0 --json             # llama2.c's: from BOS, greedy, until BOS
//   generate SmolLM-135M/ --prompt "Gravity is" --tokens 50       # a Hugging Face Llama folder
//
// The model keeps each attention head's keys and values (nn/decoder.h); --no-cache reruns the whole
// window for every character instead. Both read the same windows (a full window keeps its last half),
// so the same seed gives the same text. A llama2.c model (its file, or a checkpoint with its tokenizer)
// samples as run.c does: from BOS (id 1) and the prompt's tokens (BOS alone without --prompt), stopping
// when BOS is drawn, which is not printed. A Hugging Face Llama folder samples from BOS as docs/llama.md
// says, and stops at BOS or at config.json's eos_token_id. --temperature 0 is greedy (the first largest logit) for every kind.
//
// Exit status: 0 done, 1 a bad checkpoint (one whose logits are not finite too) or prompt or a failed write
// (message on stderr), 2 bad arguments, 130 stopped by SIGINT (Ctrl-C; 143 SIGTERM, 129 SIGHUP) with the text
// printed so far kept.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <autograd/threads.h>

#include <cli.h>
#include <nlohmann/json.hpp>
#include <nn/generate/sample.h>
#include <nn/tokenizers/hf_tokenizer.h>
#include <nn/train/text.h>
#include <nn/train/trainer.h>

#include "load_checkpoint.h"
#include "precision_flag.h"
#include "stop_signals.h"
#include "tools.h"

namespace {

struct Options {
    std::optional<cli::Input> checkpoint;  // given: the parser requires it
    std::optional<std::string> tokenizer;
    std::optional<int64_t> n_head;
    std::optional<std::string> prompt, prompt_file;
    int64_t chars = 500, top_k = 0, seed = 1, samples = 1, threads = 1;
    std::optional<int64_t> tokens;  // --tokens N: N tokens instead of --chars characters
    float temperature = 1.0f;
    bool cache = true, json = false;
    autograd::Precision precision = autograd::Precision::float32;
};

// Bytes of decoded tokens out as whole UTF-8 characters, counting them: a BPE token may end inside a
// character, which waits for the next token; a byte that cannot start or continue one is U+FFFD.
class CharacterPrinter {
public:
    explicit CharacterPrinter(int64_t limit) : limit_(limit) {}
    // Prints what completes; false once `limit` characters are out.
    bool add(std::string_view bytes) {
        pending_ += bytes;
        size_t i = 0;
        while (i < pending_.size() && printed_ < limit_) {
            const auto lead = static_cast<unsigned char>(pending_[i]);
            const size_t length = lead < 0x80                   ? 1
                                  : lead >= 0xC2 && lead < 0xE0 ? 2
                                  : lead >= 0xE0 && lead < 0xF0 ? 3
                                  : lead >= 0xF0 && lead < 0xF5 ? 4
                                                                : 0;
            size_t have = 1;
            while (length > 1 && have < length && i + have < pending_.size() &&
                   (static_cast<unsigned char>(pending_[i + have]) & 0xC0) == 0x80)
                ++have;
            if (length > 1 && have < length && i + have == pending_.size()) break;  // the rest comes later
            if (length == 0 || have < length) {
                std::fputs("\xEF\xBF\xBD", stdout);
                i += have;
            } else {
                std::fwrite(pending_.data() + i, 1, length, stdout);
                i += length;
            }
            ++printed_;
        }
        pending_.erase(0, i);
        return printed_ < limit_;
    }
    int64_t printed() const { return printed_; }

private:
    int64_t limit_, printed_ = 0;
    std::string pending_;
};

int run(const Options& o, const cli::Parser& p) {
    if (p.given("--prompt") && p.given("--prompt-file"))
        throw cli::UsageError("--prompt and --prompt-file are one or the other");
    if (p.given("--tokens") && p.given("--chars")) throw cli::UsageError("--tokens and --chars are one or the other");
    autograd::set_num_threads(static_cast<int>(o.threads));
    nn::TrainedModel trained = load_checkpoint(o.checkpoint->path, {o.tokenizer, o.n_head});
    const std::optional<std::string> prompt = o.prompt_file ? nn::read_text_file(*o.prompt_file) : o.prompt;
    const auto [start, context] = nn::sample_start(*trained.tokenizer, trained.bos, prompt);
    autograd::Generator gen(static_cast<uint64_t>(o.seed));
    const cli::StopSignals stop;  // the sampling loop reads it after each character and stops there
    const precision_flag::Scope precision(o.precision);  // the weights do not change while sampling

    using Clock = std::chrono::steady_clock;
    int64_t produced = 0, tokens = 0;
    std::vector<int64_t> ids;  // every sample's, for --json
    double seconds = 0;
    // Characters are tokens for a character model; a BPE token is bytes, so --chars N runs until N
    // characters are out (at most 4 tokens a character: one a byte).
    // Without a tokenizer (GPT-2 weights alone) the text is token ids, " 464 3290": --chars N is N ids.
    const bool characters = dynamic_cast<const nn::CharTokenizer*>(trained.tokenizer.get()) != nullptr;
    const bool ids_only = nn::as_ids_only(*trained.tokenizer) != nullptr;
    const auto* hf = dynamic_cast<const nn::HfTokenizer*>(trained.tokenizer.get());
    const int64_t steps = o.tokens ? *o.tokens : characters || ids_only ? o.chars : 4 * o.chars;
    // one window for every sample; its decoder says whether a cache ran (a kind without one reruns the window)
    nn::GenerationWindow window(o.cache ? trained.model->cached_decoder() : nn::window_decoder(*trained.model));
    for (int64_t sample = 0; sample < o.samples && cli::stop_signal() == 0; ++sample) {
        if (sample > 0) std::fputs("---------------\n", stdout);  // between samples, as nanoGPT's sample.py
        std::fputs(start.c_str(), stdout);
        std::fflush(stdout);
        const auto t0 = Clock::now();
        // each character as it comes; a failed write (a closed pipe) stops here, cli::run reports it
        CharacterPrinter printer(o.tokens || ids_only ? INT64_MAX : o.chars);
        int64_t previous = context.empty() ? -1 : context.back();  // (BOS is special: a text starts after it)
        nn::generate(*trained.model, window, context, steps,
                     {.temperature = o.temperature, .top_k = o.top_k, .model = o.checkpoint->path}, gen,
                     [&](int64_t id) {
                         ++tokens;
                         ids.push_back(id);
                         // run.c's end: BOS; transformers': EOS; neither printed
                         if (id == trained.bos || id == trained.eos) return false;
                         // a tokenizer.json's decoder strips a text's first space: not a word's in the middle
                         const bool more = printer.add(hf ? hf->piece(std::exchange(previous, id), id)
                                                          : trained.tokenizer->decode(std::span(&id, 1)));
                         return std::fflush(stdout) == 0 && cli::stop_signal() == 0 && (more || o.tokens);
                     });
        produced += printer.printed();
        seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        std::fputs("\n", stdout);
        if (std::ferror(stdout)) break;
    }
    if (o.json) {
        const nlohmann::ordered_json line = {
            {"chars", produced},
            {"tokens", tokens},
            {"seconds", seconds},
            {"chars_per_s", seconds > 0 ? static_cast<double>(produced) / seconds : 0.0},
            {"tokens_per_s", seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0},
            {"precision", std::string(autograd::precision_name(o.precision))},
            {"cache", window.decoder().cached()},
            {"ids", ids}};
        std::fputs((line.dump() + "\n").c_str(), stdout);
    }
    if (cli::stop_signal() != 0) {
        std::fflush(stdout);
        std::fprintf(stderr, "generate: interrupted after %lld characters\n", static_cast<long long>(produced));
        return 128 + cli::stop_signal();
    }
    return 0;  // cli::run checks that standard output was written
}

cli::Parser make_parser(Options& o) {
    cli::Parser p("generate", "CKPT [options]", "Sample text from a checkpoint saved by train, printed as it comes.");
    cli::checkpoint_argument(p, o.checkpoint, o.tokenizer, o.n_head,
                             "a checkpoint saved by train --out, or GPT-2 weights", true);
    p.option("--prompt", "TEXT", "what the sample starts from (default a newline, or the first character)",
             [&o](const cli::Value& v) { o.prompt = v.nonempty(); });
    p.option("--prompt-file", "F", "the prompt read from a file (instead of --prompt)",
             [&o](const cli::Value& v) { o.prompt_file = v.file(); });
    p.option("--chars", "N", "characters to sample                      (default 500)",
             [&o](const cli::Value& v) { o.chars = v.integer(0, 1 << 24); });
    p.option("--tokens", "N",
             "tokens to sample instead (a BPE model's tokens are pieces of words;\n"
             "a model without a tokenizer prints token ids, and --chars counts them)",
             [&o](const cli::Value& v) { o.tokens = v.integer(0, 1 << 24); });
    p.option("--samples", "N", "samples from the same prompt, one after another (default 1)",
             [&o](const cli::Value& v) { o.samples = v.integer(1, 1 << 20); });
    p.option("--temperature", "X", "sampling temperature; 0: greedy, the most likely token (default 1)",
             [&o](const cli::Value& v) { o.temperature = v.number(0.0, 100.0); });
    p.option("--top-k", "K", "the K most likely characters only; 0 (or more than the vocabulary) = all",
             [&o](const cli::Value& v) { o.top_k = v.integer(0, 1 << 24); });
    p.option("--seed", "S", "sampling seed                             (default 1)",
             [&o](const cli::Value& v) { o.seed = v.integer(0, INT64_MAX); });
    p.flag("--no-cache", "rerun the whole window for every character (the reference the cache must equal)",
           [&o] { o.cache = false; });
    p.option("--threads", "N", "threads for the kernels                   (default 1)",
             [&o](const cli::Value& v) { o.threads = v.integer(1, 256); });
    precision_flag::add(p, o.precision);
    p.flag("--json",
           "end with one line {\"chars\", \"tokens\", \"seconds\", \"chars_per_s\", \"tokens_per_s\",\n"
           "\"precision\", \"cache\", \"ids\"}: \"ids\" every sampled token id, in order (a sample's last may be\n"
           "BOS, which ended it)",
           [&o] { o.json = true; });
    return p;
}

}  // namespace

int tools::generate(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
