// A training checkpoint read for inference: config, vocabulary and weights; the training state is ignored.
#include "checkpoint_fields.h"

namespace nn {

using namespace detail;

TrainedModel load_trained_model(const std::filesystem::path& path) {
    const Safetensors file = load_safetensors(path);
    check_format(file.metadata, path);
    check_finite(file.tensors, printable_name(path.string()));
    TrainedModel out{model_config(file.metadata, path), checkpoint_tokenizer(file.metadata, path), nullptr};
    // A vocabulary shorter than the model's output would let a sampler draw an id it cannot print, after
    // printing the text before it: refused here, before anything is drawn.
    if (out.tokenizer->vocab_size() != out.config.vocab)
        throw std::runtime_error(fmt::format("{}: its vocabulary has {} {} but its model's vocab is {}", printable_name(path.string()),
                                             out.tokenizer->vocab_size(),
                                             dynamic_cast<const CharTokenizer*>(out.tokenizer.get()) ? "characters" : "tokens",
                                             out.config.vocab));
    const NamedTensors weights = split(file.tensors).weights;
    check_sizes_against_weights(out.config, weights, path);
    autograd::Generator unused_init;  // every weight is overwritten by the file's
    out.model = naming_path(path, [&] { return make_model(out.config, unused_init); });
    naming_path(path, [&] { load_parameters(*out.model, weights); });
    out.model->eval();
    return out;
}

}  // namespace nn
