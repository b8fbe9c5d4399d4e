// The gradient-flow report, checked on modules whose numbers can be worked out by hand.
#include <nn/attention.h>
#include <nn/layers.h>
#include <nn/models.h>
#include <nn/train/optim.h>
#include <nn/train/report.h>

#include "helpers.h"

using namespace autograd;

namespace {
// One Linear (2 -> 1, no bias) and one raw causal Head over 2 channels.
struct Probe : nn::Module {
    nn::Linear linear{{.in = 2, .out = 1, .bias = false}};
    nn::Head head{{.n_embd = 2, .head_size = 2, .compare_raw = true}};
    Probe() {
        register_module("linear", linear);
        register_module("head", head);
    }
};
}  // namespace

TEST_CASE("gradient report: gradient norm, update ratio and head statistics by hand", "[report]") {
    Probe probe;
    std::ranges::fill(probe.linear.weight.data(), 0.0f);
    // d/dW sum(x @ W) = x^T = (3, 4): norm 5. SGD with lr 0.1 moves W to (-0.3, -0.4): the update and the
    // new weight both have norm 0.5, so the ratio is 1.
    sum(probe.linear.forward(tensor({3, 4}, {1, 2}))).backward();
    // Window x0 = (0, 0), x1 = (1, 1), compared raw and divided by sqrt(2): row 0 sees only itself (share
    // 1, entropy 0); row 1 scores (0, 2 / sqrt 2) -> shares 1 / (1 + e^sqrt2) and e^sqrt2 / (1 + e^sqrt2).
    probe.head.forward(tensor({0, 0, 1, 1}, {1, 2, 2}));

    nn::SGD sgd(probe, {.lr = 0.1f});
    sgd.record_update_ratios(true);
    sgd.step();
    const nn::GradientReport report = nn::gradient_report(probe, &sgd, 7);
    REQUIRE(report.step == 7);

    const auto find = [&](const std::string& name) {
        const auto it = std::ranges::find(report.parameters, name, &nn::ParameterFlow::name);
        REQUIRE(it != report.parameters.end());
        return *it;
    };
    const nn::ParameterFlow weight = find("linear.weight");
    CHECK(weight.grad_norm == Approx(5.0));
    CHECK(weight.param_norm == Approx(0.5));
    CHECK(weight.update_ratio == Approx(1.0));
    // The head's value weights got no gradient and no update: ratio NaN, not 0.
    CHECK(std::isnan(find("head.value.weight").update_ratio));

    REQUIRE(report.heads.size() == 1);
    CHECK(report.heads[0].name == "head");
    const double p = std::exp(std::sqrt(2.0)) / (1.0 + std::exp(std::sqrt(2.0)));
    const double row1_entropy = -(p * std::log(p) + (1 - p) * std::log(1 - p));
    CHECK(report.heads[0].entropy == Approx(row1_entropy / 2).epsilon(1e-5));
    CHECK(report.heads[0].largest_share == Approx((1.0 + p) / 2).epsilon(1e-5));

    const std::string table = report.table();
    CHECK_THAT(table, Catch::Contains("linear.weight") && Catch::Contains("5.000e+00") && Catch::Contains("head"));
    CHECK_THAT(table, Catch::Contains("1.000e+00\n") && !Catch::Contains("nan"));  // not updated: "-"
    CHECK(nn::GradientReport::csv_header().starts_with("step,kind,name,"));
    CHECK_THAT(report.csv_rows(), Catch::Contains("7,parameter,linear.weight,5,0.5,1,,"));
}

TEST_CASE("gradient report finds every head of a GPT by its dotted name", "[report]") {
    Generator gen(3);
    nn::GPT gpt({.vocab = 5, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = 4}, gen);
    const std::vector<int64_t> ids = {0, 1, 2, 3, 4, 3, 2, 1};
    gpt.forward(ids, 2, 4);
    const nn::GradientReport report = nn::gradient_report(gpt);
    std::vector<std::string> names;
    for (const auto& h : report.heads) names.push_back(h.name);
    CHECK(names == std::vector<std::string>{"blocks.0.attention.heads.0", "blocks.0.attention.heads.1",
                                            "blocks.1.attention.heads.0", "blocks.1.attention.heads.1"});
    for (const auto& h : report.heads) {
        CHECK(h.entropy >= 0.0);
        CHECK(h.entropy <= std::log(4.0));
        CHECK(h.largest_share >= 0.25);  // the mean over rows of at least 1/visible
    }
}
