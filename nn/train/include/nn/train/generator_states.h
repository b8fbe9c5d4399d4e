// The states of a model's random generators in checkpoint metadata, so that a resumed run draws the
// same dropout masks: every generator the model registered (Module::register_generator), whatever its
// kind, under "train.rng." and its dotted name ("train.rng.dropout" for a GPT's). Trainer::save and
// Trainer::resume use these; a program that writes its own checkpoints can too.
//
//     nn::write_generator_states(model, metadata);          // metadata["train.rng.dropout"] = "17 0 0"
//     nn::read_generator_states(model, metadata, path);     // each generator continues where it was
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "nn/module.h"

namespace nn {

// Adds one key per generator, its state exactly (the spare normal by its bits). A key already in
// `metadata` (a generator named "batch" would meet the trainer's own) is std::invalid_argument.
void write_generator_states(const Module& module, std::map<std::string, std::string>& metadata);
// Sets every generator of the module from its key. A missing key or a value that is not a state is a
// std::runtime_error naming the path and the key.
void read_generator_states(Module& module, const std::map<std::string, std::string>& metadata,
                           const std::filesystem::path& path);

}  // namespace nn
