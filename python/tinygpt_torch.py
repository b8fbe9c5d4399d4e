"""tinygpt's model ladder in PyTorch, and its checkpoints read and written without the safetensors package.

The only dependency is torch (and numpy, which torch brings; Debian 12: apt-get install python3-torch libopenblas0-pthread; without the
second, torch multiplies with the reference BLAS, many times slower). Run it with the python3 that has torch
(/usr/bin/python3 on Debian; a pyenv or venv python3 earlier on PATH may not).

    import tinygpt_torch as tg
    model, vocab = tg.load("run.safetensors")          # a tinygpt checkpoint: any kind of the ladder
    ids = torch.tensor([[vocab.index(c) for c in "ROMEO:"]])
    logits = model(ids)                                 # (B, T) LongTensor -> (B, T, V) float32 logits
    tg.save(model, vocab, "tuned.safetensors")          # generate, heatmap, figure and train --init-from read it

The maths is nn/src/models.cpp's, layer for layer: token + position embeddings (N(0, 1) tables), heads
without biases whose scores are divided by sqrt(head width) and masked causally, exact (erf) GELU between
Linear(C, 4C) and Linear(4C, C), LayerNorm with eps 1e-5 (biased variance), residual blocks
x + attention(norm1(x)) and x + feed_forward(norm2(x)), a final LayerNorm and lm_head with a bias. Dropout
(gpt only) is on the embeddings and on each residual branch in training mode, as tinygpt's.

The modules carry tinygpt's own parameter names ("blocks.0.attention.heads.1.query.weight"), so the
mapping to a checkpoint is one rule each way: a Linear weight is stored (in, out) by tinygpt (x @ W) and
(out, in) by torch.nn.Linear, so it is transposed; a LayerNorm's scale is "gain" in tinygpt and "weight" in
torch. Everything else is copied as it is.

Shape legend: B batch, T time (window), C n_embd, H head width, V vocab.
"""
import json
import math
import os
import struct
import tempfile
from dataclasses import dataclass

import torch
import torch.nn as tnn
import torch.nn.functional as F

FORMAT = "tinygpt-checkpoint-1"
KINDS = ("bigram", "average", "head", "multihead", "gpt")
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

    def to_metadata(self):
        return {"model.kind": self.kind, "model.vocab": str(self.vocab), "model.n_embd": str(self.n_embd),
                "model.n_head": str(self.n_head), "model.n_layer": str(self.n_layer), "model.block": str(self.block),
                "model.dropout": _float_text(self.dropout), "model.feed_forward": "1" if self.feed_forward else "0",
                "model.gpt2_init": "1" if self.gpt2_init else "0"}

    @staticmethod
    def from_metadata(metadata, where="checkpoint"):
        def field(key):
            if key not in metadata:
                raise ValueError(f"{where}: not a tinygpt checkpoint (no '{key}' in its metadata)")
            return metadata[key]

        def integer(key):
            text = field(key)
            try:
                return int(text)
            except ValueError:
                raise ValueError(f"{where}: '{key}' is '{text}', not a whole number") from None

        kind = field("model.kind")
        if kind not in KINDS:
            raise ValueError(f"{where}: unknown model kind '{kind}' ({', '.join(KINDS)})")
        return ModelConfig(kind=kind, vocab=integer("model.vocab"), n_embd=integer("model.n_embd"),
                           n_head=integer("model.n_head"), n_layer=integer("model.n_layer"), block=integer("model.block"),
                           dropout=float(field("model.dropout")), feed_forward=integer("model.feed_forward") != 0,
                           gpt2_init=integer("model.gpt2_init") != 0)

    def validate(self):
        """nn::validate_model_config's checks, so a model tinygpt would refuse is refused here first."""
        if self.kind not in KINDS:
            raise ValueError(f"model: unknown kind '{self.kind}' ({', '.join(KINDS)})")
        if self.vocab <= 0:
            raise ValueError(f"model: vocab must be positive, got {self.vocab}")
        if self.kind != "bigram" and (self.n_embd <= 0 or self.block <= 0):
            raise ValueError(f"model: n_embd ({self.n_embd}) and block ({self.block}) must be positive")
        if self.kind in ("multihead", "gpt") and (self.n_head <= 0 or self.n_embd % self.n_head != 0):
            raise ValueError(f"model: n_head {self.n_head} must divide n_embd {self.n_embd}")
        if self.kind == "gpt" and self.n_layer <= 0:
            raise ValueError(f"model: n_layer must be positive, got {self.n_layer}")
        if self.kind == "gpt" and not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"model: dropout {self.dropout} must be in [0, 1)")
        if self.feed_forward and self.kind != "multihead":
            raise ValueError(f"model: feed_forward applies to multihead only, not {self.kind}")


def _float_text(x):
    """A float as text that C's strtof reads back to the same float32 (repr: the shortest that round-trips)."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


# --- the models (nn/src/models.cpp, nn/src/attention.cpp) -----------------------------------------------

class Head(tnn.Module):
    """One causal head: (B, T, C) -> (B, T, H); scores Q K^T / sqrt(H), masked, softmax, times V."""

    def __init__(self, n_embd, head_size):
        super().__init__()
        self.query = tnn.Linear(n_embd, head_size, bias=False)
        self.key = tnn.Linear(n_embd, head_size, bias=False)
        self.value = tnn.Linear(n_embd, head_size, bias=False)

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.query(x), self.key(x), self.value(x)                    # each (B, T, H)
        scores = (q @ k.transpose(1, 2)) * (1.0 / math.sqrt(q.shape[-1]))      # (B, T, T)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)     # above the diagonal: the future
        return F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v  # (B, T, H)


class MultiHeadAttention(tnn.Module):
    """Heads side by side, concatenated, projected (with a bias): (B, T, C) -> (B, T, C)."""

    def __init__(self, n_embd, n_head, dropout=0.0):
        super().__init__()
        self.heads = tnn.ModuleList(Head(n_embd, n_embd // n_head) for _ in range(n_head))
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
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.norm1 = tnn.LayerNorm(n_embd, eps=LAYER_NORM_EPS)
        self.attention = MultiHeadAttention(n_embd, n_head, dropout)
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
        self.head = Head(config.n_embd, config.n_embd)
        self.lm_head = tnn.Linear(config.n_embd, config.vocab)

    def forward(self, ids):
        return self.lm_head(self.head(self.embed(ids)))


class MultiHead(Positional):
    def __init__(self, config):
        super().__init__(config)
        self.attention = MultiHeadAttention(config.n_embd, config.n_head)
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
        self.blocks = tnn.ModuleList(Block(config.n_embd, config.n_head, config.dropout) for _ in range(config.n_layer))
        self.final_norm = tnn.LayerNorm(config.n_embd, eps=LAYER_NORM_EPS)
        self.lm_head = tnn.Linear(config.n_embd, config.vocab)

    def forward(self, ids):
        x = F.dropout(self.embed(ids), self.config.dropout, self.training)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.final_norm(x))


_MODELS = {"bigram": Bigram, "average": AverageModel, "head": SingleHead, "multihead": MultiHead, "gpt": GPT}


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
    own = dict(model.named_parameters())
    missing, extra = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    wrong = sorted(f"{n} {tuple(state[n].shape)} (the model's {tuple(own[n].shape)})"
                   for n in set(own) & set(state) if state[n].shape != own[n].shape)
    if missing or extra or wrong:
        raise ValueError(f"{where}: the tensors do not fit the {model.config.kind} model: missing {missing}, "
                         f"extra {extra}, wrong shape {wrong}")
    with torch.no_grad():
        for name, p in own.items():
            p.copy_(state[name])


# --- safetensors with tinygpt's checksums (nn/include/nn/train/checkpoint.h) -------------------------------

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


def read_safetensors(path, verify=True):
    """(tensors by name in file order, metadata without the checksums) of an F32 safetensors file.
    With verify, every tensor that has a "crc32c.NAME" entry must match it (a corrupt file is refused)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: {len(blob)} bytes, too short for a safetensors file")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise ValueError(f"{path}: the header length {n} runs past the end of the file")
    header = json.loads(blob[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = memoryview(blob)[8 + n:]
    tensors = {}
    for name, info in sorted(header.items(), key=lambda item: item[1]["data_offsets"][0]):
        if info["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name} is {info['dtype']}; tinygpt writes F32 only")
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        if verify and f"crc32c.{name}" in metadata:
            found = f"{crc32c(raw):08x}"
            if found != metadata[f"crc32c.{name}"]:
                raise ValueError(f"{path}: tensor {name} has CRC32C {found}, the file says {metadata[f'crc32c.{name}']}: corrupt")
        t = torch.frombuffer(bytearray(raw), dtype=torch.float32) if end > begin else torch.zeros(0)
        tensors[name] = t.reshape(info["shape"])
    metadata = {k: v for k, v in metadata.items() if not k.startswith("crc32c.")}
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    """Writes F32 tensors (in the given order) and metadata plus each tensor's "crc32c.NAME", atomically:
    a temporary file in the same directory, flushed, fsynced and renamed over `path`."""
    blobs, entries, offset = [], {}, 0
    all_metadata = dict(metadata)
    for name, t in tensors.items():
        raw = _stored_bytes(t)
        all_metadata[f"crc32c.{name}"] = f"{crc32c(raw):08x}"
        entries[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header = json.dumps({"__metadata__": all_metadata, **entries}, separators=(",", ":"), ensure_ascii=False).encode()
    header += b" " * ((8 - len(header) % 8) % 8)  # the data starts 8-byte aligned, as tinygpt writes it
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(header)))
            f.write(header)
            for raw in blobs:
                f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _stored_bytes(t):
    """float32, little-endian, row-major: the bytes a tinygpt file stores (torch's .numpy() needs numpy,
    which python3-torch depends on)."""
    return t.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4", copy=False).tobytes()


# --- checkpoints -----------------------------------------------------------------------------------------

def load(path, verify=True):
    """(model, vocab) from a tinygpt checkpoint (train --out, or save() below). The model is in eval mode
    on the CPU; vocab lists the characters in id order. The optimizer state in a training checkpoint
    ("train_state.*") is ignored."""
    tensors, metadata = read_safetensors(path, verify)
    if metadata.get("format") != FORMAT:
        raise ValueError(f"{path}: checkpoint format '{metadata.get('format')}' is not '{FORMAT}'")
    config = ModelConfig.from_metadata(metadata, path)
    if "tokenizer.vocabulary" not in metadata:
        raise ValueError(f"{path}: not a tinygpt checkpoint (no 'tokenizer.vocabulary' in its metadata)")
    vocab = list(metadata["tokenizer.vocabulary"])
    if len(vocab) != config.vocab:
        raise ValueError(f"{path}: the vocabulary has {len(vocab)} characters, the model {config.vocab}")
    model = make_model(config)
    weights = {k: v for k, v in tensors.items() if not k.startswith("train_state.")}
    load_tinygpt_state(model, weights, path)
    model.eval()
    return model, vocab


def save(model, vocab, path, metadata=None):
    """Writes the model as a tinygpt checkpoint: its weights, config and vocabulary (characters in id
    order: sorted by code point, no repeats, as tinygpt's tokenizer requires) and each tensor's CRC32C.
    generate, heatmap, figure and gradflow read it; train --init-from CKPT starts a run from it. It holds
    no optimizer state, so train --resume does not take it. `metadata`: extra string entries to record."""
    config = model.config
    vocab = list(vocab)
    if len(vocab) != config.vocab:
        raise ValueError(f"save: the vocabulary has {len(vocab)} characters, the model {config.vocab}")
    if any(len(c) != 1 for c in vocab) or vocab != sorted(set(vocab)):
        raise ValueError("save: the vocabulary must be single characters sorted by code point without repeats")
    meta = dict(metadata or {})
    meta.update(config.to_metadata())
    meta.update({"format": FORMAT, "tokenizer.vocabulary": "".join(vocab)})
    write_safetensors(path, tinygpt_state(model), meta)


def encode(vocab, text):
    """Token ids of `text` (a LongTensor); a character outside the vocabulary is an error naming it."""
    index = {c: i for i, c in enumerate(vocab)}
    unknown = sorted(set(text) - set(index))
    if unknown:
        raise ValueError(f"encode: {len(unknown)} characters not in the vocabulary of {len(vocab)}: {unknown[:10]}")
    return torch.tensor([index[c] for c in text], dtype=torch.long)


def decode(vocab, ids):
    return "".join(vocab[i] for i in ids)
