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
from torch.nn.modules import module as _module


def _global_hooks():
    """Whether any module hook is registered for every module (torch.nn.modules.module's globals)."""
    return any(getattr(_module, name, None) for name in
               ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks"))


class HookPoint(tnn.Identity):
    """An activation by name: the identity, for torch forward hooks to read or replace. While nothing is hooked
    it returns its input without nn.Module's call machinery, so the models cost what they cost before (the
    benches compare them with tinygpt's)."""

    def __call__(self, x):
        if self.hooked():
            return super().__call__(x)
        return x

    def hooked(self):
        return bool(self._forward_hooks or self._forward_pre_hooks or self._backward_hooks) or _global_hooks()


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


def heads_view(hook, x):
    """x (B, n_head, T, X) through a hook point that shows it as TransformerLens does, (B, T, n_head, X)."""
    return hook(x.transpose(1, 2)).transpose(1, 2) if hook.hooked() else x


def attend(attn, q, k, v, scale):
    """Causal attention through attn's hook points hook_attn_scores, hook_pattern and hook_z: q, k, v
    (B, n_head, T, H) (k and v already one per query head) -> hook_z's value (B, T, n_head, H). scale(q k^T)
    as each kind writes it (the ladder multiplies by 1 / sqrt(H), GPT-2 and Llama divide by sqrt(H)); masked
    with -inf above the diagonal, as hook_attn_scores shows them."""
    T = q.shape[2]
    scores = scale(q @ k.transpose(-2, -1))  # (B, n_head, T, T)
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)  # above the diagonal: the future
    scores = attn.hook_attn_scores(scores.masked_fill(mask, float("-inf")))
    pattern = attn.hook_pattern(F.softmax(scores, dim=-1))  # (B, n_head, T, T)
    return attn.hook_z((pattern @ v).transpose(1, 2))  # (B, T, n_head, H)


def residual_flow(block, x, attention, mlp):
    """A pre-norm block's stream through block's residual hook points: x (B, T, C) + attention(x), then that +
    mlp(that) (each normalizing the stream itself) -> (B, T, C)."""
    x = block.hook_resid_pre(x)
    mid = block.hook_resid_mid(x + block.hook_attn_out(attention(x)))
    return block.hook_resid_post(mid + block.hook_mlp_out(mlp(mid)))
