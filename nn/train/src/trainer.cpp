#include "nn/train/trainer.h"

#include <autograd/ops.h>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "nn/train/checkpoint.h"

namespace nn {

using namespace autograd;

namespace {
constexpr std::string_view kStatePrefix = "train_state.";
constexpr const char* kFormat = "tinygpt-checkpoint-1";

// FNV-1a over the token ids: resuming on different data is an error, not a silent new run.
uint64_t fingerprint(const std::vector<int64_t>& tokens) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t t : tokens) {
        h ^= static_cast<uint64_t>(t);
        h *= 1099511628211ull;
    }
    return h;
}

// Generator state as text, exactly (the spare normal by its bits).
std::string to_text(const Generator::State& s) {
    return fmt::format("{} {} {}", s.counter, s.has_spare ? 1 : 0, std::bit_cast<uint32_t>(s.spare));
}

const std::string& field(const std::map<std::string, std::string>& metadata, const std::string& key,
                         const std::filesystem::path& path) {
    const auto it = metadata.find(key);
    if (it == metadata.end())
        throw std::runtime_error(fmt::format("{}: not a tinygpt training checkpoint (no '{}' in its metadata)", path.string(), key));
    return it->second;
}

uint64_t to_u64(const std::string& text, const std::string& key, const std::filesystem::path& path) {
    size_t used = 0;
    uint64_t v = 0;
    try {
        v = std::stoull(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || text[0] == '-')
        throw std::runtime_error(fmt::format("{}: metadata '{}' is '{}', not a whole number", path.string(), key, text));
    return v;
}

float to_float(const std::string& text, const std::string& key, const std::filesystem::path& path) {
    return std::bit_cast<float>(static_cast<uint32_t>(to_u64(text, key, path)));
}

Generator::State state_from_text(const std::string& text, const std::string& key, const std::filesystem::path& path) {
    unsigned long long counter = 0, spare = 0;
    int has_spare = 0;
    char extra = 0;
    if (std::sscanf(text.c_str(), "%llu %d %llu %c", &counter, &has_spare, &spare, &extra) != 3 || has_spare < 0 ||
        has_spare > 1 || spare > UINT32_MAX)
        throw std::runtime_error(fmt::format("{}: metadata '{}' is not a generator state: '{}'", path.string(), key, text));
    return {counter, has_spare == 1, std::bit_cast<float>(static_cast<uint32_t>(spare))};
}

// Floats are stored by their bits, so a resumed run uses exactly the same numbers.
std::string bits(float v) { return std::to_string(std::bit_cast<uint32_t>(v)); }
// The checkpoint's own parts: weights under their names, optimizer state under kStatePrefix.
struct CheckpointParts {
    NamedTensors weights, state;
};
CheckpointParts split(NamedTensors tensors) {
    CheckpointParts parts;
    for (auto& [name, t] : tensors) {
        if (name.starts_with(kStatePrefix)) parts.state.emplace_back(name.substr(kStatePrefix.size()), t);
        else parts.weights.emplace_back(name, t);
    }
    return parts;
}

void check_format(const std::map<std::string, std::string>& meta, const std::filesystem::path& path) {
    if (field(meta, "format", path) != kFormat)
        throw std::runtime_error(fmt::format("{}: checkpoint format '{}' is not '{}'", path.string(), meta.at("format"), kFormat));
}

ModelConfig model_config(const std::map<std::string, std::string>& meta, const std::filesystem::path& path) {
    try {
        return ModelConfig::from_metadata(meta);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(fmt::format("{}: {}", path.string(), e.what()));
    }
}

// Copies the weights in; a mismatch with the config's model names the path.
void load_weights(LanguageModel& model, const NamedTensors& weights, const std::filesystem::path& path) {
    try {
        load_parameters(model, weights);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(fmt::format("{}: {}", path.string(), e.what()));
    }
}

// About how many parameters the model of `m` has, in double: absurd sizes overflow int64 first.
double approximate_parameters(const ModelConfig& m) {
    const double V = double(m.vocab), C = double(m.n_embd), T = double(m.block);
    const double L = double(std::max<int64_t>(m.n_layer, 1));
    if (m.kind == "bigram") return V * V;
    double params = 2 * V * C + T * C + V;  // token and position tables, lm_head
    if (m.kind == "head") params += 3 * C * C;  // query, key, value
    else if (m.kind == "multihead") params += 4 * C * C + (m.feed_forward ? 8 * C * C : 0);  // heads, projection, feed-forward
    else if (m.kind == "gpt") params += L * 13 * C * C;  // per block: attention 4C², feed-forward 8C², norms
    return params;
}

// The model sizes in a file are believed only as far as the file's own weights go: a config whose model
// would need far more parameters than the file stores (a corrupt or edited size) is refused before the
// model is allocated, instead of allocating whatever it names.
void check_sizes_against_weights(const ModelConfig& m, const NamedTensors& weights, const std::filesystem::path& path) {
    double stored = 0;
    for (const auto& [name, t] : weights) stored += double(t.numel());
    const double needed = approximate_parameters(m);
    if (needed > 2 * stored + 4096)
        throw std::runtime_error(fmt::format("{}: the model in its metadata ({} n_embd {} n_layer {} block {} vocab {}) needs "
                                             "about {:.3g} parameters, but the file stores {:.3g}",
                                             path.string(), m.kind, m.n_embd, m.n_layer, m.block, m.vocab, needed, stored));
}
}  // namespace

uint64_t estimate_training_bytes(const TrainConfig& config) {
    // In double: absurd sizes overflow int64 long before they reach the comparison.
    const ModelConfig& m = config.model;
    const double V = double(m.vocab), C = double(m.n_embd), T = double(m.block), B = double(config.batch);
    const double H = double(std::max<int64_t>(m.n_head, 1)), L = double(std::max<int64_t>(m.n_layer, 1));
    const double params = approximate_parameters(m);
    double layers = 1, heads = 0;
    if (m.kind == "head") {
        heads = 1;
    } else if (m.kind == "multihead") {
        heads = H;
    } else if (m.kind == "gpt") {
        layers = L;
        heads = H;
    }
    // Activations kept for backward, in floats: a dozen or so (B, T, C) tensors per layer, the attention
    // weights (scores, mask, softmax, dropout) per head, and the logits with their softmax and gradient.
    const double activations = layers * (B * T * C * 16 + B * heads * T * T * 4) + B * T * V * 3;
    const double bytes = 4.0 * (params * 4 + activations);
    return bytes >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

uint64_t physical_memory_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

TrainedModel load_trained_model(const std::filesystem::path& path) {
    const Safetensors file = load_safetensors(path);
    check_format(file.metadata, path);
    check_finite(file.tensors, path.string());
    TrainedModel out{model_config(file.metadata, path),
                     CharTokenizer::from_vocabulary_utf8(field(file.metadata, "tokenizer.vocabulary", path)), nullptr};
    check_sizes_against_weights(out.config, split(file.tensors).weights, path);
    Generator unused_init;  // every weight is overwritten by the file's
    try {
        out.model = make_model(out.config, unused_init);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(fmt::format("{}: {}", path.string(), e.what()));
    }
    load_weights(*out.model, split(file.tensors).weights, path);
    out.model->eval();
    return out;
}

Trainer::Trainer(const TrainConfig& config, CharTokenizer tokenizer, std::vector<int64_t> tokens)
    : Trainer(config, std::move(tokenizer), std::move(tokens), true) {}

Trainer::Trainer(const TrainConfig& config, CharTokenizer tokenizer, std::vector<int64_t> tokens, bool)
    : config_(config),
      tokenizer_(std::move(tokenizer)),
      data_fingerprint_(fingerprint(tokens)),
      data_(std::move(tokens)),
      init_gen_(config.seed),
      batch_gen_(config.seed + 1) {
    check(config.steps >= 0, "Trainer: steps must not be negative, got {}", config.steps);
    check(config.batch > 0, "Trainer: batch must be positive, got {}", config.batch);
    check(config.warmup >= 0, "Trainer: warmup must not be negative, got {}", config.warmup);
    check(config.min_lr <= config.lr, "Trainer: min_lr {} is above lr {}: the rate would rise instead of decaying",
          config.min_lr, config.lr);
    check(config.grad_clip >= 0.0f && std::isfinite(config.grad_clip), "Trainer: grad_clip must be >= 0, got {}", config.grad_clip);
    check(config.model.vocab == tokenizer_.vocab_size(), "Trainer: the model's vocab {} differs from the tokenizer's {}",
          config.model.vocab, tokenizer_.vocab_size());
    for (Split split : {Split::train, Split::validation})
        check(data_.size(split) > config.model.block,
              "Trainer: block size {} needs at least {} tokens, but the {} split has {}", config.model.block,
              config.model.block + 1, split == Split::train ? "training" : "validation", data_.size(split));
    const uint64_t need = estimate_training_bytes(config), have = physical_memory_bytes();
    check(have == 0 || need <= have,
          "Trainer: this model and batch would need about {:.3g} GB of memory (model {} n_embd {} n_layer {} block {}, "
          "batch {}), more than this machine's {:.3g} GB; choose smaller sizes",
          double(need) / 1e9, config.model.kind, config.model.n_embd, config.model.n_layer, config.model.block, config.batch,
          double(have) / 1e9);
    model_ = make_model(config.model, init_gen_);
    optimizer_ = std::make_unique<AdamW>(*model_, AdamWOptions{.lr = config.lr, .beta1 = config.beta1, .beta2 = config.beta2,
                                                                .weight_decay = config.weight_decay});
}

float Trainer::lr_at(int64_t step) const {
    const float min_lr = config_.min_lr < 0.0f ? config_.lr / 10.0f : config_.min_lr;
    return CosineSchedule{.lr = config_.lr, .min_lr = min_lr, .warmup = config_.warmup, .total = config_.steps}.at(step);
}

StepStats Trainer::step(GradientReport* report) {
    const int64_t B = config_.batch, T = config_.model.block;
    const Batch batch = data_.batch(Split::train, B, T, batch_gen_);
    const float lr = lr_at(step_count());
    optimizer_->set_lr(lr);
    model_->train();
    optimizer_->zero_grad();
    const Tensor loss = cross_entropy(model_->forward(batch.inputs, B, T), batch.targets);
    loss.backward();
    if (report) *report = gradient_report(*model_, nullptr, step_count() + 1);
    const float norm = clip_grad_norm(model_->parameters(), config_.grad_clip);
    if (!std::isfinite(loss.item()) || !std::isfinite(norm))
        throw std::runtime_error(fmt::format("Trainer: at step {} the loss is {} and the gradient norm {} (lr {:.3g}); "
                                             "stopped before updating the parameters",
                                             step_count() + 1, loss.item(), norm, lr));
    optimizer_->record_update_ratios(report != nullptr);
    optimizer_->step();
    if (report) report->add_update_ratios(*optimizer_);
    return {step_count(), loss.item(), lr, norm, B * T};
}

double Trainer::evaluate(Split split, int64_t iters) {
    check(iters > 0, "evaluate: iters must be positive, got {}", iters);
    NoGradGuard no_grad;
    const bool was_training = model_->is_training();
    model_->eval();
    const int64_t B = config_.batch, T = config_.model.block;
    // Batches drawn from the seed, the step and the split alone: an evaluation gives the same figure
    // whenever it runs, so a run stopped and resumed reports what a straight run reports.
    Generator gen(config_.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(2 * step_count() + (split == Split::train ? 1 : 2))));
    double total = 0.0;
    for (int64_t i = 0; i < iters; ++i) {
        const Batch batch = data_.batch(split, B, T, gen);
        total += cross_entropy(model_->forward(batch.inputs, B, T), batch.targets).item();
    }
    model_->train(was_training);
    return total / static_cast<double>(iters);
}

void Trainer::save(const std::filesystem::path& path) const {
    NamedTensors tensors = model_->named_parameters();
    for (auto& [name, t] : optimizer_->state()) tensors.emplace_back(std::string(kStatePrefix) + name, t);
    std::map<std::string, std::string> metadata = config_.model.to_metadata();
    const TrainConfig& c = config_;
    metadata.insert({{"format", kFormat},
                     {"tokenizer.vocabulary", tokenizer_.vocabulary_utf8()},
                     {"train.step", std::to_string(step_count())},
                     {"train.steps", std::to_string(c.steps)},
                     {"train.batch", std::to_string(c.batch)},
                     {"train.lr", bits(c.lr)},
                     {"train.min_lr", bits(c.min_lr)},
                     {"train.warmup", std::to_string(c.warmup)},
                     {"train.weight_decay", bits(c.weight_decay)},
                     {"train.beta1", bits(c.beta1)},
                     {"train.beta2", bits(c.beta2)},
                     {"train.grad_clip", bits(c.grad_clip)},
                     {"train.seed", std::to_string(c.seed)},
                     {"train.rng.batch", to_text(batch_gen_.state())},
                     {"data.tokens", std::to_string(data_.size(Split::train) + data_.size(Split::validation))},
                     {"data.fingerprint", std::to_string(data_fingerprint_)}});
    if (const auto* gpt = dynamic_cast<const GPT*>(model_.get()))
        metadata["train.rng.dropout"] = to_text(gpt->dropout_generator().state());
    save_safetensors(path, tensors, metadata);
}

Trainer Trainer::resume(const std::filesystem::path& path, std::string_view text) {
    Safetensors file = load_safetensors(path);
    const auto& meta = file.metadata;
    check_format(meta, path);
    check_finite(file.tensors, path.string());  // weights and AdamW's moments
    TrainConfig c;
    c.model = model_config(meta, path);
    c.steps = static_cast<int64_t>(to_u64(field(meta, "train.steps", path), "train.steps", path));
    c.batch = static_cast<int64_t>(to_u64(field(meta, "train.batch", path), "train.batch", path));
    c.lr = to_float(field(meta, "train.lr", path), "train.lr", path);
    c.min_lr = to_float(field(meta, "train.min_lr", path), "train.min_lr", path);
    c.warmup = static_cast<int64_t>(to_u64(field(meta, "train.warmup", path), "train.warmup", path));
    c.weight_decay = to_float(field(meta, "train.weight_decay", path), "train.weight_decay", path);
    c.beta1 = to_float(field(meta, "train.beta1", path), "train.beta1", path);
    c.beta2 = to_float(field(meta, "train.beta2", path), "train.beta2", path);
    c.grad_clip = to_float(field(meta, "train.grad_clip", path), "train.grad_clip", path);
    c.seed = to_u64(field(meta, "train.seed", path), "train.seed", path);
    const auto step = static_cast<int64_t>(to_u64(field(meta, "train.step", path), "train.step", path));
    if (step > c.steps)
        throw std::runtime_error(fmt::format("{}: the checkpoint is at step {} of a run of {} steps", path.string(), step,
                                             c.steps));
    check_sizes_against_weights(c.model, split(file.tensors).weights, path);

    // Bad values in the file or text outside its vocabulary surface as invalid_argument: name the file.
    Trainer trainer = [&] {
        try {
            CharTokenizer tokenizer = CharTokenizer::from_vocabulary_utf8(field(meta, "tokenizer.vocabulary", path));
            std::vector<int64_t> tokens = tokenizer.encode(text);
            const uint64_t expected = to_u64(field(meta, "data.fingerprint", path), "data.fingerprint", path);
            if (fingerprint(tokens) != expected)
                throw std::runtime_error(fmt::format("{}: the checkpoint was trained on different data ({} tokens); "
                                                     "resume with the same --data file",
                                                     path.string(), field(meta, "data.tokens", path)));
            return Trainer(c, std::move(tokenizer), std::move(tokens), false);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(fmt::format("{}: {}", path.string(), e.what()));
        }
    }();

    const CheckpointParts parts = split(std::move(file.tensors));
    load_weights(*trainer.model_, parts.weights, path);
    try {
        trainer.optimizer_->load_state(parts.state, step);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(fmt::format("{}: {}", path.string(), e.what()));
    }
    trainer.batch_gen_.set_state(state_from_text(field(meta, "train.rng.batch", path), "train.rng.batch", path));
    if (auto* gpt = dynamic_cast<GPT*>(trainer.model_.get()))
        gpt->dropout_generator().set_state(state_from_text(field(meta, "train.rng.dropout", path), "train.rng.dropout", path));
    return trainer;
}

}  // namespace nn
