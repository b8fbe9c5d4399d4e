"""tinygpt's model kinds in PyTorch, under tinygpt's own parameter names ("blocks.0.attention.heads.1.query.weight").

The ladder is nn/src/models.cpp's maths, layer for layer: token + position embeddings (N(0, 1) tables), heads
without biases whose scores are divided by sqrt(head width) and masked causally, exact (erf) GELU between
Linear(C, 4C) and Linear(4C, C), LayerNorm with eps 1e-5 (biased variance), residual blocks
x + attention(norm1(x)) and x + feed_forward(norm2(x)), a final LayerNorm and lm_head with a bias. Dropout
(gpt only) is on the embeddings and on each residual branch in training mode, as tinygpt's.

The gpt2 kind is Hugging Face's GPT-2 maths instead (class GPT2, written from modeling_gpt2.py): one c_attn
projection, biases in every layer, the tanh GELU (or the exact one, gelu_exact), the output tied to the token
table; its layers are Conv1D, whose weights are (in, out) as tinygpt's, so they are copied without a transpose.
Both GPTs are built from the same parts: embed, causal_attention, feed_forward, residual_block and
LanguageModel.transformer.

Every activation TransformerLens names passes a hook point (hooks.py; docs/hooks.md has the names and shapes):
hook_embed, hook_pos_embed, blocks.L.hook_resid_pre ... hook_resid_post, ln1/ln2/ln_final.hook_normalized,
attn.hook_q ... hook_z, mlp.hook_post, logits. They hold no parameters, so the state_dicts are as before.

Shape legend: B batch, T time (window), C n_embd, H head width, V vocab.
"""
import math

import torch
import torch.nn as tnn
import torch.nn.functional as F

from .config import ModelConfig
from .hooks import ATTENTION_HOOKS, RESIDUAL_HOOKS, HookPoint, add_hook_points, attend, heads_view, residual_flow

LAYER_NORM_EPS = 1e-5


# --- the parts both GPTs are made of ------------------------------------------------------------------------

class LayerNorm(tnn.LayerNorm):
    """torch's LayerNorm, its output through hook_normalized."""

    def __init__(self, n_embd, eps):
        super().__init__(n_embd, eps=eps)
        self.hook_normalized = HookPoint()

    def forward(self, x):  # (..., C) -> (..., C)
        return self.hook_normalized(super().forward(x))


def layer_norm(n_embd):
    return LayerNorm(n_embd, eps=LAYER_NORM_EPS)


def causal_attention(scores, v):
    """softmax(scores) @ v with each position's future masked out: scores (..., T, T), v (..., T, H) -> (..., T, H).
    The scores come scaled by the caller (the ladder multiplies by 1 / sqrt(H), GPT-2 divides by sqrt(H), as
    each was written: the two differ in the last bit)."""
    T = scores.shape[-1]
    mask = torch.ones(T, T, dtype=torch.bool, device=scores.device).triu(1)  # above the diagonal: the future
    return F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v


def feed_forward(x, up, hook_post, down, dropout, training, approximate="none"):
    """down(hook_post(GELU(up(x)))), then dropout: (B, T, C) -> (B, T, C), up C -> 4C, down 4C -> C."""
    return F.dropout(down(hook_post(F.gelu(up(x), approximate=approximate))), dropout, training)


def residual_block(block, x, norm1, attention, norm2, feed_forward):
    """Both GPTs' block: x + attention(norm1(x)), then that + feed_forward(norm2(that)), through block's residual
    hook points. (B, T, C) -> (B, T, C)."""
    return residual_flow(block, x, lambda x: attention(norm1(x)), lambda x: feed_forward(norm2(x)))


class LanguageModel(tnn.Module):
    """Every kind: forward(ids) maps a (B, T) LongTensor to (B, T, V) logits; `config` is its ModelConfig."""

    def __init__(self, config):
        super().__init__()
        config.validate()
        self.config = config
        self.hook_logits = HookPoint()  # "logits": every kind's output (B, T, V)

    def block_size(self):
        return 1 if self.config.kind == "bigram" else self.config.block

    def check_ids(self, ids):
        if ids.dim() != 2:
            raise ValueError(f"{self.config.kind}: ids must be (B, T), got shape {tuple(ids.shape)}")
        if self.config.kind != "bigram" and ids.shape[1] > self.config.block:
            raise ValueError(f"{self.config.kind}: window of {ids.shape[1]} is longer than the block size {self.config.block}")

    def embeddings(self, ids, token, position):
        """(B, T) ids, checked -> (B, T, C): rows of the token table (V, C) plus rows 0..T-1 of the position table,
        through hook_embed and hook_pos_embed (the position rows as (B, T, C), as TransformerLens shows them)."""
        self.check_ids(ids)
        tokens = self.hook_embed(token(ids))  # (B, T, C)
        return tokens + self.hook_pos_embed(position(torch.arange(ids.shape[1], device=ids.device)).expand_as(tokens))

    def transformer(self, ids, token, position, blocks, final_norm):
        """Both GPTs up to their output layer: (B, T) ids -> embeddings, dropout, the blocks, the final
        LayerNorm -> (B, T, C)."""
        x = F.dropout(self.embeddings(ids, token, position), self.config.dropout, self.training)
        for block in blocks:
            x = block(x)
        return final_norm(x)


# --- the ladder (nn/src/models.cpp, nn/src/attention.cpp) -----------------------------------------------------

class Head(tnn.Module):
    """One causal head: (B, T, C) -> (B, T, H); scores Q K^T / sqrt(H) (unless not scaled), masked, softmax, times V."""

    def __init__(self, n_embd, head_size, scaled=True):
        super().__init__()
        self.scaled = scaled
        self.query = tnn.Linear(n_embd, head_size, bias=False)
        self.key = tnn.Linear(n_embd, head_size, bias=False)
        self.value = tnn.Linear(n_embd, head_size, bias=False)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)  # each (B, T, H)
        scores = q @ k.transpose(1, 2)                        # (B, T, T)
        if self.scaled:
            scores = scores * (1.0 / math.sqrt(q.shape[-1]))
        return causal_attention(scores, v)                    # (B, T, H)


class MultiHeadAttention(tnn.Module):
    """Heads side by side, concatenated, projected (with a bias): (B, T, C) -> (B, T, C)."""

    def __init__(self, n_embd, n_head, dropout=0.0, scaled=True):
        super().__init__()
        self.heads = tnn.ModuleList(Head(n_embd, n_embd // n_head, scaled) for _ in range(n_head))
        self.projection = tnn.Linear(n_embd, n_embd)
        self.dropout, self.scaled = dropout, scaled
        add_hook_points(self, ATTENTION_HOOKS)

    def forward(self, x):
        B, T, C = x.shape
        if not any(getattr(self, name).hooked() for name in ATTENTION_HOOKS[:-1]):
            # each head on its own, as tinygpt (and the benches) run them; hook_z sees them side by side
            z = self.hook_z(torch.cat([h(x) for h in self.heads], dim=-1).view(B, T, len(self.heads), -1))
        else:  # the heads' queries, keys and values stacked for the hook points: (B, n_head, T, H) each
            q, k, v = (heads_view(hook, torch.stack([part(h)(x) for h in self.heads], dim=1))
                       for hook, part in ((self.hook_q, lambda h: h.query), (self.hook_k, lambda h: h.key),
                                          (self.hook_v, lambda h: h.value)))
            factor = 1.0 / math.sqrt(q.shape[-1])
            z = attend(self, q, k, v, (lambda s: s * factor) if self.scaled else (lambda s: s))  # (B, T, n_head, H)
        return F.dropout(self.projection(z.reshape(B, T, C)), self.dropout, self.training)


class FeedForward(tnn.Module):
    """Linear C -> 4C, exact GELU, Linear 4C -> C: (B, T, C) -> (B, T, C)."""

    def __init__(self, n_embd, dropout=0.0):
        super().__init__()
        self.up = tnn.Linear(n_embd, 4 * n_embd)
        self.down = tnn.Linear(4 * n_embd, n_embd)
        self.dropout = dropout
        self.hook_post = HookPoint()  # (B, T, 4C): after the GELU

    def forward(self, x):
        return feed_forward(x, self.up, self.hook_post, self.down, self.dropout, self.training)


class Block(tnn.Module):
    def __init__(self, n_embd, n_head, dropout, scaled=True):
        super().__init__()
        self.norm1 = layer_norm(n_embd)
        self.attention = MultiHeadAttention(n_embd, n_head, dropout, scaled)
        self.norm2 = layer_norm(n_embd)
        self.feed_forward = FeedForward(n_embd, dropout)
        add_hook_points(self, RESIDUAL_HOOKS)

    def forward(self, x):
        return residual_block(self, x, self.norm1, self.attention, self.norm2, self.feed_forward)


class Positional(LanguageModel):
    """The rungs above the bigram: a token table and a position table."""

    def __init__(self, config):
        super().__init__(config)
        self.token = tnn.Embedding(config.vocab, config.n_embd)     # (V, C)
        self.position = tnn.Embedding(config.block, config.n_embd)  # (block, C)
        self.hook_embed, self.hook_pos_embed = HookPoint(), HookPoint()  # (B, T, C) each

    def embed(self, ids):  # (B, T) -> (B, T, C)
        return self.embeddings(ids, self.token, self.position)


class Bigram(LanguageModel):
    def __init__(self, config):
        super().__init__(config)
        self.logits_table = tnn.Embedding(config.vocab, config.vocab)  # (V, V)

    def forward(self, ids):
        self.check_ids(ids)
        return self.hook_logits(self.logits_table(ids))


class AverageModel(Positional):
    def __init__(self, config):
        super().__init__(config)
        self.lm_head = tnn.Linear(config.n_embd, config.vocab)

    def forward(self, ids):
        x = self.embed(ids)
        T = x.shape[1]
        weights = torch.tril(torch.ones(T, T, device=x.device))
        weights = weights / weights.sum(-1, keepdim=True)  # row i: 1/(i+1) on positions 0..i
        return self.hook_logits(self.lm_head(weights @ x))


class SingleHead(Positional):
    def __init__(self, config):
        super().__init__(config)
        self.head = Head(config.n_embd, config.n_embd, config.scaled)
        self.lm_head = tnn.Linear(config.n_embd, config.vocab)

    def forward(self, ids):
        return self.hook_logits(self.lm_head(self.head(self.embed(ids))))


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
        return self.hook_logits(self.lm_head(x))


class GPT(Positional):
    def __init__(self, config):
        super().__init__(config)
        self.blocks = tnn.ModuleList(Block(config.n_embd, config.n_head, config.dropout, config.scaled) for _ in range(config.n_layer))
        self.final_norm = layer_norm(config.n_embd)
        self.lm_head = tnn.Linear(config.n_embd, config.vocab)

    def forward(self, ids):
        x = self.transformer(ids, self.token, self.position, self.blocks, self.final_norm)  # (B, T, C)
        return self.hook_logits(self.lm_head(x))


class AttentionOnlyBlock(tnn.Module):
    """x + attn(x), no norm, no MLP: (B, T, C) -> (B, T, C)."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.attn = MultiHeadAttention(n_embd, n_head)
        add_hook_points(self, ("hook_resid_pre", "hook_attn_out", "hook_resid_post"))

    def forward(self, x):
        x = self.hook_resid_pre(x)
        return self.hook_resid_post(x + self.hook_attn_out(self.attn(x)))


class AttentionOnly(Positional):
    """nn::AttentionOnly (nn/attention_only.h, the attn_only kind, examples/induction's model): the embeddings,
    blocks of attention only adding to the stream, and an unembedding with a bias; no norm anywhere."""

    def __init__(self, config):
        super().__init__(config)
        self.blocks = tnn.ModuleList(AttentionOnlyBlock(config.n_embd, config.n_head) for _ in range(config.n_layer))
        self.unembed = tnn.Linear(config.n_embd, config.vocab)

    def forward(self, ids):
        x = self.embed(ids)  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        return self.hook_logits(self.unembed(x))


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

        add_hook_points(self, ATTENTION_HOOKS)

    def forward(self, x):
        B, T, C = x.shape
        H = C // self.n_head
        q, k, v = (heads_view(hook, t.view(B, T, self.n_head, H).transpose(1, 2))  # each (B, n_head, T, H)
                   for hook, t in zip((self.hook_q, self.hook_k, self.hook_v), self.c_attn(x).split(C, dim=2)))
        y = attend(self, q, k, v, (lambda s: s / math.sqrt(H)) if self.scaled else (lambda s: s))  # (B, T, n_head, H)
        return F.dropout(self.c_proj(y.reshape(B, T, C)), self.dropout, self.training)


class GPT2MLP(tnn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = Conv1D(config.n_embd, 4 * config.n_embd)
        self.c_proj = Conv1D(4 * config.n_embd, config.n_embd)
        self.approximate = "none" if config.gelu_exact else "tanh"  # Hugging Face's gelu_new is the tanh one
        self.dropout = config.dropout
        self.hook_post = HookPoint()  # (B, T, 4C): after the GELU

    def forward(self, x):
        return feed_forward(x, self.c_fc, self.hook_post, self.c_proj, self.dropout, self.training, self.approximate)


class GPT2Block(tnn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = layer_norm(config.n_embd)
        self.attn = GPT2Attention(config)
        self.ln_2 = layer_norm(config.n_embd)
        self.mlp = GPT2MLP(config)
        add_hook_points(self, RESIDUAL_HOOKS)

    def forward(self, x):
        return residual_block(self, x, self.ln_1, self.attn, self.ln_2, self.mlp)


class GPT2(LanguageModel):
    """GPT2LMHeadModel's maths under its names (without "transformer."): wte, wpe, h.N.ln_1, h.N.attn.c_attn,
    h.N.attn.c_proj, h.N.ln_2, h.N.mlp.c_fc, h.N.mlp.c_proj, ln_f; lm_head is wte (tied): logits = x @ wte^T.
    Initialized as GPT-2 (N(0, 0.02); the c_proj weights 0.02 / sqrt(2 n_layer); biases 0)."""

    def __init__(self, config):
        super().__init__(config)
        self.wte = tnn.Embedding(config.vocab, config.n_embd)   # (V, C)
        self.wpe = tnn.Embedding(config.block, config.n_embd)   # (block, C)
        self.hook_embed, self.hook_pos_embed = HookPoint(), HookPoint()  # (B, T, C) each
        self.h = tnn.ModuleList(GPT2Block(config) for _ in range(config.n_layer))
        self.ln_f = layer_norm(config.n_embd)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    p.normal_(std=0.02 / math.sqrt(2 * config.n_layer))
                elif name in ("wte.weight", "wpe.weight"):
                    p.normal_(std=0.02)

    def forward(self, ids):
        x = self.transformer(ids, self.wte, self.wpe, self.h, self.ln_f)
        return self.hook_logits(x @ self.wte.weight.t())  # (B, T, V): the head tied to the token table


_MODELS = {"bigram": Bigram, "average": AverageModel, "head": SingleHead, "multihead": MultiHead, "gpt": GPT, "gpt2": GPT2,
           "attn_only": AttentionOnly}


def make_model(config):
    """A model of the config's kind (a ModelConfig, or a dict of its fields), with torch's initialization."""
    if isinstance(config, dict):
        config = ModelConfig(**config)
    return _MODELS[config.kind](config)
