// What the five programs that ask a model why (cache, lens, patch, attribute, ablate; docs/command-line.md)
// share: the checkpoint and its flags (--tokenizer, --n-head, --threads, --json), the model they load in
// eval mode, a prompt made into ids as generate makes it, a token argument (--answer, --wrong) made into
// its one id, the text of each id, and a table of numbers with labelled rows and columns for the readable
// output. Every check names the flag, and a bad one is a usage error (exit 2).
//
// Shape legend: T time (the prompt's tokens), L blocks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <autograd/threads.h>
#include <cli.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nn/generate/sample.h>
#include <nn/tokenizers/hf_tokenizer.h>
#include <nn/tokenizers/tokenizer.h>
#include <nn/train/trainer.h>

#include "load_checkpoint.h"
#include "token_text.h"

namespace interpret_args {

// The flags every one of the five takes.
struct Common {
    std::optional<cli::Input> checkpoint;  // given: the parser requires it
    std::optional<std::string> tokenizer;
    std::optional<int64_t> n_head;
    int64_t threads = 1;
    bool json = false;
};

// Declares CKPT, with --tokenizer and --n-head: first, as every program that reads one.
inline void add_checkpoint(cli::Parser& p, Common& c) {
    cli::checkpoint_argument(p, c.checkpoint, c.tokenizer, c.n_head,
                             "a checkpoint saved by train --out, GPT-2 weights, a llama2.c model or a\n"
                             "Hugging Face model folder",
                             true);
}

// Declares --threads and --json (`json_keys`: what its line holds): last, after the program's own flags.
inline void add_run_flags(cli::Parser& p, Common& c, const std::string& json_keys) {
    p.option("--threads", "N", "threads for the kernels                           (default 1)",
             [&c](const cli::Value& v) { c.threads = v.integer(1, 256); });
    p.flag("--json", "print one JSON line instead of a table: " + json_keys, [&c] { c.json = true; });
}

// The checkpoint, its model in eval mode (no dropout in what is read), the kernels' threads set.
inline nn::TrainedModel load_model(const Common& c) {
    autograd::set_num_threads(static_cast<int>(c.threads));
    nn::TrainedModel trained = load_checkpoint(c.checkpoint->path, {c.tokenizer, c.n_head});
    trained.model->eval();
    return trained;
}

// A tokenizer's message without the function that found it ("encode: "), as a program's messages name none.
inline std::string without_function(std::string message) {
    constexpr std::string_view kEncode = "encode: ";
    if (message.starts_with(kEncode)) message.erase(0, kEncode.size());
    return message;
}

// The ids a prompt is to the model, exactly as generate starts from it (nn::sample_start: BOS first for a
// llama2.c model; token ids separated by spaces for a model without a tokenizer): (T), T at most the
// model's block.
inline std::vector<int64_t> prompt_ids(const nn::TrainedModel& trained, const std::string& flag,
                                       const std::string& prompt) {
    std::vector<int64_t> ids;
    try {
        ids = nn::sample_start(*trained.tokenizer, trained.bos, prompt).ids;
    } catch (const std::invalid_argument& e) {  // text the tokenizer cannot encode
        throw cli::UsageError(fmt::format("{}: {}", flag, without_function(e.what())));
    }
    const auto T = static_cast<int64_t>(ids.size());
    if (T == 0) throw cli::UsageError(fmt::format("{} '{}' is no token at all", flag, prompt));
    if (T > trained.model->block_size())
        throw cli::UsageError(fmt::format("{} is {} {}, more than the model's block of {}", flag, T,
                                          nn::token_unit(*trained.tokenizer), trained.model->block_size()));
    return ids;
}

// The one id of a token argument (encoded without BOS); anything else names the flag and the ids.
inline int64_t token_id(const nn::TrainedModel& trained, const std::string& flag, const std::string& text) {
    std::vector<int64_t> ids;
    try {
        ids = trained.tokenizer->encode(text);
    } catch (const std::invalid_argument& e) {
        throw cli::UsageError(fmt::format("{}: {}", flag, without_function(e.what())));
    }
    if (ids.size() != 1)
        throw cli::UsageError(fmt::format("{} '{}' is {} tokens (ids [{}]); it must be exactly one", flag, text,
                                          ids.size(), fmt::join(ids, ", ")));
    return ids[0];
}

// Each id's text alone, as a sampler prints it (a Hugging Face tokenizer's piece keeps a word's space).
inline std::vector<std::string> token_texts(const nn::Tokenizer& tokenizer, std::span<const int64_t> ids) {
    const auto* hf = dynamic_cast<const nn::HfTokenizer*>(&tokenizer);
    std::vector<std::string> out;
    int64_t previous = -1;
    for (const int64_t id : ids) {
        out.push_back(hf ? hf->piece(previous, id) : tokenizer.decode(std::span(&id, 1)));
        previous = id;
    }
    return out;
}

// Terminal columns of a UTF-8 label: one a code point.
inline size_t columns(const std::string& label) {
    return static_cast<size_t>(std::count_if(label.begin(), label.end(),
                                             [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// Rows of labelled cells, each column as wide as its widest cell, printed to stdout.
inline void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
    std::vector<size_t> width(header.size(), 0);
    for (size_t j = 0; j < header.size(); ++j) width[j] = columns(header[j]);
    for (const auto& row : rows)
        for (size_t j = 0; j < row.size() && j < width.size(); ++j) width[j] = std::max(width[j], columns(row[j]));
    const auto line = [&](const std::vector<std::string>& cells) {
        std::string out;
        for (size_t j = 0; j < cells.size(); ++j) {
            if (j > 0) out += "  ";
            // the first column (the row's name) to the left, numbers to the right
            const std::string pad(width[j] - columns(cells[j]), ' ');
            out += j == 0 ? cells[j] + pad : pad + cells[j];
        }
        while (!out.empty() && out.back() == ' ') out.pop_back();
        fmt::print("{}\n", out);
    };
    line(header);
    for (const auto& row : rows) line(row);
}

// A (rows, columns) grid of numbers with its row names (`row_name` i) and column header, to `decimals`.
inline void print_grid(const std::string& corner, const std::vector<std::string>& column_names,
                       const std::vector<std::vector<double>>& values,
                       const std::function<std::string(size_t)>& row_name, int decimals = 4) {
    std::vector<std::string> header{corner};
    header.insert(header.end(), column_names.begin(), column_names.end());
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < values.size(); ++i) {
        std::vector<std::string> row{row_name(i)};
        for (const double v : values[i]) row.push_back(fmt::format("{:.{}f}", v, decimals));
        rows.push_back(std::move(row));
    }
    print_table(header, rows);
}

// "head 0", "head 1", ... : the columns of an (L, n_head) grid.
inline std::vector<std::string> head_columns(size_t n_head) {
    std::vector<std::string> out;
    for (size_t h = 0; h < n_head; ++h) out.push_back(fmt::format("head {}", h));
    return out;
}

}  // namespace interpret_args
