// Fuzz target: examples/train's command line (examples/train_args.h on examples/support/cli.h). The
// input is the arguments separated by NUL bytes. A bad command line must be cli::UsageError (a
// std::invalid_argument), --help cli::HelpRequested, --version cli::VersionRequested; an accepted one must
// keep the promises the rest of train relies on.
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "train_args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<std::string> args{"train"};
    std::string current;
    for (size_t i = 0; i < size && args.size() < 64; ++i) {
        if (data[i] == '\0') {
            args.push_back(current);
            current.clear();
        } else {
            current.push_back(static_cast<char>(data[i]));
        }
    }
    if (!current.empty() && args.size() < 64) args.push_back(current);
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    try {
        const train_args::Options o = train_args::parse_args(static_cast<int>(args.size()), argv.data());
        const nn::TrainConfig& c = o.config;
        if (c.steps < 1 || c.batch < 1 || c.model.block < 1 || c.model.n_embd < 1 || c.model.n_head < 1)
            fuzz::fail("parse accepted a size below 1");
        if (nn::model_kind_info(c.model.kind).reads(nn::option_n_head) && c.model.n_embd % c.model.n_head != 0)
            fuzz::fail("parse accepted an n_head that does not divide n_embd");
        if (o.resume && !o.model_flags.empty()) fuzz::fail("parse accepted model flags with --resume");
        if (!(c.lr > 0.0f)) fuzz::fail("parse accepted a learning rate <= 0");
        if (!(c.run.temperature >= 0.0f)) fuzz::fail("parse accepted a temperature below 0 (0 is greedy)");
        // (with --init-from the model's kind is the checkpoint's, unknown here: train checks it once read)
        for (const std::string& flag : o.model_flags)
            if (!o.init_from && !train_args::applies(flag, c.model.kind))
                fuzz::fail("parse accepted a flag that does not apply to the model");
        try {
            nn::check_train_settings(c);  // the checks a checkpoint's values get (nn/train/settings.h)
        } catch (const std::invalid_argument&) {
            fuzz::fail("parse accepted a setting out of its limits");
        }
        for (const auto& file : {o.data, o.csv, o.grad_csv, o.out, o.resume})
            if (file && file->empty()) fuzz::fail("parse accepted an empty file name");
    } catch (const cli::UsageError&) {
    } catch (const cli::HelpRequested&) {
    } catch (const cli::VersionRequested&) {}
    return 0;
}
