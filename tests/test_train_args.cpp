// train's command line (examples/train_args.h) for the training settings, which it makes from the one
// table nn::train_settings() (issue 26): every row is a flag (its key's name, train_args::flag_of) that
// parses, refuses what its limits refuse, appears in --help with the default TrainConfig{} has, and is
// listed in docs/settings.md.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "setting_values.h"
#include "train_args.h"

namespace {

using Catch::Matchers::Contains;

// The parser's result for `args` (after "train"), without the checks across flags.
train_args::Options parse(const std::vector<std::string>& args) {
    train_args::Options o;
    cli::Parser p = train_args::make_parser(o);
    std::vector<const char*> argv{"train"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    p.parse(static_cast<int>(argv.size()), argv.data());
    return o;
}

// The message of the cli::UsageError parsing `args` throws (with the checks across flags).
std::string usage_error(const std::vector<std::string>& args) {
    std::vector<const char*> argv{"train"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    try {
        (void)train_args::parse_args(static_cast<int>(argv.size()), argv.data());
    } catch (const cli::UsageError& e) {
        return e.what();
    }
    FAIL("train accepted " << fmt::format("{}", fmt::join(args, " ")));
    return {};
}

std::string flag(const nn::TrainSetting& s) { return train_args::flag_of(s.key); }

// A value as a flag's text: a whole number in decimal, a float as fmt writes it, 0 and 1 of a two-word
// setting as its words (another number as itself: neither word).
std::string as_text(const nn::TrainSetting& s, double x) {
    if (s.on_off() && (x == 0 || x == 1)) return std::string(s.words[x == 1 ? 1 : 0]);
    if (!s.whole()) return fmt::format("{}", x);
    return x < 0 ? fmt::format("{}", int64_t(x)) : fmt::format("{}", uint64_t(x));
}

// The help of one flag: from its "  --flag META" line to the next flag's line.
std::string help_of(const std::string& help, const nn::TrainSetting& s) {
    const std::string start = fmt::format("\n  {} {} ", flag(s), train_args::value_name(s));
    const size_t at = help.find(start);
    if (at == std::string::npos) return {};
    return help.substr(at + 1, help.find("\n  -", at + 1) - at);
}

}  // namespace

TEST_CASE("Every setting of the table is a flag of train's that sets it, and --help shows its default",
          "[train_args][settings]") {
    const train_args::Options defaults = parse({});
    train_args::Options o;
    const std::string help = train_args::make_parser(o).help();
    for (const nn::TrainSetting& s : nn::train_settings()) {
        INFO(flag(s));
        const double x = setting_values::accepted(s);
        const train_args::Options given = parse({flag(s), as_text(s, x)});
        CHECK(setting_values::get(s, given.config) == x);
        CHECK(setting_values::get(s, defaults.config) == setting_values::get(s, nn::TrainConfig{}));
        REQUIRE(given.settings_given.size() == 1);
        CHECK(given.settings_given[0] == &s);
        // the checkpoint fixes the training settings: given with --resume, they are refused
        const bool fixed = train_args::on_resume(s) == train_args::OnResume::fixed;
        CHECK((given.model_flags == std::vector<std::string>{flag(s)}) == fixed);
        CHECK(help_of(help, s).find(fmt::format("(default {})", s.text(nn::TrainConfig{}))) != std::string::npos);
    }
    // the defaults as a user reads them (typed here, not taken from the table)
    CHECK_THAT(help_of(help, nn::train_setting("train.beta1")), Contains("(default 0.9)"));
    CHECK_THAT(help_of(help, nn::train_setting("train.beta2")), Contains("(default 0.99)"));
    CHECK_THAT(help_of(help, nn::train_setting("train.steps")), Contains("(default 2000)"));
    CHECK_THAT(help_of(help, nn::train_setting("train.lr")), Contains("(default 0.001)"));
    CHECK_THAT(help_of(help, nn::train_setting("train.min_lr")), Contains("(default lr/10)"));
    CHECK_THAT(help_of(help, nn::train_setting("run.log_every")), Contains("(default auto)"));
    CHECK_THAT(help_of(help, nn::train_setting("run.top_k")), Contains("(default 0)"));
}

TEST_CASE("A setting's flag refuses a value out of its limits, naming the flag, the limits and the value",
          "[train_args][settings]") {
    for (const nn::TrainSetting& s : nn::train_settings())
        for (const double x : setting_values::refused(s)) {
            const std::string text = as_text(s, x);
            INFO(flag(s) << " " << text);
            CHECK_THAT(usage_error({flag(s), text}),
                       Contains(fmt::format("{} needs {}, got '{}'", flag(s), s.limits(), text)));
        }
    for (const nn::TrainSetting& s : nn::train_settings()) {
        CHECK_THAT(usage_error({flag(s), "x"}), Contains(flag(s)));
        // the special value is the setting's, not the flag's: --log-every 0, --min-lr -1
        if (s.special) CHECK_THAT(usage_error({flag(s), as_text(s, *s.special)}), Contains(flag(s) + " needs"));
    }
}

TEST_CASE("The flags --beta1 and --beta2 set AdamW's betas from 0 to below 1, and a resumed run refuses them",
          "[train_args][settings]") {
    const train_args::Options o =
        train_args::parse_args(5, std::vector<const char*>{"train", "--beta1", "0.8", "--beta2", "0.95"}.data());
    CHECK(o.config.beta1 == 0.8f);
    CHECK(o.config.beta2 == 0.95f);
    CHECK(train_args::parse_args(3, std::vector<const char*>{"train", "--beta1", "0"}.data()).config.beta1 == 0.0f);
    CHECK_THAT(usage_error({"--beta1", "1"}), Contains("--beta1 needs a number at least 0 and below 1, got '1'"));
    CHECK_THAT(usage_error({"--beta2", "0.999999999"}),
               Contains("--beta2 needs a number at least 0 and below 1"));  // 1 as a float
    CHECK_THAT(usage_error({"--beta2", "-0.1"}), Contains("--beta2 needs a number at least 0 and below 1, got '-0.1'"));
    CHECK_THAT(usage_error({"--resume", "run.safetensors", "--beta2", "0.9"}),
               Contains("--beta2 cannot change a resumed run"));
}

TEST_CASE("With --resume, the run settings given replace the checkpoint's and the others stay",
          "[train_args][settings]") {
    const train_args::Options o =
        parse({"--resume", "run.safetensors", "--eval-iters", "7", "--temperature", "0.5", "--steps", "3000"});
    nn::RunSettings saved{.eval_every = 11,
                          .eval_iters = 12,
                          .log_every = 13,
                          .grad_report = 14,
                          .sample = 15,
                          .temperature = 2.0f,
                          .top_k = 16};
    nn::RunSettings expected = saved;
    expected.eval_iters = 7;
    expected.temperature = 0.5f;
    CHECK(o.run_settings(saved) == expected);
    CHECK(o.steps_given);
    CHECK(o.model_flags.empty());  // --steps extends a resumed run
}

TEST_CASE("An output's flag takes none: no such file, not even the one a resumed checkpoint names",
          "[train_args][files]") {
    const train_args::Options off =
        parse({"--resume", "run.st", "--csv", "none", "--grad-csv", "grads.csv", "--report", "none"});
    CHECK_FALSE(off.csv);
    CHECK(off.grad_csv == "grads.csv");
    CHECK_FALSE(off.report);
    CHECK(off.outputs_off == std::set<std::string>{"--csv", "--report"});
    const train_args::Options again = parse({"--csv", "none", "--csv", "run.csv"});  // the last one given counts
    CHECK(again.csv == "run.csv");
    CHECK(again.outputs_off.empty());
    // --log-every writes rows to the log or the page: given with both off, it is refused
    CHECK_THROWS_WITH(train_args::check_log_outputs(parse({"--log-every", "5", "--csv", "none"})),
                      "--log-every needs --csv or --report: it writes rows to those");
    CHECK_NOTHROW(train_args::check_log_outputs(parse({"--log-every", "5", "--report", "run.html"})));
    CHECK_NOTHROW(train_args::check_log_outputs(parse({"--csv", "none"})));  // the default logs nowhere then
}

TEST_CASE("The page docs/settings.md lists every setting's flag with its default and limits",
          "[train_args][settings]") {
    std::ifstream in(TINYGPT_SOURCE_DIR "/docs/settings.md");
    REQUIRE(in);
    const std::string doc{std::istreambuf_iterator<char>(in), {}};
    for (const nn::TrainSetting& s : nn::train_settings()) {
        INFO(flag(s));
        const size_t row = doc.find(fmt::format("\n| `{} {}` |", flag(s), train_args::value_name(s)));
        REQUIRE(row != std::string::npos);
        const std::string line = doc.substr(row + 1, doc.find('\n', row + 1) - row - 1);
        CHECK_THAT(line, Contains(fmt::format("| {} |", s.text(nn::TrainConfig{}))) && Contains(s.limits()) &&
                             Contains(std::string(s.key)));
    }
}

TEST_CASE("The flag --precision is float32 or bf16, float32 by default, and a resume keeps the checkpoint's",
          "[train_args][precision]") {
    CHECK_FALSE(parse({}).config.bf16);
    CHECK(parse({"--precision", "bf16"}).config.bf16);
    CHECK_FALSE(parse({"--precision", "float32"}).config.bf16);
    CHECK(parse({"--precision", "bf16"}).config.precision() == autograd::Precision::bf16);
    // the table's two words are the library's names, and its limits the names the library lists
    const nn::TrainSetting& s = nn::train_setting("train.bf16");
    CHECK(s.words[0] == autograd::precision_name(autograd::Precision::float32));
    CHECK(s.words[1] == autograd::precision_name(autograd::Precision::bf16));
    CHECK(s.limits() == autograd::kPrecisionNames);
    CHECK(usage_error({"--precision", "fp16"}) == "--precision needs float32 or bf16, got 'fp16'");
    CHECK(usage_error({"--precision", "BF16"}) == "--precision needs float32 or bf16, got 'BF16'");
    // --help says what bf16 costs on this CPU
    train_args::Options o;
    CHECK_THAT(help_of(train_args::make_parser(o).help(), s),
               Contains("(default float32)") && Contains(std::string(autograd::bf16_speed_note()).substr(0, 20)));

    // with --resume: not a flag the parser refuses (the checkpoint is read later) ...
    train_args::Options resumed = parse({"--resume", "run.st", "--precision", "bf16"});
    CHECK(resumed.model_flags.empty());
    CHECK(train_args::on_resume(s) == train_args::OnResume::kept);
    const auto saved_in = [](bool bf16) {
        nn::SavedRun saved;
        saved.bf16 = bf16;
        return saved;
    };
    // ... but one the checkpoint's precision decides: the same is taken, another refused naming both
    resumed.saved = saved_in(true);
    CHECK_NOTHROW(train_args::check_precision_kept(resumed));
    resumed.saved = saved_in(false);
    CHECK_THROWS_WITH(train_args::check_precision_kept(resumed),
                      "--precision bf16 cannot change a resumed run: --resume run.st was trained in float32, which "
                      "it keeps (resume without --precision, or start a new run from its weights: --init-from "
                      "run.st --precision bf16)");
    train_args::Options to_float32 = parse({"--resume", "run.st", "--precision", "float32"});
    to_float32.saved = saved_in(true);
    CHECK_THROWS_WITH(train_args::check_precision_kept(to_float32),
                      Contains("--precision float32 cannot change") && Contains("was trained in bf16"));
    // not given: the checkpoint's, whatever it is
    train_args::Options not_given = parse({"--resume", "run.st"});
    not_given.saved = saved_in(true);
    CHECK_NOTHROW(train_args::check_precision_kept(not_given));
}
