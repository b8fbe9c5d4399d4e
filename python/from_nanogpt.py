"""Convert a nanoGPT checkpoint (github.com/karpathy/nanoGPT, its train.py's ckpt.pt) into a tinygpt GPT
checkpoint, so that gradflow, heatmap, figure, generate and train --init-from can read a model trained with
nanoGPT.

    python3 python/from_nanogpt.py out-shakespeare-char/ckpt.pt nano.safetensors --meta data/shakespeare_char/meta.pkl
    python3 python/from_nanogpt.py ckpt.pt nano.safetensors --vocab-from input.txt

nanoGPT's checkpoint has no vocabulary, so one is supplied: --meta, the meta.pkl that nanoGPT's
character-level prepare.py writes (its "itos"), or --vocab-from, the training text, whose sorted distinct
characters are the vocabulary exactly as that prepare.py makes it. Its size must be the model's
vocab_size: models with a GPT-2 (BPE) vocabulary do not map onto tinygpt's character tokenizer.

The architectures are the same block for block (pre-LayerNorm with eps 1e-5, causal attention scaled by
1/sqrt(head width), exact GELU, 4x feed-forward, final LayerNorm); what differs is mapped exactly:
  - c_attn, one (3C, C) matrix, is split into each head's query, key and value (C, H), transposed;
  - tied embeddings: lm_head.weight is wte's; tinygpt keeps its own copy, transposed, and a zero bias;
  - bias=False: tinygpt's LayerNorms and Linears have biases, which become zeros;
  - bias=True: tinygpt's heads have no biases. A key bias adds the same amount to every score of a row,
    which softmax ignores: it is dropped. A value bias passes through the attention weights (which sum
    to 1) unchanged: it is folded into the projection's bias. A query bias changes the scores and cannot
    be mapped: such a model is refused (exit 1, nothing written). Dropping and folding change the
    logits by float32 rounding only.
State_dict names may carry torch.compile's "_orig_mod." prefix. Anything else that does not fit (missing
or extra tensors, another architecture) is refused, naming it.
"""
import argparse
import os
import pickle
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinygpt_torch as tg  # noqa: E402


class Refused(Exception):
    pass


def read_vocab(o, vocab_size):
    if o.meta:
        with open(o.meta, "rb") as f:
            meta = pickle.load(f)
        if "itos" not in meta:
            raise Refused(f"--meta {o.meta} has no 'itos' (keys {sorted(meta)}): not a character-level meta.pkl")
        itos = meta["itos"]
        vocab = [itos[i] for i in range(len(itos))]
        source = f"--meta {o.meta}"
    else:
        with open(o.vocab_from, encoding="utf-8") as f:
            vocab = sorted(set(f.read()))
        source = f"--vocab-from {o.vocab_from}"
    if any(not isinstance(c, str) or len(c) != 1 for c in vocab) or len(set(vocab)) != len(vocab):
        raise Refused(f"{source}: the vocabulary must be distinct single characters")
    if len(vocab) != vocab_size:
        raise Refused(f"the model's vocab_size is {vocab_size} but {source} has {len(vocab)} characters "
                      "(only character-level nanoGPT models map onto tinygpt's tokenizer)")
    return vocab


def convert(state, args, vocab):
    """tinygpt's tensors (its names and layouts) from nanoGPT's state_dict and model_args."""
    state = {k[len("_orig_mod."):] if k.startswith("_orig_mod.") else k: v.detach().to(torch.float32) for k, v in state.items()}
    C, n_head, L = args["n_embd"], args["n_head"], args["n_layer"]
    V, block = args["vocab_size"], args["block_size"]
    H = C // n_head
    used = set()

    def take(name, shape=None, required=True):
        if name not in state:
            if required:
                raise Refused(f"the checkpoint has no '{name}': not nanoGPT's GPT")
            return None
        t = state[name]
        if shape is not None and tuple(t.shape) != tuple(shape):
            raise Refused(f"'{name}' is {tuple(t.shape)}, nanoGPT's GPT with these model_args has {tuple(shape)}")
        used.add(name)
        return t

    bias = bool(args.get("bias", True))

    def bias_or_zeros(name, n):
        return take(name, (n,)) if bias else torch.zeros(n)

    out = {"token.weight": take("transformer.wte.weight", (V, C)), "position.weight": take("transformer.wpe.weight", (block, C))}
    for i in range(L):
        p, q = f"transformer.h.{i}.", f"blocks.{i}."
        out[q + "norm1.gain"] = take(p + "ln_1.weight", (C,))
        out[q + "norm1.bias"] = bias_or_zeros(p + "ln_1.bias", C)
        attn_w = take(p + "attn.c_attn.weight", (3 * C, C))  # rows: all queries, all keys, all values
        attn_b = bias_or_zeros(p + "attn.c_attn.bias", 3 * C)
        if attn_b[:C].abs().max().item() != 0.0:
            raise Refused(f"layer {i} has a query bias ({p}attn.c_attn.bias[:{C}] is not zero); tinygpt's heads have "
                          "no biases and a query bias cannot be folded away")
        for h in range(n_head):
            rows = slice(h * H, (h + 1) * H)
            for part, offset in (("query", 0), ("key", C), ("value", 2 * C)):
                out[q + f"attention.heads.{h}.{part}.weight"] = attn_w[offset + rows.start:offset + rows.stop].t()
        proj_w = take(p + "attn.c_proj.weight", (C, C))
        # softmax ignores the key bias; the value bias comes out of the attention unchanged, into c_proj
        value_bias = attn_b[2 * C:]
        out[q + "attention.projection.weight"] = proj_w.t()
        out[q + "attention.projection.bias"] = bias_or_zeros(p + "attn.c_proj.bias", C) + proj_w @ value_bias
        out[q + "norm2.gain"] = take(p + "ln_2.weight", (C,))
        out[q + "norm2.bias"] = bias_or_zeros(p + "ln_2.bias", C)
        out[q + "feed_forward.up.weight"] = take(p + "mlp.c_fc.weight", (4 * C, C)).t()
        out[q + "feed_forward.up.bias"] = bias_or_zeros(p + "mlp.c_fc.bias", 4 * C)
        out[q + "feed_forward.down.weight"] = take(p + "mlp.c_proj.weight", (C, 4 * C)).t()
        out[q + "feed_forward.down.bias"] = bias_or_zeros(p + "mlp.c_proj.bias", C)
        mask = take(p + "attn.bias", required=False)  # the causal mask buffer of nanoGPT without flash attention
        if mask is not None and mask.dim() != 4:
            raise Refused(f"'{p}attn.bias' is {tuple(mask.shape)}, not nanoGPT's causal mask")
    out["final_norm.gain"] = take("transformer.ln_f.weight", (C,))
    out["final_norm.bias"] = bias_or_zeros("transformer.ln_f.bias", C)
    lm_head = take("lm_head.weight", (V, C), required=False)
    out["lm_head.weight"] = (lm_head if lm_head is not None else out["token.weight"]).t()  # tied: wte's
    out["lm_head.bias"] = torch.zeros(V)
    extra = sorted(set(state) - used)
    if extra:
        raise Refused(f"the checkpoint has tensors nanoGPT's GPT does not: {extra[:8]}")

    # tinygpt's ids are the characters sorted by code point: reorder the rows if the vocabulary is not
    order = sorted(range(V), key=lambda i: vocab[i])
    if order != list(range(V)):
        out["token.weight"] = out["token.weight"][order]
        out["lm_head.weight"] = out["lm_head.weight"][:, order]
        out["lm_head.bias"] = out["lm_head.bias"][order]
    return out, [vocab[i] for i in order]


def main():
    p = argparse.ArgumentParser(description="Convert a nanoGPT checkpoint into a tinygpt GPT checkpoint.")
    p.add_argument("ckpt", help="nanoGPT's ckpt.pt (a dict with 'model' and 'model_args')")
    p.add_argument("out", help="the tinygpt checkpoint to write (.safetensors)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--meta", help="nanoGPT's meta.pkl of a character-level dataset (its 'itos')")
    source.add_argument("--vocab-from", help="the training text: its sorted distinct characters")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    o = p.parse_args()
    try:
        if os.path.exists(o.out) and not o.force:
            raise Refused(f"{o.out} exists; add --force to replace it")
        checkpoint = torch.load(o.ckpt, map_location="cpu")
        if not isinstance(checkpoint, dict) or "model" not in checkpoint or "model_args" not in checkpoint:
            raise Refused(f"{o.ckpt} is not a nanoGPT checkpoint (a dict with 'model' and 'model_args')")
        args = checkpoint["model_args"]
        missing = [k for k in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size") if k not in args]
        if missing:
            raise Refused(f"{o.ckpt}: model_args lacks {missing}")
        if args["n_embd"] % args["n_head"] != 0:
            raise Refused(f"n_head {args['n_head']} does not divide n_embd {args['n_embd']}")
        vocab = read_vocab(o, args["vocab_size"])
        tensors, vocab = convert(checkpoint["model"], args, vocab)
        config = tg.ModelConfig(kind="gpt", vocab=args["vocab_size"], n_embd=args["n_embd"], n_head=args["n_head"],
                                n_layer=args["n_layer"], block=args["block_size"], dropout=float(args.get("dropout", 0.0)))
        model = tg.make_model(config)
        tg.load_tinygpt_state(model, tensors, o.ckpt)
        tg.save(model, vocab, o.out, {"converted_from": "nanoGPT", "nanogpt.bias": str(bool(args.get("bias", True)))})
    except (Refused, ValueError, OSError) as e:
        print(f"from_nanogpt.py: {e}", file=sys.stderr)
        return 1
    print(f"{o.ckpt} -> {o.out}: GPT n_layer {config.n_layer} n_head {config.n_head} n_embd {config.n_embd} "
          f"block {config.block}, vocabulary of {config.vocab}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
