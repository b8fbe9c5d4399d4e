// llama2.c's legacy and version 1 model files, read into and written from the Llama module's names and
// layouts (the formats: llama2c.h and docs/llama.md). Legend: C dim, F hidden_dim, L n_layers, V vocab,
// T seq_len, H head width, KV n_kv_heads * H.
#include "nn/model_files/llama2c.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>

#include <autograd/check.h>
#include <autograd/ops.h>
#include <fmt/format.h>
#include <nn/files/atomic_file.h>
#include <nn/files/file_names.h>

#include "safetensors_format.h"

namespace nn {

using autograd::check;
using autograd::Shape;
using autograd::shape_str;
using autograd::Tensor;
using detail::path_str;

namespace {

constexpr uint32_t kMagic = 0x616b3432;  // "ak42", as export.py packs it ('I', little-endian)
constexpr uint64_t kLegacyHeaderBytes = 7 * 4;
constexpr uint64_t kV1HeaderBytes = 256;
constexpr std::array<const char*, 7> kFields = {"dim",        "hidden_dim", "n_layers", "n_heads",
                                                "n_kv_heads", "vocab_size", "seq_len"};

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& what) {
    throw std::runtime_error(fmt::format("{}: {}", path_str(path), what));
}

// What is wrong with a config, naming the header field, or nothing: the reader and the writer say the same.
std::optional<std::string> config_problem(const Llama2cConfig& c) {
    const std::array<int64_t, 7> values = {c.dim,        c.hidden_dim, c.n_layers, c.n_heads,
                                           c.n_kv_heads, c.vocab_size, c.seq_len};
    for (size_t i = 0; i < values.size(); ++i)
        if (values[i] <= 0 || values[i] > std::numeric_limits<int32_t>::max())
            return fmt::format("header field '{}' is {}, not a positive int32", kFields[i], values[i]);
    if (c.dim % c.n_heads != 0)
        return fmt::format("header field 'dim' {} is not divisible by 'n_heads' {}", c.dim, c.n_heads);
    if (c.n_heads % c.n_kv_heads != 0)
        return fmt::format("header field 'n_kv_heads' {} does not divide 'n_heads' {}", c.n_kv_heads, c.n_heads);
    if (c.head_size() % 2 != 0)
        return fmt::format(
            "the head size 'dim' / 'n_heads' = {} / {} = {} is odd: rotary positions turn pairs of units", c.dim,
            c.n_heads, c.head_size());
    if (c.seq_len > kLlama2cMaxSeqLen)
        return fmt::format("header field 'seq_len' is {}, over the limit of {}", c.seq_len, kLlama2cMaxSeqLen);
    return std::nullopt;
}

// The arrays of a file, each kind for all layers in turn.
enum class Kind { embed, attn_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3, final_norm, rope_tables, classifier };

// One array of the file: the tensor it becomes (its name and shape here), whether the file holds it
// transposed ((out, in) against our (in, out)), and for q and k the width of the heads whose rotary
// pairs are permuted. An empty name is the rotary tables, which no tensor holds.
struct Stored {
    std::string name;
    Shape shape;  // ours
    bool transposed = false;
    int64_t rotary_head = 0;  // H for q and k, else 0
    uint64_t values() const {
        uint64_t n = 1;
        for (int64_t d : shape) n *= static_cast<uint64_t>(d);
        return n;
    }
};

Stored stored(Kind kind, int64_t layer, const Llama2cConfig& c) {
    const int64_t C = c.dim, F = c.hidden_dim, V = c.vocab_size, KV = c.kv_dim(), H = c.head_size();
    const auto in_layer = [&](const char* suffix) { return fmt::format("layers.{}.{}", layer, suffix); };
    switch (kind) {
        case Kind::embed:
            return {"embed_tokens.weight", {V, C}};
        case Kind::attn_norm:
            return {in_layer("input_layernorm.weight"), {C}};
        case Kind::wq:
            return {in_layer("self_attn.q_proj.weight"), {C, C}, true, H};
        case Kind::wk:
            return {in_layer("self_attn.k_proj.weight"), {C, KV}, true, H};
        case Kind::wv:
            return {in_layer("self_attn.v_proj.weight"), {C, KV}, true};
        case Kind::wo:
            return {in_layer("self_attn.o_proj.weight"), {C, C}, true};
        case Kind::ffn_norm:
            return {in_layer("post_attention_layernorm.weight"), {C}};
        case Kind::w1:
            return {in_layer("mlp.gate_proj.weight"), {C, F}, true};
        case Kind::w2:
            return {in_layer("mlp.down_proj.weight"), {F, C}, true};
        case Kind::w3:
            return {in_layer("mlp.up_proj.weight"), {C, F}, true};
        case Kind::final_norm:
            return {"norm.weight", {C}};
        case Kind::rope_tables:
            return {"", {2, c.seq_len, H / 2}};
        case Kind::classifier:
            return {"lm_head.weight", {C, V}, true};
    }
    throw std::logic_error("llama2c: unknown kind");
}

bool per_layer(Kind k) {
    return k != Kind::embed && k != Kind::final_norm && k != Kind::rope_tables && k != Kind::classifier;
}

// The kinds of arrays a file holds, in its order (run.c's memory_map_weights for legacy, export.py's
// version1_export for version 1).
std::vector<Kind> file_kinds(const Llama2cConfig& c, Llama2cVersion version) {
    using enum Kind;
    std::vector<Kind> kinds =
        version == Llama2cVersion::legacy
            ? std::vector<Kind>{embed, attn_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3, final_norm, rope_tables}
            : std::vector<Kind>{attn_norm, ffn_norm, final_norm, embed, wq, wk, wv, wo, w1, w2, w3};
    if (!c.shared_classifier) kinds.push_back(classifier);
    return kinds;
}

// The file's arrays in its order, each kind for every layer in turn: only for a config whose size has
// been checked against the file (or the tensors given), since it lists n_layers entries a kind.
std::vector<Stored> file_order(const Llama2cConfig& c, Llama2cVersion version) {
    std::vector<Stored> out;
    for (Kind k : file_kinds(c, version))
        for (int64_t l = 0; l < (per_layer(k) ? c.n_layers : 1); ++l) out.push_back(stored(k, l, c));
    return out;
}

// The module's order: by layer, as Hugging Face's state_dict lists a Llama's (and nn::Llama registers them).
std::vector<Stored> module_order(const Llama2cConfig& c) {
    using enum Kind;
    std::vector<Stored> out{stored(embed, 0, c)};
    for (int64_t l = 0; l < c.n_layers; ++l)
        for (Kind k : {wq, wk, wv, wo, w1, w3, w2, attn_norm, ffn_norm}) out.push_back(stored(k, l, c));
    out.push_back(stored(final_norm, 0, c));
    if (!c.shared_classifier) out.push_back(stored(classifier, 0, c));
    return out;
}

// The bytes a file of this config holds, or nothing past 64 bits: the header's numbers are the file's,
// not to be trusted, so every product is checked.
std::optional<uint64_t> file_bytes(const Llama2cConfig& c, Llama2cVersion version) {
    uint64_t values = 0;
    for (Kind k : file_kinds(c, version)) {
        uint64_t n =
            per_layer(k) ? static_cast<uint64_t>(c.n_layers) : 1;  // (no list of layers: n_layers is the file's)
        for (int64_t d : stored(k, 0, c).shape)
            if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
        if (__builtin_add_overflow(values, n, &values)) return std::nullopt;
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(values, uint64_t{4}, &bytes) ||
        __builtin_add_overflow(bytes, version == Llama2cVersion::legacy ? kLegacyHeaderBytes : kV1HeaderBytes, &bytes))
        return std::nullopt;
    return bytes;
}

// A file's array (values as stored, (out, in) for a matrix) into our layout: transposed, and for q and
// k each head's units reordered from the interleaved pairs to the halves (autograd::rotary_permute, Hugging
// Face's `permute`).
void from_stored(const Stored& s, std::span<const float> file, std::span<float> ours) {
    if (!s.transposed) {
        std::copy(file.begin(), file.end(), ours.begin());
        return;
    }
    const int64_t ins = s.shape[0], outs = s.shape[1];
    const auto transpose = [&](std::span<float> to) {
        for (int64_t o = 0; o < outs; ++o)
            for (int64_t i = 0; i < ins; ++i)
                to[static_cast<size_t>(i * outs + o)] = file[static_cast<size_t>(o * ins + i)];
    };
    if (!s.rotary_head) return transpose(ours);
    Tensor interleaved = autograd::zeros(s.shape);  // (C, n_head H)
    transpose(interleaved.data());
    const Tensor halves = autograd::rotary_permute(interleaved, outs / s.rotary_head,
                                                   autograd::RotaryLayout::interleaved, autograd::RotaryLayout::halves);
    std::ranges::copy(halves.data(), ours.begin());
}

// The inverse: our tensor's values as the file stores them.
void to_stored(const Stored& s, const Tensor& ours, std::span<float> file) {
    if (!s.transposed) {
        std::ranges::copy(ours.data(), file.begin());
        return;
    }
    const int64_t ins = s.shape[0], outs = s.shape[1];
    autograd::NoGradGuard values_only;  // (a model's parameters: no graph for a copy)
    const Tensor w = s.rotary_head
                         ? autograd::rotary_permute(ours, outs / s.rotary_head, autograd::RotaryLayout::halves,
                                                    autograd::RotaryLayout::interleaved)
                         : ours;
    const auto values = w.data();
    for (int64_t o = 0; o < outs; ++o)
        for (int64_t i = 0; i < ins; ++i)
            file[static_cast<size_t>(o * ins + i)] = values[static_cast<size_t>(i * outs + o)];
}

struct FileCloser {
    int fd = -1;
    ~FileCloser() {
        if (fd >= 0) ::close(fd);
    }
};

int32_t le_i32(const unsigned char* b) {
    return static_cast<int32_t>(uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24);
}
void put_le32(std::vector<unsigned char>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

// Reads exactly out.size_bytes() at `offset`, or refuses naming where the file ended.
void read_at(const std::filesystem::path& path, int fd, std::span<float> out, uint64_t offset) {
    auto* p = reinterpret_cast<char*>(out.data());
    size_t size = out.size_bytes();
    while (size > 0) {
        const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) refuse(path, fmt::format("read failed at byte {} ({})", offset, std::strerror(errno)));
        if (n == 0)
            refuse(path, fmt::format("the file ends at byte {} while reading (truncated while being read?)", offset));
        p += n;
        size -= static_cast<size_t>(n);
        offset += static_cast<uint64_t>(n);
    }
    detail::to_or_from_little_endian(out);
}

}  // namespace

std::vector<float> llama2c_rope_tables(int64_t seq_len, int64_t head_size, double theta) {
    check(seq_len > 0 && seq_len <= kLlama2cMaxSeqLen && head_size > 0 && head_size % 2 == 0,
          "llama2c_rope_tables: seq_len {} must be in [1, {}] and head_size {} positive and even", seq_len,
          kLlama2cMaxSeqLen, head_size);
    const int64_t half = head_size / 2;
    std::vector<float> freqs(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i)  // in float32 throughout, as model.py's torch computes it
        freqs[static_cast<size_t>(i)] =
            1.0f / std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / static_cast<float>(head_size));
    std::vector<float> out(static_cast<size_t>(2 * seq_len * half));  // (2, T, H/2): cos, then sin
    for (int64_t t = 0; t < seq_len; ++t)
        for (int64_t i = 0; i < half; ++i) {
            const float angle = static_cast<float>(t) * freqs[static_cast<size_t>(i)];
            out[static_cast<size_t>(t * half + i)] = std::cos(angle);
            out[static_cast<size_t>((seq_len + t) * half + i)] = std::sin(angle);
        }
    return out;
}

LlamaOptions llama_options(const Llama2cConfig& c) {
    return {.vocab = c.vocab_size,
            .n_embd = c.dim,
            .n_head = c.n_heads,
            .n_kv_head = c.n_kv_heads,
            .n_layer = c.n_layers,
            .ffn_hidden = c.hidden_dim,
            .block = c.seq_len,
            .rope_theta = 10000.0f,
            .norm_eps = 1e-5f,
            .tied_embeddings = c.shared_classifier};
}

Llama2cConfig llama2c_config(const LlamaOptions& o) {
    // run.c's constants: another theta or eps would load and compute other logits
    check(o.rope_theta == 10000.0f, "llama2c_config: rope_theta is {}, but run.c turns by 10000", o.rope_theta);
    check(o.norm_eps == 1e-5f, "llama2c_config: norm_eps is {}, but run.c's RMSNorm has 1e-5", o.norm_eps);
    Llama2cConfig c{.dim = o.n_embd,
                    .hidden_dim = o.ffn_hidden,
                    .n_layers = o.n_layer,
                    .n_heads = o.n_head,
                    .n_kv_heads = o.n_kv_head,
                    .vocab_size = o.vocab,
                    .seq_len = o.block,
                    .shared_classifier = o.tied_embeddings};
    if (const auto problem = config_problem(c)) throw std::invalid_argument("llama2c_config: " + *problem);
    return c;
}

bool is_llama2c_file(const std::filesystem::path& path) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) return false;
    const uint64_t size = std::filesystem::file_size(path, error);
    if (error || size < kLegacyHeaderBytes) return false;
    std::ifstream in(path, std::ios::binary);
    std::array<unsigned char, kLegacyHeaderBytes> header{};
    if (!in.read(reinterpret_cast<char*>(header.data()), header.size())) return false;
    if (static_cast<uint32_t>(le_i32(header.data())) == kMagic) return true;  // version 1's (read_llama2c checks it)
    Llama2cConfig c;  // legacy: no magic, so the 7 fields must make a model read_llama2c accepts
    c.dim = le_i32(&header[0]), c.hidden_dim = le_i32(&header[4]), c.n_layers = le_i32(&header[8]);
    c.n_heads = le_i32(&header[12]), c.n_kv_heads = le_i32(&header[16]), c.vocab_size = le_i32(&header[20]);
    c.seq_len = le_i32(&header[24]);
    c.shared_classifier = c.vocab_size > 0;
    c.vocab_size = c.vocab_size < 0 ? -c.vocab_size : c.vocab_size;
    // (not the size: a file cut short is still llama2.c's, and read_llama2c says what the header needs)
    return !config_problem(c) && file_bytes(c, Llama2cVersion::legacy).has_value();
}

Llama2cModel read_llama2c(const std::filesystem::path& path, const Llama2cPlace& into) {
    // (O_NONBLOCK: a named pipe is refused below instead of waiting for a writer)
    FileCloser file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    if (file.fd < 0) refuse(path, fmt::format("cannot open ({})", std::strerror(errno)));
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) refuse(path, fmt::format("cannot stat ({})", std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) refuse(path, fmt::format("is {}, not a llama2.c model file", file_kind(st.st_mode)));
    const auto file_size = static_cast<uint64_t>(st.st_size);
    if (file_size < kLegacyHeaderBytes)
        refuse(path, fmt::format("the file is {} bytes, shorter than llama2.c's header of 7 int32", file_size));

    std::array<unsigned char, kV1HeaderBytes> header{};
    const size_t header_read = static_cast<size_t>(std::min<uint64_t>(file_size, kV1HeaderBytes));
    for (size_t done = 0; done < header_read;) {
        const ssize_t n = ::pread(file.fd, header.data() + done, header_read - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            refuse(path, fmt::format("cannot read the header ({})", n < 0 ? std::strerror(errno) : "the file ended"));
        done += static_cast<size_t>(n);
    }

    Llama2cModel model;
    Llama2cConfig& c = model.config;
    const bool v1 = static_cast<uint32_t>(le_i32(header.data())) == kMagic;
    c.version = v1 ? Llama2cVersion::v1 : Llama2cVersion::legacy;
    const unsigned char* fields = header.data();
    if (v1) {
        if (file_size < kV1HeaderBytes)
            refuse(path, fmt::format("the file is {} bytes, shorter than version 1's header of 256 bytes", file_size));
        const int32_t version = le_i32(header.data() + 4);
        if (version != 1)
            refuse(path,
                   fmt::format("header field 'version' is {}: only the legacy format and version 1 (fp32) are read{}",
                               version, version == 2 ? " (version 2 is runq.c's int8)" : ""));
        fields = header.data() + 8;
        const unsigned char shared = header[36];
        if (shared > 1) refuse(path, fmt::format("header field 'shared_classifier' is {}, not 0 or 1", shared));
        c.shared_classifier = shared == 1;
        for (size_t i = 37; i < kV1HeaderBytes; ++i)
            if (header[i] != 0)
                refuse(path,
                       fmt::format("header byte {} is {}, but version 1 pads its header with zeros", i, header[i]));
    }
    std::array<int64_t, 7> value{};
    for (size_t i = 0; i < value.size(); ++i) value[i] = le_i32(fields + 4 * i);
    c.dim = value[0], c.hidden_dim = value[1], c.n_layers = value[2], c.n_heads = value[3], c.n_kv_heads = value[4];
    c.vocab_size = value[5], c.seq_len = value[6];
    if (v1 && c.vocab_size < 0)
        refuse(path,
               fmt::format("header field 'vocab_size' is {}: version 1 stores it positive (shared_classifier says "
                           "whether the classifier is tied)",
                           c.vocab_size));
    if (!v1) {
        c.shared_classifier = c.vocab_size > 0;  // legacy: a negative vocab_size means an untied classifier follows
        c.vocab_size = c.vocab_size < 0 ? -c.vocab_size : c.vocab_size;
    }
    if (const auto problem = config_problem(c)) refuse(path, *problem);

    const std::optional<uint64_t> needed = file_bytes(c, c.version);
    if (needed != file_size)
        refuse(path,
               fmt::format("the file is {} bytes, but its header ({}, dim {}, hidden_dim {}, n_layers {}, n_heads {}, "
                           "n_kv_heads {}, vocab_size {}, seq_len {}, {} classifier) needs {} ({})",
                           file_size, v1 ? "version 1" : "legacy", c.dim, c.hidden_dim, c.n_layers, c.n_heads,
                           c.n_kv_heads, c.vocab_size, c.seq_len, c.shared_classifier ? "shared" : "untied",
                           needed ? fmt::to_string(*needed) : std::string("more than 2^64"),
                           !needed || *needed > file_size ? "the file is short" : "the file is longer"));

    // Only now, with every number bounded by the file's size, is anything allocated.
    std::map<std::string, Tensor> given;
    if (into)
        for (auto& [name, t] : into(c)) given.emplace(name, t);
    std::map<std::string, Tensor> tensors;
    for (const Stored& s : module_order(c)) {
        const auto it = given.find(s.name);
        tensors.emplace(s.name,
                        it != given.end() && it->second.shape() == s.shape ? it->second : autograd::zeros(s.shape));
    }
    uint64_t offset = v1 ? kV1HeaderBytes : kLegacyHeaderBytes;
    std::vector<float> buffer;  // one transposed matrix as stored
    for (const Stored& s : file_order(c, c.version)) {
        const uint64_t n = s.values();
        if (s.name.empty()) {
            model.legacy_rope_tables.resize(static_cast<size_t>(n));
            read_at(path, file.fd, model.legacy_rope_tables, offset);
        } else if (s.transposed) {
            buffer.resize(static_cast<size_t>(n));
            read_at(path, file.fd, buffer, offset);
            from_stored(s, buffer, tensors.at(s.name).data());
        } else {
            read_at(path, file.fd, tensors.at(s.name).data(), offset);  // straight into place
        }
        offset += 4 * n;
    }
    for (const Stored& s : module_order(c)) model.tensors.emplace_back(s.name, tensors.at(s.name));
    return model;
}

void write_llama2c(const std::filesystem::path& path, const Llama2cModel& model, Llama2cVersion version) {
    const Llama2cConfig& c = model.config;
    if (const auto problem = config_problem(c))
        throw std::invalid_argument(fmt::format("{}: {}", path_str(path), *problem));
    // (before listing the config's tensors: n_layers could be anything)
    check(c.n_layers <= static_cast<int64_t>(model.tensors.size()),
          "{}: n_layers {} needs {} tensors, but {} are given", path_str(path), c.n_layers,
          9 * c.n_layers + 2 + (c.shared_classifier ? 0 : 1), model.tensors.size());
    std::map<std::string, Tensor> given;
    for (const auto& [name, t] : model.tensors) {
        check(t.defined() && t.has_values(), "{}: tensor '{}' has no values", path_str(path), name);
        check(given.emplace(name, t).second, "{}: tensor '{}' is given twice", path_str(path), name);
    }
    if (c.shared_classifier) {  // a tied lm_head may be listed (a module that registers it): it must be the table
        if (const auto it = given.find("lm_head.weight"); it != given.end()) {
            const auto embed = given.find("embed_tokens.weight");
            const bool tied =
                embed != given.end() && embed->second.shape() == Shape{c.vocab_size, c.dim} &&
                it->second.shape() == Shape{c.dim, c.vocab_size} && [&] {
                    const auto e = embed->second.data(), h = it->second.data();
                    for (int64_t v = 0; v < c.vocab_size; ++v)
                        for (int64_t k = 0; k < c.dim; ++k)
                            if (e[static_cast<size_t>(v * c.dim + k)] != h[static_cast<size_t>(k * c.vocab_size + v)])
                                return false;
                    return true;
                }();
            check(tied, "{}: shared_classifier is set but lm_head.weight is not embed_tokens.weight transposed",
                  path_str(path));
            given.erase(it);
        }
    }
    for (const Stored& s : module_order(c)) {
        const auto it = given.find(s.name);
        check(it != given.end(), "{}: tensor '{}' {} is missing", path_str(path), s.name, shape_str(s.shape));
        check(it->second.shape() == s.shape,
              "{}: tensor '{}' is {}, but dim {} hidden_dim {} n_heads {} n_kv_heads {} vocab_size {} needs {}",
              path_str(path), s.name, shape_str(it->second.shape()), c.dim, c.hidden_dim, c.n_heads, c.n_kv_heads,
              c.vocab_size, shape_str(s.shape));
    }
    if (given.size() != module_order(c).size()) {
        std::set<std::string> expected;
        for (const Stored& s : module_order(c)) expected.insert(s.name);
        for (const auto& [name, t] : given)
            check(expected.contains(name), "{}: tensor '{}' {} is not a llama2.c parameter{}", path_str(path), name,
                  shape_str(t.shape()), name == "lm_head.weight" ? " (shared_classifier is set)" : "");
    }

    std::vector<unsigned char> header;
    if (version == Llama2cVersion::v1) {
        put_le32(header, kMagic);
        put_le32(header, 1);
    }
    const int64_t signed_vocab =
        version == Llama2cVersion::legacy && !c.shared_classifier ? -c.vocab_size : c.vocab_size;
    for (int64_t v : {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, signed_vocab, c.seq_len})
        put_le32(header, static_cast<uint32_t>(static_cast<int32_t>(v)));
    if (version == Llama2cVersion::v1) {
        header.push_back(c.shared_classifier ? 1 : 0);
        header.resize(kV1HeaderBytes, 0);
    }

    const std::vector<float> computed_tables =
        version == Llama2cVersion::legacy &&
                model.legacy_rope_tables.size() != static_cast<size_t>(c.seq_len * c.head_size())
            ? llama2c_rope_tables(c.seq_len, c.head_size())
            : std::vector<float>{};
    AtomicFile file(path, "write_llama2c");
    file.write(header.data(), header.size());
    std::vector<float> values;
    for (const Stored& s : file_order(c, version)) {
        if (s.name.empty()) {
            values = computed_tables.empty() ? model.legacy_rope_tables : computed_tables;
        } else {
            values.resize(static_cast<size_t>(s.values()));
            to_stored(s, given.at(s.name), values);
        }
        detail::to_or_from_little_endian(values);
        file.write(values.data(), values.size() * sizeof(float));
    }
    file.commit();
}

}  // namespace nn
