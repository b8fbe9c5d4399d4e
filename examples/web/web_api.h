// What the page in examples/web/ asks the library, as one function: a JSON request in, a JSON answer out.
// The page calls it compiled to WebAssembly (web_wasm.cpp), the tests and the bench call the same code
// natively (web_api_main.cpp), so the page's numbers can be compared with the native ones.
//
// Requests, {"call": NAME, ...}; every argument but the call's name has a default:
//   lab          {seed: 1}: what `lab --json` prints (lab_cells.h)
//   head         {sentence, raw: false, divide: true, seed: 1}: the figure's head on a sentence, forward
//                and backward (the maths and the answer's fields: web_api.cpp)
//   saturation   {widths: [2, 4, ..., 256], window: 8, heads: 50, seed: 1}: the gradient that comes back
//                through the softmax as the width grows, with and without the divisor
//   train_start  {seed: 1}: a fresh single-head model on the copy task (replaces the one before)
//   train_steps  {steps: 1}: that many AdamW steps; their losses and the attention of a probe window
// A bad request is answered {"error": "what was wrong"}: the call's name, the argument and its value.
#pragma once

#include <string>
#include <string_view>

namespace web {

std::string call(std::string_view request);

}  // namespace web
