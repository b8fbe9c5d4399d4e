// The tool programs as functions: train, generate, heatmap, figure, evaluate, head_scores and the five that
// ask a model why (cache, lens, patch, attribute, ablate), each the whole program (its
// command line, messages and exit status) behind one entry point. Their executables are a one-line main
// each (tool_main.cpp); a program of your own that registers a model kind (nn::register_model_kind)
// calls them to give its kind the same tools, as examples/custom_model.cpp does:
//
//   custom_model train --model learned_scale --data FILE --out run.safetensors --report run.html
//   custom_model generate run.safetensors --chars 200
//
// argv[0] is not read (messages name the tool: "train: ..."); argv[1..] are the tool's arguments.
// Link the static library tinygpt_tools.
#pragma once

namespace tools {

int train(int argc, char** argv);        // examples/train.cpp
int generate(int argc, char** argv);     // examples/generate.cpp
int heatmap(int argc, char** argv);      // examples/heatmap.cpp
int figure(int argc, char** argv);       // examples/figure.cpp
int evaluate(int argc, char** argv);     // examples/evaluate.cpp
int head_scores(int argc, char** argv);  // examples/head_scores.cpp
int cache(int argc, char** argv);        // examples/cache.cpp
int lens(int argc, char** argv);         // examples/lens.cpp
int patch(int argc, char** argv);        // examples/patch.cpp
int attribute(int argc, char** argv);    // examples/attribute.cpp
int ablate(int argc, char** argv);       // examples/ablate.cpp

}  // namespace tools
