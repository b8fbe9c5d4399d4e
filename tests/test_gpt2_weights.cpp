// GPT-2's published formats (nn/model_files/gpt2_weights.h): tinygpt -> Hugging Face -> tinygpt and
// tinygpt -> llm.c -> tinygpt bit for bit, the files' layouts checked byte by byte against the formats
// (not through our own reader), the two files of the same weights giving identical logits, Hugging
// Face's variants (the "transformer." prefix, mask buffers, lm_head, BF16 / F16) and the refusals, each
// naming the file and the tensor or header field. From the command line: tests/cli/gpt2_weights.sh.
#include <nn/gpt2.h>
#include <nn/model_registry.h>
#include <nn/tokenizers/bpe.h>
#include <nn/model_files/gpt2_weights.h>
#include <nn/train/trainer.h>

#include <sys/stat.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "temp_dir.h"

using Catch::Matchers::Contains;
using namespace autograd;

namespace {

// vocab 300: not a multiple of 128, so llm.c's file pads it (to 384); C 128: none of the published widths,
// so without config.json its head count must be given
nn::ModelConfig small_config() {
    nn::ModelConfig c;
    c.kind = nn::ModelKind::gpt2;
    c.vocab = 300;
    c.n_embd = 128;
    c.n_head = 4;  // not C / 64: config.json must carry it
    c.n_layer = 2;
    c.block = 16;
    return c;
}

// Every parameter random (the LayerNorms' 1 and 0 and the zero biases would hide a swap).
std::unique_ptr<nn::LanguageModel> random_model(const nn::ModelConfig& c, uint64_t seed = 7) {
    Generator gen(seed);
    auto model = nn::make_model(c, gen);
    for (Tensor& p : model->parameters())
        for (float& v : p.data()) v = gen.uniform(-1.0f, 1.0f);
    return model;
}

void require_same_bits(const nn::NamedTensors& a, const nn::NamedTensors& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        INFO(a[i].first);
        REQUIRE(a[i].first == b[i].first);
        REQUIRE(a[i].second.shape() == b[i].second.shape());
        const auto x = a[i].second.data(), y = b[i].second.data();
        REQUIRE(std::memcmp(x.data(), y.data(), x.size_bytes()) == 0);
    }
}

std::vector<unsigned char> file_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}
int32_t int_at(const std::vector<unsigned char>& b, size_t i) {
    int32_t v;
    std::memcpy(&v, b.data() + 4 * i, 4);
    return v;
}
float float_at(const std::vector<unsigned char>& b, size_t byte) {
    float v;
    std::memcpy(&v, b.data() + byte, 4);
    return v;
}

const Tensor& param(const nn::NamedTensors& ts, const std::string& name) {
    for (const auto& [n, t] : ts)
        if (n == name) return t;
    FAIL("no tensor " << name);
    throw;
}

// A safetensors file written by hand: (name, dtype, shape, raw bytes), in order.
struct RawTensor {
    std::string name, dtype;
    std::vector<int64_t> shape;
    std::vector<unsigned char> bytes;
};
void write_raw_safetensors(const std::filesystem::path& path, const std::vector<RawTensor>& tensors) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    header["__metadata__"] = {{"format", "pt"}};
    uint64_t offset = 0;
    for (const RawTensor& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
        offset += t.bytes.size();
    }
    std::string json = header.dump();
    json.append((8 - json.size() % 8) % 8, ' ');
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = json.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << json;
    for (const RawTensor& t : tensors)
        out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
}
std::vector<unsigned char> f32_bytes(const Tensor& t) {
    const auto d = t.data();
    std::vector<unsigned char> out(d.size_bytes());
    std::memcpy(out.data(), d.data(), out.size());
    return out;
}

// Hugging Face's names for tinygpt's (without a prefix), as GPT-2's published file spells them.
std::string hf_name(std::string name) {
    if (name.ends_with(".gain")) name = name.substr(0, name.size() - 4) + "weight";
    return name;
}

}  // namespace

TEST_CASE("gpt2 weights: tinygpt -> Hugging Face -> tinygpt is bit for bit, in HF's names, shapes and config.json",
          "[gpt2][gpt2_weights]") {
    test::TempDir dir("gpt2-hf-roundtrip");
    const nn::ModelConfig c = small_config();
    const auto model = random_model(c);
    nn::write_hf_gpt2(dir.path / "hf", c, model->named_parameters());

    // the file itself, read as a plain safetensors file
    const nn::Safetensors raw = nn::load_safetensors(dir.path / "hf" / "model.safetensors");
    REQUIRE(raw.metadata.at("format") == "pt");  // from_pretrained refuses a file without it
    REQUIRE(raw.tensors.size() == 2 + 12 * 2 + 2);
    REQUIRE(raw.tensors[0].first == "transformer.wte.weight");
    const Tensor& c_attn = param(raw.tensors, "transformer.h.1.attn.c_attn.weight");
    REQUIRE(c_attn.shape() == Shape{128, 384});  // Conv1D: (C, 3C)
    REQUIRE(param(raw.tensors, "transformer.h.0.ln_1.weight").shape() == Shape{128});
    REQUIRE(param(raw.tensors, "transformer.ln_f.weight").shape() == Shape{128});
    for (const auto& [name, t] : raw.tensors) REQUIRE_FALSE(name.ends_with(".gain"));

    std::ifstream config_file(dir.path / "hf" / "config.json");
    const nlohmann::json config = nlohmann::json::parse(config_file);
    CHECK(config.at("model_type") == "gpt2");
    CHECK(config.at("architectures") == nlohmann::json::array({"GPT2LMHeadModel"}));
    CHECK(config.at("n_embd") == 128);
    CHECK(config.at("n_layer") == 2);
    CHECK(config.at("n_head") == 4);
    CHECK(config.at("n_positions") == 16);
    CHECK(config.at("n_ctx") == 16);
    CHECK(config.at("vocab_size") == 300);
    CHECK(config.at("activation_function") == "gelu_new");
    CHECK(config.at("layer_norm_epsilon") == 1e-5);

    const nn::ForeignWeights back = nn::read_hf_gpt2(dir.path / "hf" / "model.safetensors");
    CHECK(back.config == c);
    require_same_bits(back.weights, model->named_parameters());
}

TEST_CASE(
    "gpt2 weights: a gpt2 without the divisor is Hugging Face's scale_attn_weights false, both ways, and llm.c's "
    "format refuses it",
    "[gpt2][gpt2_weights][divisor]") {
    test::TempDir dir("gpt2-hf-unscaled");
    nn::ModelConfig c = small_config();
    const auto model = random_model(c);
    nn::write_hf_gpt2(dir.path / "scaled", c, model->named_parameters());
    c.scaled = false;
    nn::write_hf_gpt2(dir.path / "unscaled", c, model->named_parameters());
    for (const bool scaled : {true, false}) {
        const auto folder = dir.path / (scaled ? "scaled" : "unscaled");
        std::ifstream config_file(folder / "config.json");
        CHECK(nlohmann::json::parse(config_file).at("scale_attn_weights") == scaled);
        CHECK(nn::read_hf_gpt2(folder / "model.safetensors").config.scaled == scaled);
    }
    CHECK_THROWS_WITH(nn::write_llmc_gpt2(dir.path / "x.bin", c, model->named_parameters()),
                      Contains("x.bin") && Contains("this one has no divisor"));
}

TEST_CASE("gpt2 weights: tinygpt -> llm.c -> tinygpt is bit for bit, in llm.c's header, order and (out, in) layout",
          "[gpt2][gpt2_weights]") {
    test::TempDir dir("gpt2-llmc-roundtrip");
    const nn::ModelConfig c = small_config();
    const auto model = random_model(c);
    const nn::NamedTensors params = model->named_parameters();
    const auto path = dir.path / "model.bin";
    nn::write_llmc_gpt2(path, c, params);

    const std::vector<unsigned char> b = file_bytes(path);
    REQUIRE(int_at(b, 0) == 20240326);
    REQUIRE(int_at(b, 1) == 3);
    REQUIRE(int_at(b, 2) == 16);   // maxT
    REQUIRE(int_at(b, 3) == 300);  // V
    REQUIRE(int_at(b, 4) == 2);    // L
    REQUIRE(int_at(b, 5) == 4);    // NH
    REQUIRE(int_at(b, 6) == 128);  // C
    REQUIRE(int_at(b, 7) == 384);  // padded V
    const size_t C = 128, L = 2, Vp = 384, T = 16;
    const size_t params_count =
        Vp * C + T * C + L * (2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 4 * C * C + 4 * C + 4 * C * C + C) +
        2 * C;
    REQUIRE(b.size() == 1024 + 4 * params_count);
    // wte first, its padding rows zero; then wpe; then ln_1 of all layers, ...; qkvw of layer 0 row 1
    // (output column 1 of c_attn) holds c_attn.weight[:, 1]
    const auto wte = param(params, "wte.weight").data();
    CHECK(float_at(b, 1024 + 4 * (299 * C + 5)) == wte[299 * C + 5]);
    CHECK(float_at(b, 1024 + 4 * (300 * C + 5)) == 0.0f);
    const size_t qkvw = 1024 + 4 * (Vp * C + T * C + 2 * L * C);
    const auto w0 = param(params, "h.0.attn.c_attn.weight").data();  // (C, 3C)
    CHECK(float_at(b, qkvw + 4 * (1 * C + 7)) == w0[7 * 3 * C + 1]);
    const auto w1 = param(params, "h.1.attn.c_attn.weight").data();  // layer 1 follows layer 0's (3C, C)
    CHECK(float_at(b, qkvw + 4 * (3 * C * C + 2 * C + 3)) == w1[3 * 3 * C + 2]);
    CHECK(float_at(b, b.size() - 4) == param(params, "ln_f.bias").data()[C - 1]);

    const nn::ForeignWeights back = nn::read_llmc_gpt2(path);
    CHECK(back.config == c);
    require_same_bits(back.weights, params);
}

TEST_CASE("gpt2 weights: the Hugging Face and llm.c files of the same weights give identical logits",
          "[gpt2][gpt2_weights]") {
    test::TempDir dir("gpt2-same-logits");
    const nn::ModelConfig c = small_config();
    const auto model = random_model(c, 11);
    nn::write_hf_gpt2(dir.path / "hf", c, model->named_parameters());
    nn::write_llmc_gpt2(dir.path / "m.bin", c, model->named_parameters());
    const std::vector<int64_t> ids = {1, 299, 5, 7, 0, 42, 100, 3};
    std::vector<std::vector<float>> logits;
    for (const auto& path : {dir.path / "hf" / "model.safetensors", dir.path / "m.bin"}) {
        const nn::ForeignWeights w = nn::read_gpt2_weights(path);
        Generator gen(99);  // a different init: every weight must come from the file
        auto loaded = nn::make_model(w.config, gen);
        nn::load_parameters(*loaded, w.weights);
        loaded->eval();
        logits.push_back(loaded->forward(ids, 2, 4).to_vector());
    }
    model->eval();
    const std::vector<float> original = model->forward(ids, 2, 4).to_vector();
    REQUIRE(logits[0].size() == 2 * 4 * 300);
    REQUIRE(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * 4) == 0);
    REQUIRE(std::memcmp(logits[0].data(), original.data(), original.size() * 4) == 0);
}

TEST_CASE("gpt2 weights: a Hugging Face file with the transformer. prefix, mask buffers, lm_head and BF16 loads",
          "[gpt2][gpt2_weights]") {
    test::TempDir dir("gpt2-hf-variants");
    nn::ModelConfig c = small_config();
    c.n_head = 2;  // no config.json: given
    const auto model = random_model(c, 3);
    const nn::NamedTensors params = model->named_parameters();
    for (const bool prefix : {true, false}) {
        INFO("prefix " << prefix);
        std::vector<RawTensor> raw;
        const std::string p = prefix ? "transformer." : "";
        for (const auto& [name, t] : params) raw.push_back({p + hf_name(name), "F32", t.shape(), f32_bytes(t)});
        for (int l = 0; l < 2; ++l) {  // the causal-mask buffers older files carry
            raw.push_back({fmt::format("{}h.{}.attn.bias", p, l),
                           "F32",
                           {1, 1, 16, 16},
                           std::vector<unsigned char>(16 * 16 * 4)});
            raw.push_back({fmt::format("{}h.{}.attn.masked_bias", p, l), "F32", {}, std::vector<unsigned char>(4)});
        }
        raw.push_back({"lm_head.weight", "F32", {300, 128}, f32_bytes(param(params, "wte.weight"))});
        const auto path = dir.path / (prefix ? "prefixed.safetensors" : "plain.safetensors");
        write_raw_safetensors(path, raw);
        REQUIRE(nn::weights_format(path) == nn::WeightsFormat::hugging_face);
        const nn::ForeignWeights w = nn::read_hf_gpt2(path, {}, 2);
        CHECK(w.config == c);
        require_same_bits(w.weights, params);
        REQUIRE(w.notes.size() == 2);
        CHECK_THAT(w.notes[0], Contains("n_head 2 as asked") && Contains("no config.json"));
        CHECK_THAT(w.notes[1], Contains("skipped 4"));
        CHECK(w.warnings.empty());
    }

    // BF16: every weight's top 16 bits, widened back exactly
    std::vector<RawTensor> raw;
    nn::NamedTensors expected;
    for (const auto& [name, t] : params) {
        std::vector<unsigned char> bytes;
        Tensor widened = zeros(t.shape());
        for (size_t i = 0; i < t.data().size(); ++i) {
            const uint32_t bits = std::bit_cast<uint32_t>(t.data()[i]) >> 16;
            bytes.push_back(static_cast<unsigned char>(bits));
            bytes.push_back(static_cast<unsigned char>(bits >> 8));
            widened.data()[i] = std::bit_cast<float>(bits << 16);
        }
        raw.push_back({hf_name(name), "BF16", t.shape(), bytes});
        expected.emplace_back(name, widened);
    }
    write_raw_safetensors(dir.path / "bf16.safetensors", raw);
    require_same_bits(nn::read_hf_gpt2(dir.path / "bf16.safetensors", {}, 2).weights, expected);
}

TEST_CASE("gpt2 weights: without config.json, n_head is given, or guessed loudly for a published width only",
          "[gpt2][gpt2_weights]") {
    test::TempDir dir("gpt2-weights-heads");
    // n_embd 128 with 4 heads: the old rule's C / 64 = 2 heads loaded it, wrongly, with a note
    const nn::ModelConfig c = small_config();
    const auto model = random_model(c);
    nn::write_hf_gpt2(dir.path, c, model->named_parameters());
    std::filesystem::remove(dir.path / "config.json");
    const auto weights = dir.path / "model.safetensors";
    CHECK_THROWS_WITH(nn::read_hf_gpt2(weights), Contains(weights.string()) && Contains("no config.json") &&
                                                     Contains("n_embd 128 is none of GPT-2's published widths") &&
                                                     Contains("give its n_head"));
    const nn::ForeignWeights given = nn::read_hf_gpt2(weights, {}, 4);
    CHECK(given.config == c);
    CHECK(given.warnings.empty());
    CHECK_THROWS_WITH(nn::read_hf_gpt2(weights, {}, 3), Contains("n_embd 128 is not a multiple of n_head 3"));
    // the same through the loader the programs use: --n-head, and one that a checkpoint contradicts
    CHECK(nn::load_trained_model(weights, {std::nullopt, 4}).config.n_head == 4);
    const auto ckpt = dir.path / "llmc.bin";
    nn::write_llmc_gpt2(ckpt, c, model->named_parameters());
    CHECK_THROWS_WITH(nn::read_llmc_gpt2(ckpt, {}, 2), Contains("'NH'") && Contains("is 4 but n_head 2 was asked"));
    nn::write_hf_gpt2(dir.path / "with_config", c, model->named_parameters());
    CHECK_THROWS_WITH(nn::read_hf_gpt2(dir.path / "with_config" / "model.safetensors", {}, 2),
                      Contains("config.json") && Contains("\"n_head\" is 4 but n_head 2 was asked"));

    // GPT-2 small's width (one layer, a vocabulary of 10): heads of 64 assumed, with a warning, not a note
    nn::ModelConfig small = c;
    small.vocab = 10;
    small.n_embd = 768;
    small.n_head = 12;
    small.n_layer = 1;
    small.block = 4;
    nn::write_hf_gpt2(dir.path / "768", small, random_model(small)->named_parameters());
    std::filesystem::remove(dir.path / "768" / "config.json");
    const nn::ForeignWeights guessed = nn::read_hf_gpt2(dir.path / "768" / "model.safetensors");
    CHECK(guessed.config == small);
    REQUIRE(guessed.warnings.size() == 1);
    CHECK_THAT(guessed.warnings[0], Contains("n_head 12 guessed from n_embd 768") && Contains("give its n_head"));
    CHECK(nn::read_hf_gpt2(dir.path / "768" / "model.safetensors", {}, 6).config.n_head == 6);
}

TEST_CASE("gpt2 weights: write_hf_gpt2 writes the BPE tokenizer's vocab.json and merges.txt with the weights",
          "[gpt2][gpt2_weights]") {
    test::TempDir dir("gpt2-weights-tokenizer");
    // 256 byte tokens (GPT-2's characters for bytes: the printable ones themselves, the rest from U+0100 on),
    // one merge and <|endoftext|>: 258 tokens
    nlohmann::ordered_json table;
    for (int b = 0, next = 256; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        const int code = printable ? b : next++;  // below U+0800: one or two bytes of UTF-8
        table[code < 0x80
                  ? std::string(1, static_cast<char>(code))
                  : std::string{static_cast<char>(0xC0 | (code >> 6)), static_cast<char>(0x80 | (code & 0x3F))}] = b;
    }
    table["ab"] = 256;
    table["<|endoftext|>"] = 257;
    const std::string vocabulary = table.dump();
    const std::string merges = "#version: 0.2\na b\n";
    const nn::BpeTokenizer bpe(vocabulary, merges);
    nn::ModelConfig c = small_config();
    c.vocab = bpe.vocab_size();
    const auto model = random_model(c);
    const auto text = [](const std::filesystem::path& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    nn::write_hf_gpt2(dir.path, c, model->named_parameters(), &bpe);
    CHECK(text(dir.path / "vocab.json") == vocabulary);
    CHECK(text(dir.path / "merges.txt") == merges);
    // read back beside the weights: the same tokenizer
    const nn::TrainedModel loaded = nn::load_trained_model(dir.path / "model.safetensors");
    const auto* read = dynamic_cast<const nn::BpeTokenizer*>(loaded.tokenizer.get());
    REQUIRE(read != nullptr);
    CHECK(*read == bpe);
    // a tokenizer of another size is refused before anything is written
    nn::ModelConfig other = c;
    other.vocab = 300;
    CHECK_THROWS_WITH(nn::write_hf_gpt2(dir.path / "other", other, random_model(other)->named_parameters(), &bpe),
                      Contains("the tokenizer has 258 tokens but the model's vocab is 300"));
    CHECK_FALSE(std::filesystem::exists(dir.path / "other"));
    // a model without one, written over the folder: the old tokenizer is not left to be read as its own
    nn::write_hf_gpt2(dir.path, c, model->named_parameters());
    CHECK_FALSE(std::filesystem::exists(dir.path / "vocab.json"));
    CHECK_FALSE(std::filesystem::exists(dir.path / "merges.txt"));
    CHECK(std::filesystem::exists(dir.path / "model.safetensors"));
}

TEST_CASE("gpt2 weights: refusals name the file and the header field or tensor", "[gpt2][gpt2_weights][errors]") {
    test::TempDir dir("gpt2-weights-refusals");
    const nn::ModelConfig c = small_config();
    const auto model = random_model(c);
    const nn::NamedTensors params = model->named_parameters();
    const auto good = dir.path / "good.bin";
    nn::write_llmc_gpt2(good, c, params);
    const std::vector<unsigned char> bytes = file_bytes(good);
    const auto variant = [&](const std::string& name, const std::function<void(std::vector<unsigned char>&)>& edit) {
        std::vector<unsigned char> b = bytes;
        edit(b);
        const auto path = dir.path / name;
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
        return path;
    };
    const auto set_int = [](std::vector<unsigned char>& b, size_t i, int32_t v) {
        std::memcpy(b.data() + 4 * i, &v, 4);
    };

    // (wrong magic: not recognised as llm.c's, so read_llmc_gpt2 is asked directly)
    CHECK_THROWS_WITH(nn::read_llmc_gpt2(variant("magic.bin", [&](auto& b) { set_int(b, 0, 20240327); })),
                      Contains("magic.bin") && Contains("'magic'") && Contains("20240327"));
    CHECK_THROWS_WITH(nn::read_gpt2_weights(variant("version.bin", [&](auto& b) { set_int(b, 1, 4); })),
                      Contains("version.bin") && Contains("'version'") && Contains("only 3 (fp32) and 5 (bf16)"));
    CHECK_THROWS_WITH(nn::read_gpt2_weights(variant("short.bin", [&](auto& b) { b.resize(b.size() - 4); })),
                      Contains("short.bin") && Contains("the file is short"));
    CHECK_THROWS_WITH(nn::read_gpt2_weights(variant("header.bin", [&](auto& b) { b.resize(1000); })),
                      Contains("header.bin") && Contains("shorter than llm.c's header"));
    CHECK_THROWS_WITH(nn::read_gpt2_weights(variant("heads.bin", [&](auto& b) { set_int(b, 5, 0); })),
                      Contains("heads.bin") && Contains("'NH'"));
    CHECK_THROWS_WITH(nn::read_gpt2_weights(variant("padded.bin", [&](auto& b) { set_int(b, 7, 299); })),
                      Contains("padded.bin") && Contains("'padded V'"));

    // (the files below have no config.json: their head count given)
    const auto hf = [&](const std::string& name, const std::function<void(std::vector<RawTensor>&)>& edit) {
        std::vector<RawTensor> raw;
        for (const auto& [n, t] : params) raw.push_back({hf_name(n), "F32", t.shape(), f32_bytes(t)});
        edit(raw);
        write_raw_safetensors(dir.path / name, raw);
        return dir.path / name;
    };
    CHECK_THROWS_WITH(
        nn::read_gpt2_weights(
            hf("missing.safetensors",
               [](auto& raw) { std::erase_if(raw, [](const RawTensor& t) { return t.name == "h.1.mlp.c_fc.bias"; }); }),
            {}, 4),
        Contains("missing.safetensors") && Contains("'h.1.mlp.c_fc.bias'") && Contains("missing"));
    CHECK_THROWS_WITH(nn::read_gpt2_weights(hf("shape.safetensors",
                                               [](auto& raw) {
                                                   for (RawTensor& t : raw)
                                                       if (t.name == "h.0.attn.c_proj.weight") t.shape = {64, 256};
                                               }),
                                            {}, 4),
                      Contains("shape.safetensors") && Contains("'h.0.attn.c_proj.weight'") && Contains("(64, 256)"));
    CHECK_THROWS_WITH(
        nn::read_gpt2_weights(
            hf("untied.safetensors",
               [&](auto& raw) {
                   raw.push_back({"lm_head.weight", "F32", {300, 128}, std::vector<unsigned char>(300 * 128 * 4)});
               }),
            {}, 4),
        Contains("untied.safetensors") && Contains("'lm_head.weight'"));
    CHECK_THROWS_WITH(
        nn::read_gpt2_weights(hf("extra.safetensors",
                                 [](auto& raw) {
                                     raw.push_back({"h.0.attn.rotary", "F32", {2}, std::vector<unsigned char>(8)});
                                 }),
                              {}, 4),
        Contains("extra.safetensors") && Contains("'h.0.attn.rotary'"));
    // weights without a tokenizer: token ids only; text is refused naming the file and the tokenizer it lacks
    const nn::TrainedModel ids_only = nn::load_trained_model(good);
    REQUIRE(nn::as_ids_only(*ids_only.tokenizer) != nullptr);
    CHECK(ids_only.tokenizer->vocab_size() == c.vocab);
    CHECK(ids_only.tokenizer->encode(" 3\t1 299 ") == std::vector<int64_t>{3, 1, 299});
    CHECK(ids_only.tokenizer->decode(std::vector<int64_t>{3, 1, 299}) == " 3 1 299");
    CHECK_THROWS_WITH(ids_only.tokenizer->encode("3 hello"),
                      Contains("good.bin") && Contains("'hello'") && Contains("a tokenizer directory"));
    CHECK_THROWS_WITH(ids_only.tokenizer->encode("300"), Contains("'300'") && Contains("ids from 0 to 299"));
    CHECK_THROWS_WITH(ids_only.tokenizer->decode(std::vector<int64_t>{1, 300}), Contains("300 at position 1"));
    // what a checkpoint keeps of it: the size alone, read back; a damaged size is refused
    const auto kept = ids_only.tokenizer->checkpoint_metadata();
    CHECK(kept == std::map<std::string, std::string>{{"tokenizer.kind", "token-ids"}, {"tokenizer.vocab_size", "300"}});
    CHECK(nn::IdTokenizer::from_checkpoint_metadata(kept, "x.st").vocab_size() == 300);
    for (const char* size : {"", "3x", "0", "-2"})
        CHECK_THROWS_AS(nn::IdTokenizer::from_checkpoint_metadata(
                            {{"tokenizer.kind", "token-ids"}, {"tokenizer.vocab_size", size}}, "x.st"),
                        std::invalid_argument);
    // exporting a model of another kind
    nn::ModelConfig gpt = c;
    gpt.kind = nn::ModelKind::gpt;
    CHECK_THROWS_WITH(nn::write_llmc_gpt2(dir.path / "x.bin", gpt, params), Contains("only a gpt2 model"));
}

TEST_CASE("gpt2 weights: a hostile config.json beside Hugging Face's weights is refused in one short line",
          "[gpt2][gpt2_weights][errors]") {
    test::TempDir dir("gpt2-weights-config");
    const nn::ModelConfig c = small_config();
    nn::write_hf_gpt2(dir.path, c, random_model(c)->named_parameters());
    const auto weights = dir.path / "model.safetensors";
    const auto config = dir.path / "config.json";
    const auto load = [&]() -> std::string {
        try {
            nn::read_gpt2_weights(weights);
        } catch (const std::runtime_error& e) {
            return e.what();
        }
        return "(loaded)";
    };
    const auto refusal = [&](const std::string& text) {
        std::ofstream(config, std::ios::binary | std::ios::trunc) << text;
        return load();
    };
    const auto line = [&](const std::string& message) {  // one line, short, naming the config
        INFO(message.substr(0, 300));
        CHECK(message.size() < 300);
        CHECK(message.find('\n') == std::string::npos);
        CHECK_THAT(message, Contains(config.string()));
        return message;
    };
    const auto nested = [](size_t depth, const std::string& open, const std::string& inner, const std::string& close) {
        std::string s;
        for (size_t i = 0; i < depth; ++i) s += open;
        s += inner;
        for (size_t i = 0; i < depth; ++i) s += close;
        return s;
    };
    // 100,000 deep: the recursive dump of the old message overflowed the stack (SIGSEGV); 50,000 deep
    // made a 100 kB line
    CHECK_THAT(line(refusal("{\"n_head\": 4, \"n_embd\": " + nested(100000, "[", "", "]") + "}")),
               Contains("more than 16 deep"));
    CHECK_THAT(line(refusal("{\"n_embd\": " + nested(50000, "[", "", "]") + "}")), Contains("more than 16 deep"));
    CHECK_THAT(line(refusal(nested(100000, "{\"a\":", "1", "}"))), Contains("more than 16 deep"));
    // a value, a parse error and a byte that is not UTF-8 are quoted short and escaped
    CHECK_THAT(line(refusal("{\"n_head\": 4, \"activation_function\": \"" + std::string(100000, 'x') + "\"}")),
               Contains("\"activation_function\" is \"xxxx") && Contains("\"... (100000 bytes)"));
    CHECK_THAT(line(refusal("{\"n_head\": 4, \"n_embd\": \"\xff\x1b[31m\"}")),
               Contains("not valid JSON") && Contains("ill-formed UTF-8"));
    CHECK_THAT(line(refusal("{\"n_head\": 4, \"scale_attn_weights\": 1}")),
               Contains("\"scale_attn_weights\" is 1, not true or false"));
    std::string ones;
    for (int i = 0; i < 50000; ++i) ones += "1,";
    CHECK_THAT(line(refusal("{\"n_head\": 4, \"n_embd\": [" + ones + "1]}")),
               Contains("\"n_embd\" is [1,1,1,") && Contains("..."));
    // too large to read: refused by its size before it is read
    {
        std::ofstream(config, std::ios::trunc).close();
        std::filesystem::resize_file(config, uint64_t{3} << 30);  // sparse: no disk used
        CHECK_THAT(line(load()), Contains("over the limit"));
    }
    // a named pipe: refused at once, not waited on
    std::filesystem::remove(config);
    REQUIRE(::mkfifo(config.c_str(), 0600) == 0);
    CHECK_THAT(line(load()), Contains("named pipe"));
    std::filesystem::remove(config);
    // GPT-2's own config.json nests 3 deep, and loads
    CHECK(refusal(
              R"({"n_head": 4, "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}}})") ==
          "(loaded)");
}
