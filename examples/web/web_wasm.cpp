// The page's one entry into the library compiled to WebAssembly (web_api.h): the page's script calls
//   Module.ccall("web_call", "string", ["string"], [JSON.stringify(request)])
// and parses the answer. The answer stays valid until the next call.
#include <string>

#include <emscripten/emscripten.h>

#include "web_api.h"

extern "C" EMSCRIPTEN_KEEPALIVE const char* web_call(const char* request) {
    static std::string answer;
    answer = web::call(request);
    return answer.c_str();
}
