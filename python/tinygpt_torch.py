"""tinygpt's model ladder in PyTorch, and its checkpoints read and written without the safetensors package.

The only dependency is torch (and numpy, which torch brings; Debian 12: apt-get install python3-torch libopenblas0-pthread; without the
second, torch multiplies with the reference BLAS, many times slower). Run it with the python3 that has torch
(/usr/bin/python3 on Debian; a pyenv or venv python3 earlier on PATH may not).

    import tinygpt_torch as tg
    model, vocab = tg.load("run.safetensors")          # a tinygpt checkpoint: any kind of the ladder, any tokenizer
    ids = torch.tensor([[vocab.index(c) for c in "ROMEO:"]])
    logits = model(ids)                                 # (B, T) LongTensor -> (B, T, V) float32 logits
    tg.save(model, vocab, "tuned.safetensors")          # generate, heatmap, figure and train --init-from read it
    gpt2 = tg.load_hf_folder("gpt2")                    # Hugging Face's GPT-2 folder (config.json, model.safetensors)

The maths is nn/src/models.cpp's, layer for layer: token + position embeddings (N(0, 1) tables), heads
without biases whose scores are divided by sqrt(head width) and masked causally, exact (erf) GELU between
Linear(C, 4C) and Linear(4C, C), LayerNorm with eps 1e-5 (biased variance), residual blocks
x + attention(norm1(x)) and x + feed_forward(norm2(x)), a final LayerNorm and lm_head with a bias. Dropout
(gpt only) is on the embeddings and on each residual branch in training mode, as tinygpt's.

The gpt2 kind is Hugging Face's GPT-2 maths instead (class GPT2 below): one c_attn projection, biases in
every layer, the tanh GELU (or the exact one, gelu_exact), the output tied to the token table; its layers are
Conv1D, whose weights are (in, out) as tinygpt's, so they are copied without a transpose.

The modules carry tinygpt's own parameter names ("blocks.0.attention.heads.1.query.weight"), so the
mapping to a checkpoint is one rule each way: a Linear weight is stored (in, out) by tinygpt (x @ W) and
(out, in) by torch.nn.Linear, so it is transposed; a LayerNorm's scale is "gain" in tinygpt and "weight" in
torch. Everything else is copied as it is.

Shape legend: B batch, T time (window), C n_embd, H head width, V vocab.
"""
import argparse
import json
import math
import os
import re
import stat
import struct
import sys
import time
from dataclasses import dataclass

import numpy
import torch
import torch.nn as tnn
import torch.nn.functional as F

FORMAT = "tinygpt-checkpoint-1"
KINDS = ("bigram", "average", "head", "multihead", "gpt", "gpt2")
HEAD_KINDS = ("head", "multihead", "gpt", "gpt2")  # the kinds that read model.scaled
LAYER_NORM_EPS = 1e-5


@dataclass
class ModelConfig:
    """nn::ModelConfig (nn/include/nn/model_registry.h): every kind stores every field."""
    kind: str = "gpt"
    vocab: int = 0
    n_embd: int = 32
    n_head: int = 4
    n_layer: int = 4
    block: int = 8
    dropout: float = 0.0
    feed_forward: bool = False  # multihead only
    gpt2_init: bool = True      # gpt only; recorded, the weights come from the file
    gelu_exact: bool = False    # gpt2 only: the erf GELU instead of GPT-2's tanh; stored for gpt2 only
    scaled: bool = True         # the kinds with heads: scores divided by sqrt(head width); stored for those only

    def to_metadata(self):
        return {"model.kind": self.kind, "model.vocab": str(self.vocab), "model.n_embd": str(self.n_embd),
                "model.n_head": str(self.n_head), "model.n_layer": str(self.n_layer), "model.block": str(self.block),
                "model.dropout": _float_text(self.dropout), "model.feed_forward": "1" if self.feed_forward else "0",
                "model.gpt2_init": "1" if self.gpt2_init else "0",
                **({"model.gelu_exact": "1" if self.gelu_exact else "0"} if self.kind == "gpt2" else {}),
                **({"model.scaled": "1" if self.scaled else "0"} if self.kind in HEAD_KINDS else {})}

    @staticmethod
    def from_metadata(metadata, where="checkpoint"):
        """The config in a checkpoint's metadata, read as nn::ModelConfig::from_metadata reads it (strtoll,
        strtof): what tinygpt accepts is accepted, what it refuses is a ValueError naming `where`."""
        def field(key):
            if key not in metadata:
                raise ValueError(f"{where}: not a tinygpt checkpoint (no '{key}' in its metadata)")
            return metadata[key]

        def integer(key):
            text = field(key)
            if not re.fullmatch(r"[ \t\n\v\f\r]*[+-]?[0-9]+", text):
                raise ValueError(f"{where}: '{key}' is {_short(text)}, not a whole number")
            return max(-_INT64_MAX - 1, min(_INT64_MAX, int(text)))  # (strtoll saturates)

        kind = field("model.kind")
        if kind not in KINDS:
            raise ValueError(f"{where}: unknown model kind {_short(kind)} ({', '.join(KINDS)})")
        config = ModelConfig(kind=kind, vocab=integer("model.vocab"), n_embd=integer("model.n_embd"),
                             n_head=integer("model.n_head"), n_layer=integer("model.n_layer"), block=integer("model.block"))
        config.dropout = _strtof(field("model.dropout"), "model.dropout", where)
        config.feed_forward = integer("model.feed_forward") != 0
        config.gpt2_init = integer("model.gpt2_init") != 0
        config.gelu_exact = "model.gelu_exact" in metadata and integer("model.gelu_exact") != 0  # absent: tanh
        config.scaled = "model.scaled" not in metadata or integer("model.scaled") != 0  # absent: the divisor
        return config

    def parameters(self):
        """nn::model_size(config).parameters: how many weights a model of this config has."""
        V, C, T = float(self.vocab), float(self.n_embd), float(self.block)
        L = float(max(self.n_layer, 1))
        embeddings, lm_head = V * C + T * C, C * V + V
        attention, feed_forward = 4 * C * C + C, 8 * C * C + 5 * C
        return {"bigram": V * V, "average": embeddings + lm_head, "head": embeddings + 3 * C * C + lm_head,
                "multihead": embeddings + attention + (feed_forward if self.feed_forward else 0) + lm_head,
                "gpt": embeddings + L * (4 * C + attention + feed_forward) + 2 * C + lm_head,
                "gpt2": embeddings + L * (12 * C * C + 13 * C) + 2 * C}[self.kind]  # (tied: no lm_head)

    def validate(self):
        """nn::validate_model_config's checks, so a model tinygpt would refuse is refused here first."""
        if self.kind not in KINDS:
            raise ValueError(f"model: unknown kind '{self.kind}' ({', '.join(KINDS)})")
        if self.vocab <= 0:
            raise ValueError(f"model: vocab must be positive, got {self.vocab}")
        if self.kind != "bigram" and (self.n_embd <= 0 or self.block <= 0):
            raise ValueError(f"model: n_embd ({self.n_embd}) and block ({self.block}) must be positive")
        if self.kind in ("multihead", "gpt", "gpt2") and (self.n_head <= 0 or self.n_embd % self.n_head != 0):
            raise ValueError(f"model: n_head {self.n_head} must divide n_embd {self.n_embd}")
        if self.kind in ("gpt", "gpt2") and self.n_layer <= 0:
            raise ValueError(f"model: n_layer must be positive, got {self.n_layer}")
        if self.kind in ("gpt", "gpt2") and not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"model: dropout {self.dropout} must be in [0, 1)")
        if self.feed_forward and self.kind != "multihead":
            raise ValueError(f"model: feed_forward applies to multihead only, not {self.kind}")
        if not self.scaled and self.kind not in HEAD_KINDS:
            raise ValueError(f"model: dropping the divisor (scaled false) applies to {', '.join(HEAD_KINDS)} only, not {self.kind}")


def _strtof(text, key, where):
    """C's strtof on the whole of `text`, as tinygpt reads a float from a file: leading white space, a
    decimal or hexadecimal number, inf or nan; rounded to float32."""
    number = r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?|(?i:inf|infinity|nan(?:\([0-9A-Za-z_]*\))?))"
    match = re.fullmatch(r"[ \t\n\v\f\r]*(" + number + ")", text)
    if not match:
        raise ValueError(f"{where}: '{key}' is {_short(text)}, not a number")
    body = match.group(1)
    unsigned = body.lstrip("+-").lower()
    if unsigned.startswith("0x"):
        value = float.fromhex(body if "p" in unsigned else body + "p0")
    elif unsigned.startswith("nan"):
        value = math.nan
    else:
        value = float(body)
    with numpy.errstate(over="ignore"):  # (past float32's range: an infinity, as strtof gives)
        return float(numpy.float32(value))


def _float_text(x):
    """A float as text that C's strtof reads back to the same float32: the shortest that round-trips as a
    float32 (numpy's), as tinygpt writes it."""
    text = str(numpy.float32(x))
    return text[:-2] if text.endswith(".0") else text


# --- the models (nn/src/models.cpp, nn/src/attention.cpp) -----------------------------------------------

class Head(tnn.Module):
    """One causal head: (B, T, C) -> (B, T, H); scores Q K^T / sqrt(H) (unless not scaled), masked, softmax, times V."""

    def __init__(self, n_embd, head_size, scaled=True):
        super().__init__()
        self.scaled = scaled
        self.query = tnn.Linear(n_embd, head_size, bias=False)
        self.key = tnn.Linear(n_embd, head_size, bias=False)
        self.value = tnn.Linear(n_embd, head_size, bias=False)

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.query(x), self.key(x), self.value(x)                    # each (B, T, H)
        scores = q @ k.transpose(1, 2)                                          # (B, T, T)
        if self.scaled:
            scores = scores * (1.0 / math.sqrt(q.shape[-1]))
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)     # above the diagonal: the future
        return F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v  # (B, T, H)


class MultiHeadAttention(tnn.Module):
    """Heads side by side, concatenated, projected (with a bias): (B, T, C) -> (B, T, C)."""

    def __init__(self, n_embd, n_head, dropout=0.0, scaled=True):
        super().__init__()
        self.heads = tnn.ModuleList(Head(n_embd, n_embd // n_head, scaled) for _ in range(n_head))
        self.projection = tnn.Linear(n_embd, n_embd)
        self.dropout = dropout

    def forward(self, x):
        out = self.projection(torch.cat([h(x) for h in self.heads], dim=-1))
        return F.dropout(out, self.dropout, self.training)


class FeedForward(tnn.Module):
    """Linear C -> 4C, exact GELU, Linear 4C -> C: (B, T, C) -> (B, T, C)."""

    def __init__(self, n_embd, dropout=0.0):
        super().__init__()
        self.up = tnn.Linear(n_embd, 4 * n_embd)
        self.down = tnn.Linear(4 * n_embd, n_embd)
        self.dropout = dropout

    def forward(self, x):
        return F.dropout(self.down(F.gelu(self.up(x))), self.dropout, self.training)


class Block(tnn.Module):
    def __init__(self, n_embd, n_head, dropout, scaled=True):
        super().__init__()
        self.norm1 = tnn.LayerNorm(n_embd, eps=LAYER_NORM_EPS)
        self.attention = MultiHeadAttention(n_embd, n_head, dropout, scaled)
        self.norm2 = tnn.LayerNorm(n_embd, eps=LAYER_NORM_EPS)
        self.feed_forward = FeedForward(n_embd, dropout)

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.feed_forward(self.norm2(x))


class LanguageModel(tnn.Module):
    """Every rung: forward(ids) maps a (B, T) LongTensor to (B, T, V) logits; `config` is its ModelConfig."""

    def __init__(self, config):
        super().__init__()
        config.validate()
        self.config = config

    def block_size(self):
        return 1 if self.config.kind == "bigram" else self.config.block

    def check_ids(self, ids):
        if ids.dim() != 2:
            raise ValueError(f"{self.config.kind}: ids must be (B, T), got shape {tuple(ids.shape)}")
        if self.config.kind != "bigram" and ids.shape[1] > self.config.block:
            raise ValueError(f"{self.config.kind}: window of {ids.shape[1]} is longer than the block size {self.config.block}")


class Positional(LanguageModel):
    def __init__(self, config):
        super().__init__(config)
        self.token = tnn.Embedding(config.vocab, config.n_embd)     # (V, C)
        self.position = tnn.Embedding(config.block, config.n_embd)  # (block, C)

    def embed(self, ids):  # (B, T) -> (B, T, C)
        self.check_ids(ids)
        return self.token(ids) + self.position(torch.arange(ids.shape[1], device=ids.device))


class Bigram(LanguageModel):
    def __init__(self, config):
        super().__init__(config)
        self.logits_table = tnn.Embedding(config.vocab, config.vocab)  # (V, V)

    def forward(self, ids):
        self.check_ids(ids)
        return self.logits_table(ids)


class AverageModel(Positional):
    def __init__(self, config):
        super().__init__(config)
        self.lm_head = tnn.Linear(config.n_embd, config.vocab)

    def forward(self, ids):
        x = self.embed(ids)
        T = x.shape[1]
        weights = torch.tril(torch.ones(T, T, device=x.device))
        weights = weights / weights.sum(-1, keepdim=True)  # row i: 1/(i+1) on positions 0..i
        return self.lm_head(weights @ x)


class SingleHead(Positional):
    def __init__(self, config):
        super().__init__(config)
        self.head = Head(config.n_embd, config.n_embd, config.scaled)
        self.lm_head = tnn.Linear(config.n_embd, config.vocab)

    def forward(self, ids):
        return self.lm_head(self.head(self.embed(ids)))


class MultiHead(Positional):
    def __init__(self, config):
        super().__init__(config)
        self.attention = MultiHeadAttention(config.n_embd, config.n_head, scaled=config.scaled)
        self.feed_forward = FeedForward(config.n_embd) if config.feed_forward else None
        self.lm_head = tnn.Linear(config.n_embd, config.vocab)

    def forward(self, ids):
        x = self.attention(self.embed(ids))
        if self.feed_forward is not None:
            x = self.feed_forward(x)
        return self.lm_head(x)


class GPT(Positional):
    def __init__(self, config):
        super().__init__(config)
        self.blocks = tnn.ModuleList(Block(config.n_embd, config.n_head, config.dropout, config.scaled) for _ in range(config.n_layer))
        self.final_norm = tnn.LayerNorm(config.n_embd, eps=LAYER_NORM_EPS)
        self.lm_head = tnn.Linear(config.n_embd, config.vocab)

    def forward(self, ids):
        x = F.dropout(self.embed(ids), self.config.dropout, self.training)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.final_norm(x))


# --- GPT-2 (nn/gpt2.h), written from Hugging Face's modeling_gpt2.py: Conv1D layers, tanh GELU, tied head --------

class Conv1D(tnn.Module):
    """Hugging Face's Conv1D: a linear layer whose weight is stored (in, out), y = x @ W + b, the layout
    tinygpt's Linear stores too (so its tensors map to tinygpt's without a transpose)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = tnn.Parameter(torch.empty(n_in, n_out).normal_(std=0.02))
        self.bias = tnn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).reshape(*x.shape[:-1], -1)


class GPT2Attention(tnn.Module):
    """c_attn (C, 3C) gives q, k, v; heads of C / n_head; causal softmax(q k^T / sqrt(head width)) v; c_proj."""

    def __init__(self, config):
        super().__init__()
        C = config.n_embd
        self.n_head, self.dropout, self.scaled = config.n_head, config.dropout, config.scaled
        self.c_attn = Conv1D(C, 3 * C)
        self.c_proj = Conv1D(C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)                                              # each (B, T, C)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, H)
        scores = q @ k.transpose(-2, -1)                                                      # (B, nh, T, T)
        if self.scaled:
            scores = scores / math.sqrt(C // self.n_head)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        y = F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v                    # (B, nh, T, H)
        y = y.transpose(1, 2).reshape(B, T, C)
        return F.dropout(self.c_proj(y), self.dropout, self.training)


class GPT2MLP(tnn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = Conv1D(config.n_embd, 4 * config.n_embd)
        self.c_proj = Conv1D(4 * config.n_embd, config.n_embd)
        self.approximate = "none" if config.gelu_exact else "tanh"  # Hugging Face's gelu_new is the tanh one
        self.dropout = config.dropout

    def forward(self, x):
        return F.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate=self.approximate)), self.dropout, self.training)


class GPT2Block(tnn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = tnn.LayerNorm(config.n_embd, eps=LAYER_NORM_EPS)
        self.attn = GPT2Attention(config)
        self.ln_2 = tnn.LayerNorm(config.n_embd, eps=LAYER_NORM_EPS)
        self.mlp = GPT2MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(LanguageModel):
    """GPT2LMHeadModel's maths under its names (without "transformer."): wte, wpe, h.N.ln_1, h.N.attn.c_attn,
    h.N.attn.c_proj, h.N.ln_2, h.N.mlp.c_fc, h.N.mlp.c_proj, ln_f; lm_head is wte (tied): logits = x @ wte^T.
    Initialized as GPT-2 (N(0, 0.02); the c_proj weights 0.02 / sqrt(2 n_layer); biases 0)."""

    def __init__(self, config):
        super().__init__(config)
        self.wte = tnn.Embedding(config.vocab, config.n_embd)   # (V, C)
        self.wpe = tnn.Embedding(config.block, config.n_embd)   # (block, C)
        self.h = tnn.ModuleList(GPT2Block(config) for _ in range(config.n_layer))
        self.ln_f = tnn.LayerNorm(config.n_embd, eps=LAYER_NORM_EPS)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    p.normal_(std=0.02 / math.sqrt(2 * config.n_layer))
                elif name in ("wte.weight", "wpe.weight"):
                    p.normal_(std=0.02)

    def forward(self, ids):
        self.check_ids(ids)
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        x = F.dropout(x, self.config.dropout, self.training)
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()  # (B, T, V): the head tied to the token table


_MODELS = {"bigram": Bigram, "average": AverageModel, "head": SingleHead, "multihead": MultiHead, "gpt": GPT, "gpt2": GPT2}


def make_model(config):
    """A model of the config's kind (a ModelConfig, or a dict of its fields), with torch's initialization."""
    if isinstance(config, dict):
        config = ModelConfig(**config)
    return _MODELS[config.kind](config)


# --- tinygpt's names and layouts <-> torch's ----------------------------------------------------------------

def _linear_weights(model):
    return {f"{name}.weight" for name, m in model.named_modules() if isinstance(m, tnn.Linear)}


def _norm_names(model):
    return {name for name, m in model.named_modules() if isinstance(m, tnn.LayerNorm)}


def tinygpt_state(model):
    """The model's parameters under tinygpt's names and layouts, in tinygpt's registration order, on the CPU."""
    linear, norms = _linear_weights(model), _norm_names(model)
    out = {}
    for name, p in model.named_parameters():
        t = p.detach().to("cpu", torch.float32)
        owner, _, leaf = name.rpartition(".")
        if name in linear:
            t = t.t()
        if owner in norms and leaf == "weight":
            name = f"{owner}.gain"
        out[name] = t.contiguous()
    return out


def load_tinygpt_state(model, tensors, where="checkpoint"):
    """Copies tinygpt-named tensors into the model; the names and shapes must match exactly."""
    linear, norms = _linear_weights(model), _norm_names(model)
    state = {}
    for name, t in tensors.items():
        owner, _, leaf = name.rpartition(".")
        torch_name = f"{owner}.weight" if owner in norms and leaf == "gain" else name
        state[torch_name] = t.t() if torch_name in linear else t
    _fit(model, state, lambda missing, extra, wrong: f"{where}: the tensors do not fit the {model.config.kind} model: "
                                                    f"missing {missing}, extra {extra}, wrong shape {wrong}")


def _fit(model, state, refusal):
    """Copies state (torch names) into the model's parameters; when a name is missing or extra or a shape
    wrong, raises ValueError(refusal(missing, extra, wrong)) and changes nothing."""
    own = dict(model.named_parameters())
    missing, extra = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    wrong = sorted(f"{n} {tuple(state[n].shape)} (the model's {tuple(own[n].shape)})"
                   for n in set(own) & set(state) if state[n].shape != own[n].shape)
    if missing or extra or wrong:
        raise ValueError(refusal(missing, extra, wrong))
    with torch.no_grad():
        for name, p in own.items():
            p.copy_(state[name])


# --- progress ----------------------------------------------------------------------------------------------

class Progress:
    """tinygpt's progress bar (examples/support/progress.h) on stderr when it is a terminal, and nothing when it
    is not: `label [#########.....................] 540/1485 MB  61.2 MB/s  ETA 0m15s`, redrawn at most ten times a
    second, and at the total with the time it took (`in 0m24s`), where its line ends. `unit` names what is
    counted, each `per_unit` of update's counts (1e6: bytes shown as MB)."""

    def __init__(self, label, unit, per_unit=1):
        self.label, self.unit, self.per_unit = label, unit, per_unit
        self.terminal = sys.stderr.isatty()
        self.start = self.drawn = time.monotonic()
        self.done = False

    @staticmethod
    def _amount(v):
        return f"{v:.0f}" if v >= 100 else f"{v:.3g}"

    def update(self, done, total):
        if not self.terminal or self.done:
            return
        now = time.monotonic()
        complete = done >= total
        if not complete and now - self.drawn < 0.1 and self.drawn != self.start:
            return
        self.drawn = now
        seconds = now - self.start
        text = f"{self._amount(done / self.per_unit)}/{self._amount(total / self.per_unit)} {self.unit}"
        if done > 0 and seconds > 0:
            rate = done / seconds
            text += f"  {self._amount(rate / self.per_unit)} {self.unit}/s  "
            text += f"in {_duration(seconds)}" if complete else f"ETA {_duration((total - done) / rate)}"
        filled = int(30 * min(max(done / total if total else 1.0, 0.0), 1.0))
        line = f"{self.label} [{'#' * filled}{'.' * (30 - filled)}] {text}"
        try:
            columns = os.get_terminal_size(sys.stderr.fileno()).columns
        except OSError:
            columns = 0
        if columns:  # a full line would wrap, and \r then redraw only its last row
            line = line[:columns - 1]
        try:
            sys.stderr.write(f"\r{line}\x1b[K" + ("\n" if complete else ""))
            sys.stderr.flush()
        except OSError:  # a closed stderr only silences the bar
            pass
        self.done = complete


def _duration(seconds):
    s = round(seconds)
    return f"{s // 3600}h{s // 60 % 60:02}m" if s >= 3600 else f"{s // 60}m{s % 60:02}s"


# --- safetensors with tinygpt's checksums (nn/train/include/nn/train/safetensors.h) -------------------------------

def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c_bytewise(data, crc=0xFFFFFFFF):
    """The CRC32C register after `data`, a byte at a time from register `crc` (no final inversion)."""
    table = _CRC_TABLE
    for b in memoryview(data).cast("B"):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def _zeros_operator(n):
    """The register's map over n zero bytes, linear over GF(2): the images of its 32 bits."""
    def apply(op, v):
        out, bit = 0, 0
        while v:
            if v & 1:
                out ^= op[bit]
            v >>= 1
            bit += 1
        return out

    result = [1 << b for b in range(32)]          # identity
    power = [crc32c_bytewise(b"\0", 1 << b) for b in range(32)]  # one zero byte
    while n:
        if n & 1:
            result = [apply(power, r) for r in result]
        power = [apply(power, p) for p in power]
        n >>= 1
    return result, apply


def crc32c(data):
    """CRC32C (Castagnoli, reflected 0x82F63B78), as tinygpt writes "crc32c.NAME": 8 hex digits of this.
    Large inputs are cut into chunks whose registers numpy advances side by side, then joined: the
    register after chunk A then chunk B is (A's register carried over len(B) zero bytes) xor (B's register
    from zero), as zlib's crc32_combine does."""
    data = memoryview(data).cast("B")
    chunks = 1024
    if len(data) < 64 * chunks:
        return crc32c_bytewise(data) ^ 0xFFFFFFFF
    import numpy as np
    table = np.array(_CRC_TABLE, dtype=np.uint32)
    L = len(data) // chunks
    body = np.frombuffer(data[:L * chunks], dtype=np.uint8).reshape(chunks, L)
    regs = np.zeros(chunks, dtype=np.uint32)
    regs[0] = 0xFFFFFFFF
    for j in range(L):
        regs = table[(regs ^ body[:, j]) & 0xFF] ^ (regs >> 8)
    shift, apply = _zeros_operator(L)
    crc = 0
    for r in regs.tolist():
        crc = apply(shift, crc) ^ r
    return crc32c_bytewise(data[L * chunks:], crc) ^ 0xFFFFFFFF


# What tinygpt's loader (nn::load_safetensors, nn/train/src/safetensors.cpp) refuses, read_safetensors
# refuses too, each with a ValueError naming the file and the problem: the C++ loader's limits, a header
# that is not strict JSON (nlohmann's: no NaN, no lone surrogate, no repeated key), not an object, nested
# too deep for Python (ValueError, not RecursionError), a tensor that is not {"dtype": "F32", "shape":
# [non-negative integers], "data_offsets": [begin, end]} with begin <= end and exactly its bytes, tensors
# that do not tile the data section (overlap, gap, past the end, trailing bytes), and checksums that are
# not 8 hex digits for every tensor or do not match. tests/python/test_hostile.py checks both loaders
# against the fuzzers' corpus (fuzz/corpus/safetensors and checkpoint).
MAX_HEADER_BYTES = 100 << 20   # nn::SafetensorsLimits
MAX_FILE_BYTES = 16 << 30
_INT64_MAX = (1 << 63) - 1


class _Signed(int):
    """A JSON integer written with a minus sign (even -0): nlohmann's number_integer, not unsigned."""


def _json_float(text):
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number overflow parsing '{text[:40]}'")  # (nlohmann's words)
    return value


def _json_integer(text):
    if len(text) > 21:  # past 2^64 (or a 4300-digit bomb): nlohmann reads it as a float
        return _json_float(text)
    value = int(text)
    if text.startswith("-"):
        return _Signed(value)
    return value if value < 1 << 64 else float(value)


def _is_unsigned(value):
    return type(value) is int and 0 <= value < 1 << 64  # (not bool, not _Signed, not float)


def _json_type(value):
    """nlohmann's name of a JSON value's type, as the C++ loader's messages give it."""
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def _short(value):
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:80] + "..."


def _parse_header(raw, where):
    def refuse(what):
        return ValueError(f"{where}: {what}")

    if raw.startswith(b"\xef\xbb\xbf"):  # nlohmann skips a UTF-8 byte order mark
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise refuse(f"the header is not valid JSON (invalid UTF-8 at byte {e.start})") from None
    repeated = []
    objects = [0]

    def object_of(pairs):  # called innermost first: the last call is the header itself
        objects[0] += 1
        out = {}
        for key, value in pairs:
            if key in out and not repeated:
                repeated.append((objects[0], key))
            out[key] = value
        return out

    def no_constant(name):
        raise ValueError(f"{name} is not a JSON value")

    try:
        header = json.loads(text, object_pairs_hook=object_of, parse_int=_json_integer, parse_float=_json_float,
                            parse_constant=no_constant)
    except RecursionError:
        raise refuse("the header nests arrays or objects too deeply to read (a safetensors header nests 3 deep)") from None
    except ValueError as e:
        raise refuse(f"the header is not valid JSON ({e})") from None
    if repeated:
        call, key = repeated[0]
        raise refuse(f"the header names tensor {_short(key)} twice" if call == objects[0] and isinstance(header, dict)
                     else f"the header repeats the key {_short(key)} in one object")
    pending = [header]
    while pending:  # strings: a lone surrogate (\ud800) is not Unicode text; nlohmann refuses it
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise refuse(f"the header is not valid JSON (a lone surrogate in the string {ascii(value)[:80]})") from None
    if not isinstance(header, dict):
        raise refuse(f"the header is not a JSON object but {_json_type(header)}")
    return header


_HALF_DTYPES = {"F16": torch.float16, "BF16": torch.bfloat16}  # read with widen_half, widened to float32


def _tensor_entry(name, value, where, widen_half=False):
    """(shape, begin, end, dtype) of a header entry, checked as nn::load_safetensors checks it."""
    who = f"{where}: tensor {_short(name)}"
    if not isinstance(value, dict):
        raise ValueError(f"{who} must be an object, got {_json_type(value)}")
    for field in ("dtype", "shape", "data_offsets"):
        if field not in value:
            raise ValueError(f'{who} has no "{field}"')
    dtype = value["dtype"]
    if not isinstance(dtype, str):
        raise ValueError(f'{who}: "dtype" must be a string, got {_json_type(dtype)}')
    if dtype != "F32" and not (widen_half and dtype in _HALF_DTYPES):
        raise ValueError(f"{who} has dtype {_short(dtype)}; only F32{', F16 and BF16' if widen_half else ''} is supported")
    size = 4 if dtype == "F32" else 2

    def unsigned_array(field):
        array = value[field]
        if not isinstance(array, list) or not all(_is_unsigned(v) for v in array):
            raise ValueError(f'{who}: "{field}" must be an array of non-negative integers, got {_short(array)}')
        return array

    numel = 1
    shape = unsigned_array("shape")
    for d in shape:
        if d > _INT64_MAX or (d != 0 and numel > _INT64_MAX // 4 // d):
            raise ValueError(f"{who}: shape {_short(shape)} has too many elements")
        numel *= d
    offsets = unsigned_array("data_offsets")
    if len(offsets) != 2 or offsets[0] > offsets[1]:
        raise ValueError(f'{who}: "data_offsets" must be [begin, end] with begin <= end, got {_short(offsets)}')
    begin, end = offsets
    if end - begin != size * numel:
        raise ValueError(f"{who}: data_offsets [{begin}, {end}] hold {end - begin} bytes, but shape {shape} of {dtype} "
                         f"needs {size * numel}")
    return shape, begin, end, dtype


METADATA_CHECKSUM = "crc32c.__metadata__"


def metadata_checksum(metadata):
    """The metadata's own checksum, as tinygpt writes "crc32c.__metadata__": the CRC32C of every other
    entry (the tensors' checksums included) in key order, each key and value as its 8-byte little-endian
    length and its UTF-8 bytes. The tensors' checksums cover only their values: this covers the settings."""
    covered = bytearray()
    for key in sorted(k for k in metadata if k != METADATA_CHECKSUM):
        for text in (key, metadata[key]):
            raw = text.encode("utf-8", "surrogatepass")
            covered += struct.pack("<Q", len(raw)) + raw
    return f"{crc32c(bytes(covered)):08x}"


def _header_entries(header, data_size, where, widen_half):
    """(entries (name, shape, begin, end, dtype) sorted by begin, metadata, checksums) of a parsed header,
    checked against a data section of data_size bytes before it is read."""
    metadata, checksums, entries = {}, {}, []
    for name, value in header.items():
        if name == "__metadata__":
            if not isinstance(value, dict):
                raise ValueError(f'{where}: "__metadata__" must be an object of strings, got {_json_type(value)}')
            for key, text in value.items():
                if not isinstance(text, str):
                    raise ValueError(f'{where}: "__metadata__" must be an object of strings, but {_short(key)} is {_json_type(text)}')
                if key == METADATA_CHECKSUM:
                    continue
                if key.startswith("crc32c."):
                    checksums[key[len("crc32c."):]] = text
                else:
                    metadata[key] = text
        elif not name:  # as tinygpt's loader and save_safetensors: no parameter is nameless
            raise ValueError(f"{where}: a tensor has an empty name")
        else:
            entries.append((name, *_tensor_entry(name, value, where, widen_half)))

    # Sorted by begin, the tensors must tile the data section exactly: no overlap, no gap, no tail.
    entries.sort(key=lambda e: (e[2], e[3]))
    expected = 0
    for i, (name, _, begin, end, _) in enumerate(entries):
        if begin < expected:
            before = entries[i - 1]
            raise ValueError(f"{where}: tensor {_short(name)} (data_offsets [{begin}, {end}]) overlaps tensor "
                             f"{_short(before[0])} (data_offsets [{before[2]}, {before[3]}])")
        if begin > expected:
            raise ValueError(f"{where}: a gap of {begin - expected} bytes before tensor {_short(name)} (data_offsets "
                             f"[{begin}, {end}]): the data before it ends at {expected}")
        if end > data_size:
            raise ValueError(f"{where}: tensor {_short(name)} (data_offsets [{begin}, {end}]) ends past the end of the "
                             f"file: the data section holds {data_size} bytes (truncated?)")
        expected = end
    if expected != data_size:
        raise ValueError(f"{where}: {data_size - expected} bytes of trailing data after the last tensor (the tensors "
                         f"end at {expected}, the data section holds {data_size} bytes)")

    # Checksums: none at all (a file written before them), or one of 8 hex digits for every tensor.
    names = {e[0] for e in entries}
    for name, crc in checksums.items():
        if len(crc) != 8 or any(c not in "0123456789abcdef" for c in crc):
            raise ValueError(f"{where}: the checksum of tensor {_short(name)} is not 8 hex digits: {_short(crc)}")
        if name not in names:
            raise ValueError(f"{where}: a checksum names tensor {_short(name)}, which the file does not hold")
    if checksums:
        for name in names - set(checksums):
            raise ValueError(f"{where}: tensor {_short(name)} has no checksum while the file's other tensors have theirs")
    all_metadata = header.get("__metadata__", {})
    if METADATA_CHECKSUM in all_metadata:
        computed = metadata_checksum(all_metadata)
        if all_metadata[METADATA_CHECKSUM] != computed:
            raise ValueError(f"{where}: the metadata does not match its checksum (CRC32C {_short(all_metadata[METADATA_CHECKSUM])} "
                             f"stored, {computed} computed): its settings were edited or damaged")
    return entries, metadata, checksums


def read_safetensors(path, verify=True, widen_half=False, check_shapes=None):
    """(tensors by name in file order, metadata without the checksums) of an F32 safetensors file, or a
    ValueError naming the file and what is wrong with it (an OSError if it cannot be read). Every tensor's
    "crc32c.NAME" must match it (verify=False skips only that comparison). widen_half: F16 and BF16 tensors
    too, widened to float32 exactly (as other writers' files may hold them). Only what the file holds is
    read (never a buffer of the size limit): the header by its length once that is within the file, the
    data once the header is checked. check_shapes: called with {name: shape} of the header's tensors
    before the data is read; it may refuse them (load_hf_folder holds config.json's sizes to them)."""
    where = str(path)
    f, size = open_regular(path, "a safetensors file", MAX_FILE_BYTES)
    with f:
        if size < 8:
            raise ValueError(f"{where}: the file is {size} bytes, too short for the 8-byte header length")
        (n,) = struct.unpack("<Q", f.read(8))
        if n > size - 8:
            raise ValueError(f"{where}: the header length {n} runs past the end of the file ({size - 8} bytes follow the length)")
        if n > MAX_HEADER_BYTES:
            raise ValueError(f"{where}: the header length {n} is over the limit of {MAX_HEADER_BYTES}")
        header = _parse_header(_read_exactly(f, n, where), where)
        entries, metadata, checksums = _header_entries(header, size - 8 - n, where, widen_half)
        if check_shapes:
            check_shapes({name: shape for name, shape, *_ in entries})
        bar = Progress(f"loading {os.path.basename(where)}", "MB", 1e6)
        tensors = {}
        for name, shape, begin, end, dtype in entries:  # in file order: they tile the data section
            raw = _read_exactly(f, end - begin, where)
            if verify and checksums:
                found = f"{crc32c(raw):08x}"
                if found != checksums[name]:
                    raise ValueError(f"{where}: tensor {_short(name)} does not match its checksum (CRC32C {checksums[name]} "
                                     f"stored, {found} computed): the file is corrupt")
            if end == begin:
                t = torch.zeros(0)
            elif dtype == "F32":
                t = torch.frombuffer(bytearray(raw), dtype=torch.float32)
            else:
                t = torch.frombuffer(bytearray(raw), dtype=_HALF_DTYPES[dtype]).to(torch.float32)
            tensors[name] = t.reshape(shape)
            bar.update(8 + n + end, size)
        bar.update(size, size)
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    """Writes F32 tensors (in the given order) and metadata plus each tensor's "crc32c.NAME" and the
    metadata's "crc32c.__metadata__", atomically (write_atomically)."""
    blobs, entries, offset = [], {}, 0
    all_metadata = dict(metadata)
    for name, t in tensors.items():
        raw = _stored_bytes(t)
        all_metadata[f"crc32c.{name}"] = f"{crc32c(raw):08x}"
        entries[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    all_metadata[METADATA_CHECKSUM] = metadata_checksum(all_metadata)
    header = json.dumps({"__metadata__": all_metadata, **entries}, separators=(",", ":"), ensure_ascii=False).encode()
    header += b" " * ((8 - len(header) % 8) % 8)  # the data starts 8-byte aligned, as tinygpt writes it
    write_atomically(path, [struct.pack("<Q", len(header)), header, *blobs])


def write_atomically(path, chunks):
    """Writes the byte strings to `path` as tinygpt's AtomicFile does: a temporary file beside it (created
    0666 less the umask, as any new file), flushed, fsynced and renamed over `path`, then the directory
    fsynced. A failure or an interruption leaves the file that was there as it was, and no temporary file."""
    directory = os.path.dirname(os.path.abspath(path))
    for attempt in range(100):
        tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp-{os.getpid()}-{attempt}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(f"{path}: cannot create a temporary file in {directory}: 100 names taken")
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _stored_bytes(t):
    """float32, little-endian, row-major: the bytes a tinygpt file stores (torch's .numpy() needs numpy,
    which python3-torch depends on)."""
    return t.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4", copy=False).tobytes()


# --- JSON files (config.json, vocab.json), read with bounds ---------------------------------------------------

MAX_JSON_DEPTH = 32  # Hugging Face's GPT-2 config.json nests 3 deep (task_specific_params), a vocab.json 1
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_BRACKET_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def _json_nesting(raw):
    """How deep a JSON text's arrays and objects nest, from its brackets outside strings, without parsing it
    (json.loads recurses once a level: a deep nest is a RecursionError)."""
    steps = _JSON_STRING.sub(b"", raw).translate(_BRACKET_STEP, _NOT_BRACKET)
    return int(numpy.frombuffer(steps, dtype=numpy.int8).cumsum(dtype=numpy.int32).max(initial=0))


def read_json(path, what, limit):
    """(value, text) of a small JSON file, or a ValueError naming it: not a regular file (`what` says what it
    should be), over `limit` bytes, nesting arrays and objects over MAX_JSON_DEPTH deep (counted before it is
    parsed), not UTF-8 JSON."""
    raw = read_regular(path, what, limit)
    depth = _json_nesting(raw)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"{path}: nests arrays and objects {depth} deep, over the limit of {MAX_JSON_DEPTH}")
    try:
        text = raw.decode("utf-8")
        return json.loads(text), text
    except ValueError as e:  # (UnicodeDecodeError too)
        raise ValueError(f"{path}: not JSON ({one_line(e)})") from None


# --- checkpoints -----------------------------------------------------------------------------------------

def _check_stored(config, stored, where, source):
    """Before a model is built: one with more than twice the `stored` weights of the file `where` (+ 4096)
    is refused, so the sizes in `source` cannot allocate what the file does not hold."""
    if config.kind in KINDS and config.parameters() > 2 * stored + 4096:
        raise ValueError(f"{where}: the model in {source} ({config.kind} n_embd {config.n_embd} n_layer "
                         f"{config.n_layer} block {config.block} vocab {config.vocab}) needs about "
                         f"{config.parameters():.3g} parameters, but the file stores {stored:.3g}")


LLMC_MAGIC = 20240326  # the first int32 of llm.c's model file


def _not_a_checkpoint(path):
    """What GPT-2's own weight files are, and how to read them here, for load() to say instead of loading."""
    f, _ = open_regular(path, "a safetensors file")
    with f:
        first = f.read(4)
    if len(first) == 4 and struct.unpack("<i", first)[0] == LLMC_MAGIC:
        return (f"{path}: llm.c's GPT-2 model file, not a tinygpt checkpoint: `export {path} --hf DIR` writes it as Hugging "
                f"Face's folder, which tinygpt_torch.load_hf_folder(DIR) reads")
    return None


def load(path, verify=True):
    """(model, vocab) from a tinygpt checkpoint of any kind (train --out, or save() below). The model is in
    eval mode on the CPU; vocab is the checkpoint's tokenizer: the characters in id order (a list), GPT-2's
    BPE files (BpeFiles, carried for save(); tinygpt's tokenize and generate use them), or TokenIds for a
    model trained on token ids without a tokenizer. The optimizer state in a training
    checkpoint ("train_state.*") is ignored. What tinygpt's nn::load_trained_model refuses is refused here,
    with a ValueError naming the file and the problem: read_safetensors' list, another format, a NaN or an
    infinity in any tensor, a config tinygpt would not read or build, a vocabulary that is not distinct
    characters sorted by code point (or not model.vocab tokens), sizes the stored weights do not have,
    and tensors that do not fit the model. GPT-2's own files are named, with what reads them: Hugging
    Face's model.safetensors (load_hf_folder) and llm.c's model file (export --hf, then load_hf_folder)."""
    where = str(path)
    named = _not_a_checkpoint(path)
    if named:
        raise ValueError(named)
    tensors, metadata = read_safetensors(path, verify)
    # (tinygpt's gpt2 checkpoints have a wte.weight too, and their own format: nn::weights_format's rule)
    if metadata.get("format") in (None, "pt") and ("wte.weight" in tensors or "transformer.wte.weight" in tensors):
        raise ValueError(f"{where}: Hugging Face's GPT-2 weights, not a tinygpt checkpoint: "
                         f"tinygpt_torch.load_hf_folder({_short(os.path.dirname(where) or '.')}) reads its folder "
                         "(with config.json beside it)")
    if "format" not in metadata:
        raise ValueError(f"{where}: not a tinygpt checkpoint (no 'format' in its metadata)")
    if metadata["format"] != FORMAT:
        raise ValueError(f"{where}: checkpoint format {_short(metadata['format'])} is not '{FORMAT}'")
    for name, t in tensors.items():
        bad = (~torch.isfinite(t)).reshape(-1).nonzero()
        if len(bad):
            i = bad[0].item()
            raise ValueError(f"{where}: tensor {_short(name)} holds {t.reshape(-1)[i].item()} at index {i} (shape "
                             f"{list(t.shape)}): refusing to load a non-finite weight")
    config = ModelConfig.from_metadata(metadata, where)
    vocab = _checkpoint_tokenizer(metadata, where)
    weights = {k: v for k, v in tensors.items() if not k.startswith("train_state.")}
    _check_stored(config, sum(float(t.numel()) for t in weights.values()), where, "its metadata")
    try:
        config.validate()
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    if _vocab_size(vocab) != config.vocab:
        raise ValueError(f"{where}: the vocabulary has {_vocab_size(vocab)} {_vocab_unit(vocab)}, the model {config.vocab}")
    model = make_model(config)
    load_tinygpt_state(model, weights, where)
    model.eval()
    return model, vocab


def _checkpoint_tokenizer(metadata, where):
    """The tokenizer a checkpoint's metadata holds, as nn::checkpoint_tokenizer reads it: GPT-2's BPE
    (BpeFiles), token ids alone (TokenIds), or characters (a list)."""
    kind = metadata.get("tokenizer.kind")
    if kind == BPE_KIND:
        if "tokenizer.bpe.vocabulary" not in metadata or "tokenizer.bpe.merges" not in metadata:
            raise ValueError(f"{where}: the metadata lacks tokenizer.bpe.vocabulary or tokenizer.bpe.merges")
        text = metadata["tokenizer.bpe.vocabulary"]
        depth = _json_nesting(text.encode("utf-8"))
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"{where}: the BPE vocabulary nests {depth} deep, over the limit of {MAX_JSON_DEPTH}")
        try:
            table = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{where}: the BPE vocabulary is not JSON ({one_line(e)})") from None
        return _bpe_files(table, text, metadata["tokenizer.bpe.merges"], f"{where}: the BPE vocabulary")
    if kind == TOKEN_IDS_KIND:
        size = metadata.get("tokenizer.vocab_size", "")
        if not re.fullmatch(r"[1-9][0-9]{0,17}", size):
            raise ValueError(f"{where}: tokenizer.vocab_size is {_short(size)}, not a positive whole number")
        return TokenIds(int(size))
    if "tokenizer.vocabulary" not in metadata:
        raise ValueError(f"{where}: not a tinygpt checkpoint (no 'tokenizer.vocabulary' in its metadata)")
    vocab = list(metadata["tokenizer.vocabulary"])
    if not vocab:
        raise ValueError(f"{where}: the vocabulary is empty")
    for i in range(1, len(vocab)):
        if not vocab[i - 1] < vocab[i]:
            raise ValueError(f"{where}: the vocabulary must be sorted without repeats, but entry {i} "
                             f"{ascii(vocab[i])} follows {ascii(vocab[i - 1])}")
    return vocab


def _vocab_size(vocab):
    return vocab.size if isinstance(vocab, (BpeFiles, TokenIds)) else len(vocab)


def _vocab_unit(vocab):
    return "tokens" if isinstance(vocab, (BpeFiles, TokenIds)) else "characters"


def save(model, vocab, path, metadata=None):
    """Writes the model as a tinygpt checkpoint: its weights, config and vocabulary and each tensor's
    CRC32C. `vocab` is the characters in id order (sorted by code point, no repeats, as tinygpt's character
    tokenizer requires), GPT-2's BPE files (BpeFiles, read_bpe_dir), which the checkpoint keeps as
    `train --tokenizer DIR` does, or TokenIds (a model of token ids without a tokenizer): what load() gives.
    generate, heatmap, figure and gradflow read it; train --init-from CKPT starts a run from it. It holds no optimizer state, so train --resume does not take it. `metadata`:
    extra string entries to record."""
    config = model.config
    meta = dict(metadata or {})
    meta.update(config.to_metadata())
    meta["format"] = FORMAT
    if isinstance(vocab, (BpeFiles, TokenIds)):
        if vocab.size != config.vocab:
            raise ValueError(f"save: the vocabulary has {vocab.size} tokens, the model {config.vocab}")
        if isinstance(vocab, BpeFiles):
            meta.update({"tokenizer.kind": BPE_KIND, "tokenizer.bpe.vocabulary": vocab.vocabulary, "tokenizer.bpe.merges": vocab.merges})
        else:
            meta.update({"tokenizer.kind": TOKEN_IDS_KIND, "tokenizer.vocab_size": str(vocab.size)})
    else:
        vocab = list(vocab)
        if len(vocab) != config.vocab:
            raise ValueError(f"save: the vocabulary has {len(vocab)} characters, the model {config.vocab}")
        if any(len(c) != 1 for c in vocab) or vocab != sorted(set(vocab)):
            raise ValueError("save: the vocabulary must be single characters sorted by code point without repeats")
        meta["tokenizer.vocabulary"] = "".join(vocab)
    write_safetensors(path, tinygpt_state(model), meta)


BPE_KIND = "gpt2-bpe"  # a checkpoint's "tokenizer.kind" for GPT-2's BPE (nn/train/src/bpe.cpp)
TOKEN_IDS_KIND = "token-ids"  # and for token ids without a tokenizer (nn/train/src/tokenizer.cpp)


@dataclass
class BpeFiles:
    """GPT-2's byte-level BPE as a tinygpt checkpoint keeps it: the texts of its vocabulary (token -> id,
    JSON) and of its merges, and the number of tokens. Only carried here; tinygpt's BpeTokenizer reads them."""
    vocabulary: str
    merges: str
    size: int


@dataclass
class TokenIds:
    """The tokenizer of a model trained on token ids alone (train --data FILE.bin without --tokenizer): ids
    0..size-1, read and written as numbers."""
    size: int


def _bpe_files(table, vocabulary, merges, where):
    """BpeFiles of a parsed vocabulary `table` and the texts; a ValueError naming `where` when the table is
    not a JSON object giving the ids 0..n-1 to its tokens, each once (tinygpt checks the rest on loading)."""
    if not isinstance(table, dict) or not table or any(type(i) is not int for i in table.values()) \
            or sorted(table.values()) != list(range(len(table))):
        raise ValueError(f"{where}: the vocabulary is not a JSON object giving the ids 0..n-1 to its tokens, each once")
    return BpeFiles(vocabulary, merges, len(table))


def read_bpe_dir(directory):
    """BpeFiles from a directory holding Hugging Face's vocab.json + merges.txt or OpenAI's encoder.json +
    vocab.bpe (the pairs tinygpt's --tokenizer DIR takes). The vocabulary must be a JSON object giving the ids
    0..n-1 once each; tinygpt checks the rest (the byte tokens, the merges) when it loads the checkpoint. A
    ValueError names the file; each must be a regular file of at most MAX_HEADER_BYTES (the checkpoint's
    header keeps them), the vocabulary nested at most MAX_JSON_DEPTH deep (read_json)."""
    for vocabulary, merges in (("encoder.json", "vocab.bpe"), ("vocab.json", "merges.txt")):
        paths = [os.path.join(directory, vocabulary), os.path.join(directory, merges)]
        if all(os.path.isfile(p) for p in paths):
            break
    else:
        raise ValueError(f"{directory} holds neither encoder.json + vocab.bpe nor vocab.json + merges.txt (GPT-2's BPE files)")
    table, vocabulary = read_json(paths[0], "a BPE vocabulary", MAX_HEADER_BYTES)
    try:
        merges = read_regular(paths[1], "a BPE merges file", MAX_HEADER_BYTES).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{paths[1]} is not UTF-8 text ({e})") from None
    return _bpe_files(table, vocabulary, merges, paths[0])


def encode(vocab, text):
    """Token ids of `text` (a LongTensor) for a character vocabulary; a character outside it is an error
    naming it. GPT-2's BPE (BpeFiles) and token ids alone (TokenIds) are not encoded here: tinygpt's
    `tokenize` writes a token file of a text."""
    if isinstance(vocab, (BpeFiles, TokenIds)):
        what = "GPT-2's BPE" if isinstance(vocab, BpeFiles) else "token ids alone"
        raise ValueError(f"encode: the tokenizer is {what}, which only tinygpt encodes (tokenize writes a token file)")
    index = {c: i for i, c in enumerate(vocab)}
    unknown = sorted(set(text) - set(index))
    if unknown:
        raise ValueError(f"encode: {len(unknown)} characters not in the vocabulary of {len(vocab)}: {unknown[:10]}")
    return torch.tensor([index[c] for c in text], dtype=torch.long)


def decode(vocab, ids):
    return "".join(vocab[i] for i in ids)


# --- Hugging Face's GPT-2 folder (what GPT2LMHeadModel.from_pretrained reads; export CKPT --hf DIR writes one) -----

MAX_CONFIG_BYTES = 1 << 20  # (GPT-2's config.json is 665 bytes)
# GPT2Config's defaults, for a field config.json leaves out
HF_GPT2_DEFAULTS = {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
                    "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "resid_pdrop": 0.1}
_HF_GELU_EXACT = {"gelu_new": False, "gelu_pytorch_tanh": False, "gelu": True}  # Hugging Face's names -> gelu_exact


def _gpt2_names(names, where):
    """({name in GPT2: the file's name}, the file's name of lm_head.weight or None) of a Hugging Face GPT-2
    file's tensors: "transformer." dropped, the causal-mask buffers (h.N.attn.bias, h.N.attn.masked_bias)
    skipped; a tensor there with and without "transformer." is a ValueError naming `where`."""
    ours, lm_head = {}, None
    for name in names:
        short = name[len("transformer."):] if name.startswith("transformer.") else name
        if re.fullmatch(r"h\.[0-9]+\.attn\.(bias|masked_bias)", short):
            continue
        if short == "lm_head.weight":
            lm_head = name
        elif short in ours:
            raise ValueError(f"{where}: tensor {_short(short)} is there both with and without 'transformer.'")
        else:
            ours[short] = name
    return ours, lm_head


def load_hf_folder(directory, verify=True):
    """The GPT2 model (eval mode, CPU) of a Hugging Face folder, read as GPT2LMHeadModel.from_pretrained
    reads it: DIR/config.json gives n_embd, n_layer, n_head, n_positions, vocab_size, layer_norm_epsilon and
    activation_function (gelu_new or gelu_pytorch_tanh: the tanh GELU; gelu: the exact one), GPT2Config's
    default for a field left out; DIR/model.safetensors holds tensors (F32; F16 and BF16 are widened) named
    wte.weight, wpe.weight, h.N.ln_1.weight, h.N.attn.c_attn.weight (C, 3C), ... with or without
    "transformer.", lm_head.weight absent or equal to wte (tied), the causal-mask buffers (h.N.attn.bias,
    h.N.attn.masked_bias) skipped. The
    tokenizer files are not read: ids in, logits out. What from_pretrained would fill with random weights (a
    missing tensor), and what GPT-2's maths here cannot follow (another activation, epsilon or inner width,
    untied output), is a ValueError naming the file (an OSError when one cannot be read). config.json is
    read with bounds (read_json: at most MAX_CONFIG_BYTES, nested MAX_JSON_DEPTH deep), and its sizes are
    held to model.safetensors' shapes (vocab_size and n_embd to wte's, n_positions to wpe's, n_layer to
    the layers h.N) before the tensors are read or the model built."""
    config_path, weights_path = os.path.join(directory, "config.json"), os.path.join(directory, "model.safetensors")
    hf, _ = read_json(config_path, "a config file", MAX_CONFIG_BYTES)
    if not isinstance(hf, dict):
        raise ValueError(f"{config_path}: not a JSON object")
    if hf.get("model_type", "gpt2") != "gpt2":
        raise ValueError(f"{config_path}: model_type is {_short(hf['model_type'])}, not gpt2")
    field = {key: hf.get(key, default) for key, default in HF_GPT2_DEFAULTS.items()}
    for key in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head"):
        if type(field[key]) is not int or field[key] <= 0:
            raise ValueError(f"{config_path}: {key} is {_short(field[key])}, not a positive whole number")
    if field["activation_function"] not in _HF_GELU_EXACT:
        raise ValueError(f"{config_path}: activation_function is {_short(field['activation_function'])}; GPT-2 here has "
                         "gelu_new, gelu_pytorch_tanh (the tanh GELU) and gelu (the exact one)")
    if field["layer_norm_epsilon"] != LAYER_NORM_EPS:
        raise ValueError(f"{config_path}: layer_norm_epsilon is {_short(field['layer_norm_epsilon'])}; GPT-2 here has {LAYER_NORM_EPS}")
    for key, expected in (("n_inner", (None, 4 * field["n_embd"])), ("tie_word_embeddings", (True,)),
                          ("scale_attn_weights", (True, False)), ("scale_attn_by_inverse_layer_idx", (False,)),
                          ("add_cross_attention", (False,))):
        if key in hf and not any(hf[key] is e or (type(e) is int and hf[key] == e) for e in expected):
            raise ValueError(f"{config_path}: {key} is {_short(hf[key])}; GPT-2 here has {' or '.join(map(_short, expected))}")
    dropout = field["resid_pdrop"]
    config = ModelConfig(kind="gpt2", vocab=field["vocab_size"], n_embd=field["n_embd"], n_head=field["n_head"],
                         n_layer=field["n_layer"], block=field["n_positions"],
                         dropout=float(dropout) if type(dropout) in (int, float) and 0 <= dropout < 1 else 0.0,
                         gelu_exact=_HF_GELU_EXACT[field["activation_function"]], scaled=hf.get("scale_attn_weights", True) is True)
    try:
        config.validate()
    except ValueError as e:
        raise ValueError(f"{config_path}: {e}") from None

    def sizes_are_the_files(shapes):  # before the data is read and the model built
        names, _ = _gpt2_names(shapes, weights_path)
        shape = {short: shapes[name] for short, name in names.items()}
        for key, tensor, axis in (("vocab_size", "wte.weight", 0), ("n_embd", "wte.weight", 1), ("n_positions", "wpe.weight", 0)):
            if tensor not in shape:
                raise ValueError(f"{weights_path}: tensor {tensor} is missing (not a GPT-2 file?)")
            if len(shape[tensor]) != 2:
                raise ValueError(f"{weights_path}: tensor {tensor} is {shape[tensor]}, not a matrix")
            if shape[tensor][axis] != field[key]:
                raise ValueError(f"{config_path}: {key} is {field[key]} but {weights_path} holds {shape[tensor][axis]} "
                                 f"({tensor} {shape[tensor]})")
        layers = {int(m.group(1)) for m in map(re.compile(r"h\.([0-9]+)\.").match, shape) if m}
        if len(layers) != config.n_layer:
            raise ValueError(f"{config_path}: n_layer is {config.n_layer} but {weights_path} holds {len(layers)} layers")
        _check_stored(config, sum(float(math.prod(s)) for s in shape.values()), weights_path, config_path)

    tensors, _ = read_safetensors(weights_path, verify, widen_half=True, check_shapes=sizes_are_the_files)
    names, lm_head = _gpt2_names(tensors, weights_path)
    state = {short: tensors[name] for short, name in names.items()}
    model = make_model(config)
    _fit(model, state, lambda missing, extra, wrong: (
        f"{weights_path}: the tensors do not fit {config_path}'s GPT-2 (n_embd {config.n_embd} n_layer {config.n_layer} "
        f"vocab {config.vocab} n_positions {config.block}): missing {missing[:8]}, extra {extra[:8]}, wrong shape {wrong[:8]}"))
    if lm_head is not None and not torch.equal(tensors[lm_head], state["wte.weight"]):
        raise ValueError(f"{weights_path}: lm_head.weight differs from wte.weight; GPT-2's output layer is tied to the token table")
    return model.eval()


# --- the scripts' rules for their files (examples/support/cli.h's check_outputs) --------------------------

class UsageError(ValueError):
    """A flag or an output the scripts refuse before any work: they exit 2 with its message."""


def one_line(text):
    """`text` with its control characters escaped (\\n, \\x1b...): a file name holding a newline cannot
    split an error message in two."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in str(text))


def file_kind(mode):
    """nn::file_kind's words for what a path is when it is not a regular file."""
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return kind
    return "not a regular file"


def open_regular(path, what, limit=None, text=False):
    """(the file open for reading, its size) once `path` is known to be a regular file of at most `limit`
    bytes, or a ValueError naming it, as tinygpt's loaders refuse (an OSError when it cannot be opened): a
    FIFO is refused, not waited on, and a device is not read without end. `what` names the kind of file the
    path should have been ("a safetensors file"). text: open as open(path, encoding="utf-8") opens it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # (O_NONBLOCK: opening a FIFO does not wait)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path}: is {file_kind(st.st_mode)}, not {what}")
        if limit is not None and st.st_size > limit:
            raise ValueError(f"{path}: the file is {st.st_size} bytes, over the limit of {limit}")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "r", encoding="utf-8") if text else os.fdopen(fd, "rb"), st.st_size


def _read_exactly(f, n, where):
    """n bytes of f, which fstat said it holds: a file cut while it is read is refused."""
    raw = f.read(n)
    if len(raw) != n:
        raise ValueError(f"{where}: the file ended after {len(raw)} of {n} bytes: it changed while it was read")
    return raw


def read_regular(path, what, limit=None):
    """The bytes of a regular file of at most `limit` bytes (open_regular), read by its size."""
    f, size = open_regular(path, what, limit)
    with f:
        return _read_exactly(f, size, path)


def _same_file(a, b):
    """By device and inode when both exist (a hard or symbolic link to the input counts), else by the path
    with its symbolic links resolved."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_outputs(outputs, inputs, force):
    """Checks, before any work, the files a script will write, as tinygpt's programs do. `outputs` and
    `inputs` are (flag, path) pairs; a path of None was not given. Raises UsageError for an output that is
    the same file as an input or another output (even with --force), that is a symbolic link, a directory,
    a device, a FIFO or a socket, or that exists without `force`; OSError when its directory cannot take a
    new file (a probe file is created there and removed, as the real write will)."""
    inputs = [(flag, path) for flag, path in inputs if path is not None]
    for i, (flag, out) in enumerate(outputs):
        what = f"{flag} {out}"
        for in_flag, path in inputs:
            if _same_file(out, path):
                raise UsageError(f"{what} is the same file as {in_flag} {path}: writing it would destroy the input")
        for other_flag, other in outputs[:i]:
            if _same_file(out, other):
                raise UsageError(f"{what} is also {other_flag} {other}: two outputs cannot share a file")
        try:
            st = os.lstat(out)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise UsageError(f"{what} is a symbolic link; name the file it points to")
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{what} is {file_kind(st.st_mode)}, not a file to write")
        if st is not None and not force:
            raise UsageError(f"{what} exists; add --force to replace it")
        directory = os.path.dirname(out) or "."
        probe = os.path.join(directory, f".{os.path.basename(out)}.probe-{os.getpid()}")
        try:
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
            os.unlink(probe)
        except OSError as e:
            raise OSError(f"{what}: cannot create a file in {directory}: {e.strerror}") from None


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose refusal of a flag is one line on stderr and exit 2, as tinygpt's programs'."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {one_line(message)} (--help lists the flags)\n")
