// Your own model, start to finish: the page to copy when you build something new with tinygpt.
//
// The variant here asks the tutorial's question in reverse: instead of dividing the scores by a fixed
// sqrt(H), the head learns its own divisor. Everything else is the library's: ops for the forward
// (their backward comes free), a Module for the parameters, AdamW, the schedule, the batches.
//
//   custom_model                   train on the built-in copy task
//   custom_model FILE              train on a text file of your own
//
// Shape legend: B batch, T time, C channels, H head width, V vocab.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include <autograd/autograd.h>
#include <cli.h>
#include <nn/layers.h>
#include <nn/train/optim.h>
#include <nn/tutorial/tasks.h>
#include <nn/train/text.h>

using namespace autograd;

// 1. A module: register each parameter once, by name, then write forward() with ops.
struct LearnedScaleHead : nn::Module {
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

    Tensor forward(const Tensor& x) const {                                  // x: (B, T, C)
        const Tensor q = query.forward(x), k = key.forward(x), v = value.forward(x);  // (B, T, H)
        const Tensor scores = matmul(q, k.transpose(1, 2)) / exp(log_scale);  // (B, T, T), () broadcasts
        return matmul(softmax(causal_mask(scores), -1), v);                   // (B, T, H)
    }
};

// 2. A model around it: embeddings in, logits out.
struct TinyModel : nn::Module {
    nn::Embedding token, position;
    LearnedScaleHead head;
    nn::Linear lm_head;

    TinyModel(int64_t V, int64_t C, int64_t T, Generator& gen)
        : token({.num = V, .dim = C}, gen), position({.num = T, .dim = C}, gen), head(C, C, gen), lm_head({.in = C, .out = V}, gen) {
        register_module("token", token);
        register_module("position", position);
        register_module("head", head);
        register_module("lm_head", lm_head);
    }

    Tensor forward(const nn::Batch& batch) const {  // -> (B, T, V)
        std::vector<int64_t> positions(static_cast<size_t>(batch.T));
        for (int64_t t = 0; t < batch.T; ++t) positions[t] = t;
        const Tensor x = token.forward(batch.inputs, {batch.B, batch.T}) + position.forward(positions, {batch.T});
        return lm_head.forward(head.forward(x));
    }
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
        const Tensor loss = cross_entropy(model.forward(batch), batch.targets);
        loss.backward();
        nn::clip_grad_norm(model.parameters(), 1.0f);
        optimizer.step();
        if ((step + 1) % 100 == 0)
            fmt::print("step {:4}  loss {:.4f}  divisor {:.2f}\n", step + 1, loss.item(), std::exp(model.head.log_scale.item()));
    }

    // 5. Evaluate without a graph.
    NoGradGuard no_grad;
    double val = 0.0;
    for (int i = 0; i < 20; ++i) {
        const nn::Batch batch = data.batch(nn::Split::validation, B, T, gen);
        val += cross_entropy(model.forward(batch), batch.targets).item() / 20.0;
    }
    fmt::print("validation loss {:.4f}; the head settled on a divisor of {:.2f}\n", val, std::exp(model.head.log_scale.item()));
    return 0;
}

// The command line: the shared layer of the examples (support/cli.h), for --help and clear errors.
int main(int argc, char** argv) {
    std::optional<std::string> file;
    cli::Parser p("custom_model", "[FILE]", "Train a head that learns its own divisor, on FILE or the built-in copy task.");
    p.positional("FILE", "a text file to train on (default: the copy task)", [&](const cli::Value& v) { file = v.file(); },
                 /*required=*/false);
    return cli::run(p, argc, argv, [&] { return train(file); });
}
