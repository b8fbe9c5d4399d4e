// Inspecting modules: parameters carry their full dotted names, forward hooks see every module's
// output when it is called (module(x), the one path) and can be removed, and a model's graph shows
// those names. The hook points: tests/test_hooks.cpp.
#include <string>
#include <string_view>
#include <vector>

#include <nn/attention.h>
#include <nn/layers.h>
#include <nn/models.h>

#include "helpers.h"

using namespace autograd;

TEST_CASE("named_parameters is pure: asking a child for its parameters renames nothing", "[graph]") {
    Generator gen(1);
    nn::GPT gpt({.vocab = 5, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = 4}, gen);
    const nn::Block& block = *gpt.blocks[1];
    // the child's own view: names relative to it
    const auto relative = block.named_parameters();
    CHECK(relative.front().first == "norm1.gain");
    // the tensors keep their full names in the model they belong to (the old named_parameters renamed
    // them "norm1.gain", ... here: the last caller's names won)
    for (const auto& [name, p] : relative) CHECK(p.name() == "blocks.1." + name);
    (void)block.attention.heads[0]->named_parameters();
    CHECK(gpt.blocks[1]->attention.heads[0]->query.weight.name() == "blocks.1.attention.heads.0.query.weight");
    // a module on its own names its parameters relative to itself, as soon as it is built
    nn::Head head({.n_embd = 4, .head_size = 4}, gen);
    CHECK(head.query.weight.name() == "query.weight");
}

TEST_CASE("named_parameters names each tensor by its full dotted name", "[graph]") {
    Generator gen(1);
    nn::GPT gpt({.vocab = 5, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = 4}, gen);
    for (const auto& [name, p] : gpt.named_parameters()) CHECK(p.name() == name);
    REQUIRE(gpt.blocks[0]->attention.heads[1]->query.weight.name() == "blocks.0.attention.heads.1.query.weight");
    REQUIRE(gpt.lm_head.bias.name() == "lm_head.bias");

    // The names show in the graph of a forward.
    const std::vector<int64_t> ids = {0, 1, 2, 3};
    const std::string dot = to_dot(gpt.forward(ids, 1, 4));
    REQUIRE(dot.find("\"blocks.1.feed_forward.down.weight\\n(32, 8)\"") != std::string::npos);
    REQUIRE(dot.find("\"token.weight\\n(5, 8)\"") != std::string::npos);
}

TEST_CASE("forward hooks see the module and its output, and can be removed", "[graph]") {
    Generator gen(2);
    nn::Linear linear({.in = 3, .out = 2}, gen);
    const Tensor x = randn({4, 3}, gen);
    int calls = 0;
    const nn::Module* seen_module = nullptr;
    Tensor seen;
    nn::HookHandle handle = linear.register_forward_hook([&](const nn::Module& m, const Tensor& out) {
        ++calls;
        seen_module = &m;
        seen = out;
    });
    const Tensor y = linear(x);
    REQUIRE(calls == 1);
    REQUIRE(seen_module == &linear);
    REQUIRE(seen.impl() == y.impl());  // the very tensor forward returns
    linear(x);
    REQUIRE(calls == 2);

    handle.remove();
    REQUIRE_FALSE(handle.active());
    linear(x);
    REQUIRE(calls == 2);

    // A hook that removes itself fires once.
    nn::HookHandle once;
    once = linear.register_forward_hook([&](const nn::Module&, const Tensor&) {
        ++calls;
        once.remove();
    });
    linear(x);
    linear(x);
    REQUIRE(calls == 3);
}

TEST_CASE("every module called runs its hooks: a GPT reports each layer once", "[graph]") {
    Generator gen(3);
    nn::GPT gpt({.vocab = 5, .n_embd = 8, .n_head = 2, .n_layer = 2, .block = 4}, gen);
    std::vector<std::string> order;
    std::vector<nn::HookHandle> handles;
    const auto watch = [&](nn::Module& m, std::string label) {
        handles.push_back(m.register_forward_hook([&order, label](const nn::Module&, const Tensor& out) {
            order.push_back(fmt::format("{} {}", label, shape_str(out.shape())));
        }));
    };
    watch(gpt.token, "token");
    watch(gpt.blocks[0]->norm1, "norm1");
    watch(*gpt.blocks[0]->attention.heads[0], "head");
    watch(gpt.blocks[0]->attention, "attention");
    watch(gpt.blocks[0]->feed_forward, "feed_forward");
    watch(*gpt.blocks[0], "block");
    watch(gpt.lm_head, "lm_head");
    watch(gpt, "gpt");
    const std::vector<int64_t> ids = {0, 1, 2, 3, 4, 0};
    gpt(ids, 2, 3);
    REQUIRE(order == std::vector<std::string>{"token (2, 3, 8)", "norm1 (2, 3, 8)", "head (2, 3, 4)",
                                              "attention (2, 3, 8)", "feed_forward (2, 3, 8)", "block (2, 3, 8)",
                                              "lm_head (2, 3, 5)", "gpt (2, 3, 5)"});

    for (auto& h : handles) h.remove();
    order.clear();
    const Tensor fused = gpt(ids, 2, 3);
    REQUIRE(order.empty());

    // The feed-forward runs up and gelu as one op (linear_gelu) unless `up` has a hook: then up runs
    // alone, its hook sees the pre-activation, and the GPT's output is the same bits.
    Tensor pre;
    nn::HookHandle up = gpt.blocks[0]->feed_forward.up.register_forward_hook(
        [&pre](const nn::Module&, const Tensor& out) { pre = out; });
    const Tensor composed = gpt(ids, 2, 3);
    REQUIRE(pre.defined());
    CHECK(pre.shape() == Shape{2, 3, 32});
    CHECK(std::string_view(pre.op()) == "linear");
    CHECK(composed.to_vector() == fused.to_vector());
    up.remove();

    // The other modules run their hooks too.
    int calls = 0;
    const auto count = [&](const nn::Module&, const Tensor&) { ++calls; };
    nn::Average average;
    nn::Embedding embedding({.num = 4, .dim = 3}, gen);
    nn::Bigram bigram({.vocab = 4}, gen);
    average.register_forward_hook(count);
    embedding.register_forward_hook(count);
    bigram.register_forward_hook(count);
    average(randn({1, 3, 2}, gen));
    embedding(std::vector<int64_t>{1, 2}, Shape{2});
    bigram(std::vector<int64_t>{1, 2}, 1, 2);
    REQUIRE(calls == 3);  // the bigram's table is an Embedding of its own, not watched here
}
