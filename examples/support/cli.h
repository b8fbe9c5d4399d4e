// The command-line layer every example program shares: flags, help, version, exit statuses, and the
// checks on the files a program writes.
//
//   cli::Parser p("plot_loss", "CSV [options]", "Loss curves from a training log as an SVG chart.");
//   p.positional("CSV", "a training log from `train --csv`", [&](const cli::Value& v) { o.csv = v.file(); });
//   p.option("--out", "SVG", "where to write the chart", [&](const cli::Value& v) { o.out = v.file(); });
//   p.flag("--log-y", "a logarithmic loss axis", [&] { o.log_y = true; });
//   return cli::run(p, argc, argv, [&] { return run(o); });
//
// The conventions (README "Command line"):
//   - `--flag value` and `--flag=value`; `--help` and `--version` print to stdout and exit 0;
//   - a usage error exits 2 with one line, "program: <problem>; see --help";
//   - a runtime failure exits 1 with "program: <what went wrong>"; the prefix is never doubled;
//   - SIGPIPE never kills a program: a write to a closed pipe fails and standard output is checked at the
//     end (a full disk there is a runtime failure); when the reader of standard output has gone
//     (`figure --json | head -c 10`), the program stops without a word, exit 141 as if SIGPIPE had
//     ended it, as other programs do (a checkpoint being saved is saved first).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace cli {

// A bad command line: exit status 2.
struct UsageError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};
struct HelpRequested {};     // --help: print the help, exit 0
struct VersionRequested {};  // --version: print the version, exit 0

// One flag's value, with the parsers every program uses; each failure names the flag.
class Value {
public:
    Value(std::string flag, std::string text) : flag_(std::move(flag)), text_(std::move(text)) {}
    const std::string& flag() const { return flag_; }
    const std::string& text() const { return text_; }
    // A whole number in [min, max].
    int64_t integer(int64_t min, int64_t max) const;
    // A finite number in [min, max] (above min when min_open), checked as the float that is kept:
    // 1e-50 is above 0 as a double but 0 as a float.
    float number(double min, double max, bool min_open = false) const;
    // A file name (not empty: an empty one would pass every check until the first write).
    std::string file() const;
    // Text of at least one character.
    std::string nonempty() const;
    // One of `choices`.
    std::string choice(const std::vector<std::string>& choices) const;
    [[noreturn]] void fail(std::string_view problem) const;  // UsageError "FLAG PROBLEM"

private:
    std::string flag_, text_;
};

class Parser {
public:
    // `synopsis` follows the program's name on the usage line; `about` is a line on what it does.
    Parser(std::string program, std::string synopsis, std::string about);

    const std::string& program() const { return program_; }

    // Starts a group of flags in the help ("model", "training", ...).
    void section(std::string title);
    // A flag without a value.
    void flag(std::string name, std::string help, std::function<void()> on);
    // A flag with a value; `meta` names it in the help ("N", "FILE").
    void option(std::string name, std::string meta, std::string help, std::function<void(const Value&)> on);
    // An argument without a flag, in order; `required` ones missing are a usage error.
    void positional(std::string meta, std::string help, std::function<void(const Value&)> on, bool required = true);
    // The last positional: one or more, each given to `on` in order (INPUT...).
    void positionals(std::string meta, std::string help, std::function<void(const Value&)> on);
    // A positional that may be given as `flag META` instead (`heatmap CKPT`, `heatmap --checkpoint CKPT`):
    // `on` gets a Value named META or `flag`; both at once is a usage error naming both, and a `required`
    // one is missing only when neither is given.
    void positional_or_option(std::string meta, std::string flag, std::string help,
                              std::function<void(const Value&)> on, bool required);

    // Advice for an argument the program takes no more of, added to "unexpected argument 'X'" in
    // parentheses when `hint` returns some (train: a checkpoint given without --resume).
    void argument_hint(std::function<std::string(const std::string&)> hint);

    // Calls each flag's handler in command-line order. Throws UsageError, HelpRequested or VersionRequested.
    // An unknown flag names the closest known one when it is a typo of it ("--modle": did you mean --model?).
    void parse(int argc, const char* const* argv);
    // True when the flag appeared on the command line.
    bool given(std::string_view name) const;

    std::string help() const;

private:
    struct Flag {
        std::string name, meta, help, section;
        std::function<void()> on_switch;
        std::function<void(const Value&)> on_value;
        std::optional<size_t> positional = std::nullopt;  // the positional this flag also gives
    };
    struct Positional {
        std::string meta, help;
        std::function<void(const Value&)> on;
        bool required;
        bool repeats = false;
    };
    const Flag* find(std::string_view name) const;
    std::string closest_flag(std::string_view name) const;  // "" when none is a likely typo of `name`

    std::string program_, synopsis_, about_, section_;
    std::vector<Flag> flags_;
    std::vector<Positional> positionals_;
    std::vector<std::string> given_;
    std::function<std::string(const std::string&)> argument_hint_;
};

// "program (tinygpt) 0.1.0"
std::string version_line(std::string_view program);

// A count and its noun, which agree: "1 step", "3 steps" (a noun whose plural takes an s).
template <typename Count>
std::string counted(Count n, std::string_view noun) {
    return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

// Runs a program: parses, then calls `program_body` and returns its exit status. Help and version exit 0; a
// UsageError prints "program: problem; see --help" and exits 2; any other exception prints "program:
// what" and exits 1. SIGPIPE is ignored; standard output is flushed and checked before exit 0; a failure
// while the reader of standard output has gone (a pipe whose reader exited) exits 141 quietly.
int run(Parser& parser, int argc, char** argv, const std::function<int()>& program_body);

// The whole main() of every program: its options are an `Options`, filled by the parser make_parser(Options&)
// returns, and used by `body(const Options&)`, or `body(const Options&, const Parser&)` for a body that
// asks which flags were given:  return cli::program<Options>(argc, argv, make_parser, run);
template <typename Options, typename MakeParser, typename Body>
int program(int argc, char** argv, MakeParser make_parser, Body body) {
    Options options;
    Parser parser = make_parser(options);
    return run(parser, argc, argv, [&] {
        if constexpr (std::is_invocable_v<Body, const Options&, const Parser&>)
            return body(static_cast<const Options&>(options), static_cast<const Parser&>(parser));
        else return body(static_cast<const Options&>(options));
    });
}

// --- the files a program writes ------------------------------------------------------------------

// The help of --force, the same flag in every program that writes files.
inline constexpr const char* kForceHelp = "replace output files that exist already";

struct Input {
    std::string flag, path;  // flag "" for a positional argument
};
struct Output {
    std::string flag, path;
    // An existing file is this run's own (a log the resumed run appends to): no --force needed.
    bool continues = false;
    // The output may be this input (train saves a resumed checkpoint back to --resume); no --force then.
    std::optional<std::string> may_replace = std::nullopt;
};

// The checkpoint a program reads, given the same way to every one: as its first argument (`heatmap
// run.safetensors`) or as `--checkpoint run.safetensors`, never both. Its Input's flag is "--checkpoint"
// or "" (an argument), as the output checks name it.
void checkpoint_argument(Parser& p, std::optional<Input>& checkpoint, std::string help, bool required);
// The same, and what GPT-2 weights may lack, for nn::load_trained_model(path, {tokenizer, n_head}):
// --tokenizer DIR, GPT-2's BPE files for weights that carry none (Hugging Face's model.safetensors, llm.c's
// .bin) when they are not beside them, and --n-head N for Hugging Face's without config.json. A tinygpt
// checkpoint's own must be the ones given.
void checkpoint_argument(Parser& p, std::optional<Input>& checkpoint, std::optional<std::string>& tokenizer,
                         std::optional<int64_t>& n_head, std::string help, bool required);

// The same file: by device and inode when both exist, else by the path with symbolic links resolved.
bool same_file(const std::string& a, const std::string& b);

// Checks, before any work, the files a program will write, and refuses (cli::UsageError):
//   - an output that is the same file as an input or another output (device and inode, or the same
//     path for files that do not exist yet), unless it is the input its `may_replace` names;
//   - an output that exists and is not a regular file: a directory, device, FIFO or socket; or that
//     is a symbolic link (give the file it points to: a rename would replace the link, not its target);
//   - an existing output without `force`, unless it `continues` or replaces its own input.
// And fails (std::runtime_error) when an output's directory is missing or a file cannot be created in
// it (it creates and removes a probe file there, as long a name as the save's temporary file), or when a
// save could not rename over an existing output: another user's file in a sticky directory, or an
// immutable or append-only one.
void check_outputs(const std::vector<Input>& inputs, const std::vector<Output>& outputs, bool force);

// One run per output: an advisory lock (flock) on ".NAME.lock" beside each output, held until the object
// is destroyed (and by the kernel until the process ends, whatever kills it). A second run refuses with a
// std::runtime_error that names the first one's PID. The lock file is opened without following a
// symbolic link and used only when it is a regular file of this user's with one name; it is written
// (our PID) only once locked.
class OutputLocks {
public:
    explicit OutputLocks(const std::vector<Output>& outputs);
    OutputLocks(const OutputLocks&) = delete;
    OutputLocks& operator=(const OutputLocks&) = delete;
    ~OutputLocks();

private:
    struct Held {
        int fd;
        std::string path;
    };
    std::vector<Held> held_;
};

// What every program that writes files does before any work: check_outputs, then lock them for the run.
[[nodiscard]] inline OutputLocks claim_outputs(const std::vector<Input>& inputs, const std::vector<Output>& outputs,
                                               bool force) {
    check_outputs(inputs, outputs, force);
    return OutputLocks(outputs);
}

}  // namespace cli
