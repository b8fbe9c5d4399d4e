// llama2.c's model files (nn/model_files/llama2c.h): stories260K read with the layouts run.c reads, written
// back byte for byte, legacy <-> version 1, the rotary permutation against a naive rotary of each layout,
// and hostile headers refused by name. Legend: C dim, F hidden_dim, L n_layers, V vocab, T seq_len, H head
// width, KV n_kv_heads * H.
#include <nn/model_files/llama2c.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <autograd/autograd.h>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "temp_dir.h"

namespace fs = std::filesystem;
using autograd::Tensor;
using Catch::Matchers::Contains;

namespace {

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::optional<fs::path> stories260k() {
    const fs::path path = fs::path(TINYGPT_SHARED_DIR) / "models/stories260K.bin";
    if (fs::is_regular_file(path)) return path;
    std::cout << "SKIPPED: " << path << " is not on this machine (the tests make no copy of it)\n";
    return std::nullopt;
}

// The file's fp32 values after its header, read by the test on its own (no code of the reader's).
std::vector<float> file_floats(const std::string& bytes, size_t header) {
    std::vector<float> out((bytes.size() - header) / 4);
    std::memcpy(out.data(), bytes.data() + header, out.size() * 4);
    return out;
}

const Tensor& named(const nn::Llama2cModel& m, const std::string& name) {
    for (const auto& [n, t] : m.tensors)
        if (n == name) return t;
    FAIL("no tensor " << name);
    throw;
}

// x (C) @ W (C, N) -> (N), a plain loop.
std::vector<double> vec_mat(const std::vector<double>& x, const Tensor& w) {
    const int64_t C = w.size(0), N = w.size(1);
    std::vector<double> out(static_cast<size_t>(N), 0.0);
    for (int64_t i = 0; i < C; ++i)
        for (int64_t o = 0; o < N; ++o)
            out[static_cast<size_t>(o)] += x[static_cast<size_t>(i)] * w.data()[static_cast<size_t>(i * N + o)];
    return out;
}

// The two rotary layouts, written here from their definitions (theta 10000, each head of width H):
// interleaved (llama2.c's run.c) turns units (2i, 2i+1) by pos * theta^(-2i/H); halves (Hugging Face's
// rotate_half) turns (i, i + H/2) by the same angle.
void rotary_interleaved(std::vector<double>& v, int64_t H, int64_t pos) {
    for (size_t h = 0; h < v.size(); h += static_cast<size_t>(H))
        for (int64_t i = 0; i < H / 2; ++i) {
            const double a =
                static_cast<double>(pos) * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(H));
            double& x0 = v[h + static_cast<size_t>(2 * i)];
            double& x1 = v[h + static_cast<size_t>(2 * i + 1)];
            const double r0 = x0 * std::cos(a) - x1 * std::sin(a), r1 = x0 * std::sin(a) + x1 * std::cos(a);
            x0 = r0, x1 = r1;
        }
}
void rotary_halves(std::vector<double>& v, int64_t H, int64_t pos) {
    for (size_t h = 0; h < v.size(); h += static_cast<size_t>(H))
        for (int64_t i = 0; i < H / 2; ++i) {
            const double a =
                static_cast<double>(pos) * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(H));
            double& x0 = v[h + static_cast<size_t>(i)];
            double& x1 = v[h + static_cast<size_t>(i + H / 2)];
            const double r0 = x0 * std::cos(a) - x1 * std::sin(a), r1 = x0 * std::sin(a) + x1 * std::cos(a);
            x0 = r0, x1 = r1;
        }
}

// Head h's slice of v, dotted with head g's of w.
double head_dot(const std::vector<double>& v, int64_t h, const std::vector<double>& w, int64_t g, int64_t H) {
    double s = 0;
    for (int64_t i = 0; i < H; ++i) s += v[static_cast<size_t>(h * H + i)] * w[static_cast<size_t>(g * H + i)];
    return s;
}

// A small model of `config` with random weights, under the module's names (as read_llama2c lists them).
nn::Llama2cModel random_model(const nn::Llama2cConfig& c, uint64_t seed) {
    autograd::Generator gen(seed);
    const int64_t C = c.dim, F = c.hidden_dim, KV = c.kv_dim();
    nn::Llama2cModel m;
    m.config = c;
    m.tensors.emplace_back("embed_tokens.weight", autograd::randn({c.vocab_size, C}, gen));
    for (int64_t l = 0; l < c.n_layers; ++l) {
        const auto add = [&](const char* suffix, autograd::Shape shape) {
            m.tensors.emplace_back(fmt::format("layers.{}.{}", l, suffix), autograd::randn(shape, gen));
        };
        add("input_layernorm.weight", {C});
        add("self_attn.q_proj.weight", {C, C});
        add("self_attn.k_proj.weight", {C, KV});
        add("self_attn.v_proj.weight", {C, KV});
        add("self_attn.o_proj.weight", {C, C});
        add("post_attention_layernorm.weight", {C});
        add("mlp.gate_proj.weight", {C, F});
        add("mlp.up_proj.weight", {C, F});
        add("mlp.down_proj.weight", {F, C});
    }
    m.tensors.emplace_back("norm.weight", autograd::randn({C}, gen));
    if (!c.shared_classifier) m.tensors.emplace_back("lm_head.weight", autograd::randn({C, c.vocab_size}, gen));
    return m;
}

nn::Llama2cConfig small_config(bool shared = true) {
    return {.dim = 8,
            .hidden_dim = 12,
            .n_layers = 2,
            .n_heads = 2,
            .n_kv_heads = 1,
            .vocab_size = 16,
            .seq_len = 4,
            .shared_classifier = shared};
}

// The same names (in any order), shapes and values.
void require_same_tensors(const nn::Llama2cModel& a, const nn::Llama2cModel& b) {
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (const auto& [name, t] : a.tensors) {
        INFO(name);
        REQUIRE(named(b, name).shape() == t.shape());
        REQUIRE(named(b, name).to_vector() == t.to_vector());
    }
}

}  // namespace

TEST_CASE("llama2.c: stories260K's header and tensors, in the module's names and shapes", "[llama2c]") {
    const auto path = stories260k();
    if (!path) return;
    const nn::Llama2cModel m = nn::read_llama2c(*path);
    const nn::Llama2cConfig& c = m.config;
    CHECK(c.version == nn::Llama2cVersion::legacy);
    CHECK(c.dim == 64);
    CHECK(c.hidden_dim == 172);
    CHECK(c.n_layers == 5);
    CHECK(c.n_heads == 8);
    CHECK(c.n_kv_heads == 4);
    CHECK(c.vocab_size == 512);
    CHECK(c.seq_len == 512);
    CHECK(c.shared_classifier);
    REQUIRE(m.tensors.size() == 1 + 5 * 9 + 1);  // the table, nine a layer, the final norm; no lm_head (tied)
    // Hugging Face's order (a LlamaForCausalLM's state_dict, without "model.")
    CHECK(m.tensors[0].first == "embed_tokens.weight");
    CHECK(m.tensors[1].first == "layers.0.self_attn.q_proj.weight");
    CHECK(m.tensors[5].first == "layers.0.mlp.gate_proj.weight");
    CHECK(m.tensors[9].first == "layers.0.post_attention_layernorm.weight");
    CHECK(m.tensors.back().first == "norm.weight");
    CHECK(named(m, "layers.4.self_attn.k_proj.weight").shape() == autograd::Shape{64, 32});
    CHECK(named(m, "layers.0.mlp.down_proj.weight").shape() == autograd::Shape{172, 64});
    CHECK(named(m, "layers.0.mlp.gate_proj.weight").shape() == autograd::Shape{64, 172});

    // Against the file's own floats at run.c's offsets (memory_map_weights), located here from the dims.
    const std::vector<float> f = file_floats(slurp(*path), 28);
    const size_t V = 512, C = 64, F = 172, L = 5, KV = 32;
    const size_t rms_att = V * C, wq = rms_att + L * C, wk = wq + L * C * C, wv = wk + L * C * KV, wo = wv + L * C * KV;
    const size_t rms_ffn = wo + L * C * C, w1 = rms_ffn + L * C, w2 = w1 + L * F * C, w3 = w2 + L * F * C;
    const size_t final_norm = w3 + L * F * C, rope = final_norm + C;
    CHECK(named(m, "embed_tokens.weight").to_vector() == std::vector<float>(f.begin(), f.begin() + V * C));
    CHECK(named(m, "layers.3.input_layernorm.weight").to_vector() ==
          std::vector<float>(f.begin() + static_cast<long>(rms_att + 3 * C),
                             f.begin() + static_cast<long>(rms_att + 4 * C)));
    CHECK(named(m, "norm.weight").to_vector() ==
          std::vector<float>(f.begin() + static_cast<long>(final_norm), f.begin() + static_cast<long>(rope)));
    // A matrix without rotary pairs is the file's (out, in) transposed: ours[i][o] = file[o][i].
    const Tensor& v2 = named(m, "layers.2.self_attn.v_proj.weight");  // (C, KV)
    const Tensor& down1 = named(m, "layers.1.mlp.down_proj.weight");  // (F, C): w2 (C, F) transposed
    const Tensor& up4 = named(m, "layers.4.mlp.up_proj.weight");      // (C, F): w3 (F, C) transposed
    for (size_t o = 0; o < KV; ++o)
        for (size_t i = 0; i < C; ++i)
            REQUIRE(v2.at({static_cast<int64_t>(i), static_cast<int64_t>(o)}) == f[wv + 2 * C * KV + o * C + i]);
    for (size_t o = 0; o < C; ++o)
        for (size_t i = 0; i < F; ++i)
            REQUIRE(down1.at({static_cast<int64_t>(i), static_cast<int64_t>(o)}) == f[w2 + 1 * C * F + o * F + i]);
    for (size_t o = 0; o < F; ++o)
        for (size_t i = 0; i < C; ++i)
            REQUIRE(up4.at({static_cast<int64_t>(i), static_cast<int64_t>(o)}) == f[w3 + 4 * F * C + o * C + i]);
    // The rotary tables run.c skips: position 0 is cos 1, sin 0; position 1 turns pair i by 10000^(-2i/H).
    REQUIRE(m.legacy_rope_tables.size() == 2 * 512 * 4);
    CHECK(std::vector<float>(m.legacy_rope_tables.begin(), m.legacy_rope_tables.end()) ==
          std::vector<float>(f.begin() + static_cast<long>(rope), f.end()));
    for (int i = 0; i < 4; ++i) {
        CHECK(m.legacy_rope_tables[static_cast<size_t>(i)] == 1.0f);
        CHECK(m.legacy_rope_tables[static_cast<size_t>(512 * 4 + i)] == 0.0f);
        CHECK(m.legacy_rope_tables[static_cast<size_t>(4 + i)] ==
              Approx(std::cos(std::pow(10000.0, -2.0 * i / 8))).epsilon(1e-6));
        CHECK(m.legacy_rope_tables[static_cast<size_t>(512 * 4 + 4 + i)] ==
              Approx(std::sin(std::pow(10000.0, -2.0 * i / 8))).epsilon(1e-6));
    }
}

TEST_CASE(
    "llama2.c: stories260K's attention scores are run.c's: interleaved rotary on the file's q and k, halves on ours",
    "[llama2c]") {
    const auto path = stories260k();
    if (!path) return;
    const nn::Llama2cModel m = nn::read_llama2c(*path);
    const std::vector<float> f = file_floats(slurp(*path), 28);
    const int64_t C = 64, H = 8, n_head = 8, n_kv = 4, V = 512, L = 5, KV = 32;
    autograd::Generator gen(42);
    std::vector<double> x(static_cast<size_t>(C));
    for (double& v : x) v = gen.uniform() * 2 - 1;
    for (const int64_t layer : {0, 3}) {
        // run.c: q = wq @ x with wq (C_out, C_in) from the file, rotated interleaved (its forward's loop)
        const size_t wq = static_cast<size_t>(V * C + L * C + layer * C * C),
                     wk = static_cast<size_t>(V * C + L * C + L * C * C + layer * C * KV);
        std::vector<double> q_ref(static_cast<size_t>(C), 0.0), k_ref(static_cast<size_t>(KV), 0.0);
        for (int64_t o = 0; o < C; ++o)
            for (int64_t i = 0; i < C; ++i)
                q_ref[static_cast<size_t>(o)] += f[wq + static_cast<size_t>(o * C + i)] * x[static_cast<size_t>(i)];
        for (int64_t o = 0; o < KV; ++o)
            for (int64_t i = 0; i < C; ++i)
                k_ref[static_cast<size_t>(o)] += f[wk + static_cast<size_t>(o * C + i)] * x[static_cast<size_t>(i)];
        std::vector<double> q = vec_mat(x, named(m, fmt::format("layers.{}.self_attn.q_proj.weight", layer)));
        std::vector<double> k = vec_mat(x, named(m, fmt::format("layers.{}.self_attn.k_proj.weight", layer)));
        const int64_t q_pos = 7, k_pos = 3;
        std::vector<double> kr = k_ref;
        rotary_interleaved(q_ref, H, q_pos);
        rotary_interleaved(kr, H, k_pos);
        rotary_halves(q, H, q_pos);
        rotary_halves(k, H, k_pos);
        for (int64_t h = 0; h < n_head; ++h) {
            const int64_t g = h / (n_head / n_kv);  // the key head this query head reads
            const double expected = head_dot(q_ref, h, kr, g, H), got = head_dot(q, h, k, g, H);
            INFO("layer " << layer << " head " << h);
            REQUIRE(got == Approx(expected).epsilon(1e-9).margin(1e-9));
        }
    }
}

TEST_CASE(
    "llama2.c: the rotary permutation (autograd::rotary_permute) turns an interleaved projection into a halves one, "
    "and back",
    "[llama2c]") {
    autograd::Generator gen(7);
    const int64_t C = 6, n_head = 3, H = 4;
    const Tensor w = autograd::randn({C, n_head * H}, gen);  // (C, n_head * H): interleaved layout
    const Tensor halves =
        autograd::rotary_permute(w, n_head, autograd::RotaryLayout::interleaved, autograd::RotaryLayout::halves);
    CHECK(autograd::rotary_permute(halves, n_head, autograd::RotaryLayout::halves, autograd::RotaryLayout::interleaved)
              .to_vector() == w.to_vector());
    CHECK(halves.to_vector() != w.to_vector());
    // Column p * H/2 + i of each head is interleaved column 2i + p (Hugging Face's `permute`).
    for (int64_t h = 0; h < n_head; ++h)
        for (int64_t i = 0; i < H / 2; ++i)
            for (int64_t p = 0; p < 2; ++p)
                for (int64_t r = 0; r < C; ++r)
                    REQUIRE(halves.at({r, h * H + p * H / 2 + i}) == w.at({r, h * H + 2 * i + p}));
    std::vector<double> x(static_cast<size_t>(C));
    for (double& v : x) v = gen.uniform() * 2 - 1;
    for (const int64_t pos : {0, 1, 5, 100}) {
        std::vector<double> a = vec_mat(x, w), b = vec_mat(x, halves);
        rotary_interleaved(a, H, pos);
        rotary_halves(b, H, pos);
        for (int64_t h = 0; h < n_head; ++h)  // the same rotated vector, its units in the permuted order
            for (int64_t i = 0; i < H / 2; ++i)
                for (int64_t p = 0; p < 2; ++p)
                    REQUIRE(b[static_cast<size_t>(h * H + p * H / 2 + i)] ==
                            Approx(a[static_cast<size_t>(h * H + 2 * i + p)]).margin(1e-12));
    }
    REQUIRE_THROWS_WITH(autograd::rotary_permute(autograd::zeros({4, 6}), 2, autograd::RotaryLayout::interleaved,
                                                 autograd::RotaryLayout::halves),
                        Contains("even width"));
    REQUIRE_THROWS_WITH(autograd::rotary_permute(autograd::zeros({4, 6}), 4, autograd::RotaryLayout::halves,
                                                 autograd::RotaryLayout::interleaved),
                        Contains("(4, 6)"));
}

TEST_CASE("llama2.c: stories260K written back is the same file, byte for byte", "[llama2c]") {
    const auto path = stories260k();
    if (!path) return;
    const test::TempDir dir("llama2c_round_trip");
    const nn::Llama2cModel m = nn::read_llama2c(*path);
    nn::write_llama2c(dir.path / "legacy.bin", m, nn::Llama2cVersion::legacy);
    const std::string original = slurp(*path);
    CHECK(slurp(dir.path / "legacy.bin") == original);
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);  // no temporary file left

    // Version 1: export.py's header and order (the norms first), the same floats.
    nn::write_llama2c(dir.path / "v1.bin", m, nn::Llama2cVersion::v1);
    const std::string v1 = slurp(dir.path / "v1.bin");
    const size_t V = 512, C = 64, F = 172, L = 5, KV = 32;
    const size_t floats = V * C + 2 * L * C + C + L * (2 * C * C + 2 * C * KV + 3 * C * F);  // no rotary tables
    REQUIRE(v1.size() == 256 + 4 * floats);
    CHECK(v1.substr(0, 4) == "24ka");  // uint32 0x616b3432, little-endian
    int32_t header[8];
    std::memcpy(header, v1.data() + 4, sizeof header);
    CHECK(std::vector<int32_t>(header, header + 8) == std::vector<int32_t>{1, 64, 172, 5, 8, 4, 512, 512});
    CHECK(v1[36] == 1);
    CHECK(v1.substr(37, 256 - 37) == std::string(256 - 37, '\0'));
    // attention norms first: the legacy file's bytes right after its table
    CHECK(v1.substr(256, 4 * L * C) == original.substr(28 + 4 * V * C, 4 * L * C));
    // then the ffn norms, the final norm, the table
    CHECK(v1.substr(256 + 4 * L * C, 4 * L * C) ==
          original.substr(28 + 4 * (V * C + L * C + 2 * L * C * C + 2 * L * C * KV), 4 * L * C));
    CHECK(v1.substr(256 + 4 * (2 * L * C + C), 4 * V * C) == original.substr(28, 4 * V * C));

    const nn::Llama2cModel back = nn::read_llama2c(dir.path / "v1.bin");
    CHECK(back.config.version == nn::Llama2cVersion::v1);
    CHECK(back.legacy_rope_tables.empty());
    require_same_tensors(m, back);
    nn::write_llama2c(dir.path / "v1_again.bin", back, nn::Llama2cVersion::v1);
    CHECK(slurp(dir.path / "v1_again.bin") == v1);

    // legacy -> v1 -> legacy: the tensors kept; the rotary tables, lost in v1, computed again as model.py
    // does (float32 pow, cos, sin: within a float32 rounding or two of torch's, values at most 1).
    nn::write_llama2c(dir.path / "legacy_again.bin", back, nn::Llama2cVersion::legacy);
    const nn::Llama2cModel again = nn::read_llama2c(dir.path / "legacy_again.bin");
    require_same_tensors(m, again);
    REQUIRE(again.legacy_rope_tables.size() == m.legacy_rope_tables.size());
    double worst = 0;
    for (size_t i = 0; i < m.legacy_rope_tables.size(); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(again.legacy_rope_tables[i]) - m.legacy_rope_tables[i]));
    INFO("largest difference from the file's rotary tables: " << worst);
    CHECK(worst < 1e-6);  // measured: 6e-8, 199 of 4,096 values differ in the last bit
    const std::string legacy_again = slurp(dir.path / "legacy_again.bin");
    const size_t tables_at = original.size() - 4 * 2 * 512 * 4;
    CHECK(legacy_again.substr(0, tables_at) == original.substr(0, tables_at));
}

TEST_CASE("llama2.c: an untied classifier, in both versions", "[llama2c]") {
    const test::TempDir dir("llama2c_untied");
    const nn::Llama2cModel m = random_model(small_config(/*shared=*/false), 3);
    for (const auto version : {nn::Llama2cVersion::legacy, nn::Llama2cVersion::v1}) {
        const fs::path path = dir.path / (version == nn::Llama2cVersion::legacy ? "legacy.bin" : "v1.bin");
        nn::write_llama2c(path, m, version);
        const std::string bytes = slurp(path);
        int32_t vocab = 0;
        std::memcpy(&vocab, bytes.data() + (version == nn::Llama2cVersion::legacy ? 20 : 28), 4);
        CHECK(vocab == (version == nn::Llama2cVersion::legacy ? -16 : 16));  // legacy: negative means untied
        if (version == nn::Llama2cVersion::v1) CHECK(bytes[36] == 0);
        // The classifier is last, (V, C) as nn.Linear stores it: lm_head (C, V) transposed.
        const Tensor& head = named(m, "lm_head.weight");
        std::vector<float> last(16 * 8);
        std::memcpy(last.data(), bytes.data() + bytes.size() - 4 * last.size(), 4 * last.size());
        for (int64_t v = 0; v < 16; ++v)
            for (int64_t k = 0; k < 8; ++k) REQUIRE(last[static_cast<size_t>(v * 8 + k)] == head.at({k, v}));
        const nn::Llama2cModel back = nn::read_llama2c(path);
        CHECK_FALSE(back.config.shared_classifier);
        require_same_tensors(m, back);
    }
}

TEST_CASE("llama2.c: reading into given tensors fills them in place", "[llama2c]") {
    const test::TempDir dir("llama2c_into");
    const nn::Llama2cModel m = random_model(small_config(), 5);
    nn::write_llama2c(dir.path / "m.bin", m, nn::Llama2cVersion::legacy);
    const Tensor place = autograd::zeros({8, 8});
    bool asked = false;
    const nn::Llama2cModel back = nn::read_llama2c(dir.path / "m.bin", [&](const nn::Llama2cConfig& c) {
        asked = c.dim == 8 && c.n_layers == 2;
        return nn::NamedTensors{{"layers.1.self_attn.q_proj.weight", place}, {"norm.weight", autograd::zeros({3})}};
    });
    CHECK(asked);
    CHECK(named(back, "layers.1.self_attn.q_proj.weight").data().data() == place.data().data());
    CHECK(place.to_vector() == named(m, "layers.1.self_attn.q_proj.weight").to_vector());
    CHECK(named(back, "norm.weight").to_vector() ==
          named(m, "norm.weight").to_vector());  // the wrong shape: a new tensor
}

TEST_CASE("llama2.c: writing refuses tensors that do not fit the config, and writes nothing", "[llama2c]") {
    const test::TempDir dir("llama2c_write_refusals");
    const fs::path path = dir.path / "out.bin";
    nn::Llama2cModel m = random_model(small_config(), 9);
    nn::Llama2cModel missing = m;
    missing.tensors.erase(missing.tensors.begin() + 3);
    REQUIRE_THROWS_WITH(nn::write_llama2c(path, missing, nn::Llama2cVersion::v1),
                        Contains("layers.0.self_attn.k_proj.weight") && Contains("missing"));
    nn::Llama2cModel wrong = m;
    wrong.tensors[2].second = autograd::zeros({8, 4});
    REQUIRE_THROWS_WITH(nn::write_llama2c(path, wrong, nn::Llama2cVersion::v1),
                        Contains("layers.0.self_attn.q_proj.weight") && Contains("(8, 4)") && Contains("(8, 8)"));
    nn::Llama2cModel extra = m;
    extra.tensors.emplace_back("layers.0.self_attn.rotary.weight", autograd::zeros({2}));
    REQUIRE_THROWS_WITH(nn::write_llama2c(path, extra, nn::Llama2cVersion::v1),
                        Contains("rotary.weight") && Contains("not a llama2.c parameter"));
    nn::Llama2cModel untied_head = m;  // shared_classifier, but an lm_head that is not the table
    untied_head.tensors.emplace_back("lm_head.weight", autograd::zeros({8, 16}));
    REQUIRE_THROWS_WITH(nn::write_llama2c(path, untied_head, nn::Llama2cVersion::legacy),
                        Contains("shared_classifier"));
    nn::Llama2cModel bad_config = m;
    bad_config.config.n_kv_heads = 3;
    REQUIRE_THROWS_WITH(nn::write_llama2c(path, bad_config, nn::Llama2cVersion::legacy), Contains("'n_kv_heads' 3"));
    CHECK_FALSE(fs::exists(path));
    CHECK(fs::is_empty(dir.path));

    // An I/O failure (the target is a directory: the rename fails) leaves what was there and no temporary file.
    fs::create_directory(dir.path / "taken.bin");
    REQUIRE_THROWS_AS(nn::write_llama2c(dir.path / "taken.bin", m, nn::Llama2cVersion::legacy), std::runtime_error);
    CHECK(fs::is_directory(dir.path / "taken.bin"));
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
    fs::remove(dir.path / "taken.bin");

    // A tied lm_head equal to the table transposed (a module that registers it) is accepted, not written.
    nn::Llama2cModel tied = m;
    const Tensor& table = named(m, "embed_tokens.weight");
    tied.tensors.emplace_back("lm_head.weight", table.transpose(0, 1).detach());
    nn::write_llama2c(path, tied, nn::Llama2cVersion::legacy);
    nn::write_llama2c(dir.path / "plain.bin", m, nn::Llama2cVersion::legacy);
    CHECK(slurp(path) == slurp(dir.path / "plain.bin"));
}

namespace {

// The bytes of a valid small legacy file, and the same with int32 field `index` (0 dim ... 6 seq_len) set.
std::string legacy_bytes(const nn::Llama2cConfig& c) {
    const test::TempDir dir("llama2c_legacy_bytes");
    nn::write_llama2c(dir.path / "m.bin", random_model(c, 11), nn::Llama2cVersion::legacy);
    return slurp(dir.path / "m.bin");
}
std::string with_int(std::string bytes, size_t offset, int32_t value) {
    std::memcpy(bytes.data() + offset, &value, 4);
    return bytes;
}

}  // namespace

TEST_CASE("llama2.c: hostile files are refused in one line naming the file and the field", "[llama2c]") {
    const test::TempDir dir("llama2c_hostile");
    const std::string good = legacy_bytes(small_config());
    std::string good_v1;
    {
        nn::write_llama2c(dir.path / "good_v1.bin", random_model(small_config(), 11), nn::Llama2cVersion::v1);
        good_v1 = slurp(dir.path / "good_v1.bin");
    }
    REQUIRE_NOTHROW(nn::read_llama2c(dir.write("good.bin", good)));
    const auto refused = [&](const std::string& name, const std::string& bytes, const std::string& what) {
        INFO(name);
        const fs::path path = dir.write(name, bytes);
        try {
            nn::read_llama2c(path);
            FAIL("accepted");
        } catch (const std::runtime_error& e) {
            const std::string message = e.what();
            CHECK_THAT(message, Contains(name) && Contains(what));
            CHECK(message.find('\n') == std::string::npos);
        }
    };
    // dim 8 at 0, hidden 4, n_layers 8, n_heads 12, n_kv_heads 16, vocab 20, seq_len 24
    refused("dim_not_divisible.bin", with_int(good, 12, 3), "'dim' 8 is not divisible by 'n_heads' 3");
    refused("kv_not_dividing.bin", with_int(with_int(good, 12, 4), 16, 3),
            "'n_kv_heads' 3 does not divide 'n_heads' 4");
    refused("odd_head.bin", with_int(with_int(good, 0, 6), 12, 2), "head size");
    refused("vocab_zero.bin", with_int(good, 20, 0), "'vocab_size' is 0");
    refused("seq_len_zero.bin", with_int(good, 24, 0), "'seq_len' is 0");
    refused("seq_len_absurd.bin", with_int(good, 24, (1 << 20) + 1), "'seq_len' is 1048577, over the limit");
    refused("layers_negative.bin", with_int(good, 8, -1), "'n_layers' is -1");
    // Absurd dims pass each field's check, and are refused by the file's size, before any allocation.
    refused("dims_absurd.bin", with_int(with_int(with_int(good, 0, 1 << 30), 4, 1 << 30), 8, 1 << 30),
            "needs more than 2^64");
    refused("dims_large.bin", with_int(good, 4, 1 << 30), "the file is short");
    refused("short.bin", good.substr(0, good.size() - 4), "the file is short");
    refused("long.bin", good + std::string(4, '\0'), "the file is longer");
    refused("tiny.bin", good.substr(0, 20), "shorter than llama2.c's header of 7 int32");
    refused("empty.bin", "", "the file is 0 bytes");
    // version 1: magic, version, flag, padding, sign
    refused("v1_version2.bin", with_int(good_v1, 4, 2), "'version' is 2");
    refused("v1_shared_flag.bin", good_v1.substr(0, 36) + '\x02' + good_v1.substr(37), "'shared_classifier' is 2");
    refused("v1_padding.bin", good_v1.substr(0, 100) + '\x07' + good_v1.substr(101), "header byte 100 is 7");
    refused("v1_negative_vocab.bin", with_int(good_v1, 28, -16), "version 1 stores it positive");
    refused("v1_short_header.bin", good_v1.substr(0, 100), "shorter than version 1's header");
    refused("v1_long.bin", good_v1 + "x", "the file is longer");

    REQUIRE_THROWS_WITH(nn::read_llama2c(dir.path / "missing.bin"), Contains("missing.bin") && Contains("cannot open"));
    fs::create_directory(dir.path / "a_directory.bin");
    REQUIRE_THROWS_WITH(nn::read_llama2c(dir.path / "a_directory.bin"),
                        Contains("a_directory.bin") && Contains("is a directory"));
}
