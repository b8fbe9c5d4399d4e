// The attention lab's six cells, shared by the lab program (examples/lab.cpp) and the page
// (examples/web/): each cell measures one claim of the tutorial with the library and checks it.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace lab {

// Runs every cell, or only cell `only` (1-6), every random draw from `seed`. With `print`, each cell
// is printed as a small table with its ✓/✗ lines and then "N passed, F failed". Returns what `lab
// --json` prints: {"seed", "passed", "failed", "cells": [{"cell", "title", "values", "checks": [{"id",
// "claim", "value", "expected", "passed"}]}]}.
nlohmann::ordered_json run(uint64_t seed, int only = 0, bool print = false);

}  // namespace lab
