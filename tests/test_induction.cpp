// The induction-head lab's pieces (nn/attention_only.h, nn/tutorial/induction.h): the data generator
// repeats what it claims, and the head scores on hand-made attention patterns.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include <autograd/autograd.h>
#include <nn/attention_only.h>
#include <nn/train/optim.h>
#include <nn/tutorial/induction.h>

using autograd::Tensor;
using Catch::Matchers::Contains;

namespace {

// (B, T, T) weights whose row i is all on column pick(b, i) (itself when pick says -1).
template <typename Pick>
Tensor one_hot_attention(int64_t B, int64_t T, Pick pick) {
    std::vector<float> w(static_cast<size_t>(B * T * T), 0.0f);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i) {
            const int64_t j = pick(b, i);
            w[(b * T + i) * T + (j < 0 ? i : j)] = 1.0f;
        }
    return autograd::tensor(w, {B, T, T});
}

}  // namespace

TEST_CASE("make_induction_batch: each sequence repeats one random segment later, where it says", "[induction]") {
    const nn::InductionDataOptions options{.vocab = 10, .block = 30, .min_segment = 4, .max_segment = 9};
    autograd::Generator gen(7);
    const nn::InductionBatch batch = nn::make_induction_batch(options, 200, gen);
    REQUIRE(batch.inputs.size() == 200 * 30);
    REQUIRE(batch.source.size() == 200 * 31);
    std::set<int64_t> starts, gaps, lengths;
    for (int64_t b = 0; b < batch.B; ++b) {
        const int64_t s = batch.segment_start[b], d = batch.copy_start[b], L = batch.segment_length[b];
        CHECK(L >= 4);
        CHECK(L <= 9);
        CHECK(s + L <= d);
        CHECK(d + L <= 31);
        starts.insert(s), gaps.insert(d - s - L), lengths.insert(L);
        const auto token = [&](int64_t j) { return j < 30 ? batch.inputs[b * 30 + j] : batch.targets[b * 30 + 29]; };
        for (int64_t t = 0; t + 1 < 30; ++t) CHECK(batch.targets[b * 30 + t] == batch.inputs[b * 30 + t + 1]);
        int64_t copies = 0;
        for (int64_t j = 0; j <= 30; ++j) {
            const int64_t src = batch.source[b * 31 + j];
            if (src < 0) continue;
            ++copies;
            CHECK(src == j - d + s);
            CHECK(token(j) == token(src));
        }
        CHECK(copies == L);
        // repeated: input t and target t + 1 both copies, i.e. t in [d, d + L - 1); fresh: the target is no copy
        for (int64_t t = 0; t < 30; ++t) {
            CHECK(batch.repeated(b, t) == (t >= d && t < d + L - 1));
            CHECK(batch.first_occurrence(b, t) == (t + 1 < d || t + 1 >= d + L));
        }
    }
    // the places vary: no position or gap would predict the copy
    CHECK(starts.size() > 10);
    CHECK(gaps.size() > 5);
    CHECK(lengths.size() == 6);
    CHECK_THROWS_WITH(nn::make_induction_batch({.vocab = 10, .block = 10, .min_segment = 4, .max_segment = 6}, 1, gen),
                      Contains("11 tokens"));
}

TEST_CASE("Head scores: a previous-token pattern scores 1, an induction pattern 1, a uniform one the mean of 1/(i+1)",
          "[induction]") {
    autograd::Generator gen(3);
    const nn::InductionBatch batch =
        nn::make_induction_batch({.vocab = 10, .block = 24, .min_segment = 3, .max_segment = 8}, 5, gen);
    const int64_t B = batch.B, T = batch.T;
    const Tensor previous = one_hot_attention(B, T, [](int64_t, int64_t i) { return i - 1; });  // row 0 on itself
    const Tensor induction = one_hot_attention(B, T, [&](int64_t b, int64_t i) {
        const int64_t src = batch.source[b * (T + 1) + i];
        return src >= 0 ? src + 1 : i;
    });
    CHECK(nn::previous_token_score(previous) == Approx(1.0));
    CHECK(nn::prefix_matching_score(induction, batch) == Approx(1.0));
    // each looks elsewhere than the other: a copy's token after its earlier occurrence is never i - 1
    CHECK(nn::prefix_matching_score(previous, batch) == Approx(0.0));
    CHECK(nn::previous_token_score(induction) < 0.5);

    std::vector<float> uniform(static_cast<size_t>(B * T * T), 0.0f);
    double expected = 0.0;
    for (int64_t i = 1; i < T; ++i) expected += 1.0 / double(i + 1) / double(T - 1);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j <= i; ++j) uniform[(b * T + i) * T + j] = 1.0f / float(i + 1);
    CHECK(nn::previous_token_score(autograd::tensor(uniform, {B, T, T})) == Approx(expected));

    CHECK_THROWS_WITH(nn::previous_token_score(autograd::zeros({2, 3})), Contains("(B, T, T)"));
    CHECK_THROWS_WITH(nn::prefix_matching_score(autograd::zeros({B, T - 1, T - 1}), batch),
                      Contains("prefix_matching_score"));
}

TEST_CASE("Induction losses: per-token cross-entropy, split into repeats, first occurrences, early and late",
          "[induction]") {
    autograd::Generator gen(5);
    const nn::InductionBatch batch =
        nn::make_induction_batch({.vocab = 8, .block = 16, .min_segment = 4, .max_segment = 6}, 3, gen);
    // equal logits: every loss is log V
    const auto flat = nn::token_losses(autograd::zeros({3, 16, 8}), batch.targets);
    REQUIRE(flat.size() == 48);
    for (double loss : flat) CHECK(loss == Approx(std::log(8.0)));
    // a loss of 1 on repeats, 3 elsewhere; position decides early and late
    std::vector<double> losses(48);
    for (int64_t b = 0; b < 3; ++b)
        for (int64_t t = 0; t < 16; ++t) losses[b * 16 + t] = batch.repeated(b, t) ? 1.0 : 3.0;
    const nn::InductionLosses split = nn::induction_losses(losses, batch);
    CHECK(split.repeated == Approx(1.0));
    CHECK(split.first == Approx(3.0));
    CHECK(split.early >= 1.0);
    CHECK(split.icl_score() == Approx(split.late - split.early));
    // a confident right answer costs nearly nothing
    std::vector<float> sure(static_cast<size_t>(48 * 8), 0.0f);
    for (int64_t r = 0; r < 48; ++r) sure[r * 8 + batch.targets[r]] = 20.0f;
    for (double loss : nn::token_losses(autograd::tensor(sure, {3, 16, 8}), batch.targets)) CHECK(loss < 1e-6);
}

TEST_CASE("phase_change_step: the first evaluation halfway down, none without a large enough fall", "[induction]") {
    const std::vector<int64_t> steps = {0, 100, 200, 300, 400, 500};
    CHECK(nn::phase_change_step(steps, std::vector<double>{3.2, 3.1, 3.0, 1.5, 0.9, 0.8}) == 300);  // halfway is 2.0
    CHECK(nn::phase_change_step(steps, std::vector<double>{3.2, 3.1, 3.0, 2.9, 2.8, 2.7}) == std::nullopt);
    CHECK(nn::phase_change_step(steps, std::vector<double>{3.2, 3.1, 3.0, 2.9, 2.8, 2.7}, 0.4) == 300);
    CHECK_THROWS_WITH(nn::phase_change_step(steps, std::vector<double>{1.0}), Contains("6 steps but 1 losses"));
}

TEST_CASE("AttentionOnly: embeddings, layers of heads adding to the residual stream, an unembedding, no MLP",
          "[induction]") {
    autograd::Generator gen(1);
    nn::AttentionOnly model({.vocab = 11, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = 6}, gen);
    // token 11x8 + position 6x8 + per layer (3 heads' worth of 8x4 x 2 heads + projection 8x8 + 8) + unembed 8x11 + 11
    CHECK(model.parameter_count() == 88 + 48 + 2 * (3 * 2 * 32 + 64 + 8) + 88 + 11);
    const std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 1};
    const Tensor logits = model.forward(ids, 2, 6);
    CHECK(logits.shape() == autograd::Shape{2, 6, 11});
    REQUIRE(model.blocks.size() == 2);
    CHECK(model.blocks[1]->attn.heads[1]->last_attention().shape() == autograd::Shape{2, 6, 6});
    for (const auto& [name, p] : model.named_parameters()) CHECK(name.find("feed_forward") == std::string::npos);
    CHECK_THROWS(nn::AttentionOnly({.vocab = 11, .n_embd = 8, .n_head = 3, .n_layer = 1, .block = 6}, gen));
}

TEST_CASE("TransformerLens's probe: random tokens repeated, and its duplicate-token and induction scores",
          "[induction]") {
    autograd::Generator gen(4);
    const nn::RepeatedTokens probe = nn::make_repeated_tokens(7, 5, 30, gen);
    REQUIRE(probe.ids.size() == 30 * 10);
    std::set<std::vector<int64_t>> halves;
    for (int64_t b = 0; b < probe.B; ++b) {
        const auto row = probe.ids.begin() + b * 10;
        CHECK(std::equal(row, row + 5, row + 5));
        CHECK(std::all_of(row, row + 10, [](int64_t id) { return id >= 0 && id < 7; }));
        halves.emplace(row, row + 5);
    }
    CHECK(halves.size() > 25);  // drawn, not fixed

    const int64_t B = 3, half = 6, T = 12;
    const Tensor duplicate = one_hot_attention(B, T, [&](int64_t, int64_t i) { return i >= half ? i - half : -1; });
    const Tensor induction = one_hot_attention(B, T, [&](int64_t, int64_t i) { return i >= half ? i - half + 1 : -1; });
    CHECK(nn::duplicate_token_score(duplicate, half) == Approx(1.0));
    CHECK(nn::induction_score(duplicate, half) == Approx(0.0));
    CHECK(nn::induction_score(induction, half) == Approx(1.0));
    CHECK(nn::duplicate_token_score(induction, half) == Approx(0.0));
    // uniform causal rows: position i gives 1 / (i + 1) to every earlier one
    std::vector<float> uniform(static_cast<size_t>(B * T * T), 0.0f);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < T; ++i)
            for (int64_t j = 0; j <= i; ++j) uniform[(b * T + i) * T + j] = 1.0f / float(i + 1);
    double expected = 0.0;
    for (int64_t i = half; i < T; ++i) expected += 1.0 / double(i + 1) / double(half);
    CHECK(nn::induction_score(autograd::tensor(uniform, {B, T, T}), half) == Approx(expected));
    CHECK_THROWS_WITH(nn::induction_score(duplicate, 5), Contains("not a probe of 2 x 5 tokens"));
}

// The induction lab's two-layer model (examples/induction's defaults, trained past its phase change near
// step 950): the probe finds its previous-token head in layer 0 and its induction head in layer 1, and the
// one-layer control has no induction head.
TEST_CASE("head_scores finds the induction lab's previous-token and induction heads, and none in one layer",
          "[induction][slow]") {
    const nn::InductionDataOptions data{.vocab = 24, .block = 40, .min_segment = 10, .max_segment = 20};
    const auto trained = [&](int64_t n_layer, int64_t n_embd) {
        autograd::Generator init(13), stream(14);
        auto model = std::make_unique<nn::AttentionOnly>(
            nn::AttentionOnlyOptions{.vocab = 24, .n_embd = n_embd, .n_head = 4, .n_layer = n_layer, .block = 40},
            init);
        nn::AdamW optimizer(*model, {.lr = 3e-3f, .weight_decay = 0.0f});
        for (int64_t step = 1; step <= 1400; ++step) {
            const nn::InductionBatch batch = nn::make_induction_batch(data, 32, stream);
            optimizer.zero_grad();
            autograd::cross_entropy(model->forward(batch.inputs, batch.B, batch.T), batch.targets).backward();
            nn::clip_grad_norm(model->parameters(), 1.0f);
            optimizer.step();
        }
        return model;
    };
    autograd::Generator gen(5);
    const nn::RepeatedTokens probe = nn::make_repeated_tokens(24, 20, 16, gen);
    const auto best = [](const std::vector<nn::HeadScores>& scores, double nn::HeadScores::*score) {
        return *std::max_element(scores.begin(), scores.end(),
                                 [&](const auto& a, const auto& b) { return a.*score < b.*score; });
    };

    auto two = trained(2, 32);
    const std::vector<nn::HeadScores> scores = nn::head_scores(*two, probe);
    REQUIRE(scores.size() == 8);
    for (const nn::HeadScores& s : scores)
        UNSCOPED_INFO(s.name << ": previous " << s.previous_token << ", duplicate " << s.duplicate_token
                             << ", induction " << s.induction);
    const nn::HeadScores induction = best(scores, &nn::HeadScores::induction);
    const nn::HeadScores previous = best(scores, &nn::HeadScores::previous_token);
    INFO("induction head " << induction.name << " " << induction.induction << ", previous-token head " << previous.name
                           << " " << previous.previous_token);
    CHECK(induction.layer == 1);
    CHECK(induction.induction > 0.4);
    CHECK(previous.layer == 0);
    CHECK(previous.previous_token > 0.4);
    CHECK(scores[0].name == "blocks.0.attn.heads.0");

    auto one = trained(1, 40);
    const nn::HeadScores control = best(nn::head_scores(*one, probe), &nn::HeadScores::induction);
    INFO("the one-layer control's best induction score " << control.induction);
    CHECK(control.induction < 0.5 * induction.induction);

    const nn::RepeatedTokens too_long = nn::make_repeated_tokens(24, 21, 1, gen);
    CHECK_THROWS_WITH(nn::head_scores(*two, too_long),
                      Contains("2 x 21 tokens is longer than the model's block of 40"));
}
