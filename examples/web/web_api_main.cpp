// The page's calls run natively (web_api.h), for the tests and the bench that compare the page with
// the native library: each argument is one request, each answer one line, in order (a training run
// started by one request goes on in the next).
//
//   web_api '{"call": "head", "sentence": "the cat sat on the mat", "divide": false}'
//   web_api '{"call": "train_start"}' '{"call": "train_steps", "steps": 50}'
//
// Exit status: 0 when every request was answered, 1 when one was answered with an error, 2 without a request.
#include <cstdio>
#include <string>
#include <string_view>

#include "web_api.h"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fputs("usage: web_api REQUEST...  (each a JSON object {\"call\": NAME, ...}; examples/web/web_api.h)\n",
                   stderr);
        return 2;
    }
    int status = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string answer = web::call(argv[i]);
        std::puts(answer.c_str());
        if (answer.starts_with("{\"error\"")) status = 1;
    }
    return status;
}
