// nn/sample.h: generate() against the model's own logits computed by hand: seeded determinism,
// top-k and temperature, the window (cropped to the block, its last half kept when full), argument
// checks, and the model's mode left as it was.
#include <nn/generate/sample.h>
#include <nn/tokenizers/char_tokenizer.h>

#include <algorithm>
#include <limits>
#include <span>

#include "helpers.h"

using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using namespace autograd;

namespace {

constexpr int64_t kVocab = 7, kBlock = 5;

// The window generate() reads, by hand (nn/decoder.h's policy): the last block of the context; a full
// window keeps its last block / 2 ids before the next one joins.
struct HandWindow {
    HandWindow(const nn::LanguageModel& model, const std::vector<int64_t>& context) : block(model.block_size()) {
        ids.assign(context.end() - std::min<int64_t>(static_cast<int64_t>(context.size()), block), context.end());
    }
    void push(int64_t id) {
        if (static_cast<int64_t>(ids.size()) == block) ids.erase(ids.begin(), ids.end() - block / 2);
        ids.push_back(id);
    }
    int64_t block;
    std::vector<int64_t> ids;
};

// The logits of the next token after `window`, by hand: forward on it, in eval mode, without a graph.  -> (V)
std::vector<float> next_logits(nn::LanguageModel& model, const HandWindow& window) {
    NoGradGuard no_grad;
    const bool was_training = model.is_training();
    model.eval();
    const auto T = static_cast<int64_t>(window.ids.size());
    const Tensor logits = model.forward(window.ids, 1, T);  // (1, T, V)
    model.train(was_training);
    const auto last = logits.data().subspan(static_cast<size_t>((T - 1) * model.vocab_size()));
    return {last.begin(), last.end()};
}

int64_t argmax_of(const std::vector<float>& v) { return std::ranges::max_element(v) - v.begin(); }

// The rank of v[i] in v, 0 for the largest.
int64_t rank_of(const std::vector<float>& v, int64_t i) {
    return std::ranges::count_if(v, [&](float x) { return x > v[static_cast<size_t>(i)]; });
}

// Replays `produced` after `context`: each token must satisfy ok(logits, token).
template <typename Ok>
void replay(nn::LanguageModel& model, const std::vector<int64_t>& context, const std::vector<int64_t>& produced,
            Ok ok) {
    HandWindow window(model, context);
    for (size_t i = 0; i < produced.size(); ++i) {
        const std::vector<float> logits = next_logits(model, window);
        INFO("token " << i << " = " << produced[i] << ", logits " << fmt::format("{}", logits));
        CHECK(ok(logits, produced[i]));
        window.push(produced[i]);
    }
}

}  // namespace

TEST_CASE("generate gives the same tokens for the same generator state", "[sample]") {
    Generator init(1);
    nn::SingleHead model({.vocab = kVocab, .n_embd = 8, .block = kBlock}, init);
    const std::vector<int64_t> context = {1, 2};
    Generator a(99), b(99), c(100);
    auto first = nn::generate(model, context, 40, {}, a);
    REQUIRE(first.size() == 40);
    CHECK(nn::generate(model, context, 40, {}, b) == first);
    CHECK(nn::generate(model, context, 40, {}, c) != first);  // 40 draws of 7 choices: a collision is ~0
    for (int64_t id : first) CHECK((id >= 0 && id < kVocab));
    // Resuming the generator's stream resumes the text, while the window has not filled (a full window
    // keeps its last half: the window then depends on where the generation started).
    nn::SingleHead wide({.vocab = kVocab, .n_embd = 8, .block = 64}, init);
    Generator e(99);
    first = nn::generate(wide, context, 40, {}, e);
    Generator d(99);
    const auto half = nn::generate(wide, context, 20, {}, d);
    std::vector<int64_t> longer = context;
    longer.insert(longer.end(), half.begin(), half.end());
    auto rest = nn::generate(wide, longer, 20, {}, d);
    std::vector<int64_t> joined = half;
    joined.insert(joined.end(), rest.begin(), rest.end());
    CHECK(joined == first);
    CHECK(nn::generate(model, context, 0, {}, d).empty());
}

TEST_CASE("top_k = 1 always picks the argmax of the model's logits", "[sample]") {
    Generator init(2);
    nn::GPT model({.vocab = kVocab, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = kBlock}, init);
    // GPT's initial weights are tiny; spread them so the logits differ clearly.
    for (Tensor& p : model.parameters())
        for (float& v : p.data()) v = init.normal(0.0f, 0.5f);
    const std::vector<int64_t> context = {3, 0, 6};
    Generator gen(7);
    const auto produced = nn::generate(model, context, 30, {.temperature = 1.0f, .top_k = 1}, gen);
    replay(model, context, produced,
           [](const std::vector<float>& logits, int64_t id) { return id == argmax_of(logits); });
    // With top_k = 1 the generator is irrelevant.
    Generator other(8);
    CHECK(nn::generate(model, context, 30, {.temperature = 2.0f, .top_k = 1}, other) == produced);
}

TEST_CASE("temperature 0 is greedy: each token is the argmax of the logits, and nothing is drawn", "[sample]") {
    Generator init(2);
    nn::GPT model({.vocab = kVocab, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = kBlock}, init);
    for (Tensor& p : model.parameters())  // (spread, so the logits differ clearly)
        for (float& v : p.data()) v = init.normal(0.0f, 0.5f);
    const std::vector<int64_t> context = {3, 0, 6};
    Generator gen(7), untouched(7);
    const auto produced = nn::generate(model, context, 30, {.temperature = 0.0f}, gen);
    replay(model, context, produced,
           [](const std::vector<float>& logits, int64_t id) { return id == argmax_of(logits); });
    CHECK(gen.next_u64() == untouched.next_u64());  // run.c's argmax draws no number
    // and it is the draw's limit: top_k 1 at any temperature picks the same tokens
    Generator other(8);
    CHECK(nn::generate(model, context, 30, {.temperature = 1.0f, .top_k = 1}, other) == produced);
}

TEST_CASE("a very low temperature approaches the argmax, and top_k keeps only the k most likely", "[sample]") {
    Generator init(3);
    nn::SingleHead model({.vocab = kVocab, .n_embd = 8, .block = kBlock}, init);
    const std::vector<int64_t> context = {4};
    Generator gen(9);
    // logits of an untrained head differ by ~0.1; divided by 1e-4 the runner-up's share is ~e^-1000.
    const auto cold = nn::generate(model, context, 40, {.temperature = 1e-4f}, gen);
    replay(model, context, cold, [](const std::vector<float>& logits, int64_t id) { return id == argmax_of(logits); });

    const auto hot = nn::generate(model, context, 200, {.temperature = 1.0f}, gen);
    CHECK(std::ranges::count_if(hot, [&](int64_t id) { return id != hot[0]; }) > 0);  // not stuck on one token

    const auto top2 = nn::generate(model, context, 200, {.temperature = 5.0f, .top_k = 2}, gen);
    replay(model, context, top2, [](const std::vector<float>& logits, int64_t id) { return rank_of(logits, id) < 2; });
    // a high temperature spreads the draws, so both of the top two do occur somewhere
    std::vector<int64_t> ranks;
    HandWindow window(model, context);
    for (int64_t id : top2) {
        ranks.push_back(rank_of(next_logits(model, window), id));
        window.push(id);
    }
    CHECK(std::ranges::count(ranks, 0) > 0);
    CHECK(std::ranges::count(ranks, 1) > 0);
}

TEST_CASE("a top_k above the vocabulary keeps all of it, as nanoGPT clamps it", "[sample]") {
    Generator init(4);
    nn::SingleHead model({.vocab = kVocab, .n_embd = 8, .block = kBlock}, init);
    const std::vector<int64_t> context = {1, 2, 3};
    Generator all_gen(9), above_gen(9);
    const auto all = nn::generate(model, context, 50, {.temperature = 3.0f, .top_k = 0}, all_gen);
    CHECK(nn::generate(model, context, 50, {.temperature = 3.0f, .top_k = kVocab + 100}, above_gen) == all);
}

TEST_CASE("generate rejects bad options and contexts", "[sample]") {
    Generator init(4);
    nn::SingleHead model({.vocab = kVocab, .n_embd = 8, .block = kBlock}, init);
    Generator gen(1);
    const std::vector<int64_t> ok = {1, 2};
    for (float t : {-1.0f, -1e-30f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
        CHECK_THROWS_WITH(nn::generate(model, ok, 3, {.temperature = t}, gen), Contains("temperature"));
    CHECK_THROWS_WITH(nn::generate(model, ok, 3, {.top_k = -1}, gen), Contains("top_k -1"));
    CHECK_NOTHROW(nn::generate(model, ok, 3, {.top_k = kVocab}, gen));
    CHECK_THROWS_WITH(nn::generate(model, {}, 3, {}, gen), Contains("context is empty"));
    CHECK_THROWS_WITH(nn::generate(model, {1, kVocab}, 3, {}, gen), Contains("context id 7"));
    CHECK_THROWS_WITH(nn::generate(model, {-1}, 3, {}, gen), Contains("context id -1"));
    CHECK_THROWS_AS(nn::generate(model, ok, -1, {}, gen), std::invalid_argument);
}

TEST_CASE("generate samples in eval mode and restores the model's mode", "[sample]") {
    Generator init(5);
    nn::GPT model({.vocab = kVocab, .n_embd = 8, .n_head = 2, .n_layer = 1, .block = kBlock, .dropout = 0.5f}, init);
    for (Tensor& p : model.parameters())
        for (float& v : p.data()) v = init.normal(0.0f, 0.5f);
    const std::vector<int64_t> context = {2, 5};
    Generator gen(3);

    model.train();
    const auto dropout_state = model.dropout_generator().state();
    const auto produced = nn::generate(model, context, 20, {.top_k = 1}, gen);
    CHECK(model.is_training());
    CHECK(model.dropout_generator().state() == dropout_state);  // no dropout mask was drawn
    // Argmax of the eval-mode logits: with dropout 0.5 active, training-mode logits would disagree.
    replay(model, context, produced,
           [](const std::vector<float>& logits, int64_t id) { return id == argmax_of(logits); });

    model.eval();
    nn::generate(model, context, 5, {}, gen);
    CHECK_FALSE(model.is_training());
}

TEST_CASE("generate reads at most the block: a context longer than the block works", "[sample]") {
    Generator init(6);
    nn::SingleHead model({.vocab = kVocab, .n_embd = 8, .block = kBlock}, init);
    const std::vector<int64_t> long_context = {0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5};  // 13 > block 5
    const std::vector<int64_t> last_block(long_context.end() - kBlock, long_context.end());
    Generator a(11), b(11);
    const auto from_long = nn::generate(model, long_context, 25, {}, a);
    CHECK(from_long == nn::generate(model, last_block, 25, {}, b));  // only the last 5 ids matter

    // The one-character model reads the last character only.
    nn::Bigram bigram({.vocab = kVocab}, init);
    Generator c(12), d(12);
    CHECK(nn::generate(bigram, long_context, 25, {}, c) == nn::generate(bigram, {long_context.back()}, 25, {}, d));
}

// Weights of 1e38, finite in a file, make logits that are not: generate drew the last id from them, over
// and over, and now refuses in the words evaluate uses for a loss that is not finite.
TEST_CASE("generate refuses logits that are not finite, naming the model", "[sample]") {
    Generator init(6);
    nn::GPT model({.vocab = kVocab, .n_embd = 8, .n_head = 2, .n_layer = 1, .block = kBlock}, init);
    for (Tensor& p : model.parameters())
        for (float& v : p.data()) v = 1e38f;
    for (bool cache : {true, false}) {
        Generator gen(1);
        std::vector<int64_t> emitted;
        CHECK_THROWS_WITH(nn::generate(model, {1, 2}, 5, {.cache = cache, .model = "huge.st"}, gen,
                                       [&](int64_t id) { return emitted.push_back(id), true; }),
                          Contains("huge.st: the logits of sampled token 1 hold") &&
                              Contains("the model's weights or logits are not finite"));
        CHECK(emitted.empty());
    }
    CHECK_THROWS_WITH(nn::check_finite_output("m.st", "the loss of window 3", std::numeric_limits<double>::infinity()),
                      Equals("m.st: the loss of window 3 is inf: the model's weights or logits are not finite"));
    const std::vector<float> logits = {0.5f, 1.0f, -std::numeric_limits<float>::infinity()};
    CHECK_THROWS_WITH(nn::check_finite_output("", "the logits", logits),
                      Equals("the logits hold -inf (at id 2): the model's weights or logits are not finite"));
    CHECK_NOTHROW(nn::check_finite_output("m.st", "the logits", std::span(logits).first(2)));
}

TEST_CASE("a sample starts from BOS and the prompt's tokens when the tokenizer has a BOS, else from the prompt",
          "[sample]") {
    const nn::CharTokenizer chars = nn::CharTokenizer::from_text("ab\nc");
    CHECK_FALSE(nn::sample_bos(chars));
    const nn::SampleStart plain = nn::sample_start(chars, std::nullopt, std::string("ca"));
    CHECK(plain.text == "ca");
    CHECK(plain.ids == chars.encode("ca"));
    const nn::SampleStart unprompted = nn::sample_start(chars, std::nullopt, std::nullopt);
    CHECK(unprompted.text == "\n");  // default_prompt: a fresh line
    CHECK(unprompted.ids == chars.encode("\n"));
    // with a BOS (run.c's way): BOS then the prompt; BOS alone without a prompt, and nothing printed
    const nn::SampleStart bos_prompt = nn::sample_start(chars, 2, std::string("ca"));
    CHECK(bos_prompt.text == "ca");
    CHECK(bos_prompt.ids == std::vector<int64_t>{2, chars.encode("c")[0], chars.encode("a")[0]});
    const nn::SampleStart bos_alone = nn::sample_start(chars, 2, std::nullopt);
    CHECK(bos_alone.text.empty());
    CHECK(bos_alone.ids == std::vector<int64_t>{2});
}
