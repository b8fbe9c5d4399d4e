// llama2.c's model files (karpathy/llama2.c: run.c reads them, export.py writes them), read into and
// written from the Llama module's parameter names and layouts. Legend: C dim, F hidden_dim (the SwiGLU
// width), L n_layers, V vocab_size, T seq_len, H head width (dim / n_heads), KV n_kv_heads * H.
//
//   legacy (export.py's legacy_export, "version 0"), what run.c reads:
//     7 int32: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; vocab_size < 0 means
//     an untied classifier is stored at the end. Then fp32, each kind for all layers in turn:
//     token table (V, C), attention norms (L, C), wq (L, C_out, C_in), wk (L, KV, C), wv (L, KV, C),
//     wo (L, C, C), ffn norms (L, C), w1 (L, F, C), w2 (L, C, F), w3 (L, F, C), final norm (C),
//     freq_cis_real (T, H/2), freq_cis_imag (T, H/2) (rotary tables run.c skips), [classifier (V, C)].
//   version 1 (version1_export): uint32 magic 0x616b3432 ("ak42"), int32 version 1, the same 7 int32
//     (vocab_size positive), uint8 shared_classifier, zeros to byte 256. Then fp32: attention norms,
//     ffn norms, final norm, token table, wq, wk, wv, wo, w1, w2, w3, [classifier]; no rotary tables.
//
// Everything is little-endian fp32, matrices as PyTorch's nn.Linear stores them, (out, in). Here a
// Linear is x @ W with W (in, out), so every matrix is transposed on the way in and out, and llama2.c's
// q and k, made for the interleaved rotary layout (pairs (2i, 2i+1) of a head), have their output units
// permuted per head into Hugging Face's "halves" layout (pairs (i, i + H/2)), which the Llama module
// uses (autograd::rotary_permute, interleaved -> halves). The names (the module's):
//
//   embed_tokens.weight                        (V, C)   llama2.c's token table, as stored
//   layers.N.input_layernorm.weight            (C)      rms_att_weight
//   layers.N.self_attn.q_proj.weight           (C, C)   wq^T, permuted to halves
//   layers.N.self_attn.k_proj.weight           (C, KV)  wk^T, permuted to halves
//   layers.N.self_attn.v_proj.weight           (C, KV)  wv^T
//   layers.N.self_attn.o_proj.weight           (C, C)   wo^T
//   layers.N.post_attention_layernorm.weight   (C)      rms_ffn_weight
//   layers.N.mlp.gate_proj.weight              (C, F)   w1^T
//   layers.N.mlp.up_proj.weight                (C, F)   w3^T
//   layers.N.mlp.down_proj.weight              (F, C)   w2^T
//   norm.weight                                (C)      rms_final_weight
//   lm_head.weight                             (C, V)   wcls^T, only when untied: a Linear like every
//                                                       other model's lm_head (logits = x @ lm_head)
//
//     nn::Llama2cModel m = nn::read_llama2c("stories260K.bin");
//     nn::write_llama2c("out.bin", m, nn::Llama2cVersion::v1);
//
// Every header field is checked before anything is allocated, and the file's size must be exactly what
// the header implies (computed without overflow); refusals are std::runtime_error naming the file and
// the field. Writing goes through a temporary file renamed over the target (nn/files/atomic_file.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <autograd/tensor.h>

#include "nn/llama.h"
#include "nn/model_files/safetensors.h"  // NamedTensors

namespace nn {

enum class Llama2cVersion { legacy = 0, v1 = 1 };

struct Llama2cConfig {
    int64_t dim = 0;         // C
    int64_t hidden_dim = 0;  // F
    int64_t n_layers = 0;
    int64_t n_heads = 0;
    int64_t n_kv_heads = 0;
    int64_t vocab_size = 0;                           // V, positive (a legacy file's sign is shared_classifier)
    int64_t seq_len = 0;                              // T, the longest context
    bool shared_classifier = true;                    // the logits are x @ embed_tokens^T (no lm_head.weight)
    Llama2cVersion version = Llama2cVersion::legacy;  // what the file was (read_llama2c)

    int64_t head_size() const { return dim / n_heads; }          // H
    int64_t kv_dim() const { return n_kv_heads * head_size(); }  // KV
};

// The limits a header's fields must keep (beyond the file's size matching them).
inline constexpr int64_t kLlama2cMaxSeqLen = int64_t{1} << 20;

struct Llama2cModel {
    Llama2cConfig config;
    NamedTensors
        tensors;  // the names and layouts above, in Hugging Face's order (embed_tokens, by layer, norm, lm_head)
    // A legacy file's freq_cis_real then freq_cis_imag (2 * T * H/2 values), which nothing reads but which
    // write_llama2c writes back as they were; empty after a v1 file, and then computed as export.py does.
    std::vector<float> legacy_rope_tables;
};

// Where the weights go: the tensors to read them into under the names above (a new model's parameters,
// so loading takes the weights' size once); names it does not give, or shapes that differ, get new
// tensors. On a refusal, the given tensors may be partly overwritten.
using Llama2cPlace = std::function<NamedTensors(const Llama2cConfig&)>;

// Reads a legacy or version 1 file. Refuses (std::runtime_error "'PATH': ...", naming the field): a file
// that cannot be opened or is not a regular file; version 1's magic with another version (2 is runq.c's
// int8) or non-zero padding or a shared_classifier byte other than 0 or 1; a field that is zero or
// negative (vocab_size: zero, or negative in version 1); dim not divisible by n_heads; n_kv_heads not
// dividing n_heads; an odd head size (rotary pairs); seq_len over kLlama2cMaxSeqLen; a file shorter or
// longer than the header says.
Llama2cModel read_llama2c(const std::filesystem::path& path, const Llama2cPlace& into = {});

// Whether `path` is a llama2.c model file, from its header alone: version 1's magic, or a legacy header
// whose 7 fields read_llama2c accepts (a safetensors file's first 8 bytes, its header's length, make no
// such header: hidden_dim would be 0); the file's size is then read_llama2c's to check. Never throws.
bool is_llama2c_file(const std::filesystem::path& path);

// Writes `model` as a legacy or version 1 file, byte for byte what llama2.c's export.py writes for the
// same weights (legacy: model.legacy_rope_tables when they are the right size, else the tables export.py
// computes). The tensors must be exactly the names and shapes above for model.config (lm_head.weight
// only when !shared_classifier; one given with shared_classifier must equal embed_tokens.weight^T and is
// not written). std::invalid_argument for a config or tensors that do not fit (nothing written);
// std::runtime_error for I/O, the previous file then untouched.
void write_llama2c(const std::filesystem::path& path, const Llama2cModel& model, Llama2cVersion version);

// The same network as nn::Llama's options, and back: the tensors need no change (they are already
// nn::Llama's names and layouts), so a llama2.c file becomes a Hugging Face folder (hf_llama.h) with the
// same logits. run.c has no rope_theta or eps in its header: 10000 and 1e-5 are fixed, and
// llama2c_config refuses (std::invalid_argument, naming the field) options with others, or sizes a
// header cannot hold.
LlamaOptions llama_options(const Llama2cConfig& config);
Llama2cConfig llama2c_config(const LlamaOptions& options);

// The rotary tables export.py's legacy files hold: freq_cis_real (T, H/2) then freq_cis_imag (T, H/2),
// cos and sin of position t times theta^(-2i/H), rounded to float32 as model.py's precompute_freqs_cis.
std::vector<float> llama2c_rope_tables(int64_t seq_len, int64_t head_size, double theta = 10000.0);

}  // namespace nn
