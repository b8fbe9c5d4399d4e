// Your own model, start to finish: the page to copy when you build something new with tinygpt.
//
// The variant here asks the tutorial's question in reverse: instead of dividing the scores by a fixed
// sqrt(H), the head learns its own divisor. Everything else is the library's: ops for the forward
// (their backward comes free), a Module for the parameters, AdamW, the schedule, the batches.
//
//   custom_model                   train on the built-in copy task
//   custom_model FILE              train on a text file of your own
//
// Registered as a model kind (part 6), the same model trains with nn::Trainer, saves checkpoints
// ("model.kind": "learned_scale"), resumes exactly and loads for sampling, as the built-in kinds do:
//
//   custom_model --out CKPT [--steps N] [--until STEP] [FILE]    train with nn::Trainer, saving to CKPT
//   custom_model --resume CKPT [FILE]                            continue it, saving back to CKPT
//   custom_model --generate CKPT                                 load it and sample 200 characters
//
// And the tools (examples/tools.h) run in this program, where the kind is known: the trainer's command
// line with its report page, sampling, the attention heatmap and the figure, as for the built-in kinds:
//
//   custom_model train --model learned_scale --data FILE --steps 200 --out run.safetensors --report run.html
//   custom_model generate run.safetensors --chars 200
//   custom_model heatmap run.safetensors --prompt ab      its head's attention (part 1b)
//   custom_model figure run.safetensors --prompt ab       the tutorial's figure, with its learned divisor
//   custom_model evaluate run.safetensors --data FILE     its loss and perplexity on a file
//   custom_model head_scores run.safetensors              what its head does on repeated random tokens
//   custom_model cache run.safetensors --prompt ab --out acts.safetensors    its hook points' values
//
// Shape legend: B batch, T time, C channels, H head width, V vocab.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include <autograd/autograd.h>
#include <cli.h>
#include <nn/attention.h>
#include <nn/layers.h>
#include <nn/models.h>
#include <nn/train/optim.h>
#include <nn/generate/sample.h>
#include <nn/train/text.h>
#include <nn/train/trainer.h>
#include <nn/tutorial/tasks.h>
#include <tools.h>

using namespace autograd;

// 1. A module: register each parameter once, by name, then write forward() with ops. nn::Callable makes
// head(x) the one path that runs forward and then the head's forward hooks (nn/module.h).
struct LearnedScaleHead : nn::Callable<LearnedScaleHead, nn::InspectableHead> {
    nn::Linear query, key, value;  // (C, H) each
    Tensor log_scale;              // () the head's own divisor is exp(log_scale); starts at sqrt(H)

    LearnedScaleHead(int64_t C, int64_t H, Generator& gen)
        : query({.in = C, .out = H, .bias = false}, gen),
          key({.in = C, .out = H, .bias = false}, gen),
          value({.in = C, .out = H, .bias = false}, gen) {
        register_module("query", query);
        register_module("key", key);
        register_module("value", value);
        log_scale = register_parameter("log_scale", scalar(0.5f * std::log(static_cast<float>(H))));
    }

    Tensor forward(const Tensor& x) {                                         // x: (B, T, C)
        const Tensor q = query(x), k = key(x), v = value(x);                  // (B, T, H)
        const Tensor scores = matmul(q, k.transpose(1, 2)) / exp(log_scale);  // (B, T, T), () broadcasts
        const Tensor weights = softmax(causal_mask(scores), -1);              // (B, T, T)
        input_ = x.detach();  // kept for the inspect tools (1b), off the graph
        attention_ = weights.detach();
        return matmul(weights, v);  // (B, T, H)
    }

    // 1b. What the inspect tools read (nn::InspectableHead): heatmap and the report page show
    // last_attention(); the figure rebuilds the journey from the parts and the divisor.
    const Tensor& last_attention() const override { return attention_; }
    const Tensor& last_input() const override { return input_; }
    Tensor queries(const Tensor& x) const override { return query(x); }
    Tensor keys(const Tensor& x) const override { return key(x); }
    Tensor values(const Tensor& x) const override { return value(x); }
    float divisor() const override { return std::exp(log_scale.item()); }

private:
    Tensor input_, attention_;  // (B, T, C) and (B, T, T) of the last forward
};

// 2. A model around it: embeddings in, logits out. An nn::LanguageModel (ids in, logits out), so that
// the library's trainer, checkpoints and sampling can run it too (part 6). Called as model(ids, B, T),
// it runs its hooks (forward hooks, the "logits" hook point) without a line of its own for them.
struct TinyModel : nn::LanguageModel {
    nn::Embedding token, position;
    LearnedScaleHead head;
    nn::Linear lm_head;

    TinyModel(int64_t V, int64_t C, int64_t T, Generator& gen)
        : token({.num = V, .dim = C}, gen),
          position({.num = T, .dim = C}, gen),
          head(C, C, gen),
          lm_head({.in = C, .out = V}, gen) {
        register_module("token", token);
        register_module("position", position);
        register_module("head", head);
        register_module("lm_head", lm_head);
    }

    Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override {  // ids (B, T) -> (B, T, V)
        check_ids(ids, B, T, "TinyModel");
        std::vector<int64_t> positions(static_cast<size_t>(T));
        for (int64_t t = 0; t < T; ++t) positions[t] = t;
        const Tensor x = token(ids, Shape{B, T}) + position(positions, Shape{T});  // (B, T, C)
        return lm_head(head(x));                                                   // (B, T, V)
    }
    int64_t block_size() const override { return position.options.num; }
    int64_t vocab_size() const override { return token.options.num; }
};

int train(const std::optional<std::string>& file) {
    // 3. Data: any text, a character vocabulary, a 90/10 split, random batches.
    Generator gen(1);
    const std::string text = file ? nn::read_text_file(*file) : nn::copy_task_text(5000, gen);
    const auto tokenizer = nn::CharTokenizer::from_text(text);
    const nn::TextData data(tokenizer.encode(text));
    const int64_t B = 32, T = 32, C = 32, steps = 600;

    // 4. Model, optimizer, schedule; then the loop: forward, loss, backward, clip, step.
    TinyModel model(tokenizer.vocab_size(), C, T, gen);
    nn::AdamW optimizer(model, {.lr = 1e-2f, .beta2 = 0.99f, .weight_decay = 0.1f});
    const nn::CosineSchedule schedule{.lr = 1e-2f, .min_lr = 1e-3f, .warmup = 50, .total = steps};
    fmt::print("{} parameters; the head's divisor starts at sqrt({}) = {:.2f}\n", model.parameter_count(), C,
               std::exp(model.head.log_scale.item()));
    for (int64_t step = 0; step < steps; ++step) {
        const nn::Batch batch = data.batch(nn::Split::train, B, T, gen);
        optimizer.set_lr(schedule.at(step));
        optimizer.zero_grad();
        const Tensor loss = cross_entropy(model(batch.inputs, batch.B, batch.T), batch.targets);
        loss.backward();
        nn::clip_grad_norm(model.parameters(), 1.0f);
        optimizer.step();
        if ((step + 1) % 100 == 0)
            fmt::print("step {:4}  loss {:.4f}  divisor {:.2f}\n", step + 1, loss.item(),
                       std::exp(model.head.log_scale.item()));
    }

    // 5. Evaluate without a graph.
    NoGradGuard no_grad;
    double val = 0.0;
    for (int i = 0; i < 20; ++i) {
        const nn::Batch batch = data.batch(nn::Split::validation, B, T, gen);
        val += cross_entropy(model(batch.inputs, batch.B, batch.T), batch.targets).item() / 20.0;
    }
    fmt::print("validation loss {:.4f}; the head settled on a divisor of {:.2f}\n", val,
               std::exp(model.head.log_scale.item()));
    return 0;
}

// 6. The model as a kind of the registry: its name, the ModelConfig options it reads, how to build it
// and its exact parameter count. nn::Trainer, checkpoints, resume and nn::load_trained_model then take it
// as they take the built-in kinds (docs/model_kinds.md). A program that does not register it (train,
// generate, heatmap) refuses its checkpoints, naming the kinds it knows.
const nn::ModelKind kLearnedScale = nn::register_model_kind(
    {.name = "learned_scale",
     .title = "learned-divisor head",
     .options = nn::option_n_embd | nn::option_block,
     .make = [](const nn::ModelConfig& c, Generator& gen) -> std::unique_ptr<nn::LanguageModel> {
         return std::make_unique<TinyModel>(c.vocab, c.n_embd, c.block, gen);
     }});

struct Options {
    std::optional<std::string> file, out, resume, generate;
    std::optional<int64_t> steps, until;
};

int train_registered(const Options& o) {
    Generator gen(1);
    const std::string text = o.file ? nn::read_text_file(*o.file) : nn::copy_task_text(5000, gen);
    const auto fresh = [&] {  // the settings of part 4, as a TrainConfig
        auto tokenizer = nn::CharTokenizer::from_text(text);
        const nn::TrainConfig config{
            .model = {.kind = kLearnedScale, .vocab = tokenizer.vocab_size(), .n_embd = 32, .block = 32},
            .steps = o.steps.value_or(600),
            .batch = 32,
            .lr = 1e-2f,
            .min_lr = 1e-3f,
            .warmup = 50,
            .weight_decay = 0.1f,
            .beta2 = 0.99f,
            .seed = 1};
        auto tokens = tokenizer.encode(text);
        return nn::Trainer(config, std::move(tokenizer), std::move(tokens));
    };
    nn::Trainer trainer = o.resume ? nn::Trainer::resume(*o.resume, text) : fresh();
    if (o.resume && o.steps) trainer.extend_to(*o.steps);
    const int64_t last = trainer.stop_step(o.until);
    while (trainer.step_count() < last) {
        const nn::StepStats s = trainer.step();
        if (s.step % 100 == 0) fmt::print("step {:4}  loss {:.4f}\n", s.step, s.loss);
    }
    const std::string out = o.out.value_or(o.resume.value_or(""));
    trainer.save(out);
    fmt::print("{} model, step {}, saved to {}\n", trainer.config().model.kind, trainer.step_count(), out);
    return 0;
}

int generate(const std::string& checkpoint) {
    nn::TrainedModel trained = nn::load_trained_model(checkpoint);
    Generator gen(1);
    const std::vector<int64_t> prompt = trained.tokenizer->encode(nn::default_prompt(*trained.tokenizer));
    const std::vector<int64_t> ids = nn::generate(*trained.model, prompt, 200, {}, gen);  // through nn::window_decoder
    fmt::print("{}\n", trained.tokenizer->decode(ids));
    return 0;
}

cli::Parser make_parser(Options& o) {
    cli::Parser p("custom_model", "[options] [FILE] | TOOL ARGS...",
                  "Train a head that learns its own divisor, on FILE or the built-in copy task.\n"
                  "`custom_model TOOL ARGS...` runs the tool train, generate, heatmap, figure, evaluate, head_scores,\n"
                  "cache, lens, patch, attribute or ablate with the kind learned_scale registered,\n"
                  "e.g. custom_model train --model learned_scale --out CKPT.");
    p.positional(
        "FILE", "a text file to train on (default: the copy task; a file named like a tool: ./train)",
        [&o](const cli::Value& v) { o.file = v.file(); },
        /*required=*/false);
    p.option("--out", "CKPT", "train the registered kind with nn::Trainer, saving a checkpoint to CKPT",
             [&o](const cli::Value& v) { o.out = v.file(); });
    p.option("--resume", "CKPT", "continue that run exactly, saving back to CKPT unless --out names another file",
             [&o](const cli::Value& v) { o.resume = v.file(); });
    p.option("--steps", "N", "optimizer steps; with --resume, a larger N extends the run (default 600)",
             [&o](const cli::Value& v) { o.steps = v.integer(1, 1 << 20); });
    p.option("--until", "STEP", "stop after this step (the schedule still spans --steps)",
             [&o](const cli::Value& v) { o.until = v.integer(1, 1 << 20); });
    p.option("--generate", "CKPT", "load a checkpoint of the registered kind and sample 200 characters",
             [&o](const cli::Value& v) { o.generate = v.file(); });
    return p;
}

int run(const Options& o) {
    if (o.generate) return generate(*o.generate);
    if (o.out || o.resume) return train_registered(o);
    if (o.steps || o.until) throw cli::UsageError("--steps and --until apply to a run with --out or --resume");
    return train(o.file);
}

// The command line: the shared layer of the examples (support/cli.h), for --help and clear errors.
// A first argument naming a tool hands the rest to it: `custom_model heatmap CKPT ...` is heatmap's
// command line in a program that has registered learned_scale.
int main(int argc, char** argv) {
    if (argc > 1) {
        const std::string tool = argv[1];
        for (const auto& [name, run] :
             {std::pair{"train", &tools::train}, std::pair{"generate", &tools::generate},
              std::pair{"heatmap", &tools::heatmap}, std::pair{"figure", &tools::figure},
              std::pair{"evaluate", &tools::evaluate}, std::pair{"head_scores", &tools::head_scores},
              std::pair{"cache", &tools::cache}, std::pair{"lens", &tools::lens}, std::pair{"patch", &tools::patch},
              std::pair{"attribute", &tools::attribute}, std::pair{"ablate", &tools::ablate}})
            if (tool == name) return run(argc - 1, argv + 1);
    }
    return cli::program<Options>(argc, argv, make_parser, run);
}
