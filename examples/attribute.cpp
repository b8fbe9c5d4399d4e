// Direct logit attribution (nn::direct_logit_attribution): how much of the answer's logit at the last
// position each part of the residual stream writes directly: the embeddings, each head of each block,
// each MLP, through the final norm with its scale frozen. The parts and the bias left over sum to the
// model's own logit(--answer) - logit(--wrong) (logit(--answer) alone without --wrong).
//
//   attribute run.safetensors --prompt "the cat sat on the ma" --answer t --wrong n
//   attribute gpt2/model.safetensors --answer " Mary" --wrong " John" --json
//             --prompt "When Mary and John went to the store, John gave a drink to"
//
// --json prints one line: {"ids","tokens","embed","heads" (L x n_head),"mlps" (L; empty for an
// attention-only model),"bias","logit_diff"}.
// Exit status: 0 done, 1 a bad checkpoint or a model that is not an nn::Transformer, 2 bad arguments (an
// --answer or --wrong that is not one token).
//
// Shape legend: L blocks.
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
    std::optional<std::string> prompt, answer, wrong;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("attribute", "CKPT --prompt P --answer TOK [--wrong TOK] [options]",
                  "Direct logit attribution: what each head and MLP writes to the answer's logit.");
    interpret_args::add_checkpoint(p, o.common);
    p.option("--prompt", "P", "the text (or token ids, for a model without a tokenizer) the model reads",
             [&o](const cli::Value& v) { o.prompt = v.nonempty(); });
    p.option("--answer", "TOK", "one token: its logit at the last position is attributed ...",
             [&o](const cli::Value& v) { o.answer = v.nonempty(); });
    p.option("--wrong", "TOK", "... minus this one token's (default none)",
             [&o](const cli::Value& v) { o.wrong = v.nonempty(); });
    interpret_args::add_run_flags(p, o.common,
                                  "{\"ids\",\"tokens\",\"embed\",\"heads\",\"mlps\",\"bias\",\"logit_diff\"}");
    return p;
}

int run(const Options& o) {
    if (!o.prompt) throw cli::UsageError("--prompt P is required: what the model reads");
    if (!o.answer) throw cli::UsageError("--answer TOK is required: the token whose logit is attributed");
    nn::TrainedModel trained = interpret_args::load_model(o.common);
    const std::vector<int64_t> ids = interpret_args::prompt_ids(trained, "--prompt", *o.prompt);  // (T)
    nn::LogitDiff metric{.answer = interpret_args::token_id(trained, "--answer", *o.answer), .wrong = std::nullopt};
    if (o.wrong) metric.wrong = interpret_args::token_id(trained, "--wrong", *o.wrong);
    const nn::LogitAttribution a = nn::direct_logit_attribution(*trained.model, ids, metric);
    if (o.common.json) {
        fmt::print("{}\n", nlohmann::ordered_json{{"ids", ids},
                                                  {"tokens", interpret_args::token_texts(*trained.tokenizer, ids)},
                                                  {"embed", a.embed},
                                                  {"heads", a.heads},
                                                  {"mlps", a.mlps},
                                                  {"bias", a.bias},
                                                  {"logit_diff", a.logit_diff}}
                               .dump());
        return 0;
    }
    fmt::print("{} at the last position, written directly by each part of the stream:\n",
               o.wrong ? fmt::format("logit({}) - logit({})", visible_token(*o.answer), visible_token(*o.wrong))
                       : fmt::format("logit({})", visible_token(*o.answer)));
    const size_t n_head = a.heads.empty() ? 0 : a.heads[0].size();
    std::vector<std::string> columns = interpret_args::head_columns(n_head);
    std::vector<std::vector<double>> grid = a.heads;  // (L, n_head), then the MLP's column
    if (!a.mlps.empty()) {
        columns.push_back("mlp");
        for (size_t l = 0; l < grid.size(); ++l) grid[l].push_back(a.mlps[l]);
    }
    interpret_args::print_grid("block", columns, grid, [](size_t l) { return fmt::format("{}", l); });
    fmt::print("embeddings {:.4f}, bias {:.4f}; the model's own {:.4f}\n", a.embed, a.bias, a.logit_diff);
    return 0;
}

}  // namespace

int tools::attribute(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
