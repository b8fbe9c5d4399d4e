// Hugging Face's LlamaForCausalLM folders read into and written from nn::Llama's names and layouts (the
// format: hf_llama.h). Legend: C hidden_size, F intermediate_size, V vocab_size, H head width, Q n_head H,
// KV n_kv_head H.
#include "nn/model_files/hf_llama.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>

#include <autograd/check.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <nn/files/atomic_file.h>
#include <nn/files/file_names.h>
#include <nn/files/json_file.h>

#include "safetensors_format.h"

namespace nn {

using autograd::Shape;
using autograd::shape_str;
using autograd::Tensor;
using detail::path_str;
using detail::quoted_name;

namespace {

constexpr std::string_view kPrefix = "model.";
// config.json is a few kB nesting 3 deep; an index lists a few thousand names
constexpr detail::JsonLimits kConfigLimits{.max_bytes = 1 << 20, .max_depth = 16};
constexpr detail::JsonLimits kIndexLimits{.max_bytes = 64 << 20, .max_depth = 8};
constexpr int64_t kMaxPositions = int64_t{1} << 24;  // max_position_embeddings: Llama 3.1's is 2^17

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& what) {
    throw std::runtime_error(fmt::format("{}: {}", path_str(path), what));
}

// A JSON value as a message quotes it: one short line.
std::string quote(const nlohmann::json& v) {
    if (v.is_string()) return quoted_text(v.get<std::string>(), 40);
    const std::string d = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return d.size() > 40 ? d.substr(0, 40) + "..." : d;
}

// One parameter: our name and shape, and whether the file holds it transposed (torch's (out, in)).
struct Param {
    std::string name;
    Shape shape;  // ours
    bool transposed = false;
    std::string file_name() const { return name == "lm_head.weight" ? name : std::string(kPrefix) + name; }
    Shape file_shape() const { return transposed ? Shape{shape[1], shape[0]} : shape; }
};

// nn::Llama's parameters in its order (Hugging Face's state_dict order).
std::vector<Param> llama_params(const LlamaOptions& c) {
    const int64_t C = c.n_embd, F = c.ffn_hidden, V = c.vocab, H = c.n_embd / c.n_head;
    const int64_t Q = c.n_head * H, KV = c.n_kv_head * H;
    std::vector<Param> out{{"embed_tokens.weight", {V, C}}};
    for (int64_t l = 0; l < c.n_layer; ++l) {
        const auto in_layer = [l](const char* suffix) { return fmt::format("layers.{}.{}", l, suffix); };
        out.push_back({in_layer("self_attn.q_proj.weight"), {C, Q}, true});
        out.push_back({in_layer("self_attn.k_proj.weight"), {C, KV}, true});
        out.push_back({in_layer("self_attn.v_proj.weight"), {C, KV}, true});
        out.push_back({in_layer("self_attn.o_proj.weight"), {Q, C}, true});
        out.push_back({in_layer("mlp.gate_proj.weight"), {C, F}, true});
        out.push_back({in_layer("mlp.up_proj.weight"), {C, F}, true});
        out.push_back({in_layer("mlp.down_proj.weight"), {F, C}, true});
        out.push_back({in_layer("input_layernorm.weight"), {C}});
        out.push_back({in_layer("post_attention_layernorm.weight"), {C}});
    }
    out.push_back({"norm.weight", {C}});
    if (!c.tied_embeddings) out.push_back({"lm_head.weight", {C, V}, true});
    return out;
}

// (rows, cols) row-major -> (cols, rows)
void transpose_into(std::span<const float> from, int64_t rows, int64_t cols, std::span<float> to) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            to[static_cast<size_t>(c * rows + r)] = from[static_cast<size_t>(r * cols + c)];
}

// What config.json's numbers cannot make, naming config.json's fields (the reader's and the writer's check).
std::optional<std::string> config_problem(const LlamaOptions& c) {
    for (const auto& [field, value] : {std::pair{"vocab_size", c.vocab},
                                       {"hidden_size", c.n_embd},
                                       {"num_attention_heads", c.n_head},
                                       {"num_key_value_heads", c.n_kv_head},
                                       {"num_hidden_layers", c.n_layer},
                                       {"intermediate_size", c.ffn_hidden},
                                       {"max_position_embeddings", c.block}})
        if (value <= 0 || value > std::numeric_limits<int32_t>::max())
            return fmt::format("\"{}\" is {}, not a positive int32", field, value);
    if (c.block > kMaxPositions)
        return fmt::format("\"max_position_embeddings\" is {}, over the limit of {}", c.block, kMaxPositions);
    if (c.n_embd % c.n_head != 0)
        return fmt::format("\"hidden_size\" {} is not divisible by \"num_attention_heads\" {}", c.n_embd, c.n_head);
    if (c.n_head % c.n_kv_head != 0)
        return fmt::format("\"num_key_value_heads\" {} does not divide \"num_attention_heads\" {}", c.n_kv_head,
                           c.n_head);
    if ((c.n_embd / c.n_head) % 2 != 0)
        return fmt::format("the head width hidden_size / num_attention_heads = {} / {} = {} is odd: rotary turns pairs",
                           c.n_embd, c.n_head, c.n_embd / c.n_head);
    if (!std::isfinite(c.rope_theta) || c.rope_theta <= 0.0f)
        return fmt::format("\"rope_theta\" {} is not a positive float32", c.rope_theta);
    if (!std::isfinite(c.norm_eps) || c.norm_eps <= 0.0f)
        return fmt::format("\"rms_norm_eps\" {} is not a positive float32", c.norm_eps);
    return std::nullopt;
}

// A float as its shortest decimal (1e-05, not 9.999999747378752e-06): what a person wrote in config.json.
nlohmann::json short_float(float v) { return std::stod(fmt::format("{}", v)); }

// One safetensors file of the folder and the tensors it holds (entry index by the file's name).
struct Shard {
    std::filesystem::path path;
    std::unique_ptr<SafetensorsReader> reader;
};

// Where a tensor of the file is: its shard and its entry there.
struct Located {
    size_t shard = 0, entry = 0;
};

std::unique_ptr<SafetensorsReader> open_shard(const std::filesystem::path& path) {
    SafetensorsLimits limits;
    limits.widen_half = true;
    limits.warn_without_checksums = false;  // Hugging Face's files have none
    return std::make_unique<SafetensorsReader>(path, limits);
}

// A shard's name as the index gives it: a plain file name in the folder, never a path out of it.
bool plain_file_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

}  // namespace

HfLlamaModel read_hf_llama_config(const std::filesystem::path& config_json) {
    const nlohmann::json j = detail::read_json_file(config_json, kConfigLimits);
    if (!j.is_object()) refuse(config_json, fmt::format("is not a JSON object but {}", j.type_name()));
    const auto present = [&](const char* key) { return j.contains(key) && !j[key].is_null(); };
    if (!j.contains("model_type") || j["model_type"] != "llama")
        refuse(config_json, fmt::format("\"model_type\" is {}, not \"llama\": only LlamaForCausalLM's folders are read",
                                        j.contains("model_type") ? quote(j["model_type"]) : "missing"));
    const auto integer = [&](const char* key, std::optional<int64_t> fallback) -> int64_t {
        if (!present(key)) {
            if (!fallback) refuse(config_json, fmt::format("\"{}\" is missing", key));
            return *fallback;
        }
        const nlohmann::json& v = j[key];
        if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{1} << 62))
            refuse(config_json, fmt::format("\"{}\" is {}, not a whole number", key, quote(v)));
        return v.get<int64_t>();
    };
    const auto real = [&](const char* key, double fallback) -> float {
        if (!present(key)) return static_cast<float>(fallback);
        if (!j[key].is_number()) refuse(config_json, fmt::format("\"{}\" is {}, not a number", key, quote(j[key])));
        const double v = j[key].get<double>();
        if (!(v > 0.0) || v > std::numeric_limits<float>::max())
            refuse(config_json, fmt::format("\"{}\" is {}, not a positive float32", key, quote(j[key])));
        return static_cast<float>(v);
    };
    const auto flag = [&](const char* key, bool fallback) -> bool {
        if (!present(key)) return fallback;
        if (!j[key].is_boolean())
            refuse(config_json, fmt::format("\"{}\" is {}, not true or false", key, quote(j[key])));
        return j[key].get<bool>();
    };

    // What nn::Llama is not, refused by name before the sizes: it would load and compute something else.
    if (present("rope_scaling"))
        refuse(config_json, fmt::format("\"rope_scaling\" is {}: scaled rotary positions (linear, dynamic, yarn, "
                                        "llama3) are not supported, only plain rope_theta",
                                        quote(j["rope_scaling"])));
    for (const char* bias : {"attention_bias", "mlp_bias"})
        if (flag(bias, false))
            refuse(config_json, fmt::format("\"{}\" is true: nn::Llama's projections have no biases", bias));
    if (present("hidden_act") && j["hidden_act"] != "silu")
        refuse(config_json,
               fmt::format("\"hidden_act\" is {}: nn::Llama's MLP is SwiGLU, \"silu\"", quote(j["hidden_act"])));
    if (present("quantization_config"))
        refuse(config_json, "\"quantization_config\" is there: quantized weights are not read");

    HfLlamaModel out;
    LlamaOptions& c = out.config;
    c.vocab = integer("vocab_size", std::nullopt);
    c.n_embd = integer("hidden_size", std::nullopt);
    c.ffn_hidden = integer("intermediate_size", std::nullopt);
    c.n_layer = integer("num_hidden_layers", std::nullopt);
    c.n_head = integer("num_attention_heads", std::nullopt);
    c.n_kv_head = integer("num_key_value_heads", c.n_head);  // as LlamaConfig: None means n_head
    c.block = integer("max_position_embeddings", 2048);
    c.rope_theta = real("rope_theta", 10000.0);
    c.norm_eps = real("rms_norm_eps", 1e-6);
    c.tied_embeddings = flag("tie_word_embeddings", false);
    if (const auto problem = config_problem(c)) refuse(config_json, *problem);
    if (present("head_dim") && integer("head_dim", std::nullopt) != c.n_embd / c.n_head)
        refuse(config_json, fmt::format("\"head_dim\" is {}, but nn::Llama's heads are hidden_size / "
                                        "num_attention_heads = {} wide",
                                        quote(j["head_dim"]), c.n_embd / c.n_head));
    if (present("bos_token_id")) out.bos_token_id = integer("bos_token_id", std::nullopt);
    if (present("eos_token_id") && j["eos_token_id"].is_number_integer())  // (a list in some: not kept)
        out.eos_token_id = integer("eos_token_id", std::nullopt);
    return out;
}

HfLlamaModel read_hf_llama(const std::filesystem::path& directory, const HfLlamaPlace& into) {
    HfLlamaModel out = read_hf_llama_config(directory / "config.json");
    const LlamaOptions& c = out.config;
    const auto exists = [](const std::filesystem::path& p) {
        return std::filesystem::exists(std::filesystem::symlink_status(p));
    };

    // The files, as from_pretrained looks for them: one model.safetensors first, else the index's shards
    std::vector<Shard> shards;
    std::map<std::string, std::string> weight_map;  // tensor -> shard file (sharded only)
    const std::filesystem::path single = directory / "model.safetensors";
    const std::filesystem::path index_path = directory / "model.safetensors.index.json";
    if (exists(single)) {
        shards.push_back({single, open_shard(single)});
    } else if (exists(index_path)) {
        const nlohmann::json index = detail::read_json_file(index_path, kIndexLimits);
        if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
            refuse(index_path, "has no \"weight_map\" object (tensor name -> shard file)");
        std::map<std::string, size_t> shard_of_file;
        for (const auto& [name, file] : index["weight_map"].items()) {
            if (!file.is_string())
                refuse(index_path, fmt::format("\"weight_map\" gives tensor {} {}, not a file name", quoted_name(name),
                                               quote(file)));
            const std::string f = file.get<std::string>();
            if (!plain_file_name(f))
                refuse(index_path, fmt::format("\"weight_map\" puts tensor {} in {}, not a file name in the folder",
                                               quoted_name(name), quote(file)));
            weight_map.emplace(name, f);
            if (shard_of_file.emplace(f, shards.size()).second) shards.push_back({directory / f, nullptr});
        }
        if (shards.empty()) refuse(index_path, "\"weight_map\" is empty");
        for (Shard& s : shards) s.reader = open_shard(s.path);
        out.notes.push_back(fmt::format("{} shards from {}", shards.size(), path_str(index_path)));
    } else {
        refuse(directory, "holds neither model.safetensors nor model.safetensors.index.json");
    }

    // Every tensor the files hold, by name: each once, in the shard the index says
    std::map<std::string, Located> located;
    int64_t skipped_buffers = 0;
    for (size_t s = 0; s < shards.size(); ++s) {
        const auto& entries = shards[s].reader->tensors();
        for (size_t e = 0; e < entries.size(); ++e) {
            const std::string& name = entries[e].name;
            if (!weight_map.empty()) {
                const auto it = weight_map.find(name);
                if (it == weight_map.end() || directory / it->second != shards[s].path)
                    refuse(shards[s].path,
                           fmt::format("holds tensor {}, which the index {}", quoted_name(name),
                                       it == weight_map.end() ? "does not list"
                                                              : fmt::format("puts in {}", quote(it->second))));
            }
            if (name.starts_with(kPrefix) && name.ends_with(".self_attn.rotary_emb.inv_freq")) {
                ++skipped_buffers;  // older files' rotary buffer: computed, not learned
                continue;
            }
            if (!located.emplace(name, Located{s, e}).second)
                refuse(shards[s].path, fmt::format("tensor {} is in two shards", quoted_name(name)));
        }
    }
    if (!weight_map.empty())
        for (const auto& [name, file] : weight_map) {
            const auto it = located.find(name);
            const bool buffer = name.ends_with(".rotary_emb.inv_freq");
            if (!buffer && it == located.end())
                refuse(index_path,
                       fmt::format("lists tensor {} in {}, which does not hold it", quoted_name(name), quote(file)));
        }
    if (skipped_buffers > 0) out.notes.push_back(fmt::format("{} rotary inv_freq buffers skipped", skipped_buffers));

    const auto entry = [&](const Located& l) -> const SafetensorsReader::Entry& {
        return shards[l.shard].reader->tensors()[l.entry];
    };
    const std::vector<Param> params = llama_params(c);
    for (const Param& p : params) {
        const auto it = located.find(p.file_name());
        if (it == located.end())
            refuse(shards.size() == 1 ? shards[0].path : index_path,
                   fmt::format("tensor {} {} is missing{}", quoted_name(p.file_name()), shape_str(p.file_shape()),
                               p.name == "lm_head.weight" ? " (config.json's tie_word_embeddings is false)" : ""));
        if (entry(it->second).shape != p.file_shape())
            refuse(shards[it->second.shard].path,
                   fmt::format("tensor {} is {}, but config.json's sizes (hidden_size {}, intermediate_size {}, "
                               "heads {}, key-value heads {}, vocab_size {}) need {}",
                               quoted_name(p.file_name()), shape_str(entry(it->second).shape), c.n_embd, c.ffn_hidden,
                               c.n_head, c.n_kv_head, c.vocab, shape_str(p.file_shape())));
    }
    std::optional<Located> tied_head;  // a tied model's lm_head.weight, stored anyway: checked equal below
    if (c.tied_embeddings)
        if (const auto it = located.find("lm_head.weight"); it != located.end()) {
            tied_head = it->second;
            if (entry(it->second).shape != Shape{c.vocab, c.n_embd})
                refuse(shards[it->second.shard].path,
                       fmt::format("tensor 'lm_head.weight' is {}, not embed_tokens' {}",
                                   shape_str(entry(it->second).shape), shape_str(Shape{c.vocab, c.n_embd})));
        }
    if (located.size() != params.size() + (tied_head ? 1 : 0)) {
        std::set<std::string> expected;
        for (const Param& p : params) expected.insert(p.file_name());
        for (const auto& [name, l] : located)
            if (!expected.contains(name) && !(tied_head && name == "lm_head.weight"))
                refuse(shards[l.shard].path,
                       fmt::format("tensor {} {} is not a parameter of LlamaForCausalLM of {} layers{}",
                                   quoted_name(name), shape_str(entry(l).shape), c.n_layer,
                                   name.find("bias") != std::string::npos ? " (nn::Llama has no biases)" : ""));
    }

    // Only now, with every shape checked against config.json, is anything allocated
    std::map<std::string, Tensor> given;
    if (into)
        for (auto& [name, t] : into(c)) given.emplace(name, t);
    std::vector<float> buffer;  // one matrix as stored, (out, in)
    for (const Param& p : params) {
        const auto g = given.find(p.name);
        Tensor t = g != given.end() && g->second.shape() == p.shape ? g->second : autograd::zeros(p.shape);
        const Located l = located.at(p.file_name());
        if (p.transposed) {
            buffer.resize(static_cast<size_t>(t.numel()));
            shards[l.shard].reader->read(l.entry, buffer);
            transpose_into(buffer, p.shape[1], p.shape[0], t.data());
        } else {
            shards[l.shard].reader->read(l.entry, t.data());  // straight into place
        }
        // (the index a message gives is in our layout, (in, out))
        check_finite({{p.file_name(), t}}, path_str(shards[l.shard].path));
        out.tensors.emplace_back(p.name, t);
    }
    if (tied_head) {
        buffer.resize(static_cast<size_t>(c.vocab * c.n_embd));
        shards[tied_head->shard].reader->read(tied_head->entry, buffer);
        const auto table = out.tensors.front().second.data();  // embed_tokens.weight (V, C)
        if (!std::equal(buffer.begin(), buffer.end(), table.begin()))
            refuse(shards[tied_head->shard].path,
                   "config.json ties the embeddings, but lm_head.weight is not model.embed_tokens.weight");
        out.notes.push_back("lm_head.weight equals embed_tokens.weight (tied): not kept");
    }
    for (Shard& s : shards) s.reader->finish();
    if (c.tied_embeddings && !tied_head) out.notes.push_back("tied: the logits are x @ embed_tokens.weight^T");
    return out;
}

void write_hf_llama(const std::filesystem::path& directory, const HfLlamaModel& model) {
    const LlamaOptions& c = model.config;
    if (const auto problem = config_problem(c))
        throw std::invalid_argument(fmt::format("{}: {}", path_str(directory), *problem));
    const std::vector<Param> params = llama_params(c);
    std::map<std::string, Tensor> given;
    for (const auto& [name, t] : model.tensors) {
        autograd::check(t.defined() && t.has_values(), "{}: tensor '{}' has no values", path_str(directory), name);
        autograd::check(given.emplace(name, t).second, "{}: tensor '{}' is given twice", path_str(directory), name);
    }
    NamedTensors stored;  // the file's names and layouts
    for (const Param& p : params) {
        const auto it = given.find(p.name);
        autograd::check(it != given.end(), "{}: tensor '{}' {} is missing", path_str(directory), p.name,
                        shape_str(p.shape));
        autograd::check(it->second.shape() == p.shape,
                        "{}: tensor '{}' is {}, but hidden_size {} intermediate_size {} heads {} key-value heads {} "
                        "vocab_size {} needs {}",
                        path_str(directory), p.name, shape_str(it->second.shape()), c.n_embd, c.ffn_hidden, c.n_head,
                        c.n_kv_head, c.vocab, shape_str(p.shape));
        Tensor t = it->second;
        if (p.transposed) {
            t = autograd::zeros(p.file_shape());
            transpose_into(it->second.data(), p.shape[0], p.shape[1], t.data());
        }
        stored.emplace_back(p.file_name(), t);
        given.erase(it);
    }
    if (!given.empty())
        throw std::invalid_argument(
            fmt::format("{}: tensor '{}' {} is not a parameter of this Llama{}", path_str(directory),
                        given.begin()->first, shape_str(given.begin()->second.shape()),
                        given.begin()->first == "lm_head.weight" ? " (its embeddings are tied)" : ""));

    nlohmann::ordered_json config = {
        {"architectures", {"LlamaForCausalLM"}},
        {"model_type", "llama"},
        {"vocab_size", c.vocab},
        {"hidden_size", c.n_embd},
        {"intermediate_size", c.ffn_hidden},
        {"num_hidden_layers", c.n_layer},
        {"num_attention_heads", c.n_head},
        {"num_key_value_heads", c.n_kv_head},
        {"head_dim", c.n_embd / c.n_head},
        {"max_position_embeddings", c.block},
        {"rope_theta", short_float(c.rope_theta)},
        {"rope_scaling", nullptr},
        {"rms_norm_eps", short_float(c.norm_eps)},
        {"tie_word_embeddings", c.tied_embeddings},
        {"hidden_act", "silu"},
        {"attention_bias", false},
        {"mlp_bias", false},
        {"attention_dropout", 0.0},
        {"pretraining_tp", 1},
        {"initializer_range", 0.02},
        {"use_cache", true},
        {"torch_dtype", "float32"},
    };
    if (model.bos_token_id) config["bos_token_id"] = *model.bos_token_id;
    if (model.eos_token_id) config["eos_token_id"] = *model.eos_token_id;
    const std::string config_text = config.dump(2) + "\n";

    NewDirectories made(directory, "write_hf_llama");
    // Both files in full before either replaces what is there: never new weights beside an old config.json
    AtomicFile weights_file(directory / "model.safetensors", "write_hf_llama");
    write_safetensors(weights_file, directory / "model.safetensors", stored, {{"format", "pt"}});
    AtomicFile config_file(directory / "config.json", "write_hf_llama");
    config_file.write(config_text.data(), config_text.size());
    weights_file.commit();
    config_file.commit();
    std::error_code error;  // another model's index would name other weights
    std::filesystem::remove(directory / "model.safetensors.index.json", error);
    if (error)
        refuse(directory / "model.safetensors.index.json",
               fmt::format("cannot remove another model's index ({})", error.message()));
    made.keep();
}

}  // namespace nn
