// Writes what bench/pytorch_reference.py needs to check that it does the same work as bench_train_step:
// for each configuration of bench/train_step.h named (the four character models when none is), in the
// directory given,
//   <name>.safetensors        the model's parameters as built from the seed (nn::save_module; Linear
//                             weights stored (in, out)), with the config in the metadata
//   <name>.batch.safetensors  "ids" and "targets", (B, T) token ids stored as float32 (exact below 2^24),
//                             and in the metadata our loss on that batch ("loss") and the loss of each
//                             of the first three training steps ("step_losses", comma-separated)
//
//     build/bench/export_weights /tmp/weights && /usr/bin/python3 bench/pytorch_reference.py --weights /tmp/weights
//     build/bench/export_weights /tmp/weights gpt2      # GPT-2 small: 500 MB, and a minute for its three steps
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/core.h>

#include <nn/model_files/safetensors.h>

#include "train_step.h"

int main(int argc, char** argv) {
    if (argc < 2) {
        fmt::print(stderr, "usage: {} DIR [CONFIG...]\n", argv[0]);
        return 2;
    }
    try {
        const std::filesystem::path dir = argv[1];
        std::vector<bench::StepConfig> configs;
        for (int i = 2; i < argc; ++i) configs.push_back(bench::step_config(argv[i]));
        if (configs.empty()) configs.assign(bench::step_configs().begin(), bench::step_configs().end());
        std::filesystem::create_directories(dir);
        for (const auto& config : configs) {
            bench::TrainStep step(config);
            const std::string name(config.name);
            auto metadata = config.model.to_metadata();
            metadata["batch"] = std::to_string(config.batch);
            nn::save_module(dir / (name + ".safetensors"), *step.model, metadata);

            const double loss = step.loss();
            std::string step_losses;
            for (int i = 0; i < 3; ++i) step_losses += fmt::format("{}{:.9g}", i ? "," : "", step.step());
            const auto as_floats = [&](const std::vector<int64_t>& v) {
                std::vector<float> f(v.begin(), v.end());
                return autograd::tensor(f, {config.batch, config.model.block});
            };
            metadata["loss"] = fmt::format("{:.9g}", loss);
            metadata["step_losses"] = step_losses;
            nn::save_safetensors(dir / (name + ".batch.safetensors"),
                                 {{"ids", as_floats(step.ids)}, {"targets", as_floats(step.targets)}}, metadata);
            fmt::print("{}: {} parameters, loss {:.6f}, first steps {}\n", name, step.model->parameter_count(), loss,
                       step_losses);
        }
    } catch (const std::exception& e) {
        fmt::print(stderr, "export_weights: {}\n", e.what());
        return 1;
    }
    return 0;
}
