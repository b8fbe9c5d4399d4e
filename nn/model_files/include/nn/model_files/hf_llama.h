// Hugging Face's LlamaForCausalLM folders (what save_pretrained writes and from_pretrained reads), read
// into and written from nn::Llama's names and layouts (nn/llama.h; docs/llama.md, "Hugging Face's Llama
// folders"). Legend: C hidden_size, F intermediate_size, L num_hidden_layers, V vocab_size, H head width
// (C / num_attention_heads), Q num_attention_heads * H, KV num_key_value_heads * H.
//
//   config.json                     hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
//                                   num_key_value_heads, vocab_size, max_position_embeddings, rope_theta,
//                                   rms_norm_eps, tie_word_embeddings (what nn::LlamaOptions holds)
//   model.safetensors, or           the tensors, F32, F16 or BF16 (widened to float32 exactly)
//   model.safetensors.index.json    {"weight_map": {tensor: shard file}}: the shards beside it
//
// In the file a Linear's weight is torch.nn.Linear's (out, in); here it is (in, out) (x @ W), so every
// matrix is transposed on the way in and out. q_proj and k_proj are already in Hugging Face's "halves"
// rotary layout (pairs (i, i + H/2)), nn::Llama's: no permutation (llama2.c's files need one,
// nn/model_files/llama2c.h). The names (the file's, then ours):
//
//   model.embed_tokens.weight                   (V, C)   embed_tokens.weight (V, C), as stored
//   model.layers.N.self_attn.q_proj.weight      (Q, C)   layers.N.self_attn.q_proj.weight (C, Q)
//   model.layers.N.self_attn.{k,v}_proj.weight  (KV, C)  layers.N.self_attn.{k,v}_proj.weight (C, KV)
//   model.layers.N.self_attn.o_proj.weight      (C, Q)   layers.N.self_attn.o_proj.weight (Q, C)
//   model.layers.N.mlp.{gate,up}_proj.weight    (F, C)   layers.N.mlp.{gate,up}_proj.weight (C, F)
//   model.layers.N.mlp.down_proj.weight         (C, F)   layers.N.mlp.down_proj.weight (F, C)
//   model.layers.N.{input,post_attention}_layernorm.weight (C)   the same without "model."
//   model.norm.weight                           (C)      norm.weight
//   lm_head.weight                              (V, C)   lm_head.weight (C, V), only when untied
//
//     nn::HfLlamaModel m = nn::read_hf_llama("SmolLM-135M/");
//     nn::Llama model(m.config);  nn::load_parameters(model, m.tensors);
//     nn::write_hf_llama("out/", m);   // out/config.json + out/model.safetensors (F32)
//
// Refusals are std::runtime_error naming the file and the field or tensor, before anything is allocated
// from the files' numbers beyond their headers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nn/llama.h"
#include "nn/model_files/safetensors.h"  // NamedTensors

namespace nn {

struct HfLlamaModel {
    LlamaOptions config;  // from config.json
    // config.json's token ids, kept to be written back (the tokenizer's business, not the network's)
    std::optional<int64_t> bos_token_id, eos_token_id;
    NamedTensors tensors;            // nn::Llama's names and layouts, in its order (Llama::named_parameters)
    std::vector<std::string> notes;  // what was read from where, or skipped (inv_freq buffers, a tied lm_head)
};

// config.json read and checked on its own: the fields above (num_key_value_heads defaults to
// num_attention_heads, rope_theta to 10000, rms_norm_eps to 1e-6, tie_word_embeddings to false and
// max_position_embeddings to 2048, as transformers' LlamaConfig). Refused by name: model_type other than
// "llama", a missing or non-positive size, rope_scaling (any), attention_bias or mlp_bias true,
// hidden_act other than "silu", head_dim other than hidden_size / num_attention_heads, a
// quantization_config, and any size nn::Llama refuses (n_kv_head not dividing n_head, an odd head width).
HfLlamaModel read_hf_llama_config(const std::filesystem::path& config_json);

// Where the weights go: the tensors to read them into under our names (a new model's parameters, so
// loading takes the weights' size once); names it does not give, or other shapes, get new tensors.
using HfLlamaPlace = std::function<NamedTensors(const LlamaOptions&)>;

// Reads a folder: config.json, then model.safetensors, or without it model.safetensors.index.json and
// its shards (as from_pretrained prefers). Every tensor of the config must be there once with its shape,
// and nothing else but the rotary inv_freq buffers older files hold; a tied model's lm_head.weight, when
// stored, must equal embed_tokens.weight. Shard names must be plain file names in the folder. A NaN or
// an infinity is refused naming the tensor.
HfLlamaModel read_hf_llama(const std::filesystem::path& directory, const HfLlamaPlace& into = {});

// Writes model.config and model.tensors (our names and shapes, as read_hf_llama returns them; a tied
// lm_head.weight is refused) as `directory`/config.json and `directory`/model.safetensors (F32, metadata
// format "pt" as from_pretrained requires). Makes the folder if needed; every file is written in full
// before any is renamed into place, and a model.safetensors.index.json already there (another model's
// shards, which a reader could take instead) is removed. std::invalid_argument for a config or tensors
// that do not fit (nothing written), std::runtime_error for I/O.
void write_hf_llama(const std::filesystem::path& directory, const HfLlamaModel& model);

}  // namespace nn
