// Hugging Face's and llm.c's GPT-2 files, read into and written from the `gpt2` kind's names and layouts.
#include "nn/model_files/gpt2_weights.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <nn/files/json_file.h>
#include "nn/files/atomic_file.h"
#include "nn/files/file_names.h"
#include "nn/tokenizers/bpe.h"

namespace nn {

using autograd::Shape;
using autograd::shape_str;
using autograd::Tensor;
using detail::path_str;

namespace {

constexpr int32_t kLlmcMagic = 20240326;
constexpr int kLlmcHeaderInts = 256;
constexpr std::string_view kPrefix = "transformer.";
// Hugging Face's config.json for GPT-2 is under 1 kB and nests 3 deep (task_specific_params)
constexpr detail::JsonLimits kConfigLimits{.max_bytes = 1 << 20, .max_depth = 16};
// GPT-2's published widths (small, medium, large, xl), all with heads of 64
constexpr std::array<int64_t, 4> kPublishedWidths = {768, 1024, 1280, 1600};

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& what) {
    throw std::runtime_error(fmt::format("{}: {}", path_str(path), what));
}

// One parameter of the gpt2 kind: tinygpt's name, its shape, and whether llm.c stores it transposed
// (nn.Linear's (out, in) against our (in, out)).
struct Param {
    std::string name;
    Shape shape;
    bool transposed = false;
};

// The gpt2 kind's parameters in llm.c's order: wte, wpe, then each per-layer kind for all layers in
// turn, then ln_f. (Hugging Face's order is by layer; tinygpt's names are the same up to "gain".)
struct Group {
    std::string suffix;  // after "h.N." for a per-layer group, the whole name otherwise
    bool per_layer;
    bool transposed;
};
const std::array<Group, 16>& llmc_groups() {
    static const std::array<Group, 16> groups{{
        {"wte.weight", false, false},
        {"wpe.weight", false, false},
        {"ln_1.gain", true, false},
        {"ln_1.bias", true, false},
        {"attn.c_attn.weight", true, true},
        {"attn.c_attn.bias", true, false},
        {"attn.c_proj.weight", true, true},
        {"attn.c_proj.bias", true, false},
        {"ln_2.gain", true, false},
        {"ln_2.bias", true, false},
        {"mlp.c_fc.weight", true, true},
        {"mlp.c_fc.bias", true, false},
        {"mlp.c_proj.weight", true, true},
        {"mlp.c_proj.bias", true, false},
        {"ln_f.gain", false, false},
        {"ln_f.bias", false, false},
    }};
    return groups;
}

Shape shape_of(const std::string& suffix, const ModelConfig& c) {
    const int64_t C = c.n_embd;
    if (suffix == "wte.weight") return {c.vocab, C};
    if (suffix == "wpe.weight") return {c.block, C};
    if (suffix == "attn.c_attn.weight") return {C, 3 * C};
    if (suffix == "attn.c_attn.bias") return {3 * C};
    if (suffix == "attn.c_proj.weight") return {C, C};
    if (suffix == "mlp.c_fc.weight") return {C, 4 * C};
    if (suffix == "mlp.c_fc.bias") return {4 * C};
    if (suffix == "mlp.c_proj.weight") return {4 * C, C};
    return {C};  // LayerNorms' gain and bias, c_proj's biases
}

// Every parameter in llm.c's order.
std::vector<Param> llmc_params(const ModelConfig& c) {
    std::vector<Param> out;
    for (const Group& g : llmc_groups()) {
        if (!g.per_layer) out.push_back({g.suffix, shape_of(g.suffix, c), g.transposed});
        else
            for (int64_t l = 0; l < c.n_layer; ++l)
                out.push_back({fmt::format("h.{}.{}", l, g.suffix), shape_of(g.suffix, c), g.transposed});
    }
    return out;
}

// Every parameter in Hugging Face's (and tinygpt's) order: by layer.
std::vector<Param> hf_order(const ModelConfig& c) {
    std::vector<Param> out;
    for (const bool per_layer : {false, true})
        for (int64_t l = 0; l < (per_layer ? c.n_layer : 1); ++l)
            for (const Group& g : llmc_groups())
                if (g.per_layer == per_layer && !g.suffix.starts_with("ln_f"))
                    out.push_back({per_layer ? fmt::format("h.{}.{}", l, g.suffix) : g.suffix, shape_of(g.suffix, c),
                                   g.transposed});
    for (const Group& g : llmc_groups())
        if (g.suffix.starts_with("ln_f")) out.push_back({g.suffix, shape_of(g.suffix, c), g.transposed});
    return out;
}

// tinygpt's name <-> Hugging Face's (without the prefix): a LayerNorm's scale is "gain" here.
std::string to_hf_name(const std::string& name) {
    if (name.ends_with(".gain")) return name.substr(0, name.size() - 5) + ".weight";
    return name;
}
std::string from_hf_name(const std::string& name) {
    for (const char* ln : {"ln_1.weight", "ln_2.weight", "ln_f.weight"})
        if (name.ends_with(ln) && (name.size() == std::strlen(ln) || name[name.size() - std::strlen(ln) - 1] == '.'))
            return name.substr(0, name.size() - 6) + "gain";
    return name;
}

// The tensors' shapes, by name, checked against the config's parameters: none missing, none of a wrong
// shape, none left over.
void check_shapes(const std::filesystem::path& path, const ModelConfig& c, std::map<std::string, Shape> given,
                  const std::function<std::string(const std::string&)>& shown) {
    for (const Param& p : hf_order(c)) {
        const auto it = given.find(p.name);
        if (it == given.end())
            refuse(path, fmt::format("tensor '{}' {} is missing", shown(p.name), shape_str(p.shape)));
        if (it->second != p.shape)
            refuse(path,
                   fmt::format("tensor '{}' is {}, but a GPT-2 of n_embd {} n_layer {} vocab {} n_ctx {} needs {}",
                               shown(p.name), shape_str(it->second), c.n_embd, c.n_layer, c.vocab, c.block,
                               shape_str(p.shape)));
        given.erase(it);
    }
    if (!given.empty())
        refuse(path, fmt::format("tensor '{}' {} is not a GPT-2 parameter", shown(given.begin()->first),
                                 shape_str(given.begin()->second)));
}

// The tensors, by name, checked as check_shapes does. Returns them in tinygpt's order.
NamedTensors check_against(const std::filesystem::path& path, const ModelConfig& c,
                           const std::map<std::string, Tensor>& given,
                           const std::function<std::string(const std::string&)>& shown) {
    std::map<std::string, Shape> shapes;
    for (const auto& [name, t] : given) shapes.emplace(name, t.shape());
    check_shapes(path, c, std::move(shapes), shown);
    NamedTensors out;
    for (const Param& p : hf_order(c)) out.emplace_back(p.name, given.at(p.name));
    return out;
}

// Where the file's weights go, in tinygpt's order: the tensors `into` gives for the config (a new model's
// parameters), or new ones.
NamedTensors places(const ModelConfig& c, const WeightsPlace& into) {
    std::map<std::string, Tensor> given;
    if (into)
        for (auto& [name, t] : into(c)) given.emplace(name, t);
    NamedTensors out;
    for (const Param& p : hf_order(c)) {
        const auto it = given.find(p.name);
        out.emplace_back(p.name,
                         it != given.end() && it->second.shape() == p.shape ? it->second : autograd::zeros(p.shape));
    }
    return out;
}

std::string same_name(const std::string& name) { return name; }

void check_config(const std::filesystem::path& path, const ModelConfig& c) {
    if (c.kind != ModelKind::gpt2)
        refuse(path, fmt::format("only a gpt2 model exports to GPT-2's formats; this one is {}", c.kind));
}

// --- llm.c ---------------------------------------------------------------------------------------

uint32_t le32(const unsigned char* b) {
    return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
}

void put_le32(std::vector<unsigned char>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

// The bytes of a llm.c file of config `c` (its wte with `padded` rows), or nothing past 64 bits: the
// header's numbers are the file's, not to be trusted.
std::optional<uint64_t> llmc_file_bytes(const ModelConfig& c, int64_t padded, int bytes_per_value) {
    uint64_t values = 0;
    for (const Param& p : llmc_params(c)) {
        uint64_t n = p.name == "wte.weight" ? static_cast<uint64_t>(padded) : 1;
        for (size_t d = p.name == "wte.weight" ? 1 : 0; d < p.shape.size(); ++d)
            if (__builtin_mul_overflow(n, static_cast<uint64_t>(p.shape[d]), &n)) return std::nullopt;
        if (__builtin_add_overflow(values, n, &values)) return std::nullopt;
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(values, static_cast<uint64_t>(bytes_per_value), &bytes) ||
        __builtin_add_overflow(bytes, uint64_t{kLlmcHeaderInts * 4}, &bytes))
        return std::nullopt;
    return bytes;
}

// Reads `out.size()` values of llm.c's dtype (4-byte fp32 or 2-byte bf16, little-endian) into `out`:
// fp32 straight into place, bf16 through a bounded buffer; a piece of 16 Mi values at most at a time,
// each followed by `read` (where the file has been read to).
void read_values(std::ifstream& in, std::span<float> out, int bytes_per_value, const std::filesystem::path& path,
                 const std::function<void()>& read) {
    const auto position = static_cast<int64_t>(in.tellg());
    const auto check = [&](size_t bytes) {
        if (!in)
            refuse(path, fmt::format("the file ends before byte {} (truncated while being read?)",
                                     position + static_cast<int64_t>(bytes)));
    };
    constexpr size_t kPiece = size_t{1} << 24;
    std::vector<unsigned char> halves(bytes_per_value == 2 ? 2 * std::min(out.size(), kPiece) : 0);
    for (size_t first = 0; first < out.size(); first += kPiece) {
        const size_t n = std::min(out.size() - first, kPiece);
        const std::span<float> piece = out.subspan(first, n);
        if (bytes_per_value == 4) {
            in.read(reinterpret_cast<char*>(piece.data()), static_cast<std::streamsize>(piece.size_bytes()));
            check(4 * (first + n));
            if constexpr (std::endian::native == std::endian::big)
                for (float& v : piece) v = std::bit_cast<float>(le32(reinterpret_cast<const unsigned char*>(&v)));
        } else {
            in.read(reinterpret_cast<char*>(halves.data()), static_cast<std::streamsize>(2 * n));
            check(2 * (first + n));
            for (size_t i = 0; i < n; ++i)
                piece[i] = bf16_to_float(static_cast<uint16_t>(halves[2 * i] | halves[2 * i + 1] << 8));
        }
        read();
    }
}

}  // namespace

WeightsFormat weights_format(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    unsigned char first[8] = {};
    if (!in.read(reinterpret_cast<char*>(first), 8)) return WeightsFormat::tinygpt;
    if (static_cast<int32_t>(le32(first)) == kLlmcMagic) return WeightsFormat::llmc;
    uint64_t header_size = 0;
    for (int i = 0; i < 8; ++i) header_size |= uint64_t{first[i]} << (8 * i);
    if (header_size > (100u << 20)) return WeightsFormat::tinygpt;
    std::string header(header_size, '\0');
    if (!in.read(header.data(), static_cast<std::streamsize>(header_size))) return WeightsFormat::tinygpt;
    const nlohmann::json j = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return WeightsFormat::tinygpt;
    // tinygpt's own checkpoints say so in their metadata; GPT-2's table has its name either way
    if (j.contains("__metadata__") && j["__metadata__"].is_object() && j["__metadata__"].contains("format") &&
        j["__metadata__"]["format"] != "pt")
        return WeightsFormat::tinygpt;
    if (j.contains("wte.weight") || j.contains("transformer.wte.weight")) return WeightsFormat::hugging_face;
    return WeightsFormat::tinygpt;
}

ForeignWeights read_hf_gpt2(const std::filesystem::path& path, const WeightsPlace& into, std::optional<int64_t> n_head,
                            const ReadProgress& progress) {
    SafetensorsLimits options;
    options.widen_half = true;
    options.warn_without_checksums = false;  // Hugging Face's files have none
    SafetensorsReader file(path, options);   // the header checked; the values are read below, into place
    if (progress) file.on_progress(progress);
    ForeignWeights out;
    std::map<std::string, Shape> tensors;
    std::map<std::string, size_t> index;          // tinygpt name -> the file's tensor
    std::map<std::string, std::string> original;  // tinygpt name -> the file's
    std::optional<size_t> lm_head;
    int64_t skipped_buffers = 0;
    for (size_t i = 0; i < file.tensors().size(); ++i) {
        const std::string& stored = file.tensors()[i].name;
        const std::string name = stored.starts_with(kPrefix) ? stored.substr(kPrefix.size()) : stored;
        if (name == "lm_head.weight") {
            lm_head = i;
            continue;
        }
        if (name.starts_with("h.") && (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias"))) {
            ++skipped_buffers;
            continue;
        }
        const std::string ours = from_hf_name(name);
        if (original.contains(ours))
            refuse(path, fmt::format("tensor '{}' is there both with and without the 'transformer.' prefix", name));
        original[ours] = stored;
        tensors.emplace(ours, file.tensors()[i].shape);
        index.emplace(ours, i);
    }
    const auto shown = [&original](const std::string& n) {  // a tensor as the file names it
        const auto it = original.find(n);
        return it != original.end() ? it->second : to_hf_name(n);
    };

    ModelConfig& c = out.config;
    c.kind = ModelKind::gpt2;
    const auto need = [&](const std::string& name) -> const Shape& {
        const auto it = tensors.find(name);
        if (it == tensors.end()) refuse(path, fmt::format("tensor '{}' is missing (not a GPT-2 file?)", name));
        if (it->second.size() != 2)
            refuse(path, fmt::format("tensor '{}' is {}, not a matrix", shown(name), shape_str(it->second)));
        return it->second;
    };
    c.vocab = need("wte.weight")[0];
    c.n_embd = need("wte.weight")[1];
    c.block = need("wpe.weight")[0];
    c.n_layer = 0;
    while (tensors.contains(fmt::format("h.{}.ln_1.gain", c.n_layer))) ++c.n_layer;
    if (c.n_layer == 0) refuse(path, "tensor 'h.0.ln_1.weight' is missing: no layers");

    // n_head is not in the tensors: config.json beside the file, the caller's, or the published sizes'
    // heads of 64 for a file of one of their widths
    const std::filesystem::path config_json = path.parent_path() / "config.json";
    if (std::filesystem::exists(std::filesystem::symlink_status(config_json))) {
        const nlohmann::json j = detail::read_json_file(config_json, kConfigLimits);
        if (!j.is_object()) refuse(config_json, fmt::format("is not a JSON object but {}", j.type_name()));
        const auto quote = [&](const char* key) {  // a value as the message quotes it: a line at most
            if (j[key].is_string()) return quoted_text(j[key].get<std::string>(), 40);
            const std::string d = j[key].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            return d.size() > 40 ? d.substr(0, 40) + "..." : d;
        };
        const auto number = [&](const char* key, int64_t expected) {
            if (!j.contains(key)) return;
            if (!j[key].is_number_integer() || j[key].get<int64_t>() != expected)
                refuse(config_json,
                       fmt::format("\"{}\" is {} but {} holds {}", key, quote(key), path_str(path), expected));
        };
        number("n_embd", c.n_embd);
        number("n_layer", c.n_layer);
        number("vocab_size", c.vocab);
        number("n_positions", c.block);
        if (!j.contains("n_head") || !j["n_head"].is_number_integer() || j["n_head"].get<int64_t>() <= 0)
            refuse(config_json, "\"n_head\" is missing or not a positive whole number");
        c.n_head = j["n_head"].get<int64_t>();
        if (n_head && *n_head != c.n_head)
            refuse(config_json, fmt::format("\"n_head\" is {} but n_head {} was asked", c.n_head, *n_head));
        const nlohmann::json activation = j.value("activation_function", nlohmann::json("gelu_new"));
        if (activation == "gelu") c.gelu_exact = true;
        else if (activation != "gelu_new" && activation != "gelu_pytorch_tanh")
            refuse(config_json,
                   fmt::format("\"activation_function\" is {}; the gpt2 kind has gelu_new (tanh) and gelu (erf)",
                               quote("activation_function")));
        if (j.contains("scale_attn_weights")) {  // Hugging Face's switch for the divisor sqrt(head width)
            if (!j["scale_attn_weights"].is_boolean())
                refuse(config_json,
                       fmt::format("\"scale_attn_weights\" is {}, not true or false", quote("scale_attn_weights")));
            c.scaled = j["scale_attn_weights"].get<bool>();
        }
        if (j.contains("layer_norm_epsilon") &&
            (!j["layer_norm_epsilon"].is_number() || j["layer_norm_epsilon"].get<double>() != 1e-5))
            refuse(config_json, fmt::format("\"layer_norm_epsilon\" is {}; the gpt2 kind's LayerNorm has 1e-5",
                                            quote("layer_norm_epsilon")));
        out.notes.push_back(fmt::format("n_head {} from {}", c.n_head, path_str(config_json)));
    } else if (n_head) {
        c.n_head = *n_head;
        out.notes.push_back(fmt::format("n_head {} as asked (no config.json beside it)", c.n_head));
    } else if (std::ranges::find(kPublishedWidths, c.n_embd) != kPublishedWidths.end()) {
        c.n_head = c.n_embd / 64;
        out.warnings.push_back(
            fmt::format("no config.json beside it: n_head {} guessed from n_embd {} (GPT-2's published sizes "
                        "have heads of 64); if it has other heads, give its n_head",
                        c.n_head, c.n_embd));
    } else {
        refuse(path,
               fmt::format("no config.json beside it to give n_head, and n_embd {} is none of GPT-2's published widths "
                           "({}, heads of 64): give its n_head, or put its config.json beside it",
                           c.n_embd, fmt::join(kPublishedWidths, ", ")));
    }
    if (c.n_head <= 0 || c.n_embd % c.n_head != 0)
        refuse(path, fmt::format("n_embd {} is not a multiple of n_head {}", c.n_embd, c.n_head));

    check_shapes(path, c, std::move(tensors), shown);
    if (lm_head && file.tensors()[*lm_head].shape != Shape{c.vocab, c.n_embd})
        refuse(path,
               "tensor 'lm_head.weight' differs from 'wte.weight': the gpt2 kind's output layer is tied to the token "
               "table");

    // Each tensor straight into its place, in file order; the causal-mask buffers only read (checksums)
    out.weights = places(c, into);
    std::map<size_t, Tensor> by_index;
    for (const auto& [name, t] : out.weights) by_index.emplace(index.at(name), t);
    for (size_t i = 0; i < file.tensors().size(); ++i) {
        if (const auto it = by_index.find(i); it != by_index.end()) file.read(i, it->second.data());
        else if (i != lm_head) file.read_pieces(i, [](std::span<const float>, size_t) {});
    }
    bool tied = true;  // lm_head.weight equals wte, compared a piece at a time
    if (lm_head) {
        const auto wte = out.weights.front().second.data();
        file.read_pieces(*lm_head, [&](std::span<const float> piece, size_t first) {
            tied = tied && std::equal(piece.begin(), piece.end(), wte.begin() + static_cast<std::ptrdiff_t>(first));
        });
    }
    file.finish();
    if (!tied)
        refuse(path,
               "tensor 'lm_head.weight' differs from 'wte.weight': the gpt2 kind's output layer is tied to the token "
               "table");
    if (skipped_buffers)
        out.notes.push_back(
            fmt::format("skipped {} causal-mask buffers (attn.bias, attn.masked_bias)", skipped_buffers));
    return out;
}

ForeignWeights read_llmc_gpt2(const std::filesystem::path& path, const WeightsPlace& into,
                              std::optional<int64_t> n_head, const ReadProgress& progress) {
    // (a named pipe is refused here rather than waited on)
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) refuse(path, "not a regular file");
    const uint64_t file_size = std::filesystem::file_size(path, error);
    std::ifstream in(path, std::ios::binary);
    if (!in || error) refuse(path, fmt::format("cannot open ({})", std::strerror(errno)));
    if (file_size < kLlmcHeaderInts * 4)
        refuse(path, fmt::format("the file is {} bytes, shorter than llm.c's header of 256 int32", file_size));
    std::array<unsigned char, kLlmcHeaderInts * 4> raw{};
    in.read(reinterpret_cast<char*>(raw.data()), raw.size());
    const auto field = [&](int i) { return static_cast<int32_t>(le32(raw.data() + 4 * i)); };
    static constexpr const char* kNames[8] = {"magic", "version", "maxT", "V", "L", "NH", "C", "padded V"};
    if (field(0) != kLlmcMagic)
        refuse(path, fmt::format("llm.c header field 'magic' (int32 0) is {}, not {}", field(0), kLlmcMagic));
    if (field(1) != 3 && field(1) != 5)
        refuse(path, fmt::format("llm.c header field 'version' (int32 1) is {}: only 3 (fp32) and 5 (bf16) are read",
                                 field(1)));
    for (int i = 2; i < 8; ++i)
        if (field(i) <= 0)
            refuse(path, fmt::format("llm.c header field '{}' (int32 {}) is {}, not positive", kNames[i], i, field(i)));
    ModelConfig c;
    c.kind = ModelKind::gpt2;
    c.block = field(2);
    c.vocab = field(3);
    c.n_layer = field(4);
    c.n_head = field(5);
    c.n_embd = field(6);
    const int64_t padded = field(7);
    if (n_head && *n_head != c.n_head)
        refuse(path, fmt::format("llm.c header field 'NH' (int32 5) is {} but n_head {} was asked", c.n_head, *n_head));
    if (padded < c.vocab)
        refuse(path, fmt::format("llm.c header field 'padded V' (int32 7) is {}, less than 'V' {}", padded, c.vocab));
    if (c.n_embd % c.n_head != 0)
        refuse(path,
               fmt::format("llm.c header field 'C' (int32 6) {} is not a multiple of 'NH' {}", c.n_embd, c.n_head));
    const int bytes = field(1) == 3 ? 4 : 2;
    const std::optional<uint64_t> needed = llmc_file_bytes(c, padded, bytes);
    if (needed != file_size)
        refuse(path,
               fmt::format(
                   "the file is {} bytes, but its header (version {}, maxT {}, V {}, L {}, NH {}, C {}, padded V {}) "
                   "needs {} ({})",
                   file_size, field(1), c.block, c.vocab, c.n_layer, c.n_head, c.n_embd, padded,
                   needed ? fmt::to_string(*needed) : std::string("more than 2^64"),
                   !needed || *needed > file_size ? "the file is short" : "the file is longer"));

    const auto read = [&] {
        if (progress) progress(static_cast<uint64_t>(in.tellg()), file_size);
    };
    read();
    ForeignWeights out;
    out.config = c;
    out.weights = places(c, into);  // each tensor read straight into its place
    std::map<std::string, Tensor> tensors(out.weights.begin(), out.weights.end());
    for (const Param& p : llmc_params(c)) {
        Tensor t = tensors.at(p.name);
        if (p.transposed) {  // stored (out, in): ours is (in, out), through one tensor's buffer
            const int64_t ins = p.shape[0], outs = p.shape[1];
            std::vector<float> stored(static_cast<size_t>(ins * outs));
            read_values(in, stored, bytes, path, read);
            auto d = t.data();
            for (int64_t o = 0; o < outs; ++o)
                for (int64_t i = 0; i < ins; ++i)
                    d[static_cast<size_t>(i * outs + o)] = stored[static_cast<size_t>(o * ins + i)];
        } else {
            read_values(in, t.data(), bytes, path, read);
        }
        if (p.name == "wte.weight") in.seekg((padded - c.vocab) * c.n_embd * bytes, std::ios::cur);  // the padding rows
    }
    if (progress) progress(file_size, file_size);
    if (bytes == 2) out.notes.push_back("bf16 (version 5) widened to fp32");
    return out;
}

ForeignWeights read_gpt2_weights(const std::filesystem::path& path, const WeightsPlace& into,
                                 std::optional<int64_t> n_head, const ReadProgress& progress) {
    switch (weights_format(path)) {
        case WeightsFormat::llmc:
            return read_llmc_gpt2(path, into, n_head, progress);
        case WeightsFormat::hugging_face:
            return read_hf_gpt2(path, into, n_head, progress);
        case WeightsFormat::tinygpt:
            break;
    }
    refuse(path, "neither Hugging Face's GPT-2 model.safetensors nor llm.c's model file");
}

void write_hf_gpt2(const std::filesystem::path& directory, const ModelConfig& c, const NamedTensors& weights,
                   const BpeTokenizer* tokenizer) {
    check_config(directory, c);
    if (tokenizer && tokenizer->vocab_size() != c.vocab)
        refuse(directory, fmt::format("the tokenizer has {} tokens but the model's vocab is {}",
                                      tokenizer->vocab_size(), c.vocab));
    const NamedTensors ordered = check_against(directory, c, {weights.begin(), weights.end()}, same_name);
    NamedTensors named;
    for (const auto& [name, t] : ordered) named.emplace_back(std::string(kPrefix) + to_hf_name(name), t);
    NewDirectories made(directory, "write_hf_gpt2");
    // Every file is written in full before any replaces what is there: a failure leaves the folder as it
    // was, never the new weights beside the old config.json (another head count) or tokenizer.
    AtomicFile weights_file(directory / "model.safetensors", "write_hf_gpt2");
    write_safetensors(weights_file, directory / "model.safetensors", named, {{"format", "pt"}});
    nlohmann::ordered_json config = {
        {"architectures", {"GPT2LMHeadModel"}},
        {"model_type", "gpt2"},
        {"vocab_size", c.vocab},
        {"n_positions", c.block},
        {"n_ctx", c.block},
        {"n_embd", c.n_embd},
        {"n_layer", c.n_layer},
        {"n_head", c.n_head},
        {"n_inner", nullptr},
        {"activation_function", c.gelu_exact ? "gelu" : "gelu_new"},
        {"scale_attn_weights", c.scaled},
        {"layer_norm_epsilon", 1e-5},
        {"resid_pdrop", c.dropout},
        {"embd_pdrop", c.dropout},
        {"attn_pdrop", 0.0},
        {"initializer_range", 0.02},
        {"tie_word_embeddings", true},
    };
    if (c.vocab == 50257) config["bos_token_id"] = config["eos_token_id"] = 50256;  // <|endoftext|>
    const std::string config_text = config.dump(2) + "\n";
    AtomicFile config_file(directory / "config.json", "write_hf_gpt2");
    config_file.write(config_text.data(), config_text.size());
    std::optional<AtomicFile> vocabulary_file, merges_file;
    if (tokenizer) {
        vocabulary_file.emplace(directory / "vocab.json", "write_hf_gpt2");
        vocabulary_file->write(tokenizer->vocabulary_text().data(), tokenizer->vocabulary_text().size());
        merges_file.emplace(directory / "merges.txt", "write_hf_gpt2");
        merges_file->write(tokenizer->merges_text().data(), tokenizer->merges_text().size());
    }
    weights_file.commit();
    config_file.commit();
    if (tokenizer) {
        vocabulary_file->commit();
        merges_file->commit();
    } else {
        for (const char* stale : {"vocab.json", "merges.txt"}) {
            std::error_code error;
            std::filesystem::remove(directory / stale, error);
            if (error)
                refuse(directory / stale,
                       fmt::format("cannot remove another model's tokenizer file ({})", error.message()));
        }
    }
    made.keep();
}

void write_llmc_gpt2(const std::filesystem::path& path, const ModelConfig& c, const NamedTensors& weights) {
    check_config(path, c);
    if (!c.scaled)
        refuse(path, "llm.c's model always divides the attention scores by sqrt(head width); this one has no divisor");
    std::map<std::string, Tensor> by_name(weights.begin(), weights.end());
    (void)check_against(path, c, by_name, same_name);
    const int64_t padded = (c.vocab + 127) / 128 * 128;
    std::vector<unsigned char> bytes;
    const int32_t header[8] = {kLlmcMagic,
                               3,
                               static_cast<int32_t>(c.block),
                               static_cast<int32_t>(c.vocab),
                               static_cast<int32_t>(c.n_layer),
                               static_cast<int32_t>(c.n_head),
                               static_cast<int32_t>(c.n_embd),
                               static_cast<int32_t>(padded)};
    for (int i = 0; i < kLlmcHeaderInts; ++i) put_le32(bytes, i < 8 ? static_cast<uint32_t>(header[i]) : 0u);
    AtomicFile file(path, "write_llmc_gpt2");
    file.write(bytes.data(), bytes.size());
    for (const Param& p : llmc_params(c)) {
        const auto d = by_name.at(p.name).data();
        bytes.clear();
        if (p.transposed) {
            const int64_t in = p.shape[0], outs = p.shape[1];
            for (int64_t o = 0; o < outs; ++o)
                for (int64_t i = 0; i < in; ++i)
                    put_le32(bytes, std::bit_cast<uint32_t>(d[static_cast<size_t>(i * outs + o)]));
        } else {
            for (float v : d) put_le32(bytes, std::bit_cast<uint32_t>(v));
        }
        if (p.name == "wte.weight")
            for (int64_t i = 0; i < (padded - c.vocab) * c.n_embd; ++i) put_le32(bytes, 0u);
        file.write(bytes.data(), bytes.size());
    }
    file.commit();
}

}  // namespace nn
