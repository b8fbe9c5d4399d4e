"""tinygpt's names and layouts <-> torch's. The modules carry tinygpt's own parameter names, so the mapping
to a checkpoint is one rule each way: a Linear weight is stored (in, out) by tinygpt (x @ W) and (out, in) by
torch.nn.Linear, so it is transposed; a LayerNorm's scale is "gain" in tinygpt and "weight" in torch.
Everything else is copied as it is."""
import torch
import torch.nn as tnn


def linear_weights(model):
    """The torch names of the weights stored transposed: every torch.nn.Linear's."""
    return {f"{name}.weight" for name, m in model.named_modules() if isinstance(m, tnn.Linear)}


def norm_names(model):
    """The LayerNorms' names: their "weight" is tinygpt's "gain"."""
    return {name for name, m in model.named_modules() if isinstance(m, tnn.LayerNorm)}


def tinygpt_state(model):
    """The model's parameters under tinygpt's names and layouts, in tinygpt's registration order, on the CPU."""
    linear, norms = linear_weights(model), norm_names(model)
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
    linear, norms = linear_weights(model), norm_names(model)
    state = {}
    for name, t in tensors.items():
        owner, _, leaf = name.rpartition(".")
        torch_name = f"{owner}.weight" if owner in norms and leaf == "gain" else name
        state[torch_name] = t.t() if torch_name in linear else t
    fit(model, state, lambda missing, extra, wrong: f"{where}: the tensors do not fit the {model.config.kind} model: "
                                                    f"missing {missing}, extra {extra}, wrong shape {wrong}")


def fit(model, state, refusal):
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
