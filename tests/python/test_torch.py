"""The PyTorch side of tinygpt (python/), checked against tinygpt's own programs. tests/python/CMakeLists.txt
runs one case per CTest test:

  logits_KIND   train a small KIND with tinygpt; PyTorch's logits equal tinygpt's (tinygpt_logits) within
                1e-5 relative (max |difference| / max |logit|); tinygpt -> PyTorch -> tinygpt gives
                bit-identical weights, and the saved file gives bit-identical logits in tinygpt
  gpt2_full_vocab  a random gpt2 (2 layers, 64 wide, GPT-2's 50,257 tokens as characters) made in PyTorch
                from Hugging Face's maths: tinygpt's logits within 1e-5 relative, with either GELU; one AdamW
                step on the same batch (tinygpt_step) gives the same weights within 1e-5
  gpt2_hf       export CKPT --hf DIR of random gpt2 models (either GELU): model.safetensors has the names and
                shapes GPT2LMHeadModel.from_pretrained looks for, config.json its fields, and
                tinygpt_torch.load_hf_folder reads the folder with logits equal to tinygpt's within 1e-5 (also
                without "transformer.", with lm_head and the mask buffers, in F16 and BF16); refusals
  load_kinds    tinygpt_torch.load reads a gpt2 checkpoint of GPT-2's BPE and one of token ids alone (and a
                character one) with logits equal to tinygpt's, and save() writes them back as tinygpt reads
                them (the same samples); GPT-2's own files are refused naming what they are and what reads them
  torch_trains  a tinygpt GPT trained a few steps in PyTorch is saved; tinygpt's generate, heatmap and figure read
                it, its logits agree, and train --init-from trains on it (and starts from its weights)
  evaluate      examples/evaluate's loss over consecutive windows of a text file, and of the same ids as a
                token file, equals PyTorch's mean cross-entropy over the same windows within 1e-5 relative
  gradflow      examples/gradflow CKPT --data FILE: every parameter's gradient norm of the mean loss over the
                first windows equals PyTorch's within 1e-4 relative
  ddp           python/train_ddp.py under torch.distributed.run with 2 processes (gloo): the loss falls,
                both ranks end with the same weights, tinygpt loads the result; each launch runs in its own
                process group, killed whole if it hangs, and leaves no process behind
  nanogpt       nanoGPT's model (reproduced below at a small size) saved as nanoGPT saves it converts with
                python/from_nanogpt.py (bias=False onto gpt, bias=True with its query bias onto gpt2; characters
                in any order, or a BPE vocabulary in padded rows); tinygpt's logits equal the nanoGPT model's
                within 1e-5 relative; an untied output and a vocabulary of another size are refused
  load_progress tg.load draws tinygpt's progress bar on a terminal's stderr (a pseudo-terminal), ending at the
                file's size in MB, and writes nothing to a stderr that is not a terminal

Each prints its figures. A failure raises (exit 1) with what differed.
"""
import argparse
import json
import math
import os
import pickle
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

import torch
import torch.nn as tnn
import torch.nn.functional as F

TEXT = "".join(f"{a} {b} sat on the {c}; " for a in ("the cat", "a dog", "my fox") for b in ("quietly", "then")
               for c in ("mat", "log", "rug")) * 6 + "\n"
KIND_ARGS = {  # small models of every rung, with what each reads
    "bigram": ["--model", "bigram", "--block", "6"],
    "average": ["--model", "average", "--n-embd", "16", "--block", "6"],
    "head": ["--model", "head", "--n-embd", "16", "--block", "6"],
    "multihead": ["--model", "multihead", "--n-embd", "16", "--n-head", "4", "--block", "6", "--feed-forward"],
    "gpt": ["--model", "gpt", "--n-embd", "16", "--n-head", "2", "--n-layer", "2", "--block", "6", "--dropout", "0.1"],
    "gpt2": ["--model", "gpt2", "--n-embd", "16", "--n-head", "2", "--n-layer", "2", "--block", "6", "--dropout", "0.1"],
    "attn_only": ["--model", "attn_only", "--n-embd", "16", "--n-head", "2", "--n-layer", "2", "--block", "6"],
}
REL_TOLERANCE = 1e-5


def run(args, **kw):
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def refusal(call, what, error=ValueError):
    """The `error` that call() must raise; `what` names its input when it raises nothing."""
    try:
        call()
    except error as e:
        return e
    raise AssertionError(f"{what} was accepted")


class Case:
    def __init__(self, opts):
        self.o = opts
        sys.path.insert(0, opts.python_dir)
        import tinygpt_torch
        self.tg = tinygpt_torch
        shutil.rmtree(opts.work, ignore_errors=True)
        os.makedirs(opts.work)
        self.data = self.path("text.txt")
        with open(self.data, "w") as f:
            f.write(TEXT)
        torch.manual_seed(0)

    def path(self, name):
        return os.path.join(self.o.work, name)

    def train(self, kind, out, steps=40):
        run([self.o.train, *KIND_ARGS[kind], "--data", self.data, "--steps", steps, "--batch", 8, "--lr", "1e-2",
             "--eval-iters", 1, "--sample", 0, "--out", out])

    def tinygpt_logits(self, ckpt, ids):
        out = self.path("logits.bin")
        B, T = ids.shape
        run([self.o.logits, ckpt, out, B, T, *ids.reshape(-1).tolist()])
        with open(out, "rb") as f:
            raw = bytearray(f.read())
        return torch.frombuffer(raw, dtype=torch.float32).reshape(B, T, -1)

    def compare_logits(self, ckpt, model, label):
        """PyTorch's logits against tinygpt's on random windows; returns the relative error."""
        T = model.block_size() if model.config.kind != "bigram" else 6
        ids = torch.randint(0, model.config.vocab, (3, T))
        with torch.no_grad():
            ours = model.eval()(ids)
        theirs = self.tinygpt_logits(ckpt, ids)
        check(ours.shape == theirs.shape, f"{label}: shapes {tuple(ours.shape)} and {tuple(theirs.shape)}")
        rel = ((ours - theirs).abs().max() / theirs.abs().max()).item()
        print(f"{label}: logits {tuple(ours.shape)}, max |torch - tinygpt| / max |logit| = {rel:.3g}")
        check(rel <= REL_TOLERANCE, f"{label}: relative error {rel:.3g} is over {REL_TOLERANCE}")
        return rel, ids, theirs


def case_logits(c, kind):
    tg = c.tg
    ckpt = c.path(f"{kind}.safetensors")
    c.train(kind, ckpt)
    model, vocab = tg.load(ckpt)
    check(vocab == sorted(set(TEXT)), f"vocab {vocab!r} is not the text's characters")
    check(type(model).__name__ == {"bigram": "Bigram", "average": "AverageModel", "head": "SingleHead",
                                   "multihead": "MultiHead", "gpt": "GPT", "gpt2": "GPT2", "attn_only": "AttentionOnly"}[kind],
          f"{kind} loaded as {type(model)}")
    _, ids, theirs = c.compare_logits(ckpt, model, kind)

    # tinygpt -> PyTorch -> tinygpt: every weight bit-identical, and so tinygpt's logits
    again = c.path(f"{kind}.again.safetensors")
    tg.save(model, vocab, again)
    original, meta = tg.read_safetensors(ckpt)
    saved, saved_meta = tg.read_safetensors(again)
    weights = {k: v for k, v in original.items() if not k.startswith("train_state.")}
    check(list(saved) == list(weights), f"names differ: {list(saved)} vs {list(weights)}")
    for name, t in weights.items():
        check(saved[name].shape == t.shape and torch.equal(saved[name].view(torch.int32), t.view(torch.int32)),
              f"{kind}: {name} is not bit-identical after the round trip")
    for key in [k for k in meta if k.startswith("model.")] + ["tokenizer.vocabulary"]:
        check(saved_meta[key] == meta[key], f"{key}: {saved_meta[key]!r} written, {meta[key]!r} read")
    again_logits = c.tinygpt_logits(again, ids)
    check(torch.equal(again_logits.view(torch.int32), theirs.view(torch.int32)), f"{kind}: tinygpt's logits changed")
    print(f"{kind}: {len(weights)} tensors, {sum(t.numel() for t in weights.values())} weights bit-identical "
          "after tinygpt -> PyTorch -> tinygpt; tinygpt's logits of the saved file bit-identical")

    # a corrupt byte is refused by the checksum, as tinygpt refuses it
    with open(again, "rb") as f:
        blob = bytearray(f.read())
    blob[-1] ^= 0x01
    with open(again, "wb") as f:
        f.write(blob)
    e = refusal(lambda: tg.load(again), "a flipped bit")
    check("CRC32C" in str(e), f"the refusal does not name the checksum: {e}")


def case_gpt2_full_vocab(c):
    tg = c.tg
    V = 50257
    vocab = [chr(0x100 + i) for i in range(V)]  # GPT-2's vocabulary size, as distinct characters sorted by code point
    for exact in (False, True):
        gelu = "exact" if exact else "tanh"
        model = tg.make_model(tg.ModelConfig(kind="gpt2", vocab=V, n_embd=64, n_head=2, n_layer=2, block=32, gelu_exact=exact))
        with torch.no_grad():  # beyond GPT-2's N(0, 0.02), so that every layer moves the logits
            for name, p in model.named_parameters():
                p.add_(torch.randn_like(p) * 0.1)
        path = c.path(f"gpt2_{gelu}.safetensors")
        tg.save(model, vocab, path)
        c.compare_logits(path, model, f"gpt2 V {V}, {gelu} GELU, saved by PyTorch")

    # one AdamW step in each on the same batch (the last model: exact GELU); weight decay on the Linear
    # (Conv1D) weights only, as tinygpt's
    # eps 1e-4, not AdamW's 1e-8. The first step moves each weight by lr g / (|g| + eps), about lr times g's
    # sign: where |g| is near eps, two float32 computations of g (their sums in another order) give steps
    # up to lr |dg| / (4 eps) apart. A wte row's gradient sums terms of ~3e-2 to a few 1e-6, with |dg| ~3e-8
    # between torch and tinygpt: at eps 1e-8 and 1e-6 that made 1.2e-5 and 2.6e-5 relative; at 1e-4 it is
    # below 1e-7. (c_attn's key bias has a gradient of pure rounding noise, since the softmax cancels q . b_k;
    # eps keeps its step negligible on both sides too.) Decay (lr wd |w|: 1e-4 relative) and the step stay far
    # above the tolerance.
    B, T, lr, weight_decay, eps = 2, 16, 1e-3, 0.1, 1e-4
    ids, targets = torch.randint(0, V, (B, T)), torch.randint(0, V, (B, T))
    out = c.path("stepped.bin")
    listing = run([c.o.step, path, out, lr, weight_decay, eps, B, T, *ids.reshape(-1).tolist(), *targets.reshape(-1).tolist()])
    with open(out, "rb") as f:
        stepped = torch.frombuffer(bytearray(f.read()), dtype=torch.float32)
    decayed = [p for n, p in model.named_parameters() if n.endswith(".weight") and isinstance(
        model.get_submodule(n.rpartition(".")[0]), tg.Conv1D)]
    decayed_ids = {id(p) for p in decayed}
    others = [p for p in model.parameters() if id(p) not in decayed_ids]
    optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}],
                                  lr=lr, eps=eps)
    model.train()
    F.cross_entropy(model(ids).reshape(-1, V), targets.reshape(-1)).backward()
    optimizer.step()
    ours = tg.tinygpt_state(model)
    offset, worst = 0, 0.0
    for line in listing.splitlines():
        name, numel = line.split()
        theirs = stepped[offset:offset + int(numel)]
        offset += int(numel)
        mine = ours[name].reshape(-1)
        check(mine.numel() == theirs.numel(), f"{name}: {theirs.numel()} values from tinygpt, {mine.numel()} in torch")
        worst = max(worst, ((mine - theirs).abs().max() / theirs.abs().max()).item())
    check(offset == stepped.numel() and len(listing.splitlines()) == len(ours), "tinygpt_step wrote other parameters")
    print(f"gpt2: one AdamW step, {len(ours)} tensors: max |torch - tinygpt| / max |weight| per tensor = {worst:.3g}")
    check(worst <= REL_TOLERANCE, f"gpt2: weights after one AdamW step differ by {worst:.3g} relative, over {REL_TOLERANCE}")


# GPT2LMHeadModel's state_dict as Hugging Face's modeling_gpt2.py builds it (Conv1D weights (in, out), the
# tied lm_head not saved): what from_pretrained looks for in model.safetensors
def hf_gpt2_shapes(C, L, V, n_positions):
    shapes = {"transformer.wte.weight": (V, C), "transformer.wpe.weight": (n_positions, C)}
    for i in range(L):
        h = f"transformer.h.{i}."
        shapes.update({h + "ln_1.weight": (C,), h + "ln_1.bias": (C,), h + "attn.c_attn.weight": (C, 3 * C),
                       h + "attn.c_attn.bias": (3 * C,), h + "attn.c_proj.weight": (C, C), h + "attn.c_proj.bias": (C,),
                       h + "ln_2.weight": (C,), h + "ln_2.bias": (C,), h + "mlp.c_fc.weight": (C, 4 * C),
                       h + "mlp.c_fc.bias": (4 * C,), h + "mlp.c_proj.weight": (4 * C, C), h + "mlp.c_proj.bias": (C,)})
    shapes.update({"transformer.ln_f.weight": (C,), "transformer.ln_f.bias": (C,)})
    return shapes


def write_half_safetensors(path, tensors, dtype_name, dtype):
    """A safetensors file of 2-byte floats (F16 or BF16), as Hugging Face's half-precision files are written."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        raw = t.to(dtype).contiguous().view(torch.int16).numpy().astype("<i2").tobytes()
        header[name] = {"dtype": dtype_name, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def case_gpt2_hf(c):
    """export CKPT --hf DIR read back as from_pretrained reads it: the names, shapes and config fields it
    looks for, and tinygpt_torch.load_hf_folder's logits equal to tinygpt's."""
    tg = c.tg
    vocab = sorted(set(TEXT))
    C, L, T = 64, 2, 16
    for exact in (False, True):
        gelu = "exact" if exact else "tanh"
        model = tg.make_model(tg.ModelConfig(kind="gpt2", vocab=len(vocab), n_embd=C, n_head=2, n_layer=L, block=T,
                                             gelu_exact=exact))
        with torch.no_grad():  # beyond GPT-2's N(0, 0.02) and zero biases, so that every tensor moves the logits
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.1)
        ckpt, hf = c.path(f"gpt2_{gelu}.safetensors"), c.path(f"hf_{gelu}")
        tg.save(model, vocab, ckpt)
        print(run([c.o.export, ckpt, "--hf", hf]).strip())

        tensors, _ = tg.read_safetensors(os.path.join(hf, "model.safetensors"))
        shapes = {name: tuple(t.shape) for name, t in tensors.items()}
        check(shapes == hf_gpt2_shapes(C, L, len(vocab), T), f"model.safetensors holds {shapes}")
        with open(os.path.join(hf, "config.json")) as f:
            config = json.load(f)
        wanted = {"model_type": "gpt2", "n_embd": C, "n_layer": L, "n_head": 2, "n_positions": T, "vocab_size": len(vocab),
                  "layer_norm_epsilon": 1e-5, "activation_function": "gelu" if exact else "gelu_new"}
        check(all(config.get(k) == v for k, v in wanted.items()), f"config.json: {config}")
        check(config.get("architectures") == ["GPT2LMHeadModel"] and config.get("n_inner") is None, f"config.json: {config}")

        loaded = tg.load_hf_folder(hf)
        check(loaded.config.gelu_exact == exact, f"load_hf_folder read gelu_exact {loaded.config.gelu_exact}")
        c.compare_logits(ckpt, loaded, f"gpt2 ({gelu} GELU) exported --hf, read by load_hf_folder")

    # the variants from_pretrained takes: names without "transformer.", lm_head.weight equal to wte, the
    # causal-mask buffers; the same logits
    variant = c.path("hf_variant")
    os.makedirs(variant)
    shutil.copy(os.path.join(hf, "config.json"), variant)
    renamed = {name[len("transformer."):]: t for name, t in tensors.items()}
    renamed["lm_head.weight"] = renamed["wte.weight"].clone()
    renamed["h.0.attn.bias"] = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
    renamed["h.0.attn.masked_bias"] = torch.tensor(-1e4)
    tg.write_safetensors(os.path.join(variant, "model.safetensors"), renamed, {"format": "pt"})
    c.compare_logits(ckpt, tg.load_hf_folder(variant), "the same weights without 'transformer.', with lm_head and mask buffers")

    # F16 and BF16 files (as other writers store them) are widened: the logits of the rounded weights exactly
    half = c.path("hf_half")
    os.makedirs(half)
    shutil.copy(os.path.join(hf, "config.json"), half)
    for dtype_name, dtype in (("F16", torch.float16), ("BF16", torch.bfloat16)):
        write_half_safetensors(os.path.join(half, "model.safetensors"), renamed, dtype_name, dtype)
        rounded = tg.load_hf_folder(variant)
        with torch.no_grad():
            for p in rounded.parameters():
                p.copy_(p.to(dtype).to(torch.float32))
        ids = torch.randint(0, len(vocab), (2, T))
        with torch.no_grad():
            check(torch.equal(tg.load_hf_folder(half)(ids), rounded(ids)), f"the {dtype_name} file's logits are not its weights'")
        print(f"model.safetensors in {dtype_name}: the logits of its weights widened to float32, bit for bit")

    # what GPT-2's maths here cannot follow is refused, naming the file
    def refused(label, config_change=None, tensor_change=None, names=()):
        with open(os.path.join(hf, "config.json")) as f:
            config = json.load(f)
        config.update(config_change or {})
        with open(os.path.join(variant, "config.json"), "w") as f:
            json.dump(config, f)
        changed = dict(renamed)
        if tensor_change:
            tensor_change(changed)
        tg.write_safetensors(os.path.join(variant, "model.safetensors"), changed, {"format": "pt"})
        e = refusal(lambda: tg.load_hf_folder(variant), label)
        print(f"{label}: {e}")
        check(variant in str(e), f"{label}: the refusal does not name the folder: {e}")
        check(all(name in str(e) for name in names), f"{label}: the refusal does not name {names}: {e}")

    refused("activation_function relu", {"activation_function": "relu"})
    refused("layer_norm_epsilon 1e-6", {"layer_norm_epsilon": 1e-6})
    refused("n_embd 32 in config.json, 64-wide tensors", {"n_embd": 32})
    refused("a missing tensor", tensor_change=lambda t: t.pop("h.1.mlp.c_fc.bias"), names=("h.1.mlp.c_fc.bias",))
    refused("a tensor of the wrong shape", tensor_change=lambda t: t.update({"h.0.ln_1.bias": torch.zeros(C + 1)}),
            names=("h.0.ln_1.bias", f"({C + 1},)", f"({C},)"))
    refused("an untied lm_head", tensor_change=lambda t: t.update({"lm_head.weight": t["wte.weight"] + 1}))


def case_load_kinds(c):
    bpe_dir, n_tokens = _small_bpe_dir(c)
    ids_file = c.path("ids.bin")  # nanoGPT's token file: uint16 ids, no header
    ids = torch.randint(0, 40, (400,), generator=torch.Generator().manual_seed(1))
    with open(ids_file, "wb") as f:
        f.write(struct.pack(f"<{len(ids)}H", *ids.tolist()))
    for label, data, tokenizer, vocab_type, prompt in (
            ("bpe", c.data, ["--tokenizer", bpe_dir], "BpeFiles", "abc"),
            ("token_ids", ids_file, [], "TokenIds", "3 1 4"),
            ("chars", c.data, [], "list", "the")):
        ckpt, again = c.path(f"{label}.safetensors"), c.path(f"{label}_again.safetensors")
        run([c.o.train, *KIND_ARGS["gpt2"], *tokenizer, "--data", data, "--steps", 3, "--batch", 4, "--eval-iters", 1,
             "--sample", 0, "--out", ckpt])
        model, vocab = c.tg.load(ckpt)
        check(type(vocab).__name__ == vocab_type, f"{label}: load gave the tokenizer as {type(vocab).__name__}, not {vocab_type}")
        check(c.tg.tokenizers.vocab_size(vocab) == model.config.vocab, f"{label}: {c.tg.tokenizers.vocab_size(vocab)} tokens for {model.config.vocab} rows")
        c.compare_logits(ckpt, model, f"load_kinds {label}")
        c.tg.save(model, vocab, again)
        samples = [run([c.o.generate, f, "--prompt", prompt, "--tokens", 8, "--seed", 3]) for f in (ckpt, again)]
        check(samples[0] == samples[1], f"{label}: generate on the saved copy gives {samples[1]!r}, on the original {samples[0]!r}")
        print(f"load_kinds {label}: {model.config.vocab} tokens ({type(vocab).__name__}), saved back: the same sample {samples[0].strip()!r}")
    hf, llmc = c.path("hf"), c.path("m.bin")
    run([c.o.export, c.path("bpe.safetensors"), "--hf", hf])
    run([c.o.export, c.path("bpe.safetensors"), "--llmc", llmc])
    for path, expected in ((os.path.join(hf, "model.safetensors"), "load_hf_folder"), (llmc, "--hf DIR")):
        e = refusal(lambda: c.tg.load(path), path)
        check("not a tinygpt checkpoint" in str(e) and expected in str(e), f"{path}: load said {e}")
        print(f"load_kinds: {e}")


def case_torch_trains(c):
    tg = c.tg
    # CRC32C: the check value of "123456789", and the chunked path (large tensors) against the bytewise one;
    # tinygpt checks what a large tensor was written with (a bigram of 200 characters: 160 kB in one tensor)
    check(tg.crc32c(b"123456789") == 0xE3069283, "CRC32C of '123456789' is not e3069283")
    noise = os.urandom(300001)
    check(tg.crc32c(noise) == tg.crc32c_bytewise(noise) ^ 0xFFFFFFFF, "the chunked CRC32C differs from the bytewise one")
    big = tg.make_model(tg.ModelConfig(kind="bigram", vocab=200))
    big_path = c.path("big_bigram.safetensors")
    tg.save(big, [chr(0x100 + i) for i in range(200)], big_path)
    c.compare_logits(big_path, big, "a bigram of 200 characters saved by PyTorch")

    ckpt = c.path("gpt.safetensors")
    c.train("gpt", ckpt, steps=5)
    # the metadata's own checksum: tinygpt's (C++) verifies here, an edited setting is refused, and the one
    # written here (save above) tinygpt verified when it read big_path
    with open(ckpt, "rb") as f:
        raw = f.read()
    edited = raw.replace(b'"model.n_head":"2"', b'"model.n_head":"4"', 1)
    check(edited != raw, "the checkpoint has no model.n_head of 2 to edit")
    with open(c.path("edited.safetensors"), "wb") as f:
        f.write(edited)
    try:
        tg.load(c.path("edited.safetensors"))
        check(False, "a checkpoint with an edited setting loaded")
    except ValueError as e:
        check("the metadata does not match its checksum" in str(e), f"the refusal: {e}")
    model, vocab = tg.load(ckpt)
    ids = tg.encode(vocab, TEXT)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    losses = []
    T = model.config.block
    for step in range(30):
        starts = torch.randint(0, len(ids) - T - 1, (8,))
        x = torch.stack([ids[s:s + T] for s in starts])
        y = torch.stack([ids[s + 1:s + T + 1] for s in starts])
        loss = F.cross_entropy(model(x).reshape(-1, model.config.vocab), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"PyTorch training: loss {losses[0]:.4f} -> {losses[-1]:.4f} in {len(losses)} steps")
    check(sum(losses[-5:]) < sum(losses[:5]), f"the loss did not fall: {losses}")
    tuned = c.path("tuned.safetensors")
    tg.save(model, vocab, tuned, {"note": "trained in PyTorch"})
    c.compare_logits(tuned, model, "trained in PyTorch")
    text = run([c.o.generate, tuned, "--prompt", "the ", "--chars", 60, "--seed", 2])
    check(text.startswith("the ") and len(text) >= 60, f"generate wrote {text!r}")
    print(f"generate: {text.strip()!r}")
    heat = run([c.o.heatmap, "--checkpoint", tuned, "--prompt", "the ca", "--layer", 1, "--head", 1, "--color", "never"])
    check("t" in heat and len(heat.splitlines()) >= 7, f"heatmap wrote {heat!r}")
    page = c.path("figure.html")
    run([c.o.figure, "--checkpoint", tuned, "--prompt", "the ca", "--out", page])
    check(os.path.getsize(page) > 1000, "figure wrote no page")

    # train --init-from the PyTorch file: with a rate too small to move a float32, the weights stay exactly
    again = c.path("again.safetensors")
    run([c.o.train, "--init-from", tuned, "--data", c.data, "--steps", 2, "--lr", "1e-20", "--weight-decay", 0,
         "--eval-iters", 1, "--sample", 0, "--out", again])
    before, _ = tg.read_safetensors(tuned)
    after, meta = tg.read_safetensors(again)
    check(meta["train.step"] == "2", f"the --init-from run is at step {meta['train.step']}, not 2")
    for name, t in before.items():
        check(torch.equal(after[name], t), f"train --init-from did not start from {name}")
    # and with a real rate it trains: the loss from tinygpt's own evaluation falls
    out = run([c.o.train, "--init-from", tuned, "--data", c.data, "--steps", 20, "--lr", "3e-3", "--batch", 8,
               "--eval-iters", 4, "--sample", 0, "--json", "--out", c.path("more.safetensors")])
    print(f"train --init-from the PyTorch checkpoint: {out.strip()}")


def trained_gpt_and_ids(c):
    """A small trained GPT in eval mode, its checkpoint, and TEXT as its ids."""
    ckpt = c.path("gpt.safetensors")
    c.train("gpt", ckpt)
    model, vocab = c.tg.load(ckpt)
    return model.eval(), ckpt, torch.tensor([vocab.index(ch) for ch in TEXT])


def window_losses(model, ids, B, T, n):
    """The losses of the first n consecutive windows: window i is tokens [iBT, (i+1)BT + 1)."""
    for i in range(n):
        window = ids[i * B * T:(i + 1) * B * T + 1]
        x, y = window[:-1].view(B, T), window[1:].view(B, T)
        yield F.cross_entropy(model(x).view(B * T, -1), y.view(-1))


def case_evaluate(c):
    """evaluate CKPT --data FILE: the loss is the mean over the windows."""
    model, ckpt, ids = trained_gpt_and_ids(c)
    B, T = 3, 5
    whole = (len(ids) - 1) // (B * T)

    def torch_loss(batches):
        with torch.no_grad():
            return sum(loss.item() for loss in window_losses(model, ids, B, T, batches)) / batches

    token_file = c.path("text.bin")  # the same ids as nanoGPT writes them: raw uint16
    with open(token_file, "wb") as f:
        f.write(ids.to(torch.int16).numpy().tobytes())
    for data, batches in ((c.data, None), (c.data, 2), (token_file, None)):
        args = [c.o.evaluate, ckpt, "--data", data, "--batch", B, "--block", T, "--json"]
        if batches:
            args += ["--batches", batches]
        got = json.loads(run(args))
        n = batches or whole
        expected = torch_loss(n)
        rel = abs(got["loss"] - expected) / abs(expected)
        print(f"evaluate {os.path.basename(data)}, {n} windows of {B} x {T}: loss {got['loss']:.6f}, "
              f"PyTorch {expected:.6f}, relative difference {rel:.2g}")
        check(rel <= REL_TOLERANCE, f"evaluate's loss {got['loss']} is not PyTorch's {expected} over {n} windows")
        check(got["batches"] == n and got["tokens"] == n * B * T, f"evaluate counted {got}, not {n} windows of {B * T}")
        check(abs(got["perplexity"] - math.exp(got["loss"])) <= 1e-9 * got["perplexity"], f"perplexity {got}")


def case_gradflow(c):
    model, ckpt, ids = trained_gpt_and_ids(c)
    B, T, N = 3, 6, 4
    model.zero_grad()
    for loss in window_losses(model, ids, B, T, N):
        (loss / N).backward()
    norms = c.tg.state.norm_names(model)
    expected = {}
    for name, p in model.named_parameters():
        owner, _, leaf = name.rpartition(".")
        expected[f"{owner}.gain" if owner in norms and leaf == "weight" else name] = p.grad.norm().item()
    csv = c.path("gradflow.csv")
    got = json.loads(run([c.o.gradflow, ckpt, "--data", c.data, "--batch", B, "--block", T, "--batches", N, "--json", "--csv", csv]))
    with open(csv) as f:
        rows = f.read().splitlines()
    check(rows[0].startswith("step,kind,name,grad_norm") and len(rows) == 1 + len(expected) + 4, f"--csv wrote {rows[:3]}...")
    names = [p["name"] for p in got["parameters"]]
    check(sorted(names) == sorted(expected), f"gradflow's parameters {names} are not the model's {sorted(expected)}")
    worst = max(abs(p["grad_norm"] - expected[p["name"]]) / max(expected[p["name"]], 1e-12) for p in got["parameters"])
    print(f"gradflow: {len(names)} gradient norms over {N} windows of {B} x {T}, worst relative difference from PyTorch {worst:.2g}")
    check(worst <= 1e-4, f"gradflow's gradient norms differ from PyTorch's by {worst:.3g} (relative)")
    check(got["batches"] == N and got["tokens"] == N * B * T and len(got["heads"]) == 4, f"gradflow printed {got}")


def case_load_progress(c):
    """tg.load draws tinygpt's progress bar (examples/support/progress.h) on stderr when it is a terminal: the
    file's MB read, the rate, and at the end the time it took; when stderr is not a terminal, nothing."""
    ckpt = c.path("gpt.safetensors")
    c.train("gpt", ckpt, steps=2)
    script = f"import sys; sys.path.insert(0, {c.o.python_dir!r}); import tinygpt_torch as tg; tg.load({ckpt!r}); print('loaded')"
    # stderr on a pseudo-terminal: tests/cli/on_terminal.py, as the programs' bars are tested
    on_terminal = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli", "on_terminal.py")
    out_file, err_file = c.path("load.out"), c.path("load.err")
    status = subprocess.run([sys.executable, on_terminal, out_file, err_file, "--", sys.executable, "-c", script]).returncode
    with open(out_file, "rb") as f:
        out = f.read()
    with open(err_file, "rb") as f:
        seen = f.read()
    check(status == 0 and out == b"loaded\n", f"tg.load on a terminal: exit {status}, {out!r}, {seen!r}")
    megabytes = f"{os.path.getsize(ckpt) / 1e6:.3g}"
    end = re.compile(rb"\rloading gpt\.safetensors \[#{30}\] " + re.escape(megabytes.encode()) + rb"/" + re.escape(megabytes.encode()) +
                     rb" MB  [0-9.]+ MB/s  in 0m[0-9]{2}s\x1b\[K\r?\n$")
    print(f"tg.load on a terminal drew: {seen[-120:]!r}")
    check(end.search(seen), f"tg.load's bar on a terminal does not end at {megabytes}/{megabytes} MB: {seen!r}")
    piped = subprocess.run([sys.executable, "-c", script], capture_output=True)
    check(piped.returncode == 0 and piped.stderr == b"", f"tg.load with stderr on a pipe wrote {piped.stderr!r}")


def case_ddp(c):
    tg = c.tg
    ckpt = c.path("gpt.safetensors")
    c.train("gpt", ckpt, steps=5)
    out = c.path("ddp.safetensors")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    script = os.path.join(c.o.python_dir, "train_ddp.py")
    # torch 1.13 under Python 3.11 (Debian 12) needs its --redirects and --tee given (train_ddp.py's docstring)
    mended = ["--redirects", "9:1", "--tee", "9:1"] if _torchrun_needs_mending() else []
    log = run_ddp(lambda: [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", 2, "--master_port", _free_port(),
                           *mended, script, "--init", ckpt, "--data", c.data, "--out", out, "--steps", 40, "--batch", 8,
                           "--lr", "3e-3", "--eval-batches", 8, "--timeout", 60], env)
    print(log.strip())
    figures = {}
    for line in log.splitlines():
        for key in ("loss before", "loss after", "replicas"):
            if line.startswith(key + ":"):
                figures[key] = line.split(":", 1)[1].strip()
    check(set(figures) == {"loss before", "loss after", "replicas"}, f"train_ddp.py printed {figures}")
    check(float(figures["loss after"]) < float(figures["loss before"]) - 0.1, f"the loss did not fall: {figures}")
    check(figures["replicas"].startswith("2 ranks, identical"), f"the ranks differ: {figures['replicas']}")
    model, vocab = tg.load(out)
    c.compare_logits(out, model, "after DDP")
    text = run([c.o.generate, out, "--prompt", "a ", "--chars", 40])
    check(text.startswith("a "), f"generate wrote {text!r}")


    # the script starting torchrun itself, which it gives OMP_NUM_THREADS (torchrun's warning block, not shown)
    unset = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    log = run_ddp(lambda: [sys.executable, script, "--nproc-per-node", 2, "--init", out, "--data", c.data,
                           "--out", c.path("ddp2.safetensors"), "--steps", 3, "--batch", 4, "--eval-batches", 2,
                           "--timeout", 60], unset)
    check("replicas: 2 ranks, identical" in log, f"--nproc-per-node: {log}")
    check("OMP_NUM_THREADS" not in log and "*****" not in log, f"--nproc-per-node printed torchrun's warning: {log}")
    check(re.search(r"^step 3/3 loss [0-9.]+ lr \S+ ETA 0m\d\ds$", log, re.M), f"--nproc-per-node showed no progress: {log}")
    tg.load(c.path("ddp2.safetensors"))


def run_ddp(command, env, timeout=150):
    """Runs a two-process launch in its own session and process group, so that a hang, whatever hangs,
    ends with the whole group killed (torchrun and its workers) and the output so far in the failure. A
    launch that succeeded must leave no process of its group behind."""
    p = subprocess.Popen([str(a) for a in command()], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        raise AssertionError(f"the launch hung for {timeout} s (its process group is killed): {p.args}\n{out}")
    for _ in range(50):  # the workers end with their launcher
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.killpg(p.pid, signal.SIGKILL)
        raise AssertionError(f"processes of the launch outlived it by 5 s: {p.args}\n{out}")
    check(p.returncode == 0, f"{' '.join(p.args)} exited {p.returncode}\n{out}")
    return out


def _free_port():  # --standalone would take the fixed port 29400, shared with any other run on the machine
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _torchrun_needs_mending():
    from torch.distributed.elastic.multiprocessing.api import Std
    return Std.from_str("0") is None


# --- nanoGPT's model.py, reproduced (Karpathy's nanoGPT, MIT licence): names, layout and maths as there ---

class LayerNorm(tnn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = tnn.Parameter(torch.ones(ndim))
        self.bias = tnn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(tnn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_attn = tnn.Linear(cfg["n_embd"], 3 * cfg["n_embd"], bias=cfg["bias"])
        self.c_proj = tnn.Linear(cfg["n_embd"], cfg["n_embd"], bias=cfg["bias"])
        self.n_head, self.n_embd = cfg["n_head"], cfg["n_embd"]
        n = cfg["block_size"]
        self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(tnn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = tnn.Linear(cfg["n_embd"], 4 * cfg["n_embd"], bias=cfg["bias"])
        self.gelu = tnn.GELU()
        self.c_proj = tnn.Linear(4 * cfg["n_embd"], cfg["n_embd"], bias=cfg["bias"])

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class NanoBlock(tnn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = LayerNorm(cfg["n_embd"], cfg["bias"])
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = LayerNorm(cfg["n_embd"], cfg["bias"])
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(tnn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.transformer = tnn.ModuleDict(dict(
            wte=tnn.Embedding(cfg["vocab_size"], cfg["n_embd"]),
            wpe=tnn.Embedding(cfg["block_size"], cfg["n_embd"]),
            drop=tnn.Dropout(cfg["dropout"]),
            h=tnn.ModuleList([NanoBlock(cfg) for _ in range(cfg["n_layer"])]),
            ln_f=LayerNorm(cfg["n_embd"], cfg["bias"]),
        ))
        self.lm_head = tnn.Linear(cfg["n_embd"], cfg["vocab_size"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying

    def forward(self, idx):
        pos = torch.arange(idx.size(1))
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def _nanogpt_checkpoint(c, bias, name, compiled, vocab_size=None):
    vocab = sorted(set(TEXT))
    cfg = dict(n_layer=2, n_head=2, n_embd=16, block_size=8, bias=bias, vocab_size=vocab_size or len(vocab), dropout=0.0)
    model = NanoGPT(cfg)
    with torch.no_grad():  # weights of every size, so no mapping error hides behind zeros or ones
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    state = model.state_dict()
    if compiled:  # torch.compile's wrapper prefixes every name, as nanoGPT's checkpoints then have them
        state = {f"_orig_mod.{k}": v for k, v in state.items()}
    path = c.path(name)
    torch.save({"model": state, "model_args": cfg, "iter_num": 100, "best_val_loss": 1.0, "config": {}}, path)
    return model, vocab, path


def _small_bpe_dir(c):
    """GPT-2's BPE files in Hugging Face's names for a small vocabulary: the 256 byte tokens (GPT-2's
    characters for bytes), four merges and <|endoftext|>: 261 tokens. Returns the directory and the size."""
    def byte_char(b):
        printable = lambda k: ord("!") <= k <= ord("~") or 0xA1 <= k <= 0xAC or 0xAE <= k <= 0xFF  # noqa: E731
        return chr(b) if printable(b) else chr(256 + sum(not printable(k) for k in range(b)))
    tokens = [byte_char(b) for b in range(256)] + ["ab", "bc", "abc", "\u0120a", "<|endoftext|>"]
    directory = c.path("bpe")
    os.makedirs(directory)
    with open(os.path.join(directory, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({t: i for i, t in enumerate(tokens)}, f, ensure_ascii=False)
    with open(os.path.join(directory, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\na b\nb c\nab c\n\u0120 a\n")
    return directory, len(tokens)


def _check_converted(c, nano, out, ids, label, columns=None, tinygpt_ids=None, flip=False):
    """tinygpt's logits of the converted `out` against the nanoGPT model's own (on its first `columns`
    logits, or reversed for a reversed vocabulary); returns the relative error."""
    with torch.no_grad():
        expected = nano.eval()(ids)[..., :columns]
    if flip:
        expected = expected.flip(-1)
    theirs = c.tinygpt_logits(out, ids if tinygpt_ids is None else tinygpt_ids)
    check(theirs.shape == expected.shape, f"{label}: tinygpt's logits are {tuple(theirs.shape)}, nanoGPT's {tuple(expected.shape)}")
    rel = ((expected - theirs).abs().max() / expected.abs().max()).item()
    print(f"{label}: max |nanoGPT - tinygpt| / max |logit| = {rel:.3g}")
    check(rel <= REL_TOLERANCE, f"{label}: relative error {rel:.3g} is over {REL_TOLERANCE}")
    return rel


def _from_nanogpt_in_process(c, args):
    """python/from_nanogpt.py's main() with these arguments in this process (no second torch import, which
    takes seconds): (exit status, stdout, stderr)."""
    import contextlib
    import io
    import from_nanogpt
    out, err, argv = io.StringIO(), io.StringIO(), sys.argv
    sys.argv = ["from_nanogpt.py", *map(str, args)]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = from_nanogpt.main()
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()


def case_nanogpt(c):
    tg = c.tg
    script = os.path.join(c.o.python_dir, "from_nanogpt.py")

    def convert(*args):  # the first conversions run the script as a user does; the others in this process
        code, out, err = _from_nanogpt_in_process(c, args)
        check(code == 0, f"from_nanogpt.py {' '.join(map(str, args))} exited {code}: {err}")
        return out
    meta = c.path("meta.pkl")  # as nanoGPT's data/shakespeare_char/prepare.py writes it
    chars = sorted(set(TEXT))
    V = len(chars)
    with open(meta, "wb") as f:
        pickle.dump({"vocab_size": V, "itos": dict(enumerate(chars)), "stoi": {ch: i for i, ch in enumerate(chars)}}, f)
    # bias=False onto the gpt kind; bias=True onto gpt2 with the exact GELU, every bias random: the query
    # bias too, which the gpt kind's bias-free heads could not hold (the converter refused it before gpt2)
    for bias, compiled in ((False, True), (True, False)):
        nano, vocab, ckpt = _nanogpt_checkpoint(c, bias, f"nano_bias{int(bias)}.pt", compiled)
        check(not bias or nano.transformer.h[0].attn.c_attn.bias[:16].abs().min() > 0, "the query bias is zero")
        out = c.path(f"nano_bias{int(bias)}.safetensors")
        source = ["--meta", meta] if not bias else ["--vocab-from", c.data]
        print(run([sys.executable, script, ckpt, out, *source]).strip())
        _, metadata = tg.read_safetensors(out)
        kind = (metadata["model.kind"], metadata.get("model.gelu_exact"))
        check(kind == (("gpt2", "1") if bias else ("gpt", None)), f"bias={bias} became {kind}")
        ids = torch.randint(0, V, (3, 8))
        _check_converted(c, nano, out, ids, f"nanoGPT (bias={bias}) -> tinygpt {kind[0]}")
        model, got_vocab = tg.load(out)
        check(got_vocab == vocab, "the vocabulary did not come through")
        with torch.no_grad():
            expected = nano(ids)
            rel_torch = ((model(ids) - expected).abs().max() / expected.abs().max()).item()
        print(f"nanoGPT (bias={bias}) -> tinygpt_torch: relative error {rel_torch:.3g}")
        check(rel_torch <= REL_TOLERANCE, "tinygpt_torch's logits differ from nanoGPT's")
        text = run([c.o.generate, out, "--prompt", "the ", "--chars", 20, "--seed", 2])
        check(text.startswith("the ") and len(text) >= 20, f"generate wrote {text!r}")

    # a meta.pkl whose ids are not in code-point order (reversed): tinygpt's ids are, so the rows are
    # reordered and each character keeps its logits (nanoGPT's id j is tinygpt's V - 1 - j)
    reversed_meta = c.path("meta_reversed.pkl")
    with open(reversed_meta, "wb") as f:
        pickle.dump({"vocab_size": V, "itos": dict(enumerate(reversed(chars))), "stoi": {}}, f)
    for bias in (False, True):
        nano, _, ckpt = _nanogpt_checkpoint(c, bias, f"nano_reversed{int(bias)}.pt", False)
        out = c.path(f"nano_reversed{int(bias)}.safetensors")
        convert(ckpt, out, "--meta", reversed_meta)
        ids = torch.randint(0, V, (3, 8))
        _check_converted(c, nano, out, ids, f"nanoGPT (bias={bias}) with a reversed vocabulary", tinygpt_ids=V - 1 - ids, flip=True)

    # GPT-2's vocabulary (here a small BPE vocabulary of 261 tokens), padded by nanoGPT to a multiple of 64:
    # --tokenizer DIR; the checkpoint keeps the BPE files and drops the padding rows
    bpe_dir, n_tokens = _small_bpe_dir(c)
    for bias in (False, True):
        nano, _, ckpt = _nanogpt_checkpoint(c, bias, f"nano_bpe{int(bias)}.pt", False, vocab_size=320)
        out = c.path(f"nano_bpe{int(bias)}.safetensors")
        said = convert(ckpt, out, "--tokenizer", bpe_dir).strip()
        print(said)
        check("padding rows 261..319 dropped" in said, f"the padding is not reported: {said}")
        _, metadata = tg.read_safetensors(out)
        check(metadata["tokenizer.kind"] == "gpt2-bpe" and metadata["model.vocab"] == str(n_tokens),
              f"the BPE checkpoint's metadata: {metadata.get('tokenizer.kind')}, vocab {metadata['model.vocab']}")
        ids = torch.randint(0, n_tokens, (3, 8))
        _check_converted(c, nano, out, ids, f"nanoGPT (bias={bias}) with a BPE vocabulary of {n_tokens} in 320 rows",
                         columns=n_tokens)
        text = run([c.o.generate, out, "--tokenizer", bpe_dir, "--prompt", "abc", "--tokens", 6, "--seed", 2])
        check(text.startswith("abc"), f"generate wrote {text!r}")

    refused = c.path("refused.safetensors")

    def refuses(label, args, needle):
        code, _, err = _from_nanogpt_in_process(c, args)
        print(f"{label}: exit {code}: {err.strip()}")
        check(code == 1 and needle in err and not os.path.exists(refused), f"{label} was not refused")

    # an output layer not tied to wte has no place in the gpt2 kind
    checkpoint = torch.load(c.path("nano_bias1.pt"))
    checkpoint["model"]["lm_head.weight"] = checkpoint["model"]["lm_head.weight"] + 1.0
    torch.save(checkpoint, c.path("untied.pt"))
    refuses("an untied lm_head (bias=True)", [c.path("untied.pt"), refused, "--meta", meta], "lm_head")
    # a vocabulary of another size: refused, as a tokenizer larger than the model
    with open(c.path("short.txt"), "w") as f:
        f.write("abc")
    refuses("a vocabulary of 3", [c.path("nano_bias0.pt"), refused, "--vocab-from", c.path("short.txt")], "vocab")
    refuses(f"a tokenizer of {n_tokens} tokens for {V} rows", [c.path("nano_bias0.pt"), refused, "--tokenizer", bpe_dir], "vocab_size")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case")
    for flag in ("--train", "--generate", "--logits", "--step", "--heatmap", "--figure", "--evaluate", "--gradflow",
                 "--export", "--python-dir", "--work"):
        p.add_argument(flag, required=True)
    o = p.parse_args()
    torch.set_num_threads(1)
    c = Case(o)
    if o.case.startswith("logits_"):
        case_logits(c, o.case[len("logits_"):])
    else:
        {"gpt2_full_vocab": case_gpt2_full_vocab, "gpt2_hf": case_gpt2_hf, "load_kinds": case_load_kinds, "torch_trains": case_torch_trains,
         "evaluate": case_evaluate, "gradflow": case_gradflow, "ddp": case_ddp, "nanogpt": case_nanogpt,
         "load_progress": case_load_progress}[o.case](c)
    print(f"{o.case}: passed")


if __name__ == "__main__":
    main()
