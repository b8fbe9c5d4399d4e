"""Convert a nanoGPT checkpoint (github.com/karpathy/nanoGPT, its train.py's ckpt.pt) into a tinygpt
checkpoint, so that gradflow, heatmap, figure, generate, evaluate and train --init-from can read a model
trained with nanoGPT.

    python3 python/from_nanogpt.py out-shakespeare-char/ckpt.pt nano.safetensors --meta data/shakespeare_char/meta.pkl
    python3 python/from_nanogpt.py ckpt.pt nano.safetensors --vocab-from input.txt
    python3 python/from_nanogpt.py out-shakespeare/ckpt.pt nano.safetensors --tokenizer gpt2/

nanoGPT's checkpoint has no vocabulary, so one is supplied: --meta, the meta.pkl that nanoGPT's
character-level prepare.py writes (its "itos"), or --vocab-from, the training text, whose sorted distinct
characters are the vocabulary exactly as that prepare.py makes it; its size must be the model's
vocab_size. A model with GPT-2's vocabulary takes --tokenizer DIR, GPT-2's BPE files (vocab.json +
merges.txt, or encoder.json + vocab.bpe), which the checkpoint keeps, as train --tokenizer's do. nanoGPT
pads that vocabulary to 50304 rows when it trains from scratch; the rows past the tokenizer's 50257 tokens
(never a target, never a token of any text) are dropped, and the other tokens' logits are unchanged.

The model becomes, with its maths unchanged (pre-LayerNorm with eps 1e-5, causal attention scaled by
1/sqrt(head width), nanoGPT's exact GELU, 4x feed-forward, final LayerNorm, the output tied to wte):
  - bias=True: tinygpt's gpt2 kind, which is the same architecture tensor for tensor (one c_attn with its
    bias, biases in every Linear and LayerNorm, the tied output) with the exact GELU (model.gelu_exact);
    torch.nn.Linear's (out, in) weights are transposed into Conv1D's (in, out);
  - bias=False: tinygpt's gpt kind. c_attn, one (3C, C) matrix, is split into each head's query, key and
    value (C, H), transposed; tinygpt keeps its own copy of the tied lm_head, transposed, and a zero bias;
    its LayerNorms and Linears have biases, which become zeros.
State_dict names may carry torch.compile's "_orig_mod." prefix. Anything else that does not fit (missing
or extra tensors, an untied lm_head for the gpt2 kind, another architecture) is refused, naming it.

No file it reads can run code: ckpt.pt is read with torch.load(weights_only=True), or only the globals it
allows (tensors, dicts, lists, numbers and strings; nanoGPT's checkpoints are only that), and meta.pkl by
an unpickler that builds dicts, lists, strings and whole numbers and refuses anything else (a class, a
function: what a pickle that runs code must name). OUT follows tinygpt's programs' rules: never an input,
an existing file only with --force, written atomically. Every refusal is one line on stderr: exit 2 for
flags and OUT, 1 for a file that cannot be converted; OUT is then untouched.
"""
import io
import os
import pickle
import pickletools
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinygpt_torch as tg  # noqa: E402


class Refused(Exception):
    pass


class _DataOnlyUnpickler(pickle.Unpickler):
    """Builds what pickle's data opcodes make and nothing that needs a global: no class, no function, so
    no __reduce__ can call anything."""

    def find_class(self, module, name):
        raise Refused(f"it names {module}.{name}")

    def persistent_load(self, pid):
        raise Refused("it holds a persistent reference")


def _scanned(raw):
    """The pickle `raw` to unpickle (a BytesIO), once pickletools has walked its opcodes: a ValueError when
    a length one claims runs past the bytes left, which pickle's unpickler would reserve before it reads
    (a claim of 2^40 bytes was a MemoryError)."""
    for _ in pickletools.genops(raw):
        pass
    return io.BytesIO(raw)


def read_meta(path):
    """nanoGPT's meta.pkl, holding only dicts, lists, strings and whole numbers, or Refused naming what else."""
    refusal = (f"--meta {path}: refused: a meta.pkl holds only dicts, lists, strings and whole numbers, "
               "and anything else could run code when unpickled, but")
    try:
        raw = tg.read_regular(path, "a pickle file")
    except ValueError as e:
        raise Refused(f"--meta {e}") from None
    try:
        meta = _DataOnlyUnpickler(_scanned(raw)).load()
    except Refused as e:
        raise Refused(f"{refusal} {e}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, MemoryError,
            AttributeError, RecursionError) as e:
        raise Refused(f"--meta {path} is not a pickle file ({type(e).__name__}: {e})") from None
    pending = [meta]
    while pending:  # (iterative: a deep nest cannot exhaust the stack)
        x = pending.pop()
        if type(x) is dict:
            pending.extend(x.keys())
            pending.extend(x.values())
        elif type(x) is list:
            pending.extend(x)
        elif type(x) not in (str, int):
            raise Refused(f"{refusal} it holds {type(x).__name__} {x!r:.40}")
    return meta


def read_vocab(o, vocab_size):
    """The characters in nanoGPT's id order (--meta, --vocab-from), or GPT-2's BPE files (--tokenizer)."""
    if o.tokenizer:
        try:
            bpe = tg.read_bpe_dir(o.tokenizer)
        except (ValueError, OSError) as e:
            raise Refused(f"--tokenizer {e}") from None
        if vocab_size < bpe.size:
            raise Refused(f"the model's vocab_size is {vocab_size} but --tokenizer {o.tokenizer} has {bpe.size} tokens")
        return bpe
    if o.meta:
        meta = read_meta(o.meta)
        itos = meta.get("itos") if type(meta) is dict else None
        if itos is None:
            raise Refused(f"--meta {o.meta} has no 'itos': not a character-level meta.pkl")
        source = f"--meta {o.meta}"
        if type(itos) is dict and sorted(itos) != list(range(len(itos))):
            raise Refused(f"{source}: 'itos' must map the ids 0 to {len(itos) - 1}, each once")
        vocab = [itos[i] for i in range(len(itos))]
    else:
        try:
            vocab = sorted(set(tg.read_text(o.vocab_from)))
        except ValueError as e:
            raise Refused(f"--vocab-from {e}") from None
        source = f"--vocab-from {o.vocab_from}"
    if any(not isinstance(c, str) or len(c) != 1 for c in vocab) or len(set(vocab)) != len(vocab):
        raise Refused(f"{source}: the vocabulary must be distinct single characters")
    if len(vocab) != vocab_size:
        raise Refused(f"the model's vocab_size is {vocab_size} but {source} has {len(vocab)} characters "
                      "(a model with GPT-2's vocabulary takes --tokenizer DIR)")
    return vocab


class _WeightsOnlyUnpickler(pickle.Unpickler):
    """pickle's own unpickler that finds only the globals torch.load(weights_only=True) allows (tensors,
    their storages and rebuild functions, dtypes, torch.Size, OrderedDict): the only callables a pickle can
    then call build data. Torch's zip loader hands it data.pkl in a BytesIO, scanned first (_scanned)."""

    def __init__(self, file, **kwargs):
        super().__init__(_scanned(file.read()), **kwargs)

    def find_class(self, module, name):
        from torch._weights_only_unpickler import _get_allowed_globals
        allowed = _get_allowed_globals()
        if f"{module}.{name}" not in allowed:
            raise pickle.UnpicklingError(f"Unsupported class {module}.{name}")
        return allowed[f"{module}.{name}"]


class _weights_only_pickle:  # what torch's zip loader uses of a pickle module
    Unpickler = _WeightsOnlyUnpickler
    __name__ = "tinygpt weights-only pickle"


def _load_weights_only(path):
    """torch.load(path, weights_only=True). Debian 12's torch 1.13 implements weights_only without the
    float opcodes, so it refuses every nanoGPT checkpoint (best_val_loss, the config's learning_rate); such
    a file is read again by pickle's unpickler restricted to the same globals, through torch's zip loader
    (its torch.load ignores a pickle_module unless weights_only)."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        if "Unsupported operand" not in str(e):
            raise
        refusal = e
    from torch import serialization
    with open(path, "rb") as f:
        if not serialization._is_zipfile(f):  # (the legacy format: torch's refusal stands)
            raise refusal
    with serialization._open_zipfile_reader(path) as archive:
        if serialization._is_torchscript_zip(archive):
            raise Refused(f"{path} is a TorchScript archive, not nanoGPT's checkpoint")
        return serialization._load(archive, "cpu", _weights_only_pickle, encoding="utf-8")


def read_checkpoint(path):
    """(state_dict, model_args) of nanoGPT's ckpt.pt, read weights-only, checked before any of it is used:
    a dict with a state_dict of tensors and model_args of positive whole sizes."""
    tg.open_regular(path, "a checkpoint")[0].close()  # (torch.load would wait on a FIFO, read a device)
    try:
        checkpoint = _load_weights_only(path)
    except pickle.UnpicklingError as e:
        why = str(e).split("WeightsUnpickler error:")[-1].strip()
        if not why.startswith("Unsupported class"):
            raise Refused(f"{path} is not a checkpoint torch.load can read ({tg.one_line(why)})") from None
        raise Refused(f"{path}: refused: a checkpoint of weights holds tensors, dicts, lists, numbers and strings, "
                      f"and anything else could run code when unpickled; this one names "
                      f"{why[len('Unsupported class '):]}") from None
    except (RuntimeError, EOFError, ValueError, TypeError, AttributeError, KeyError, IndexError, MemoryError,
            RecursionError, struct.error) as e:
        first = str(e).splitlines()[0] if str(e) else ""
        raise Refused(f"{path} is not a checkpoint torch.load can read ({type(e).__name__}: {first})") from None
    if not isinstance(checkpoint, dict) or "model" not in checkpoint or "model_args" not in checkpoint:
        raise Refused(f"{path} is not a nanoGPT checkpoint (a dict with 'model' and 'model_args')")
    state, args = checkpoint["model"], checkpoint["model_args"]
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise Refused(f"{path}: 'model' is not a state_dict (names to tensors)")
    if not isinstance(args, dict):
        raise Refused(f"{path}: 'model_args' is {type(args).__name__}, not a dict")
    missing = [k for k in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size") if k not in args]
    if missing:
        raise Refused(f"{path}: model_args lacks {missing}")
    for key in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size"):
        if type(args[key]) is not int or args[key] <= 0:
            raise Refused(f"{path}: model_args {key} is {args[key]!r:.40}, not a positive whole number")
    if args["n_embd"] % args["n_head"] != 0:
        raise Refused(f"{path}: n_head {args['n_head']} does not divide n_embd {args['n_embd']}")
    if type(args.get("bias", True)) is not bool:
        raise Refused(f"{path}: model_args bias is {args['bias']!r:.40}, not True or False")
    dropout = args.get("dropout", 0.0)
    if type(dropout) not in (int, float) or not 0.0 <= dropout < 1.0:
        raise Refused(f"{path}: model_args dropout is {dropout!r:.40}, not a number in [0, 1)")
    return state, args


def convert(state, args, vocab):
    """(config, tinygpt's tensors under its names and layouts, vocabulary in tinygpt's id order) from
    nanoGPT's state_dict and model_args; `vocab` is read_vocab's."""
    state = {k[len("_orig_mod."):] if k.startswith("_orig_mod.") else k: v.detach().to(torch.float32) for k, v in state.items()}
    C, n_head, L = args["n_embd"], args["n_head"], args["n_layer"]
    rows, block = args["vocab_size"], args["block_size"]  # rows: nanoGPT's, padding included
    bpe = isinstance(vocab, tg.BpeFiles)
    V = vocab.size if bpe else len(vocab)  # the tokens kept (read_vocab: V <= rows)
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
    wte = take("transformer.wte.weight", (rows, C))[:V]
    lm_head = take("lm_head.weight", (rows, C), required=False)  # (the same tensor as wte: tied)
    for i in range(L):
        mask = take(f"transformer.h.{i}.attn.bias", required=False)  # the causal mask buffer of nanoGPT without flash attention
        if mask is not None and mask.dim() != 4:
            raise Refused(f"'transformer.h.{i}.attn.bias' is {tuple(mask.shape)}, not nanoGPT's causal mask")
    if bias:
        out = gpt2_tensors(take, C, L, block, wte)
        if lm_head is not None and not torch.equal(lm_head[:V], wte):
            raise Refused("'lm_head.weight' differs from 'transformer.wte.weight': tinygpt's gpt2 kind ties its output "
                          "layer to the token table, as nanoGPT's GPT does")
    else:
        out = gpt_tensors(take, C, n_head, L, block, wte, (lm_head[:V] if lm_head is not None else wte))
    extra = sorted(set(state) - used)
    if extra:
        raise Refused(f"the checkpoint has tensors nanoGPT's GPT does not: {extra[:8]}")
    config = tg.ModelConfig(kind="gpt2" if bias else "gpt", vocab=V, n_embd=C, n_head=n_head, n_layer=L, block=block,
                            dropout=float(args.get("dropout", 0.0)), gelu_exact=bias)  # (nanoGPT's GELU is the exact one)
    if bpe:
        return config, out, vocab

    # tinygpt's ids are the characters sorted by code point: reorder the rows if the vocabulary is not
    order = sorted(range(V), key=lambda i: vocab[i])
    if order != list(range(V)):
        if bias:
            out["wte.weight"] = out["wte.weight"][order]
        else:
            out["token.weight"] = out["token.weight"][order]
            out["lm_head.weight"] = out["lm_head.weight"][:, order]
            out["lm_head.bias"] = out["lm_head.bias"][order]
    return config, out, [vocab[i] for i in order]


def gpt2_tensors(take, C, L, block, wte):
    """tinygpt's gpt2 kind is nanoGPT's bias=True GPT under Hugging Face's names: the same tensors, a
    LayerNorm's scale named gain, nn.Linear's (out, in) weights as Conv1D's (in, out)."""
    out = {"wte.weight": wte, "wpe.weight": take("transformer.wpe.weight", (block, C))}
    for i in range(L):
        p, q = f"transformer.h.{i}.", f"h.{i}."
        for norm in ("ln_1", "ln_2"):
            out[q + norm + ".gain"] = take(p + norm + ".weight", (C,))
            out[q + norm + ".bias"] = take(p + norm + ".bias", (C,))
        for layer, n_out, n_in in (("attn.c_attn", 3 * C, C), ("attn.c_proj", C, C), ("mlp.c_fc", 4 * C, C),
                                   ("mlp.c_proj", C, 4 * C)):
            out[q + layer + ".weight"] = take(p + layer + ".weight", (n_out, n_in)).t()
            out[q + layer + ".bias"] = take(p + layer + ".bias", (n_out,))
    out["ln_f.gain"] = take("transformer.ln_f.weight", (C,))
    out["ln_f.bias"] = take("transformer.ln_f.bias", (C,))
    return out


def gpt_tensors(take, C, n_head, L, block, wte, lm_head):
    """tinygpt's gpt kind from nanoGPT's bias=False GPT: c_attn split into the heads, zero biases, its own
    copy of the tied output layer."""
    H = C // n_head
    out = {"token.weight": wte, "position.weight": take("transformer.wpe.weight", (block, C))}
    for i in range(L):
        p, q = f"transformer.h.{i}.", f"blocks.{i}."
        out[q + "norm1.gain"] = take(p + "ln_1.weight", (C,))
        out[q + "norm1.bias"] = torch.zeros(C)
        attn_w = take(p + "attn.c_attn.weight", (3 * C, C))  # rows: all queries, all keys, all values
        for h in range(n_head):
            rows = slice(h * H, (h + 1) * H)
            for part, offset in (("query", 0), ("key", C), ("value", 2 * C)):
                out[q + f"attention.heads.{h}.{part}.weight"] = attn_w[offset + rows.start:offset + rows.stop].t()
        out[q + "attention.projection.weight"] = take(p + "attn.c_proj.weight", (C, C)).t()
        out[q + "attention.projection.bias"] = torch.zeros(C)
        out[q + "norm2.gain"] = take(p + "ln_2.weight", (C,))
        out[q + "norm2.bias"] = torch.zeros(C)
        out[q + "feed_forward.up.weight"] = take(p + "mlp.c_fc.weight", (4 * C, C)).t()
        out[q + "feed_forward.up.bias"] = torch.zeros(4 * C)
        out[q + "feed_forward.down.weight"] = take(p + "mlp.c_proj.weight", (C, 4 * C)).t()
        out[q + "feed_forward.down.bias"] = torch.zeros(C)
    out["final_norm.gain"] = take("transformer.ln_f.weight", (C,))
    out["final_norm.bias"] = torch.zeros(C)
    out["lm_head.weight"] = lm_head.t()
    out["lm_head.bias"] = torch.zeros(lm_head.shape[0])
    return out


def main():
    p = tg.ArgumentParser(prog="from_nanogpt.py", description="Convert a nanoGPT checkpoint into a tinygpt checkpoint.")
    p.add_argument("ckpt", help="nanoGPT's ckpt.pt (a dict with 'model' and 'model_args')")
    p.add_argument("out", help="the tinygpt checkpoint to write (.safetensors)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--meta", help="nanoGPT's meta.pkl of a character-level dataset (its 'itos')")
    source.add_argument("--vocab-from", help="the training text: its sorted distinct characters")
    source.add_argument("--tokenizer", metavar="DIR", help="GPT-2's BPE files (vocab.json + merges.txt, or encoder.json + "
                        "vocab.bpe), for a model with GPT-2's vocabulary")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    o = p.parse_args()
    try:
        bpe_files = [os.path.join(o.tokenizer, name) for name in ("vocab.json", "merges.txt", "encoder.json", "vocab.bpe")
                     if o.tokenizer and os.path.exists(os.path.join(o.tokenizer, name))]
        tg.check_outputs([("OUT", o.out)], [("CKPT", o.ckpt), ("--meta", o.meta), ("--vocab-from", o.vocab_from),
                                            *(("--tokenizer", f) for f in bpe_files)], o.force)
    except tg.UsageError as e:
        print(f"from_nanogpt.py: {tg.one_line(e)}", file=sys.stderr)
        return 2
    try:
        state, args = read_checkpoint(o.ckpt)
        vocab = read_vocab(o, args["vocab_size"])
        config, tensors, vocab = convert(state, args, vocab)
        model = tg.make_model(config)
        tg.load_tinygpt_state(model, tensors, o.ckpt)
        tg.save(model, vocab, o.out, {"converted_from": "nanoGPT", "nanogpt.bias": str(bool(args.get("bias", True)))})
    except (Refused, ValueError, OSError, RuntimeError, MemoryError) as e:
        print(f"from_nanogpt.py: {tg.one_line(e)}", file=sys.stderr)
        return 1
    kind = "GPT" if config.kind == "gpt" else "gpt2 (GPT-2's block, exact GELU)"
    vocabulary = f"vocabulary of {config.vocab}"
    if isinstance(vocab, tg.BpeFiles):
        vocabulary = f"GPT-2's BPE vocabulary of {config.vocab} from {o.tokenizer}"
        if args["vocab_size"] > config.vocab:
            vocabulary += f" (nanoGPT's padding rows {config.vocab}..{args['vocab_size'] - 1} dropped)"
    print(f"{o.ckpt} -> {o.out}: {kind} n_layer {config.n_layer} n_head {config.n_head} n_embd {config.n_embd} "
          f"block {config.block}, {vocabulary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
