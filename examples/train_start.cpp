#include "train_start.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include <autograd/autograd.h>
#include <nn/files/file_names.h>
#include <nn/tokenizers/bpe.h>
#include <nn/train/data_file.h>
#include <nn/model_files/safetensors.h>
#include <nn/tokenizers/text_file.h>
#include <nn/train/token_file.h>
#include <nn/tutorial/tasks.h>

#include "load_checkpoint.h"
#include "train_logs.h"
#include "train_progress.h"

namespace train_start {

namespace {

using train_args::Options;

// An error about the --data file as train names it: "--data FILE: problem" (the library's messages start
// with the path, quoted: "'FILE': problem").
template <typename F>
auto reading_data(const Options& o, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const std::runtime_error& e) {
        std::string_view what = e.what();
        if (!o.data || !what.starts_with(nn::detail::path_str(*o.data) + ": ")) throw;
        what.remove_prefix(nn::detail::path_str(*o.data).size() + 2);
        throw std::runtime_error(fmt::format("--data {}: {}", nn::printable_name(*o.data), what));
    }
}

// The text to train on: the file, or the copy task (always the same text, so a resume finds it again).
std::string training_text(const Options& o) {
    if (o.data) return reading_data(o, [&] { return nn::read_text_file(*o.data); });
    autograd::Generator gen(20260);
    return nn::copy_task_text(5000, gen);
}

// GPT-2's BPE (--tokenizer) or a token file (--data *.bin): the data the tokenizer reads (and not the
// character path, which makes its vocabulary from the text).
bool uses_tokens(const Options& o) { return o.tokenizer || (o.data && nn::is_token_file(*o.data)); }

// --data for a token-id model: a token file mapped (its validation from the val.bin beside a train.bin,
// or *_val.bin beside *_train.bin, as nanoGPT and llm.c name them; else its last 10%), or a text file
// tokenized as it is read.
nn::TextData token_data(const Options& o, const nn::Tokenizer& tokenizer) {
    if (!o.data) throw cli::UsageError("--tokenizer needs --data (a text file or a .bin token file)");
    const std::filesystem::path path = *o.data;
    if (!nn::is_token_file(path)) {
        const auto* bpe = dynamic_cast<const nn::BpeTokenizer*>(&tokenizer);
        return reading_data(o, [&] {
            return nn::TextData(bpe ? bpe->encode_file(path) : tokenizer.encode_ids(nn::read_text_file(path)));
        });
    }
    nn::TokenIds train = nn::map_token_file(path, tokenizer.vocab_size());
    std::string name = path.filename().string();
    if (const auto at = name.rfind("train"); at != std::string::npos) {
        const std::filesystem::path val = path.parent_path() / name.replace(at, 5, "val");
        if (std::filesystem::exists(val))
            return nn::TextData(std::move(train), nn::map_token_file(val, tokenizer.vocab_size()));
    }
    return nn::TextData(std::move(train));
}

// The largest id in the data + 1: the vocabulary of a fresh run on a token file with no tokenizer.
int64_t vocabulary_of(const nn::TextData& data) {
    uint16_t largest = 0;
    for (const nn::TokenIds* ids : {&data.tokens(), data.separate_validation()})
        if (ids)
            ids->visit([&](const auto& v) {
                for (const auto id : v) largest = std::max<uint16_t>(largest, static_cast<uint16_t>(id));
            });
    return int64_t{largest} + 1;
}

// A fresh run on a token file without --tokenizer: the model's vocabulary is the files' largest id + 1
// (GPT-2's 50,257 when they hold its <|endoftext|>, 50256), said in a note; the checkpoint keeps only
// that size (nn::IdTokenizer) and the sample is token ids.
nn::Trainer without_tokenizer(const Options& o, nn::TrainConfig config) {
    nn::TextData data = token_data(o, nn::IdTokenizer(65536, *o.data));  // any uint16 id
    config.model.vocab = vocabulary_of(data);
    train_progress::note(
        fmt::format("note: --data {} is a token file and no --tokenizer was given: the vocabulary is the token "
                    "files' largest id + 1, {}, and samples are token ids\n",
                    *o.data, config.model.vocab));
    return nn::Trainer(config,
                       std::make_shared<const nn::IdTokenizer>(config.model.vocab, fmt::format("--data {}", *o.data)),
                       std::move(data));
}

// The tokenizer of a checkpoint, checked against --tokenizer when both are given (they must be the
// same vocabulary and merges); a token file needs a BPE tokenizer from one of them, or weights that
// have none (token ids only).
void check_tokenizer(const Options& o, const nn::Tokenizer& saved, const std::string& checkpoint) {
    if (o.tokenizer) {
        nn::check_tokenizer_dir(*o.tokenizer, saved, checkpoint);
    } else if (!dynamic_cast<const nn::BpeTokenizer*>(&saved) && !nn::as_ids_only(saved)) {
        throw std::runtime_error(
            fmt::format("--data {} is a token file but the checkpoint {} has a character tokenizer",
                        o.data.value_or(""), checkpoint));
    }
}

// The checkpoint's parameters for `model`, whose window is shorter: a table of positions, (block, ...)
// in the checkpoint and (T, ...) in the model, keeps its first T rows, as nanoGPT's crop_block_size
// does. Every other parameter is the checkpoint's own; load_parameters refuses any other difference.
nn::NamedTensors cropped_to_window(nn::NamedTensors params, const nn::Module& model, int64_t T) {
    autograd::NoGradGuard no_grad;
    for (auto& [name, wanted] : model.named_parameters())
        for (auto& [given_name, given] : params) {
            const autograd::Shape& from = given.shape();
            const autograd::Shape& to = wanted.shape();
            if (given_name != name || from == to || from.size() != to.size() || to[0] != T || from[0] < T) continue;
            if (std::equal(from.begin() + 1, from.end(), to.begin() + 1)) given = given.slice(0, 0, T);
        }
    return params;
}

// --init-from: a fresh run (step 0, a new AdamW, the command line's training settings) whose model is
// the checkpoint's: its kind, sizes and dropout (unless --dropout is given), and its weights (GPT-2
// weights too, Hugging Face's or llm.c's, with --tokenizer or the BPE files beside them). A shorter
// --block crops the window (GPT-2's 1024 positions to llm.c's T 64; see cropped_to_window). The
// checkpoint's vocabulary stays, since the model's rows are its ids: the text is encoded with it, and a
// character outside it is refused, naming the characters and both files.
nn::Trainer start_from_checkpoint(const Options& o) {
    const std::string& path = *o.init_from;
    const auto given = [&](const char* flag) {
        return std::find(o.model_flags.begin(), o.model_flags.end(), flag) != o.model_flags.end();
    };
    nn::TrainedModel start =
        load_checkpoint(path, {o.tokenizer, given("--n-head") ? std::optional(o.config.model.n_head) : std::nullopt});
    nn::TrainConfig config = o.config;
    const bool dropout_given = given("--dropout");
    if (dropout_given && !train_args::applies("--dropout", start.config.kind))
        throw cli::UsageError(
            fmt::format("--dropout does not apply to the --init-from checkpoint's model {}", start.config.kind));
    if (given("--block") && o.config.model.block > start.config.block)
        throw cli::UsageError(
            fmt::format("--block {} is longer than the --init-from checkpoint's window {}: it may only shorten it",
                        o.config.model.block, start.config.block));
    config.model = start.config;
    if (dropout_given) config.model.dropout = o.config.model.dropout;
    if (given("--block")) config.model.block = o.config.model.block;
    const auto start_weights = [&](nn::Trainer& trainer) {
        nn::load_parameters(trainer.model(),
                            cropped_to_window(start.model->named_parameters(), trainer.model(), config.model.block));
    };
    if (const nn::IdTokenizer* ids = nn::as_ids_only(*start.tokenizer); ids && !uses_tokens(o)) {
        if (!o.data)
            throw cli::UsageError(
                fmt::format("--init-from {} has no tokenizer (token ids only): give --data a token file (.bin), "
                            "or --tokenizer DIR (GPT-2's vocab.json and merges.txt)",
                            path));
        throw nn::text_without_tokenizer(*o.data, *ids);
    }
    if (uses_tokens(o)) {
        check_tokenizer(o, *start.tokenizer, path);
        nn::Trainer trainer(config, start.tokenizer, token_data(o, *start.tokenizer));
        start_weights(trainer);
        return trainer;
    }
    nn::TokenIds tokens = [&] {
        try {
            return start.tokenizer->encode_ids(training_text(o));
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(
                fmt::format("--init-from {}: the text to train on ({}) has characters outside the "
                            "checkpoint's vocabulary: {}",
                            path, o.data.value_or("the built-in copy task"), e.what()));
        }
    }();
    nn::Trainer trainer(config, start.tokenizer, nn::TextData(std::move(tokens)));
    start_weights(trainer);
    return trainer;
}

// --resume: the checkpoint's run on the same data. One that names no data file (saved before checkpoints
// kept it, or trained on the built-in copy task) and that is not the copy task's needs --data.
nn::Trainer resumed(const Options& o) {
    try {
        if (uses_tokens(o))
            return nn::Trainer::resume(*o.resume, [&](const nn::Tokenizer& saved) {
                check_tokenizer(o, saved, *o.resume);
                return token_data(o, saved);
            });
        if (o.data)
            return nn::Trainer::resume(*o.resume, training_text(o));  // the text is needed only until it is tokens
        return nn::Trainer::resume(*o.resume, [&](const nn::Tokenizer& saved) {
            try {
                return nn::TextData(saved.encode_ids(training_text(o)));
            } catch (const std::invalid_argument& e) {  // characters its vocabulary lacks: not its data either
                throw nn::DataMismatch(e.what());
            }
        });
    } catch (const nn::DataMismatch&) {
        if (o.data) throw;
        throw std::runtime_error(
            fmt::format("--resume {} names no data file (checkpoints saved by older versions do not) and was "
                        "not trained on the built-in copy task: give --data FILE, the file of {} tokens it was "
                        "trained on",
                        nn::printable_name(*o.resume), o.saved ? o.saved->tokens : 0));
    }
}

// The trainer the command line asks for, before the command line's changes to a resumed run.
nn::Trainer trainer_of(const Options& o) {
    if (o.resume) return resumed(o);
    if (o.init_from) return start_from_checkpoint(o);
    nn::TrainConfig config = o.config;
    if (uses_tokens(o)) {
        if (!o.tokenizer) return without_tokenizer(o, config);
        auto tokenizer = std::make_shared<const nn::BpeTokenizer>(nn::BpeTokenizer::from_directory(*o.tokenizer));
        config.model.vocab = tokenizer->vocab_size();
        nn::TextData data = token_data(o, *tokenizer);
        return nn::Trainer(config, std::move(tokenizer), std::move(data));
    }
    // a file is read as token ids alone, never held as text
    auto [tokenizer, tokens] =
        o.data ? reading_data(o, [&] { return nn::read_tokenized_text(*o.data); }) : nn::tokenize(training_text(o));
    config.model.vocab = tokenizer.vocab_size();
    return nn::Trainer(config, std::move(tokenizer), std::move(tokens));
}

// The data file the checkpoint names, for a resume without --data: used when it is there and unchanged,
// refused otherwise, naming it and why.
nn::DataFile unchanged_data_file(const std::string& checkpoint, const nn::DataFile& kept) {
    const std::string trained_on = fmt::format("--resume {} was trained on {}", nn::printable_name(checkpoint),
                                               nn::printable_name(kept.path.string()));
    const char* const advice = "give --data FILE, the file it was trained on";
    std::error_code error;
    if (!std::filesystem::exists(kept.path, error))
        throw std::runtime_error(fmt::format("{}, which is missing now; {}", trained_on, advice));
    nn::DataFile now;
    try {
        now = nn::data_file(kept.path);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(fmt::format("{}, which cannot be read now ({}); {}", trained_on, e.what(), advice));
    }
    if (now.bytes != kept.bytes)
        throw std::runtime_error(fmt::format("{}, which has changed since: {} bytes then, {} now; {}", trained_on,
                                             kept.bytes, now.bytes, advice));
    if (now.checksum != kept.checksum)
        throw std::runtime_error(
            fmt::format("{}, which has changed since: the same {} bytes, but other bytes in them (its checksum "
                        "differs); {}",
                        trained_on, now.bytes, advice));
    return now;
}

// What the run's checkpoints keep of its files: its --data (the size and checksum read now, unless read
// already) and its outputs.
nn::RunFiles run_files_of(const Options& o) {
    nn::RunFiles files;
    if (o.data) files.data = o.data_file ? *o.data_file : reading_data(o, [&] { return nn::data_file(*o.data); });
    for (const train_args::OutputFile& f : train_args::kOutputFiles)
        if (const std::optional<std::string>& path = o.*f.path) files.outputs.emplace(f.name, *path);
    return files;
}

}  // namespace

Options with_checkpoint_files(Options o) {
    if (o.resume) {
        try {
            o.saved = nn::read_saved_run(*o.resume);
        } catch (const std::runtime_error&) {
            // not a checkpoint that can be read: the resume itself says what is wrong, after the checks on the outputs
        }
        train_args::check_precision_kept(o);
        if (!o.data && o.saved && o.saved->files.data) {
            o.data_file = unchanged_data_file(*o.resume, *o.saved->files.data);
            o.data = o.data_file->path.string();
            train_progress::note(fmt::format("--resume {}: on its --data {} (unchanged: {} bytes)\n",
                                             nn::printable_name(*o.resume), nn::printable_name(*o.data),
                                             o.data_file->bytes));
        }
        train_logs::continue_checkpoint_outputs(o);
    }
    train_args::check_log_outputs(o);
    return o;
}

nn::Trainer new_trainer(const Options& o) {
    nn::Trainer trainer = trainer_of(o);
    trainer.set_run(o.run_settings(trainer.config().run));
    trainer.set_run_files(run_files_of(o));  // (--data read again for its checksum only once it was taken)
    if (o.resume && o.steps_given)
        naming_flag("--steps", std::optional<int64_t>(o.config.steps), [&] { trainer.extend_to(o.config.steps); });
    return trainer;
}

}  // namespace train_start
