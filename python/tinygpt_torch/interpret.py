"""Asking a model why, in plain PyTorch with forward hooks: the reference the C++ programs cache, lens, patch,
attribute and ablate (nn/interpret, issue 43) are checked against (tests/python/test_interpret_torch.py). Written
from TransformerLens's definitions, not from the C++ code: every number comes from torch forward hooks on the
models' hook points (hooks.py) and the models' own modules and weights.

    from tinygpt_torch import interpret
    cache = interpret.run_with_cache(model, ids)                   # {"blocks.0.hook_resid_pre": (1, T, C), ...}
    lens = interpret.logit_lens(model, ids)                        # {"logprob_next": (L+1) x (T-1), "top": ...}
    dla = interpret.direct_logit_attribution(model, ids, answer, wrong)
    effects = interpret.patch(model, clean, corrupt, answer, wrong, "head", "activation")
    ablation = interpret.ablate_heads(model, inputs, targets, windows, B, T, "mean")

Kinds: gpt (the ladder's top), gpt2, llama and attn_only (interpret.Stream reads each one's blocks, final
norm and unembedding; attn_only has neither MLPs nor norms). The model runs as it is: call model.eval() first.
Numbers come back as Python floats, summed in float64 from the float32 activations where the C++ side reduces
them (a reference should not add rounding).

Legend: B batch, T time, C channels, L blocks, V vocab, n_head heads of width H.
"""
import re

import torch
import torch.nn.functional as F

from .hooks import hook_points
from .llama import Llama
from .models import GPT, GPT2, AttentionOnly

SITES = ("resid_pre", "attn_out", "mlp_out", "head")


class Stream:
    """A transformer as its residual stream: the parts the logit lens and direct logit attribution read.
    norm: "layer", "rms" or None (attn_only: the stream itself is unembedded)."""

    def __init__(self, model):
        self.norm, self.has_mlp = "layer", True
        if isinstance(model, GPT):
            self.blocks, self.final_norm = model.blocks, model.final_norm
            self.n_head = model.config.n_head
            self.W_U, self.b_U = model.lm_head.weight.T, model.lm_head.bias  # (C, V), (V)
            self.W_O = [(b.attention.projection.weight.T, b.attention.projection.bias) for b in model.blocks]
            self.unembed = model.lm_head
        elif isinstance(model, GPT2):
            self.blocks, self.final_norm = model.h, model.ln_f
            self.n_head = model.config.n_head
            self.W_U, self.b_U = model.wte.weight.T, None  # tied: no bias
            self.W_O = [(b.attn.c_proj.weight, b.attn.c_proj.bias) for b in model.h]  # Conv1D: already (in, out)
            self.unembed = lambda x: x @ model.wte.weight.t()
        elif isinstance(model, Llama):
            self.blocks, self.final_norm = model.layers, model.norm
            self.n_head = model.config["n_head"]
            W = model.embed_tokens.weight if model.lm_head is None else model.lm_head.weight  # (V, C)
            self.W_U, self.b_U = W.T, None
            self.W_O = [(b.self_attn.o_proj.weight.T, None) for b in model.layers]
            self.unembed = lambda x: x @ W.T
            self.norm = "rms"
        elif isinstance(model, AttentionOnly):
            self.blocks, self.final_norm = model.blocks, (lambda x: x)
            self.n_head = model.config.n_head
            self.W_U, self.b_U = model.unembed.weight.T, model.unembed.bias
            self.W_O = [(b.attn.projection.weight.T, b.attn.projection.bias) for b in model.blocks]
            self.unembed = model.unembed
            self.norm, self.has_mlp = None, False
        else:
            raise ValueError(f"interpret: a {type(model).__name__} is not a transformer of kind gpt, gpt2, llama or "
                             "attn_only")
        self.n_layer = len(self.blocks)
        self.pos_embed = not isinstance(model, Llama)


def as_ids(ids):
    """A list of ids, or a (T) or (B, T) tensor -> a (B, T) LongTensor."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    return ids.view(1, -1) if ids.dim() == 1 else ids


def matching(model, names):
    """The hook points matching names' comma-separated globs ('*' any run of characters), in the model's order;
    a ValueError naming a glob that matches none."""
    points = hook_points(model)
    chosen = set()
    for glob in names.split(","):
        pattern = re.compile(".*".join(re.escape(part) for part in glob.split("*")))
        found = {name for name in points if pattern.fullmatch(name)}
        if not found:
            raise ValueError(f"run_with_cache: '{glob}' matches no hook point; the model has "
                             f"{', '.join(list(points)[:6])}, ...")
        chosen |= found
    return {name: m for name, m in points.items() if name in chosen}


class Hooks:
    """Forward hooks on hook points for a with-block: add(name, fn(value) -> value or None), all removed on exit."""

    def __init__(self, model):
        self.points, self.handles = hook_points(model), []

    def add(self, name, fn):
        self.handles.append(self.points[name].register_forward_hook(lambda module, inputs, out: fn(out)))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()


def run_with_cache(model, ids, names="*"):
    """One forward without a graph: {hook name: a copy of its value} for every point matching names
    ("logits" among them); ids (T) or (B, T)."""
    cache = {}
    with Hooks(model) as hooks, torch.no_grad():
        for name in matching(model, names):
            hooks.add(name, lambda out, name=name: cache.__setitem__(name, out.detach().clone()))
        model(as_ids(ids))
    return cache


def metric(logits, answer, wrong=None):
    """logit(answer) - logit(wrong) at the last position of the first row (or logit(answer) alone): a 0-d tensor."""
    last = logits[0, -1]
    return last[answer] - last[wrong] if wrong is not None else last[answer]


def logit_lens(model, ids):
    """For l = 0 .. L the stream before block l (l = L: after the last one) through the final norm and the
    unembedding: {"logprob_next": [[log p(ids[p+1]) at p] x (L+1)], "top": [[argmax at p] x (L+1)]}."""
    s, ids = Stream(model), as_ids(ids)
    L = s.n_layer
    cache = run_with_cache(model, ids, f"blocks.*.hook_resid_pre,blocks.{L - 1}.hook_resid_post")
    lens = {"logprob_next": [], "top": []}
    with torch.no_grad():
        for l in range(L + 1):
            stream = cache[f"blocks.{l}.hook_resid_pre" if l < L else f"blocks.{L - 1}.hook_resid_post"]  # (1, T, C)
            logits = s.unembed(s.final_norm(stream))[0]  # (T, V)
            logprobs = F.log_softmax(logits.double(), dim=-1)
            lens["logprob_next"].append([logprobs[p, ids[0, p + 1]].item() for p in range(ids.shape[1] - 1)])
            lens["top"].append(logits.argmax(-1).tolist())  # the first on ties
    return lens


def direct_logit_attribution(model, ids, answer, wrong=None):
    """The last position's stream in parts (embeddings, each head through its rows of the output projection,
    each MLP's output) through the final norm with the whole stream's scale frozen (TransformerLens's
    apply_ln_to_stack: each part centered for a LayerNorm, divided by the stream's scale, times the gain),
    dotted with the unembedding's answer column minus the wrong one's. "bias": the norm's bias, the output
    projections' biases (also centered and scaled) and the unembedding's. The parts and bias sum to logit_diff,
    the model's own logits."""
    s, ids = Stream(model), as_ids(ids)
    cache = run_with_cache(model, ids)
    d = lambda t: t.detach().double()  # noqa: E731 (the sums in float64)
    direction = d(s.W_U[:, answer]) - (d(s.W_U[:, wrong]) if wrong is not None else 0)  # (C)
    unembed_bias = 0.0 if s.b_U is None else d(s.b_U[answer]) - (d(s.b_U[wrong]) if wrong is not None else 0)

    x = d(cache[f"blocks.{s.n_layer - 1}.hook_resid_post"][0, -1])  # (C): the whole stream
    norm = s.final_norm
    if s.norm == "rms":
        scale = (x.pow(2).mean() + norm.eps).sqrt()
        apply = lambda c: c / scale * d(norm.weight)  # noqa: E731
    elif s.norm == "layer":
        scale = ((x - x.mean()).pow(2).mean() + norm.eps).sqrt()  # biased variance, as LayerNorm
        apply = lambda c: (c - c.mean()) / scale * d(norm.weight)  # noqa: E731
    else:
        apply = lambda c: c  # noqa: E731 (no norm: each part is unembedded as it is)
    logit = lambda c: (apply(c) @ direction).item()  # noqa: E731

    embed = d(cache["hook_embed"][0, -1]) + (d(cache["hook_pos_embed"][0, -1]) if s.pos_embed else 0)
    heads, mlps, biases = [], [], torch.zeros_like(x)
    for l, (W_O, b_O) in enumerate(s.W_O):
        z = d(cache[f"blocks.{l}.attn.hook_z"][0, -1])  # (n_head, H)
        H = z.shape[1]
        heads.append([logit(z[h] @ d(W_O[h * H:(h + 1) * H])) for h in range(s.n_head)])
        if s.has_mlp:
            mlps.append(logit(d(cache[f"blocks.{l}.hook_mlp_out"][0, -1])))
        if b_O is not None:
            biases += d(b_O)
    bias = logit(biases) + float(unembed_bias)
    if s.norm == "layer":
        bias += (d(norm.bias) @ direction).item()
    return {"embed": logit(embed), "heads": heads, "mlps": mlps, "bias": bias,
            "logit_diff": metric(cache["logits"].double(), answer, wrong).item()}


def site_point(site, layer):
    return f"blocks.{layer}.attn.hook_z" if site == "head" else f"blocks.{layer}.hook_{site}"


def patch(model, clean, corrupt, answer, wrong, site, method="activation"):
    """{"clean": m, "corrupt": m, "effects": L x T (L x n_head for head)}: the metric of the corrupt run with one
    site's value from the clean run (activation: resid_pre, attn_out, mlp_out one (layer, position) row; head
    hook_z's slice of one head at every position), or its first-order estimate from one clean forward and one
    corrupt forward + backward: metric(corrupt) + (a_clean - a_corrupt) . d metric / d a (attribution)."""
    if site not in SITES or method not in ("activation", "attribution"):
        raise ValueError(f"patch: site {site!r} / method {method!r}")
    s, clean, corrupt = Stream(model), as_ids(clean), as_ids(corrupt)
    if site == "mlp_out" and not s.has_mlp:
        raise ValueError("patch: the model has no MLPs (no mlp_out)")
    if clean.shape != corrupt.shape:
        raise ValueError(f"patch: clean has {clean.shape[1]} ids, corrupt {corrupt.shape[1]}")
    L, T = s.n_layer, clean.shape[1]
    width = s.n_head if site == "head" else T
    names = [site_point(site, l) for l in range(L)]
    clean_cache = run_with_cache(model, clean, ",".join(names + ["logits"]))
    result = {"clean": metric(clean_cache["logits"].double(), answer, wrong).item()}
    if method == "activation":
        with torch.no_grad():
            result["corrupt"] = metric(model(corrupt).double(), answer, wrong).item()
            effects = []
            for l, name in enumerate(names):
                row = []
                for i in range(width):
                    def put(out, i=i, source=clean_cache[name]):
                        out = out.clone()
                        if site == "head":
                            out[:, :, i] = source[:, :, i]  # head i at every position
                        else:
                            out[:, i] = source[:, i]  # position i's row
                        return out
                    with Hooks(model) as hooks:
                        hooks.add(name, put)
                        row.append(metric(model(corrupt).double(), answer, wrong).item())
                effects.append(row)
    else:
        acts = {}
        with Hooks(model) as hooks, torch.enable_grad():
            for name in names:
                hooks.add(name, lambda out, name=name: acts.__setitem__(name, out))
            m = metric(model(corrupt), answer, wrong)
        grads = torch.autograd.grad(m, [acts[n] for n in names])
        result["corrupt"] = m.double().item()
        effects = []
        for name, g in zip(names, grads):
            delta = (clean_cache[name] - acts[name].detach()).double() * g.double()  # (1, T, C) or (1, T, n_head, H)
            per = delta.sum(dim=(0, 1, 3)) if site == "head" else delta.sum(dim=(0, 2))  # (n_head) or (T)
            effects.append([result["corrupt"] + v for v in per.tolist()])
    result["effects"] = effects
    return result


def ablate_heads(model, inputs, targets, windows, B, T, mode="zero"):
    """{"loss": the mean cross-entropy over the windows, "heads": L x n_head}: the same with one head's hook_z
    zeroed (zero) or replaced by its mean over the window's B x T positions (mean). inputs, targets: windows
    (B, T) windows one after another (flat, or (windows, B, T))."""
    if mode not in ("zero", "mean"):
        raise ValueError(f"ablate_heads: mode {mode!r}")
    s = Stream(model)
    inputs = torch.as_tensor(inputs, dtype=torch.long).reshape(windows, B, T)
    targets = torch.as_tensor(targets, dtype=torch.long).reshape(windows, B, T)

    def loss(hook=None):
        total = 0.0
        with Hooks(model) as hooks, torch.no_grad():
            if hook:
                hooks.add(*hook)
            for x, y in zip(inputs, targets):
                logits = model(x)  # (B, T, V)
                total += F.cross_entropy(logits.reshape(B * T, -1).double(), y.reshape(-1)).item()
        return total / windows

    def ablate(h):
        def fn(z):  # (B, T, n_head, H)
            z = z.clone()
            z[:, :, h] = 0.0 if mode == "zero" else z[:, :, h].mean(dim=(0, 1), keepdim=True)
            return z
        return fn

    return {"loss": loss(), "heads": [[loss((f"blocks.{l}.attn.hook_z", ablate(h))) for h in range(s.n_head)]
                                      for l in range(s.n_layer)]}
