// Activation patching (nn::patch): which activations carry what makes the clean prompt's answer? The
// model runs on the corrupt prompt with one site's value taken from its run on the clean prompt, one site
// at a time, and the metric, logit(--answer) - logit(--wrong) at the last position, is read each time.
// --method attribution estimates the same numbers to first order from two forwards and one backward.
//
//   patch run.safetensors --clean "the cat sat" --corrupt "the dog sat" --answer " " --wrong s --site resid_pre
//   patch gpt2/model.safetensors --answer " Mary" --wrong " John" --site head --method attribution --json
//         --clean "When Mary and John went to the store, John gave a drink to"
//         --corrupt "When Mary and John went to the store, Mary gave a drink to"
//
// --site resid_pre, attn_out or mlp_out patches one block's one position (a grid of L x T); head patches
// one head's output (blocks.L.attn.hook_z's slice) at every position (L x n_head). The table shows the
// metric of each patched run; "clean" and "corrupt" are the two runs' own. --json prints one line:
// {"site","method","clean","corrupt","effects"}.
// Exit status: 0 done, 1 a bad checkpoint, 2 bad arguments: prompts of different lengths, an --answer or
// --wrong that is not one token, a site the model lacks (mlp_out on an attention-only model).
//
// Shape legend: L blocks, T time (the prompts' tokens).
#include <algorithm>
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
    std::optional<std::string> clean, corrupt, answer, wrong;
    std::optional<nn::PatchSite> site;
    nn::PatchMethod method = nn::PatchMethod::activation;
};

constexpr nn::PatchSite kSites[] = {nn::PatchSite::resid_pre, nn::PatchSite::attn_out, nn::PatchSite::mlp_out,
                                    nn::PatchSite::head};

cli::Parser make_parser(Options& o) {
    cli::Parser p("patch", "CKPT --clean P --corrupt P --answer TOK --wrong TOK --site S [options]",
                  "Activation patching: the metric of the corrupt run with one site taken from the clean run.");
    interpret_args::add_checkpoint(p, o.common);
    p.option("--clean", "P", "the prompt whose answer is --answer",
             [&o](const cli::Value& v) { o.clean = v.nonempty(); });
    p.option("--corrupt", "P", "a prompt of as many tokens that changes the answer",
             [&o](const cli::Value& v) { o.corrupt = v.nonempty(); });
    p.option("--answer", "TOK", "one token: the metric is its logit at the last position ...",
             [&o](const cli::Value& v) { o.answer = v.nonempty(); });
    p.option("--wrong", "TOK", "... minus this one token's", [&o](const cli::Value& v) { o.wrong = v.nonempty(); });
    p.option("--site", "S", "resid_pre, attn_out, mlp_out (one block's one position) or head",
             [&o](const cli::Value& v) {
                 const std::string name = v.choice({"resid_pre", "attn_out", "mlp_out", "head"});
                 for (const nn::PatchSite s : kSites)
                     if (name == nn::patch_site_name(s)) o.site = s;
             });
    p.option("--method", "M", "activation (a run each) or attribution (the first-order estimate)  (default activation)",
             [&o](const cli::Value& v) {
                 o.method = v.choice({"activation", "attribution"}) == "activation" ? nn::PatchMethod::activation
                                                                                    : nn::PatchMethod::attribution;
             });
    interpret_args::add_run_flags(p, o.common, "{\"site\",\"method\",\"clean\",\"corrupt\",\"effects\"}");
    return p;
}

// The hook point a site patches, block 0's: a model without it cannot be patched there.
std::string site_point(nn::PatchSite site) {
    return site == nn::PatchSite::head ? "blocks.0.attn.hook_z"
                                       : fmt::format("blocks.0.hook_{}", nn::patch_site_name(site));
}

int run(const Options& o) {
    const auto require = [](bool given, const char* flag) {
        if (!given) throw cli::UsageError(fmt::format("{} is required", flag));
    };
    require(o.clean.has_value(), "--clean P");
    require(o.corrupt.has_value(), "--corrupt P");
    require(o.answer.has_value(), "--answer TOK");
    require(o.wrong.has_value(), "--wrong TOK");
    require(o.site.has_value(), "--site S");
    nn::TrainedModel trained = interpret_args::load_model(o.common);
    const std::vector<int64_t> clean = interpret_args::prompt_ids(trained, "--clean", *o.clean),  // (T)
        corrupt = interpret_args::prompt_ids(trained, "--corrupt", *o.corrupt);                   // (T)
    if (clean.size() != corrupt.size())
        throw cli::UsageError(fmt::format("--clean is {} tokens and --corrupt {}: patching needs as many in both",
                                          clean.size(), corrupt.size()));
    const nn::LogitDiff metric{.answer = interpret_args::token_id(trained, "--answer", *o.answer),
                               .wrong = interpret_args::token_id(trained, "--wrong", *o.wrong)};
    const std::vector<std::string> points = trained.model->hook_point_names();
    if (std::find(points.begin(), points.end(), site_point(*o.site)) == points.end())
        throw cli::UsageError(fmt::format("--site {}: this {} model has no hook point {}", nn::patch_site_name(*o.site),
                                          trained.config.kind, site_point(*o.site)));
    const nn::Patching r = nn::patch(*trained.model, clean, corrupt, metric, *o.site, o.method);
    const char* method = o.method == nn::PatchMethod::activation ? "activation" : "attribution";
    if (o.common.json) {
        fmt::print("{}\n", nlohmann::ordered_json{{"site", nn::patch_site_name(*o.site)},
                                                  {"method", method},
                                                  {"clean", r.clean},
                                                  {"corrupt", r.corrupt},
                                                  {"effects", r.effects}}
                               .dump());
        return 0;
    }
    fmt::print("logit({}) - logit({}) at the last position: clean {:.4f}, corrupt {:.4f}\n", visible_token(*o.answer),
               visible_token(*o.wrong), r.clean, r.corrupt);
    fmt::print("the corrupt run's, with {} taken from the clean run ({} patching):\n", nn::patch_site_name(*o.site),
               method);
    std::vector<std::string> columns;
    if (*o.site == nn::PatchSite::head)
        columns = interpret_args::head_columns(r.effects.empty() ? 0 : r.effects[0].size());
    else {
        const auto a = interpret_args::token_texts(*trained.tokenizer, clean),
                   b = interpret_args::token_texts(*trained.tokenizer, corrupt);
        for (size_t p = 0; p < a.size(); ++p)  // where the prompts differ: clean/corrupt
            columns.push_back(a[p] == b[p] ? visible_token(a[p])
                                           : fmt::format("{}/{}", visible_token(a[p]), visible_token(b[p])));
    }
    interpret_args::print_grid("block", columns, r.effects, [](size_t l) { return fmt::format("{}", l); });
    return 0;
}

}  // namespace

int tools::patch(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
