// The attention lab: the six cells of the tutorial (../shared/seed/07-attention.md), each computed by
// the library, printed as a small table, and checked (lab_cells.cpp). Nothing is trained; every random
// draw comes from one seeded generator, and the seed is printed.
//
//   lab                 run all six cells
//   lab --cell 5        run one
//   lab --json          print the measured values and the checks as one JSON object instead
//   lab --seed 7        another seed (the checks are statistical and hold for any seed)
//
// Exit status: 0 when every check passes, 1 when any fails, 2 for bad arguments.
#include <cstdint>

#include <cli.h>
#include <fmt/core.h>

#include "lab_cells.h"

namespace {

struct Options {
    int only = 0;  // 0: every cell
    bool json = false;
    uint64_t seed = 1;
};

cli::Parser make_parser(Options& o) {
    cli::Parser p("lab", "[options]",
                  "The attention lab: the six cells of the tutorial, computed by the library and checked.");
    p.option("--cell", "N", "run only cell N (1-6)",
             [&o](const cli::Value& v) { o.only = static_cast<int>(v.integer(1, 6)); });
    p.flag("--json", "print the measured values as one JSON object", [&o] { o.json = true; });
    p.option("--seed", "S", "seed for every random draw (default 1)",
             [&o](const cli::Value& v) { o.seed = static_cast<uint64_t>(v.integer(0, INT64_MAX)); });
    return p;
}

int run(const Options& o) {
    const nlohmann::ordered_json result = lab::run(o.seed, o.only, !o.json);
    if (o.json) fmt::print("{}\n", result.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    return result["failed"].get<int>() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return cli::program<Options>(argc, argv, make_parser, run); }
