"""Llama as Hugging Face's LlamaForCausalLM computes it, in plain PyTorch (no transformers package), and its
folders read: what tinygpt's write_hf_llama writes (nn/model_files/hf_llama.h) and from_pretrained reads.

    model = tg.load_hf_llama_folder("out")       # config.json + model.safetensors (or the index's shards)
    logits = model(ids)                          # (B, T) LongTensor -> (B, T, V) float32

Legend: B batch, T time, C hidden_size, H head width (C / n_head), F intermediate_size, V vocab_size.
Grouped-query attention (n_kv_head key-value heads, each read by n_head / n_kv_head query heads), rotary
positions in Hugging Face's "halves" layout (rotate_half), RMSNorm, SwiGLU, tied or untied output. The
parameters are named as in the folder without "model.", in torch.nn.Linear's (out, in) layout. The activations
pass gpt2's hook points (hooks.py) but hook_pos_embed; attn.hook_k and hook_v have the n_kv_head heads, and
attn.hook_rot_q, hook_rot_k are q and k after the rotary positions (docs/hooks.md)."""
import math
import os

import torch
import torch.nn as tnn
import torch.nn.functional as F

from .files import read_json
from .hooks import ATTENTION_HOOKS, RESIDUAL_HOOKS, HookPoint, add_hook_points, attend, heads_view, residual_flow
from .safetensors import read_safetensors
from .state import fit
from .strings import short

MAX_LLAMA_CONFIG_BYTES = 1 << 20
MAX_INDEX_BYTES = 64 << 20


class LlamaRMSNorm(tnn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = tnn.Parameter(torch.ones(dim))  # (C)
        self.eps = eps
        self.hook_normalized = HookPoint()

    def forward(self, x):  # (..., C): divided by the root mean square, then scaled (LlamaRMSNorm, in float32)
        return self.hook_normalized(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight)


def rotate_half(x):
    """(..., H) -> (-x[H/2:], x[:H/2]): Hugging Face's pairing of unit i with unit i + H/2."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotary_tables(T, H, theta):
    """cos, sin (T, H) for positions 0..T-1, in float32 as LlamaRotaryEmbedding computes them."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, H, 2, dtype=torch.int64).float() / H))  # (H/2)
    freqs = torch.outer(torch.arange(T, dtype=torch.float32), inv_freq)  # (T, H/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, H)
    return emb.cos(), emb.sin()


class LlamaAttention(tnn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head, self.n_kv_head, self.H = c["n_head"], c["n_kv_head"], c["n_embd"] // c["n_head"]
        C = c["n_embd"]
        self.q_proj = tnn.Linear(C, self.n_head * self.H, bias=False)
        self.k_proj = tnn.Linear(C, self.n_kv_head * self.H, bias=False)
        self.v_proj = tnn.Linear(C, self.n_kv_head * self.H, bias=False)
        self.o_proj = tnn.Linear(self.n_head * self.H, C, bias=False)
        add_hook_points(self, ATTENTION_HOOKS + ("hook_rot_q", "hook_rot_k"))

    def forward(self, x, cos, sin):  # x (B, T, C); cos, sin (T, H)
        B, T, _ = x.shape
        heads = lambda t, n: t.view(B, T, n, self.H).transpose(1, 2)  # noqa: E731  (B, T, n H) -> (B, n, T, H)
        q = heads_view(self.hook_q, heads(self.q_proj(x), self.n_head))  # (B, n_head, T, H)
        k = heads_view(self.hook_k, heads(self.k_proj(x), self.n_kv_head))  # (B, n_kv_head, T, H)
        v = heads_view(self.hook_v, heads(self.v_proj(x), self.n_kv_head))
        q = heads_view(self.hook_rot_q, q * cos + rotate_half(q) * sin)
        k = heads_view(self.hook_rot_k, k * cos + rotate_half(k) * sin)
        groups = self.n_head // self.n_kv_head  # repeat_kv: query head h reads key-value head h // groups
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)  # (B, n_head, T, H)
        z = attend(self, q, k, v, lambda s: s / math.sqrt(self.H))  # (B, T, n_head, H)
        return self.o_proj(z.reshape(B, T, self.n_head * self.H))


class LlamaMLP(tnn.Module):
    def __init__(self, c):
        super().__init__()
        C, F_ = c["n_embd"], c["ffn_hidden"]
        self.gate_proj = tnn.Linear(C, F_, bias=False)
        self.up_proj = tnn.Linear(C, F_, bias=False)
        self.down_proj = tnn.Linear(F_, C, bias=False)
        self.hook_post = HookPoint()  # (B, T, F)

    def forward(self, x):  # SwiGLU: (B, T, C) -> (B, T, F) -> (B, T, C)
        return self.down_proj(self.hook_post(F.silu(self.gate_proj(x)) * self.up_proj(x)))


class LlamaBlock(tnn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(c["n_embd"], c["norm_eps"])
        self.self_attn = LlamaAttention(c)
        self.post_attention_layernorm = LlamaRMSNorm(c["n_embd"], c["norm_eps"])
        self.mlp = LlamaMLP(c)
        add_hook_points(self, RESIDUAL_HOOKS)

    def forward(self, x, cos, sin):
        return residual_flow(self, x, lambda x: self.self_attn(self.input_layernorm(x), cos, sin),
                             lambda x: self.mlp(self.post_attention_layernorm(x)))


class Llama(tnn.Module):
    """config: vocab, n_embd, n_head, n_kv_head, n_layer, ffn_hidden, block, rope_theta, norm_eps,
    tied_embeddings (nn::LlamaOptions' fields)."""

    def __init__(self, config):
        super().__init__()
        c = self.config = dict(config)
        if c["n_embd"] % c["n_head"] or c["n_head"] % c["n_kv_head"] or (c["n_embd"] // c["n_head"]) % 2:
            raise ValueError(f"Llama: n_embd {c['n_embd']}, n_head {c['n_head']} and n_kv_head {c['n_kv_head']} "
                             "make no grouped-query attention of even head width")
        self.embed_tokens = tnn.Embedding(c["vocab"], c["n_embd"])  # (V, C)
        self.layers = tnn.ModuleList(LlamaBlock(c) for _ in range(c["n_layer"]))
        self.norm = LlamaRMSNorm(c["n_embd"], c["norm_eps"])
        self.lm_head = None if c["tied_embeddings"] else tnn.Linear(c["n_embd"], c["vocab"], bias=False)  # (V, C)
        self.hook_embed, self.hook_logits = HookPoint(), HookPoint()  # (B, T, C), (B, T, V)

    def forward(self, ids):  # (B, T) -> (B, T, V)
        T = ids.shape[1]
        if T > self.config["block"]:
            raise ValueError(f"Llama: a window of {T} is longer than max_position_embeddings {self.config['block']}")
        cos, sin = rotary_tables(T, self.config["n_embd"] // self.config["n_head"], self.config["rope_theta"])
        x = self.hook_embed(self.embed_tokens(ids))  # (B, T, C); the positions are in the rotations
        for layer in self.layers:
            x = layer(x, cos, sin)
        x = self.norm(x)
        return self.hook_logits(x @ self.embed_tokens.weight.T if self.lm_head is None else self.lm_head(x))


def read_hf_llama_config(path):
    """nn::Llama's options from a LlamaForCausalLM config.json, LlamaConfig's defaults for what it leaves out;
    a ValueError naming the file and the field for what this Llama is not (as nn::read_hf_llama_config)."""
    hf, _ = read_json(path, "a config file", MAX_LLAMA_CONFIG_BYTES)
    if not isinstance(hf, dict):
        raise ValueError(f"{path}: not a JSON object")
    if hf.get("model_type") != "llama":
        raise ValueError(f"{path}: model_type is {short(hf.get('model_type'))}, not llama")
    if hf.get("rope_scaling") is not None:
        raise ValueError(f"{path}: rope_scaling {short(hf['rope_scaling'])} is not supported")
    for key in ("attention_bias", "mlp_bias"):
        if hf.get(key, False) is not False:
            raise ValueError(f"{path}: {key} is {short(hf[key])}; this Llama has no biases")
    if hf.get("hidden_act", "silu") != "silu":
        raise ValueError(f"{path}: hidden_act is {short(hf['hidden_act'])}, not silu")

    def whole(key, default=None):
        value = hf.get(key, default)
        if value is None:
            value = default
        if type(value) is not int or value <= 0:
            raise ValueError(f"{path}: {key} is {short(value)}, not a positive whole number")
        return value

    c = {"vocab": whole("vocab_size"), "n_embd": whole("hidden_size"), "ffn_hidden": whole("intermediate_size"),
         "n_layer": whole("num_hidden_layers"), "n_head": whole("num_attention_heads")}
    c["n_kv_head"] = whole("num_key_value_heads", c["n_head"])
    c["block"] = whole("max_position_embeddings", 2048)
    c["rope_theta"] = float(hf.get("rope_theta", 10000.0))
    c["norm_eps"] = float(hf.get("rms_norm_eps", 1e-6))
    c["tied_embeddings"] = hf.get("tie_word_embeddings", False) is True
    if hf.get("head_dim") is not None and hf["head_dim"] != c["n_embd"] // c["n_head"]:
        raise ValueError(f"{path}: head_dim is {short(hf['head_dim'])}, not hidden_size / num_attention_heads")
    return c


def load_hf_llama_folder(directory):
    """The Llama (eval mode, CPU) of a LlamaForCausalLM folder: config.json, then model.safetensors or, without
    it, model.safetensors.index.json's shards; F32, F16 and BF16 (widened). Names with "model." (lm_head.weight
    without), (out, in) as stored; the rotary inv_freq buffers of older files skipped; a tied model's stored
    lm_head.weight must equal the token table. A tensor missing, extra or of another shape is a ValueError."""
    config_path = os.path.join(directory, "config.json")
    config = read_hf_llama_config(config_path)
    single, index_path = os.path.join(directory, "model.safetensors"), os.path.join(directory, "model.safetensors.index.json")
    if os.path.lexists(single):
        files = [single]
    else:
        index, _ = read_json(index_path, "a safetensors index", MAX_INDEX_BYTES)
        shards = sorted(set((index or {}).get("weight_map", {}).values()))
        if not shards or any(not isinstance(s, str) or os.path.basename(s) != s or s in ("", ".", "..") for s in shards):
            raise ValueError(f"{index_path}: weight_map names no shards, or one that is not a file name in the folder")
        files = [os.path.join(directory, s) for s in shards]
    state, lm_head = {}, None
    for path in files:
        tensors, _ = read_safetensors(path, widen_half=True)
        for name, t in tensors.items():
            if name.endswith(".rotary_emb.inv_freq"):
                continue
            if name == "lm_head.weight" and config["tied_embeddings"]:
                lm_head = t
                continue
            key = name[len("model."):] if name.startswith("model.") else name
            if key in state:
                raise ValueError(f"{path}: tensor {short(name)} is there twice")
            state[key] = t
    model = Llama(config)
    fit(model, state, lambda missing, extra, wrong: (
        f"{directory}: the tensors do not fit config.json's Llama: missing {missing[:8]}, extra {extra[:8]}, "
        f"wrong shape {wrong[:8]}"))
    if lm_head is not None and not torch.equal(lm_head, state["embed_tokens.weight"]):
        raise ValueError(f"{directory}: tie_word_embeddings is true but lm_head.weight is not embed_tokens.weight")
    return model.eval()
