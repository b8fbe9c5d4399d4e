// A model kind the library does not know, defined and registered in this file only, with a head of its
// own (not an nn::Head): it then trains with nn::Trainer, saves and resumes bit-exactly (its dropout
// generator too), loads for inference, writes the report page, shows its head to nn::attention_heads
// (what heatmap, figure and the report page read) and
// samples with the window decoder, as the built-in kinds do; train's model flags (examples/train_args.h)
// take it too, and the tool programs (examples/tools.h) train, sample and draw it.
//
// Shape legend: B batch, T time, C channels, V vocab.
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nn/generate/sample.h>
#include <nn/train/trainer.h>
#include <nn/tutorial/tasks.h>
#include <figure_page.h>
#include <run_report.h>
#include <tools.h>
#include <train_args.h>

#include "helpers.h"
#include "temp_dir.h"

using Catch::Matchers::Contains;
using namespace autograd;
namespace fs = std::filesystem;

namespace {

// The kind's head: causal attention that divides Q K^T by the width H itself, not its square root. Its
// parts and its last forward are what the inspect tools read (nn::InspectableHead).
class WidthDividedHead : public nn::Callable<WidthDividedHead, nn::InspectableHead> {
public:
    WidthDividedHead(int64_t C, Generator& gen)
        : query({.in = C, .out = C, .bias = false}, gen),
          key({.in = C, .out = C, .bias = false}, gen),
          value({.in = C, .out = C, .bias = false}, gen) {
        register_module("query", query);
        register_module("key", key);
        register_module("value", value);
    }

    Tensor forward(const Tensor& x) {                                                   // x: (B, T, C) -> (B, T, H)
        const Tensor scores = matmul(queries(x), keys(x).transpose(1, 2)) / divisor();  // (B, T, T)
        const Tensor weights = softmax(causal_mask(scores), -1);                        // (B, T, T)
        input_ = x.detach();
        attention_ = weights.detach();
        return matmul(weights, values(x));
    }

    const Tensor& last_attention() const override { return attention_; }
    const Tensor& last_input() const override { return input_; }
    Tensor queries(const Tensor& x) const override { return query(x); }
    Tensor keys(const Tensor& x) const override { return key(x); }
    Tensor values(const Tensor& x) const override { return value(x); }
    float divisor() const override { return static_cast<float>(query.options.out); }

private:
    nn::Linear query, key, value;  // (C, H) each
    Tensor input_, attention_;
};

// The kind: token and position embeddings, that head, dropout on what the head says (drawn from the
// model's own generator, registered so that checkpoints keep it), a linear map to V.
class DropoutHead : public nn::PositionalModel {
public:
    DropoutHead(const nn::ModelConfig& c, Generator& gen)
        : PositionalModel(c.vocab, c.n_embd, c.block, gen),
          head(c.n_embd, gen),
          lm_head({.in = c.n_embd, .out = c.vocab}, gen),
          p(c.dropout),
          dropout_gen(gen.next_u64()) {
        register_module("head", head);
        register_module("lm_head", lm_head);
        register_generator("dropout", dropout_gen);
    }

    Tensor forward(std::span<const int64_t> ids, int64_t B, int64_t T) override {
        check_ids(ids, B, T, "DropoutHead");
        const Tensor x = embed(ids, B, T);                                // (B, T, C)
        return lm_head(dropout(head(x), p, is_training(), dropout_gen));  // (B, T, V)
    }

    WidthDividedHead head;
    nn::Linear lm_head;
    float p;
    Generator dropout_gen;
};

const nn::ModelKind kDropoutHead = nn::register_model_kind(
    {.name = "dropout_head",
     .title = "single-head with dropout",
     .options = nn::option_n_embd | nn::option_block | nn::option_dropout,
     .make = [](const nn::ModelConfig& c, Generator& gen) -> std::unique_ptr<nn::LanguageModel> {
         return std::make_unique<DropoutHead>(c, gen);
     }});  // no size of its own: nn::model_size builds it shapes-only

bool same_bits(const Tensor& a, const Tensor& b) {
    const auto bits = [](float v) { return std::bit_cast<uint32_t>(v); };
    return a.shape() == b.shape() && std::ranges::equal(a.data(), b.data(), {}, bits, bits);
}

void require_same_parameters(const nn::Module& actual, const nn::Module& expected) {
    const auto a = actual.named_parameters(), e = expected.named_parameters();
    REQUIRE(a.size() == e.size());
    for (size_t i = 0; i < a.size(); ++i) {
        INFO("parameter " << a[i].first);
        REQUIRE(a[i].first == e[i].first);
        REQUIRE(same_bits(a[i].second, e[i].second));
    }
}

std::string copy_text() {
    Generator gen(5);
    return nn::copy_task_text(300, gen);
}

nn::Trainer make_trainer(const nn::TrainConfig& config, const std::string& text) {
    auto tokenizer = nn::CharTokenizer::from_text(text);
    nn::TrainConfig c = config;
    c.model.vocab = tokenizer.vocab_size();
    auto tokens = tokenizer.encode(text);
    return nn::Trainer(c, std::move(tokenizer), std::move(tokens));
}

const nn::TrainConfig kConfig{.model = {.kind = kDropoutHead, .n_embd = 16, .block = 8, .dropout = 0.3f},
                              .steps = 12,
                              .batch = 4,
                              .lr = 3e-2f,
                              .warmup = 3,
                              .seed = 7};

}  // namespace

TEST_CASE("A registered kind is found by name, listed, sized and built like a built-in one", "[user_kind]") {
    CHECK(nn::parse_model_kind("dropout_head") == kDropoutHead);
    CHECK(fmt::format("{}", kDropoutHead) == "dropout_head");
    CHECK(nn::model_kind_info(kDropoutHead).title == "single-head with dropout");
    CHECK(nn::model_kind_names(", ", " or ") ==
          "bigram, average, head, multihead, gpt, gpt2, llama, attn_only or dropout_head");
    CHECK(nn::model_kind_info(nn::ModelKind::gpt).name == "gpt");  // the ladder keeps its places

    nn::ModelConfig config = kConfig.model;
    config.vocab = 11;
    Generator gen(3);
    const auto model = nn::make_model(config, gen);
    // its size comes from its constructor run shapes-only: V C + T C (tables) + 3 C C (head) + C V + V (lm_head)
    const double V = 11, C = double(config.n_embd), T = double(config.block);
    CHECK(nn::model_size(config).parameters == V * C + T * C + 3 * C * C + C * V + V);
    CHECK(double(model->parameter_count()) == nn::model_size(config).parameters);
    CHECK(nn::model_size(config).layers == 1);
    CHECK(nn::model_size(config).heads_per_layer == 1);  // its WidthDividedHead, found as an nn::InspectableHead
    // its options are checked as the ladder's are; those it does not read are refused or ignored as theirs
    config.dropout = 1.0f;
    CHECK_THROWS_WITH(nn::make_model(config, gen), Contains("dropout 1 must be in [0, 1)"));
    config.dropout = 0.1f;
    config.feed_forward = true;
    CHECK_THROWS_WITH(nn::make_model(config, gen),
                      Contains("feed_forward applies to multihead only, not dropout_head"));

    // a checkpoint naming it reads back; an unknown name lists every kind, this one too
    config.feed_forward = false;
    auto metadata = config.to_metadata();
    CHECK(metadata.at("model.kind") == "dropout_head");
    CHECK(nn::ModelConfig::from_metadata(metadata) == config);
    metadata["model.kind"] = "dropout-head";
    CHECK_THROWS_WITH(nn::ModelConfig::from_metadata(metadata),
                      Contains("unknown kind 'dropout-head' (bigram, average, head, multihead, gpt, gpt2, llama, "
                               "attn_only, dropout_head)"));

    const nn::ModelKindInfo& info = nn::model_kind_info(kDropoutHead);
    CHECK_THROWS_WITH(nn::register_model_kind(info),
                      Contains("the name is taken") && Contains("gpt, gpt2, llama, attn_only, dropout_head"));
    nn::ModelKindInfo bad = info;
    bad.name = "two words";
    CHECK_THROWS_WITH(nn::register_model_kind(bad), Contains("\"two words\": a name is"));
    bad.name = "makeless";
    bad.make = nullptr;
    CHECK_THROWS_WITH(nn::register_model_kind(bad), Contains("without its make function"));
    CHECK_THROWS_WITH(nn::model_kind_info(nn::ModelKind{}), Contains("not in the table"));
}

TEST_CASE("A registered kind with dropout trains, saves, resumes bit-exactly, loads, reports and samples",
          "[user_kind]") {
    const std::string text = copy_text();
    test::TempDir dir("user-kind");
    constexpr int64_t N = 6;

    nn::Trainer straight = make_trainer(kConfig, text);
    std::vector<double> straight_losses;
    for (int64_t i = 0; i < 2 * N; ++i) straight_losses.push_back(straight.step().loss);

    // dropout draws from the model's generator in training mode: two forwards differ, eval ones do not
    auto& model = dynamic_cast<DropoutHead&>(straight.model());
    const std::vector<int64_t> ids = straight.tokenizer().encode(text.substr(0, 8));
    {
        NoGradGuard no_grad;
        CHECK_FALSE(same_bits(model.forward(ids, 1, 8), model.forward(ids, 1, 8)));
        model.eval();
        CHECK(same_bits(model.forward(ids, 1, 8), model.forward(ids, 1, 8)));
        model.train();
    }

    nn::Trainer first = make_trainer(kConfig, text);
    for (int64_t i = 0; i < N; ++i) REQUIRE(first.step().loss == straight_losses[static_cast<size_t>(i)]);
    const fs::path path = dir.path / "run.safetensors";
    first.save(path);

    nn::Trainer resumed = nn::Trainer::resume(path, text);
    CHECK(resumed.config() == first.config());
    require_same_parameters(resumed.model(), first.model());
    for (int64_t i = N; i < 2 * N; ++i) CHECK(resumed.step().loss == straight_losses[static_cast<size_t>(i)]);
    require_same_parameters(resumed.model(), straight.model());

    SECTION("the checkpoint loads for inference, and its head is where heatmap and figure look") {
        nn::TrainedModel trained = nn::load_trained_model(path);
        CHECK(trained.config.kind == kDropoutHead);
        require_same_parameters(*trained.model, first.model());
        const std::vector<nn::AttentionHead> heads = nn::attention_heads(*trained.model);
        REQUIRE(heads.size() == 1);
        CHECK((heads[0].layer == 0 && heads[0].head == 0 && heads[0].name == "head"));
        NoGradGuard no_grad;
        trained.model->eval();
        const Tensor logits = trained.model->forward(ids, 1, 8);   // (1, 8, V)
        const Tensor& weights = heads[0].module.last_attention();  // (1, 8, 8)
        CHECK(weights.shape() == Shape{1, 8, 8});
        CHECK(heads[0].module.last_input().shape() == Shape{1, 8, 16});

        // the window decoder's logits are the model's last row; generate samples through it
        const auto decoder = nn::window_decoder(*trained.model);
        const std::span<const float> last = decoder->append(ids);
        const int64_t V = trained.model->vocab_size();
        const std::span<const float> row = logits.data().subspan(static_cast<size_t>(7 * V), static_cast<size_t>(V));
        CHECK(std::ranges::equal(last, row));
        Generator a(9), b(9);
        const std::vector<int64_t> cached = nn::generate(*trained.model, ids, 20, {}, a);
        const std::vector<int64_t> windowed = nn::generate(*trained.model, ids, 20, {.cache = false}, b);
        CHECK(cached.size() == 20);
        CHECK(cached == windowed);
    }

    SECTION("the report page shows its head and its gradients") {
        nn::GradientReport gradients;
        (void)resumed.step(&gradients);
        REQUIRE(gradients.heads.size() == 1);
        CHECK(gradients.heads[0].name == "head");
        report::RunReport page(nlohmann::ordered_json{{"model", fmt::format("{}", kDropoutHead)}});
        page.add_log(resumed.step_count(), 1.0, 1.0, 1.0, 0.01);
        page.add_gradients(gradients);
        page.add_attention(resumed.step_count(), resumed.model(), ids, text.substr(0, 8));
        const fs::path html = dir.path / "run.html";
        page.write(html, "test");
        const nlohmann::ordered_json& data = page.data();
        CHECK(data["heads"] == nlohmann::ordered_json::array({"head"}));
        REQUIRE(data["evals"].size() == 1);
        CHECK(data["evals"][0]["maps"][0].size() == 8);  // one row of shares per position
        std::ifstream in(html);
        const std::string written{std::istreambuf_iterator<char>(in), {}};
        CHECK_THAT(written, Contains("dropout_head"));
    }
}

TEST_CASE("train's model flags take a registered kind by the options it reads", "[user_kind]") {
    CHECK(train_args::applies("--dropout", kDropoutHead));
    CHECK(train_args::applies("--n-embd", kDropoutHead));
    CHECK_FALSE(train_args::applies("--n-head", kDropoutHead));
    CHECK_FALSE(train_args::applies("--n-layer", kDropoutHead));
    CHECK_THAT(train_args::model_help(nn::model_setting("model.dropout")),
               Contains("[0, 0.99] (gpt, gpt2, dropout_head)"));
    CHECK_THAT(train_args::model_help(nn::model_setting("model.n_embd")), Contains("(not bigram)"));

    const char* good[] = {"train", "--model", "dropout_head", "--dropout", "0.25", "--n-embd", "16"};
    const train_args::Options o = train_args::parse_args(7, good);
    CHECK(o.config.model.kind == kDropoutHead);
    CHECK(o.config.model.dropout == 0.25f);
    CHECK(o.config.model.n_embd == 16);
    const char* bad[] = {"train", "--model", "dropout_head", "--n-head", "2"};
    CHECK_THROWS_WITH(train_args::parse_args(5, bad), Contains("--n-head does not apply to --model dropout_head"));
}

// The tool programs themselves (examples/tools.h), run inside this test program, which registered the kind:
// what a user's own program that registers its kind gets. Each fails with "unknown kind" without it.
TEST_CASE("The tools train, resume, sample, draw the heatmap and the figure of a registered kind",
          "[user_kind][tools]") {
    test::TempDir dir("user-kind-tools");
    const std::string text = copy_text();
    const std::string data = dir.write("copy.txt", text).string(), prompt = text.substr(0, 6);
    const auto run = [](int (*tool)(int, char**), std::vector<std::string> args) {
        args.insert(args.begin(), "tool");
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        return tool(static_cast<int>(argv.size()), argv.data());
    };
    const auto train = [&](const fs::path& out, std::vector<std::string> more) {
        std::vector<std::string> args = {
            "--model", "dropout_head", "--n-embd", "16", "--block",      "8", "--dropout",    "0.3", "--data",   data,
            "--steps", "12",           "--batch",  "4",  "--eval-every", "6", "--eval-iters", "2",   "--sample", "10",
            "--out",   out.string()};
        args.insert(args.end(), more.begin(), more.end());
        return run(tools::train, args);
    };
    const fs::path straight = dir.path / "straight.safetensors", split = dir.path / "split.safetensors";
    REQUIRE(train(straight, {}) == 0);
    REQUIRE(train(split, {"--until", "6"}) == 0);
    REQUIRE(run(tools::train, {"--resume", split.string(), "--data", data}) == 0);
    CHECK(test::read_bytes(straight) == test::read_bytes(split));

    const fs::path page = dir.path / "run.html";
    REQUIRE(train(dir.path / "reported.safetensors", {"--report", page.string()}) == 0);
    CHECK_THAT(test::read_bytes(page), Contains("dropout_head"));

    CHECK(run(tools::generate, {straight.string(), "--chars", "20"}) == 0);
    CHECK(run(tools::heatmap, {straight.string(), "--prompt", prompt, "--color", "never"}) == 0);
    const fs::path figure = dir.path / "figure.html";
    REQUIRE(run(tools::figure, {straight.string(), "--prompt", prompt, "--out", figure.string()}) == 0);

    // The figure's numbers are the head's: with x through Wq and Wk, divided, its shares are the weights
    // of the head's own forward (dividing by 16 and multiplying by 1/16 are the same bits), and the page
    // names the head's divisor, H = 16, not sqrt(16).
    const std::string html = test::read_bytes(figure);
    REQUIRE(html.starts_with(figure::kPageBeforeData));
    const size_t end = html.find(figure::kPageAfterData);
    REQUIRE(end != std::string::npos);
    const auto numbers =
        nlohmann::json::parse(html.substr(figure::kPageBeforeData.size(), end - figure::kPageBeforeData.size()));
    CHECK(numbers["head_divisor"] == 16.0);
    const nlohmann::json& divided = numbers["states"][1];  // raw 0, scale 1
    CHECK((divided["raw"] == false && divided["scale"] == true && divided["divisor"] == 16.0));

    nn::TrainedModel trained = nn::load_trained_model(straight);
    const std::vector<int64_t> ids = trained.tokenizer->encode(prompt);
    NoGradGuard no_grad;
    trained.model->eval();
    (void)trained.model->forward(ids, 1, 6);
    const Tensor& weights = nn::attention_heads(*trained.model).at(0).module.last_attention();  // (1, 6, 6)
    for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = 0; j < 6; ++j) {
            INFO("share " << i << ", " << j);
            CHECK(divided["shares"][i][j].get<float>() == weights.at({0, i, j}));
        }
}
