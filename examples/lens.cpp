// The logit lens (nostalgebraist, 2020; nn::logit_lens): the residual stream before each block, and after
// the last, read out through the final norm and the unembedding, as if the model stopped there. What the
// model would predict at each position after 0, 1, ... L blocks: where the answer appears.
//
//   lens run.safetensors --prompt "the cat sat on the mat"
//   lens gpt2/model.safetensors --prompt "The Eiffel Tower is in the city of" --json
//
// Row l is the stream into block l (l = L: the model's own logits). The table shows each position's most
// likely next token, then the log-probability of the token that does come next. --json prints one line:
// {"ids","tokens","logprob_next" (L + 1 rows of T - 1),"top" (L + 1 rows of T),"top_tokens"}.
// Exit status: 0 done, 1 a bad checkpoint or a model that is not an nn::Transformer, 2 bad arguments.
//
// Shape legend: L blocks, T time (the prompt's tokens).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <cli.h>
#include <nlohmann/json.hpp>
#include <nn/interpret/probes.h>

#include "interpret_args.h"
#include "tools.h"

namespace {

struct Options {
    interpret_args::Common common;
    std::optional<std::string> prompt;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("lens", "CKPT --prompt P [options]",
                  "The logit lens: what the model would predict after each block, at each position.");
    interpret_args::add_checkpoint(p, o.common);
    p.option("--prompt", "P", "the text (or token ids, for a model without a tokenizer) the model reads",
             [&o](const cli::Value& v) { o.prompt = v.nonempty(); });
    interpret_args::add_run_flags(p, o.common, "{\"ids\",\"tokens\",\"logprob_next\",\"top\",\"top_tokens\"}");
    return p;
}

std::string layer_name(size_t l, size_t L) { return l == L ? "final" : fmt::format("block {}", l); }

int run(const Options& o) {
    if (!o.prompt) throw cli::UsageError("--prompt P is required: what the model reads");
    nn::TrainedModel trained = interpret_args::load_model(o.common);
    const std::vector<int64_t> ids = interpret_args::prompt_ids(trained, "--prompt", *o.prompt);  // (T)
    const nn::LogitLens lens = nn::logit_lens(*trained.model, ids);
    const auto texts = [&](std::span<const int64_t> some) {
        return interpret_args::token_texts(*trained.tokenizer, some);
    };
    const std::vector<std::string> tokens = texts(ids);
    if (o.common.json) {
        std::vector<std::vector<std::string>> top_tokens;  // (L + 1, T)
        for (const auto& row : lens.top) top_tokens.push_back(texts(row));
        fmt::print("{}\n", nlohmann::ordered_json{{"ids", ids},
                                                  {"tokens", tokens},
                                                  {"logprob_next", lens.logprob_next},
                                                  {"top", lens.top},
                                                  {"top_tokens", top_tokens}}
                               .dump());
        return 0;
    }
    const size_t L = lens.top.size() - 1;
    std::vector<std::string> columns;  // "p:token"
    for (size_t p = 0; p < tokens.size(); ++p) columns.push_back(visible_token(tokens[p]));
    fmt::print("the most likely next token after each block (the stream into block l; final: the model's)\n");
    std::vector<std::vector<std::string>> rows;
    for (size_t l = 0; l <= L; ++l) {
        std::vector<std::string> row{layer_name(l, L)};
        for (const std::string& t : texts(lens.top[l])) row.push_back(visible_token(t));
        rows.push_back(std::move(row));
    }
    std::vector<std::string> header{"read after"};
    header.insert(header.end(), columns.begin(), columns.end());
    interpret_args::print_table(header, rows);
    // two decimals: a row of a long prompt stays on a screen, and 0.01 nats is no difference to read
    fmt::print("\nthe log-probability of the token that comes next (column: the next token)\n");
    interpret_args::print_grid(
        "read after", std::vector<std::string>(columns.begin() + 1, columns.end()), lens.logprob_next,
        [L](size_t l) { return layer_name(l, L); }, 2);
    return 0;
}

}  // namespace

int tools::lens(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
