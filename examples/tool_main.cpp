// The main of the tool programs (train, generate, heatmap, figure, evaluate, head_scores, cache, lens, patch,
// attribute, ablate): built once per
// tool with TINYGPT_TOOL naming its entry point (examples/tools.h), so each program is its function.
#include "tools.h"

int main(int argc, char** argv) { return tools::TINYGPT_TOOL(argc, argv); }
