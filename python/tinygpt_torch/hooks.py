"""Hook points: the activations worth reading, by the names TransformerLens gives them and tinygpt's C++ models
use (docs/hooks.md), in plain PyTorch.

A HookPoint is an nn.Identity (no parameters, no buffers: the state_dicts do not change) that the models pass
each such activation through; a torch forward hook on it reads the value, or returns another of the same shape,
which then flows on. hook_points(model) maps the names to the modules:

    points = hook_points(model)                               # {"blocks.0.hook_resid_pre": HookPoint, ...}
    points["blocks.1.attn.hook_pattern"].register_forward_hook(lambda m, inputs, out: print(out.shape))

The names are the modules' paths with the kinds' own attribute names mapped to TransformerLens's (gpt's
blocks.0.attention and gpt2's h.0.attn and llama's layers.0.self_attn are all blocks.0.attn), as the C++ models
register them; the model's output point (hook_logits) is "logits".

Legend: B batch, T time, n_head heads of width H, C channels.
"""
import torch
import torch.nn as tnn
import torch.nn.functional as F


class HookPoint(tnn.Identity):
    """An activation by name: the identity, for torch forward hooks to read or replace."""


# each kind's attribute names -> TransformerLens's (one table: no name means two things in two kinds)
HOOK_ALIASES = {
    "attention": "attn", "feed_forward": "mlp", "norm1": "ln1", "norm2": "ln2", "final_norm": "ln_final",  # gpt
    "h": "blocks", "ln_1": "ln1", "ln_2": "ln2", "ln_f": "ln_final",                                      # gpt2
    "layers": "blocks", "self_attn": "attn", "input_layernorm": "ln1", "post_attention_layernorm": "ln2",
    "norm": "ln_final",                                                                                   # llama
}

ATTENTION_HOOKS = ("hook_q", "hook_k", "hook_v", "hook_attn_scores", "hook_pattern", "hook_z")
RESIDUAL_HOOKS = ("hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post")


def hook_name(path):
    """A HookPoint's module path -> its TransformerLens name."""
    return "logits" if path == "hook_logits" else ".".join(HOOK_ALIASES.get(part, part) for part in path.split("."))


def hook_points(model):
    """{name: HookPoint} of every hook point of the model, depth first in registration order."""
    return {hook_name(path): m for path, m in model.named_modules() if isinstance(m, HookPoint)}


def add_hook_points(module, names):
    for name in names:
        setattr(module, name, HookPoint())


def attend(attn, q, k, v, scale):
    """Causal attention through attn's hook points after hook_q, hook_k, hook_v: q, k, v (B, T, n_head, H) (k
    and v already one per query head) -> hook_z's value (B, T, n_head, H). scale(q k^T) as each kind writes it
    (the ladder multiplies by 1 / sqrt(H), GPT-2 and Llama divide by sqrt(H)); masked with -inf above the
    diagonal, as hook_attn_scores shows them."""
    T = q.shape[1]
    scores = scale(q.transpose(1, 2) @ k.permute(0, 2, 3, 1))  # (B, n_head, T, T)
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)  # above the diagonal: the future
    scores = attn.hook_attn_scores(scores.masked_fill(mask, float("-inf")))
    pattern = attn.hook_pattern(F.softmax(scores, dim=-1))  # (B, n_head, T, T)
    return attn.hook_z((pattern @ v.transpose(1, 2)).transpose(1, 2))  # (B, T, n_head, H)


def residual_flow(block, x, attention, mlp):
    """A pre-norm block's stream through block's residual hook points: x (B, T, C) + attention(x), then that +
    mlp(that) (each normalizing the stream itself) -> (B, T, C)."""
    x = block.hook_resid_pre(x)
    mid = block.hook_resid_mid(x + block.hook_attn_out(attention(x)))
    return block.hook_resid_post(mid + block.hook_mlp_out(mlp(mid)))
