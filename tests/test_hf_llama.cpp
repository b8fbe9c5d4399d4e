// Hugging Face's LlamaForCausalLM folders (nn/model_files/hf_llama.h): written and read back bit for bit,
// the files' names, layouts and config.json checked by the test's own reading, F16 / BF16 shards written
// by the test read exactly, llama2.c <-> Hugging Face keeping the logits (q_proj against
// convert_llama_weights_to_hf.py's permute, written here), and refusals by name. Legend: C hidden_size,
// F intermediate_size, V vocab_size, H head width, Q n_head H, KV n_kv_head H, T time.
#include <nn/model_files/hf_llama.h>
#include <nn/model_files/llama2c.h>

#include <sys/stat.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "temp_dir.h"

namespace fs = std::filesystem;
using autograd::Shape;
using autograd::Tensor;
using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// GQA: 4 query heads of 4 on 2 key-value heads
nn::LlamaOptions small_options(bool tied) {
    return {.vocab = 11,
            .n_embd = 16,
            .n_head = 4,
            .n_kv_head = 2,
            .n_layer = 2,
            .ffn_hidden = 24,
            .block = 32,
            .rope_theta = 500000.0f,
            .norm_eps = 1e-6f,
            .tied_embeddings = tied};
}

// A random model's parameters (nn::Llama's names, shapes and order), the norms random too.
nn::HfLlamaModel random_model(const nn::LlamaOptions& o, uint64_t seed) {
    autograd::Generator gen(seed);
    nn::Llama model(o, gen);
    nn::HfLlamaModel m;
    m.config = o;
    for (const auto& [name, t] : model.named_parameters())
        m.tensors.emplace_back(name, autograd::randn(t.shape(), gen));
    return m;
}

const Tensor& named(const nn::NamedTensors& tensors, const std::string& name) {
    for (const auto& [n, t] : tensors)
        if (n == name) return t;
    FAIL("no tensor " << name);
    throw;
}

// (rows, cols) -> (cols, rows), as plain vectors
std::vector<float> transposed(const std::vector<float>& v, int64_t rows, int64_t cols) {
    std::vector<float> out(v.size());
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            out[static_cast<size_t>(c * rows + r)] = v[static_cast<size_t>(r * cols + c)];
    return out;
}

// The logits of nn::Llama built from these tensors, for a few ids.
std::vector<float> logits_of(const nn::LlamaOptions& o, const nn::NamedTensors& tensors) {
    nn::Llama model(o);
    nn::load_parameters(model, tensors);
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < 2 * 7; ++i) ids.push_back((5 * i + 3) % o.vocab);
    return model.forward(ids, 2, 7).to_vector();  // (2, 7, V)
}

// --- a safetensors file written by the test (F16 or BF16), as Hugging Face's writers lay it out -----------

uint16_t to_bf16(float v) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16); }  // exact here
uint16_t to_f16(float v) {  // exact for the normal values of few mantissa bits used here
    const uint32_t bits = std::bit_cast<uint32_t>(v);
    if ((bits & 0x7fffffff) == 0) return static_cast<uint16_t>(bits >> 16);
    const uint32_t sign = bits >> 31, exponent = (bits >> 23) & 0xff, mantissa = bits & 0x7fffff;
    REQUIRE((mantissa & 0x1fff) == 0);
    REQUIRE(exponent >= 127 - 14);
    REQUIRE(exponent <= 127 + 15);
    return static_cast<uint16_t>(sign << 15 | (exponent - 127 + 15) << 10 | mantissa >> 13);
}

struct FileTensor {
    std::string name;
    Shape shape;
    std::vector<float> values;  // as the file stores them
};

std::string safetensors_bytes(const std::vector<FileTensor>& tensors, const std::string& dtype) {
    json header = {{"__metadata__", {{"format", "pt"}}}};
    std::string data;
    for (const FileTensor& t : tensors) {
        const size_t begin = data.size();
        for (float v : t.values) {
            const uint16_t h = dtype == "F16" ? to_f16(v) : to_bf16(v);
            data.push_back(static_cast<char>(h & 0xff));
            data.push_back(static_cast<char>(h >> 8));
        }
        header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
    }
    std::string text = header.dump();
    text.resize((text.size() + 7) / 8 * 8, ' ');
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
    return out + text + data;
}

// A model's tensors as the file names and stores them, written by the test from hf_llama.h's table.
std::vector<FileTensor> hf_file_tensors(const nn::HfLlamaModel& m) {
    std::vector<FileTensor> out;
    for (const auto& [name, t] : m.tensors) {
        const bool matrix = t.dim() == 2 && name != "embed_tokens.weight";
        const std::string file_name = name == "lm_head.weight" ? name : "model." + name;
        out.push_back({file_name, matrix ? Shape{t.size(1), t.size(0)} : t.shape(),
                       matrix ? transposed(t.to_vector(), t.size(0), t.size(1)) : t.to_vector()});
    }
    return out;
}

json config_json(const nn::LlamaOptions& o) {
    return {{"architectures", {"LlamaForCausalLM"}},
            {"model_type", "llama"},
            {"vocab_size", o.vocab},
            {"hidden_size", o.n_embd},
            {"intermediate_size", o.ffn_hidden},
            {"num_hidden_layers", o.n_layer},
            {"num_attention_heads", o.n_head},
            {"num_key_value_heads", o.n_kv_head},
            {"max_position_embeddings", o.block},
            {"rope_theta", 500000.0},
            {"rms_norm_eps", 1e-6},
            {"tie_word_embeddings", o.tied_embeddings},
            {"hidden_act", "silu"},
            {"torch_dtype", "bfloat16"}};
}

// A model of values k / 8 (exact in F16 and BF16), small ints
nn::HfLlamaModel eighths_model(const nn::LlamaOptions& o) {
    nn::HfLlamaModel m = random_model(o, 7);
    int k = 0;
    for (auto& [name, t] : m.tensors) {
        t = autograd::zeros(t.shape());
        for (float& v : t.data()) v = static_cast<float>((k++ * 37) % 41 - 20) / 8.0f;
    }
    return m;
}

json patched(json config, const json& patch) {
    config.merge_patch(patch);
    return config;
}

}  // namespace

TEST_CASE("hf_llama: written and read back, bit for bit, tied and untied", "[hf_llama]") {
    for (const bool tied : {true, false}) {
        INFO("tied " << tied);
        const nn::HfLlamaModel m = random_model(small_options(tied), 3);
        test::TempDir dir(fmt::format("hf_llama_round_{}", tied));
        nn::write_hf_llama(dir.path / "out", m);
        const nn::HfLlamaModel back = nn::read_hf_llama(dir.path / "out");
        CHECK(back.config.vocab == 11);
        CHECK(back.config.n_embd == 16);
        CHECK(back.config.n_head == 4);
        CHECK(back.config.n_kv_head == 2);
        CHECK(back.config.n_layer == 2);
        CHECK(back.config.ffn_hidden == 24);
        CHECK(back.config.block == 32);
        CHECK(back.config.rope_theta == 500000.0f);
        CHECK(back.config.norm_eps == 1e-6f);
        CHECK(back.config.tied_embeddings == tied);
        REQUIRE(back.tensors.size() == m.tensors.size());
        for (size_t i = 0; i < m.tensors.size(); ++i) {
            INFO(m.tensors[i].first);
            CHECK(back.tensors[i].first == m.tensors[i].first);
            CHECK(back.tensors[i].second.shape() == m.tensors[i].second.shape());
            CHECK(back.tensors[i].second.to_vector() == m.tensors[i].second.to_vector());
        }
        CHECK(logits_of(back.config, back.tensors) == logits_of(m.config, m.tensors));
    }
}

TEST_CASE("hf_llama: the written folder has Hugging Face's names, (out, in) layouts and config.json", "[hf_llama]") {
    const nn::HfLlamaModel m = random_model(small_options(false), 5);
    test::TempDir dir("hf_llama_layout");
    nn::write_hf_llama(dir.path, m);
    const json config = json::parse(slurp(dir.path / "config.json"));
    CHECK(config["architectures"] == json::array({"LlamaForCausalLM"}));
    CHECK(config["model_type"] == "llama");
    CHECK(config["hidden_size"] == 16);
    CHECK(config["intermediate_size"] == 24);
    CHECK(config["num_hidden_layers"] == 2);
    CHECK(config["num_attention_heads"] == 4);
    CHECK(config["num_key_value_heads"] == 2);
    CHECK(config["head_dim"] == 4);
    CHECK(config["vocab_size"] == 11);
    CHECK(config["max_position_embeddings"] == 32);
    CHECK(config["tie_word_embeddings"] == false);
    CHECK(config["hidden_act"] == "silu");
    CHECK(config["rope_scaling"].is_null());
    CHECK(slurp(dir.path / "config.json").find("\"rms_norm_eps\": 1e-06") != std::string::npos);
    CHECK(slurp(dir.path / "config.json").find("\"rope_theta\": 500000.0") != std::string::npos);

    const nn::Safetensors file = nn::load_safetensors(dir.path / "model.safetensors");
    CHECK(file.metadata.at("format") == "pt");
    std::map<std::string, Tensor> stored(file.tensors.begin(), file.tensors.end());
    CHECK(stored.size() == 1 + 9 * 2 + 1 + 1);
    const auto stored_as = [&](const std::string& name, Shape shape) {
        INFO(name);
        REQUIRE(stored.contains(name));
        CHECK(stored.at(name).shape() == shape);
        return stored.at(name).to_vector();
    };
    CHECK(stored_as("model.embed_tokens.weight", {11, 16}) == named(m.tensors, "embed_tokens.weight").to_vector());
    CHECK(stored_as("model.layers.1.self_attn.q_proj.weight", {16, 16}) ==
          transposed(named(m.tensors, "layers.1.self_attn.q_proj.weight").to_vector(), 16, 16));
    CHECK(stored_as("model.layers.0.self_attn.k_proj.weight", {8, 16}) ==
          transposed(named(m.tensors, "layers.0.self_attn.k_proj.weight").to_vector(), 16, 8));
    CHECK(stored_as("model.layers.0.mlp.down_proj.weight", {16, 24}) ==
          transposed(named(m.tensors, "layers.0.mlp.down_proj.weight").to_vector(), 24, 16));
    CHECK(stored_as("model.layers.1.post_attention_layernorm.weight", {16}) ==
          named(m.tensors, "layers.1.post_attention_layernorm.weight").to_vector());
    CHECK(stored_as("lm_head.weight", {11, 16}) == transposed(named(m.tensors, "lm_head.weight").to_vector(), 16, 11));
    stored_as("model.norm.weight", {16});
}

TEST_CASE("hf_llama: F16 and BF16 shards with an index are read exactly, and a stored tied lm_head is checked",
          "[hf_llama]") {
    for (const bool tied : {true, false}) {
        INFO("tied " << tied);
        const nn::LlamaOptions o = small_options(tied);
        const nn::HfLlamaModel m = eighths_model(o);
        std::vector<FileTensor> all = hf_file_tensors(m);
        if (tied) all.push_back({"lm_head.weight", {11, 16}, all.front().values});           // as some writers store it
        all.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", {2}, {1.0f, 0.5f}});  // older files' buffer
        const size_t half = all.size() / 2;
        test::TempDir dir(fmt::format("hf_llama_shards_{}", tied));
        dir.write("config.json", config_json(o).dump());
        dir.write("model-00001-of-00002.safetensors",
                  safetensors_bytes({all.begin(), all.begin() + static_cast<std::ptrdiff_t>(half)}, "F16"));
        dir.write("model-00002-of-00002.safetensors",
                  safetensors_bytes({all.begin() + static_cast<std::ptrdiff_t>(half), all.end()}, "BF16"));
        json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
        for (size_t i = 0; i < all.size(); ++i)
            index["weight_map"][all[i].name] =
                i < half ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
        dir.write("model.safetensors.index.json", index.dump());
        const nn::HfLlamaModel back = nn::read_hf_llama(dir.path);
        REQUIRE(back.tensors.size() == m.tensors.size());
        for (size_t i = 0; i < m.tensors.size(); ++i) {
            INFO(m.tensors[i].first);
            CHECK(back.tensors[i].first == m.tensors[i].first);
            CHECK(back.tensors[i].second.to_vector() == m.tensors[i].second.to_vector());
        }

        if (tied) {  // a stored lm_head that is not the table: refused
            all[all.size() - 2].values[3] += 1.0f;
            dir.write("model-00002-of-00002.safetensors",
                      safetensors_bytes({all.begin() + static_cast<std::ptrdiff_t>(half), all.end()}, "BF16"));
            REQUIRE_THROWS_WITH(nn::read_hf_llama(dir.path), Contains("lm_head.weight is not model.embed_tokens"));
        }
    }
}

TEST_CASE("hf_llama: llama2.c <-> Hugging Face keeps the logits, q and k as convert_llama_weights_to_hf permutes them",
          "[hf_llama]") {
    const fs::path bin = fs::path(TINYGPT_SHARED_DIR) / "models/stories260K.bin";
    if (!fs::is_regular_file(bin)) {
        std::cout << "SKIPPED: " << bin << " is not on this machine\n";
        return;
    }
    const nn::Llama2cModel l2c = nn::read_llama2c(bin);
    const nn::LlamaOptions o = nn::llama_options(l2c.config);
    test::TempDir dir("hf_llama_from_llama2c");
    nn::HfLlamaModel converted;
    converted.config = o;
    converted.tensors = l2c.tensors;
    nn::write_hf_llama(dir.path / "hf", converted);
    const nn::HfLlamaModel hf = nn::read_hf_llama(dir.path / "hf");
    CHECK(logits_of(hf.config, hf.tensors) == logits_of(o, l2c.tensors));

    // The HF file's q_proj (out, in) is llama2.c's wq (out, in) permuted as convert_llama_weights_to_hf.py does:
    //   w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)
    // i.e. row h*H + p*H/2 + i of the result is row h*H + 2i + p of wq. wq read from the file by the test:
    // legacy header (7 int32), token table (V, C), attention norms (L, C), then wq (L, C, C).
    const std::string bytes = slurp(bin);
    const int64_t C = 64, V = 512, L = 5, H = 8, KV = 4 * H;
    const auto floats_at = [&](int64_t first, int64_t n) {
        std::vector<float> v(static_cast<size_t>(n));
        std::memcpy(v.data(), bytes.data() + 28 + 4 * first, static_cast<size_t>(4 * n));
        return v;
    };
    const std::vector<float> wq0 = floats_at(V * C + L * C, C * C);               // layer 0's (C, C)
    const std::vector<float> wk0 = floats_at(V * C + L * C + L * C * C, KV * C);  // layer 0's (KV, C)
    const auto permuted = [&](const std::vector<float>& w, int64_t rows) {
        std::vector<float> out(w.size());
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t h = r / H, j = r % H, p = j / (H / 2), i = j % (H / 2);
            std::memcpy(out.data() + r * C, w.data() + (h * H + 2 * i + p) * C, static_cast<size_t>(4 * C));
        }
        return out;
    };
    const nn::Safetensors file = nn::load_safetensors(dir.path / "hf/model.safetensors");
    std::map<std::string, Tensor> stored(file.tensors.begin(), file.tensors.end());
    CHECK(stored.at("model.layers.0.self_attn.q_proj.weight").to_vector() == permuted(wq0, C));
    CHECK(stored.at("model.layers.0.self_attn.k_proj.weight").to_vector() == permuted(wk0, KV));

    // and back: Hugging Face -> llama2.c is the same file byte for byte
    nn::Llama2cModel back;
    back.config = nn::llama2c_config(hf.config);
    back.tensors = hf.tensors;
    nn::write_llama2c(dir.path / "back.bin", back, nn::Llama2cVersion::v1);
    const nn::Llama2cModel again = nn::read_llama2c(dir.path / "back.bin");
    CHECK(logits_of(nn::llama_options(again.config), again.tensors) == logits_of(o, l2c.tensors));
    back.legacy_rope_tables = l2c.legacy_rope_tables;
    nn::write_llama2c(dir.path / "legacy.bin", back, nn::Llama2cVersion::legacy);
    CHECK(slurp(dir.path / "legacy.bin") == bytes);
    nn::LlamaOptions other = hf.config;
    other.rope_theta = 500000.0f;
    REQUIRE_THROWS_WITH(nn::llama2c_config(other), Contains("rope_theta"));
}

TEST_CASE("hf_llama: what nn::Llama cannot be is refused by config.json's field", "[hf_llama]") {
    const nn::LlamaOptions o = small_options(true);
    test::TempDir dir("hf_llama_config");
    nn::write_hf_llama(dir.path, random_model(o, 1));
    nn::read_hf_llama(dir.path);  // (the folder itself is fine)
    const auto refused = [&](const json& config, const std::string& what) {
        INFO(config.dump());
        dir.write("config.json", config.dump());
        REQUIRE_THROWS_WITH(nn::read_hf_llama(dir.path), Contains("config.json") && Contains(what));
    };
    json c = config_json(o);
    refused(patched(c, {{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}}}), "\"rope_scaling\"");
    refused(patched(c, {{"attention_bias", true}}), "\"attention_bias\" is true");
    refused(patched(c, {{"mlp_bias", true}}), "\"mlp_bias\" is true");
    refused(patched(c, {{"hidden_act", "gelu"}}), "\"hidden_act\" is \"gelu\"");
    refused(patched(c, {{"head_dim", 8}}), "\"head_dim\" is 8");
    refused(patched(c, {{"model_type", "qwen2"}}), "\"model_type\" is \"qwen2\"");
    refused(patched(c, {{"quantization_config", {{"bits", 4}}}}), "\"quantization_config\"");
    refused(patched(c, {{"num_key_value_heads", 3}}), "\"num_key_value_heads\" 3 does not divide");
    refused(patched(c, {{"hidden_size", 12}, {"num_attention_heads", 4}}), "is odd");
    refused(patched(c, {{"hidden_size", -16}}), "\"hidden_size\" is -16");
    refused(patched(c, {{"hidden_size", 16.5}}), "\"hidden_size\" is 16.5, not a whole number");
    refused(patched(c, {{"rms_norm_eps", -1}}), "\"rms_norm_eps\" is -1");
    refused(patched(c, {{"tie_word_embeddings", "yes"}}), "\"tie_word_embeddings\" is \"yes\"");
    refused(patched(c, {{"max_position_embeddings", 1LL << 40}}), "\"max_position_embeddings\"");
    c.erase("intermediate_size");
    refused(c, "\"intermediate_size\" is missing");
    refused(json::array(), "not a JSON object");
}

TEST_CASE("hf_llama: tensors and shards that do not fit are refused naming the file and the tensor", "[hf_llama]") {
    const nn::LlamaOptions o = small_options(false);
    const nn::HfLlamaModel m = eighths_model(o);
    test::TempDir dir("hf_llama_tensors");
    dir.write("config.json", config_json(o).dump());
    const auto refused = [&](const std::vector<FileTensor>& tensors, const std::string& what) {
        dir.write("model.safetensors", safetensors_bytes(tensors, "BF16"));
        REQUIRE_THROWS_WITH(nn::read_hf_llama(dir.path), Contains("model.safetensors") && Contains(what));
    };
    const std::vector<FileTensor> good = hf_file_tensors(m);
    dir.write("model.safetensors", safetensors_bytes(good, "BF16"));
    nn::read_hf_llama(dir.path);
    refused({good.begin() + 1, good.end()}, "tensor \"model.embed_tokens.weight\" (11, 16) is missing");
    std::vector<FileTensor> bad = good;
    bad.pop_back();  // lm_head.weight
    refused(bad, "\"lm_head.weight\" (11, 16) is missing (config.json's tie_word_embeddings is false)");
    bad = good;
    bad[1].shape = {4, 64};  // q_proj with its values but not its shape
    refused(bad, "tensor \"model.layers.0.self_attn.q_proj.weight\" is (4, 64)");
    bad = good;
    bad.push_back({"model.layers.0.self_attn.q_proj.bias", {16}, std::vector<float>(16, 0.0f)});
    refused(bad, "not a parameter of LlamaForCausalLM of 2 layers (nn::Llama has no biases)");
    bad = good;
    bad[3].values[2] = std::numeric_limits<float>::infinity();
    refused(bad, "layers.0.self_attn.v_proj.weight");

    fs::remove(dir.path / "model.safetensors");
    REQUIRE_THROWS_WITH(nn::read_hf_llama(dir.path), Contains("neither model.safetensors nor"));
    dir.write("model-1.safetensors", safetensors_bytes(good, "BF16"));
    json index = {{"weight_map", json::object()}};
    for (const FileTensor& t : good) index["weight_map"][t.name] = "model-1.safetensors";
    index["weight_map"]["model.norm.weight"] = "../model-1.safetensors";
    dir.write("model.safetensors.index.json", index.dump());
    REQUIRE_THROWS_WITH(
        nn::read_hf_llama(dir.path),
        Contains("index.json") && Contains("\"../model-1.safetensors\", not a file name in the folder"));
    index["weight_map"]["model.norm.weight"] = "model-2.safetensors";
    dir.write("model.safetensors.index.json", index.dump());
    REQUIRE_THROWS_WITH(nn::read_hf_llama(dir.path), Contains("model-2.safetensors"));  // no such shard
    index["weight_map"].erase("model.norm.weight");
    dir.write("model.safetensors.index.json", index.dump());
    REQUIRE_THROWS_WITH(
        nn::read_hf_llama(dir.path),
        Contains("model-1.safetensors") && Contains("\"model.norm.weight\", which the index does not list"));
    index["weight_map"]["model.norm.weight"] = "model-1.safetensors";
    index["weight_map"]["model.extra.weight"] = "model-1.safetensors";
    dir.write("model.safetensors.index.json", index.dump());
    REQUIRE_THROWS_WITH(nn::read_hf_llama(dir.path), Contains("lists tensor \"model.extra.weight\""));

    // config.json as a named pipe: refused at once, never waited on
    fs::remove(dir.path / "config.json");
    REQUIRE(::mkfifo((dir.path / "config.json").c_str(), 0600) == 0);
    REQUIRE_THROWS_WITH(nn::read_hf_llama(dir.path), Contains("named pipe"));
}

TEST_CASE("hf_llama: writing refuses tensors that do not fit and writes nothing", "[hf_llama]") {
    test::TempDir dir("hf_llama_write");
    const nn::HfLlamaModel m = random_model(small_options(true), 2);
    nn::HfLlamaModel bad = m;
    bad.tensors.emplace_back("lm_head.weight", autograd::zeros({16, 11}));
    REQUIRE_THROWS_WITH(nn::write_hf_llama(dir.path / "a", bad), Contains("'lm_head.weight'") && Contains("tied"));
    bad = m;
    bad.tensors.erase(bad.tensors.begin() + 2);
    REQUIRE_THROWS_WITH(nn::write_hf_llama(dir.path / "a", bad),
                        Contains("'layers.0.self_attn.k_proj.weight' (16, 8) is missing"));
    bad = m;
    bad.tensors[1].second = autograd::zeros({16, 12});
    REQUIRE_THROWS_WITH(nn::write_hf_llama(dir.path / "a", bad), Contains("is (16, 12)"));
    bad = m;
    bad.config.n_kv_head = 3;
    REQUIRE_THROWS_WITH(nn::write_hf_llama(dir.path / "a", bad), Contains("\"num_key_value_heads\" 3"));
    CHECK_FALSE(fs::exists(dir.path / "a"));

    // a stale index beside is removed: it would name another model's shards
    dir.write("model.safetensors.index.json", "{}");
    nn::write_hf_llama(dir.path, m);
    CHECK_FALSE(fs::exists(dir.path / "model.safetensors.index.json"));
}
