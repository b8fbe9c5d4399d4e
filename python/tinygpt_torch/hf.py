"""Hugging Face's GPT-2 folder (what GPT2LMHeadModel.from_pretrained reads; export CKPT --hf DIR writes one),
read into the GPT2 model without the transformers package."""
import math
import os
import re

import torch

from .config import ModelConfig, check_stored
from .files import read_json
from .models import LAYER_NORM_EPS, make_model
from .safetensors import read_safetensors
from .state import fit
from .strings import short

MAX_CONFIG_BYTES = 1 << 20  # (GPT-2's config.json is 665 bytes)
# GPT2Config's defaults, for a field config.json leaves out
HF_GPT2_DEFAULTS = {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
                    "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "resid_pdrop": 0.1}
HF_GELU_EXACT = {"gelu_new": False, "gelu_pytorch_tanh": False, "gelu": True}  # Hugging Face's names -> gelu_exact


def gpt2_names(names, where):
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
            raise ValueError(f"{where}: tensor {short(short)} is there both with and without 'transformer.'")
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
        raise ValueError(f"{config_path}: model_type is {short(hf['model_type'])}, not gpt2")
    field = {key: hf.get(key, default) for key, default in HF_GPT2_DEFAULTS.items()}
    for key in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head"):
        if type(field[key]) is not int or field[key] <= 0:
            raise ValueError(f"{config_path}: {key} is {short(field[key])}, not a positive whole number")
    if field["activation_function"] not in HF_GELU_EXACT:
        raise ValueError(f"{config_path}: activation_function is {short(field['activation_function'])}; GPT-2 here has "
                         "gelu_new, gelu_pytorch_tanh (the tanh GELU) and gelu (the exact one)")
    if field["layer_norm_epsilon"] != LAYER_NORM_EPS:
        raise ValueError(f"{config_path}: layer_norm_epsilon is {short(field['layer_norm_epsilon'])}; GPT-2 here has {LAYER_NORM_EPS}")
    for key, expected in (("n_inner", (None, 4 * field["n_embd"])), ("tie_word_embeddings", (True,)),
                          ("scale_attn_weights", (True, False)), ("scale_attn_by_inverse_layer_idx", (False,)),
                          ("add_cross_attention", (False,))):
        if key in hf and not any(hf[key] is e or (type(e) is int and hf[key] == e) for e in expected):
            raise ValueError(f"{config_path}: {key} is {short(hf[key])}; GPT-2 here has {' or '.join(map(short, expected))}")
    dropout = field["resid_pdrop"]
    config = ModelConfig(kind="gpt2", vocab=field["vocab_size"], n_embd=field["n_embd"], n_head=field["n_head"],
                         n_layer=field["n_layer"], block=field["n_positions"],
                         dropout=float(dropout) if type(dropout) in (int, float) and 0 <= dropout < 1 else 0.0,
                         gelu_exact=HF_GELU_EXACT[field["activation_function"]], scaled=hf.get("scale_attn_weights", True) is True)
    try:
        config.validate()
    except ValueError as e:
        raise ValueError(f"{config_path}: {e}") from None

    def sizes_are_the_files(shapes):  # before the data is read and the model built
        names, _ = gpt2_names(shapes, weights_path)
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
        check_stored(config, sum(float(math.prod(s)) for s in shape.values()), weights_path, config_path)

    tensors, _ = read_safetensors(weights_path, verify, widen_half=True, check_shapes=sizes_are_the_files)
    names, lm_head = gpt2_names(tensors, weights_path)
    state = {short: tensors[name] for short, name in names.items()}
    model = make_model(config)
    fit(model, state, lambda missing, extra, wrong: (
        f"{weights_path}: the tensors do not fit {config_path}'s GPT-2 (n_embd {config.n_embd} n_layer {config.n_layer} "
        f"vocab {config.vocab} n_positions {config.block}): missing {missing[:8]}, extra {extra[:8]}, wrong shape {wrong[:8]}"))
    if lm_head is not None and not torch.equal(tensors[lm_head], state["wte.weight"]):
        raise ValueError(f"{weights_path}: lm_head.weight differs from wte.weight; GPT-2's output layer is tied to the token table")
    return model.eval()
