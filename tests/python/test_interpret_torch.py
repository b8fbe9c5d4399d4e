"""Issue 43's PyTorch reference: the five programs that ask a model why (cache, lens, patch, attribute, ablate;
docs/interpret.md) give every number a plain PyTorch computation with forward hooks gives on the same weights
(python/tinygpt_torch/interpret.py, written from TransformerLens's definitions, not from the C++ code).
tests/python/CMakeLists.txt runs it as torch_interpret.

Four small random models, one of each transformer kind:
  gpt        a character checkpoint made by `train` (a few steps), prompts as text
  attn_only  the same, of the attention-only kind (no MLPs, no norms: examples/induction's model)
  gpt2       random GPT-2 weights (tinygpt_torch's GPT2, perturbed) written by `export --hf`: model.safetensors
             with config.json beside it and no tokenizer, prompts as token ids
  llama      a random Llama Hugging Face folder (tests/python/llama_folder: 4 query heads on 2 key-value heads),
             prompts as token ids

Cases:
  reference  the reference against itself (no C++ program): the cache's logits are the model's; each block's
             stream adds up (resid_mid = resid_pre + attn_out, resid_post = resid_mid + mlp_out, or resid_pre +
             attn_out without MLPs; the next block's resid_pre); patterns' rows sum to 1; the lens at L is log_softmax of the logits; direct
             logit attribution's parts sum to the logit difference; a resid_pre patched at every position is
             the clean run; attribution patching's estimate minus the corrupt metric is the directional
             derivative (a central difference on a float64 copy of the model); zero-ablating a head is the
             model with its rows of the output projection zeroed.
  programs   each program's --json against the reference, and cache's safetensors file against the torch
             cache for every hook name: the error of a list of numbers is max |ours - torch| / max(max |torch|,
             1e-3) (relative to the list's largest magnitude, so that a component near zero is not divided by
             itself), and must be at most 1e-4; a token id (lens's top) must be the reference's, or the two
             within 1e-4 of each other in the reference's logits (a near tie). patch --site mlp_out of the
             attn_only model is refused (exit 2, one line, nothing on stdout), as the reference refuses it.
  all        both (what CTest runs, as torch_interpret).

Prints the largest error per kind and program. A failure raises (exit 1) with what differed.
"""
import argparse
import copy
import json
import math
import os
import shutil
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

TOLERANCE = 1e-4
TEXT = ("the cat sat on the mat. the dog sat on the log. a cat and a dog met on a mat by the log, and the cat "
        "ran to the dog as the dog ran to the cat.\n") * 3


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def run(args, **kw):
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    check(out.returncode == 0, f"{' '.join(str(a) for a in args)} failed ({out.returncode}): {out.stderr}")
    return out.stdout


def error(ours, theirs):
    """max |ours - theirs| / max(max |theirs|, 1e-3) over (nested lists of) numbers of the same shape; -inf
    (a masked score) must be -inf in both."""
    a, b = torch.as_tensor(ours, dtype=torch.float64), torch.as_tensor(theirs, dtype=torch.float64)
    check(a.shape == b.shape, f"shapes {tuple(a.shape)} and {tuple(b.shape)}")
    masked = torch.isinf(b)
    check(torch.equal(torch.isinf(a), masked) and bool((a[masked] == b[masked]).all()), "-inf in other places")
    check(bool(torch.isfinite(a[~masked]).all()), "a number that is not finite")
    if not bool((~masked).any()):
        return 0.0
    a, b = a[~masked], b[~masked]
    return ((a - b).abs().max() / max(b.abs().max().item(), 1e-3)).item()


class Model:
    """A model of one kind: the checkpoint the programs read, the torch model, and how prompts and tokens are
    written for it (text for the character model, ids for the others)."""

    def __init__(self, kind, ckpt, model, vocab=None):
        self.kind, self.ckpt, self.model, self.vocab = kind, ckpt, model.eval(), vocab

    def prompt(self, ids):
        return "".join(self.vocab[i] for i in ids) if self.vocab else " ".join(str(i) for i in ids)

    def token(self, i):
        return self.vocab[i] if self.vocab else str(i)

    def encode(self, text):
        return [self.vocab.index(ch) for ch in text]

    def vocab_size(self):
        config = self.model.config
        return config["vocab"] if isinstance(config, dict) else config.vocab


def make_models(o, tg):
    models = {}
    # gpt and attn_only: character checkpoints from a few steps of train
    data = os.path.join(o.work, "text.txt")
    with open(data, "w") as f:
        f.write(TEXT)
    for kind, name in (("gpt", "GPT"), ("attn_only", "AttentionOnly")):
        ckpt = os.path.join(o.work, f"{kind}.safetensors")
        run([o.train, "--model", kind, "--n-embd", 32, "--n-head", 4, "--n-layer", 2, "--block", 24, "--data", data,
             "--steps", 15, "--batch", 8, "--lr", "1e-2", "--eval-iters", 1, "--sample", 0, "--out", ckpt])
        model, vocab = tg.load(ckpt)
        check(vocab == sorted(set(TEXT)) and type(model).__name__ == name, f"{kind}: {type(model)}, vocab {vocab!r}")
        models[kind] = Model(kind, ckpt, model, vocab)

    # gpt2: random weights beyond GPT-2's initialization (every tensor moves the logits), exported --hf
    torch.manual_seed(7)
    gpt2 = tg.make_model(tg.ModelConfig(kind="gpt2", vocab=29, n_embd=32, n_head=4, n_layer=2, block=16))
    with torch.no_grad():
        for p in gpt2.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    saved, hf = os.path.join(o.work, "gpt2.safetensors"), os.path.join(o.work, "gpt2_hf")
    tg.save(gpt2, [chr(ord("A") + i) for i in range(29)], saved)
    run([o.export, saved, "--hf", hf])
    models["gpt2"] = Model("gpt2", os.path.join(hf, "model.safetensors"), tg.load_hf_folder(hf))

    # llama: a random Hugging Face folder, 4 query heads on 2 key-value heads, untied (vocab 37, block 16)
    folder = os.path.join(o.work, "llama_hf")
    run([o.llama_folder, folder, 2, "untied", 11, 1, 1, 0, 1])  # seed 11; (its loss on ids 0 1 is not read)
    llama = tg.load_hf_llama_folder(folder)
    check(llama.config["n_kv_head"] < llama.config["n_head"], f"llama: {llama.config}")
    models["llama"] = Model("llama", folder, llama)
    return models


def prompts(m):
    """clean and corrupt ids of the same length, the answer and the wrong token, for model m."""
    if m.vocab:
        clean, corrupt = m.encode("the cat sat on the m"), m.encode("the dog sat on the l")
        return clean, corrupt, m.encode("a")[0], m.encode("o")[0]
    gen = torch.Generator().manual_seed(3)
    V = m.vocab_size()
    clean = torch.randint(0, V, (12,), generator=gen).tolist()
    corrupt = clean[:5] + torch.randint(0, V, (7,), generator=gen).tolist()
    return clean, corrupt, 3, 5


# --- the reference against itself -------------------------------------------------------------------------

def check_reference(m, interpret, worst):
    model = m.model
    clean, corrupt, answer, wrong = prompts(m)
    ids = torch.tensor([clean])
    s = interpret.Stream(model)
    L, T = s.n_layer, len(clean)

    cache = interpret.run_with_cache(model, ids)
    with torch.no_grad():
        logits = model(ids)
    # (hooks inside the ladder's heads make it stack them, as one batched product: equal up to rounding)
    e = error(cache["logits"], logits)
    check(e <= 1e-6, f"{m.kind}: the cached logits are not the model's ({e:.2e})")
    stream = 0.0
    for l in range(L):
        p = f"blocks.{l}."
        mid = cache[p + "hook_resid_pre"] + cache[p + "hook_attn_out"]
        if s.has_mlp:
            stream = max(stream, error(cache[p + "hook_resid_mid"], mid),
                         error(cache[p + "hook_resid_post"], cache[p + "hook_resid_mid"] + cache[p + "hook_mlp_out"]))
        else:
            check(not any(n.startswith(p) and "mlp" in n for n in cache), f"{m.kind}: an MLP's hook point")
            stream = max(stream, error(cache[p + "hook_resid_post"], mid))
        if l + 1 < L:
            check(torch.equal(cache[p + "hook_resid_post"], cache[f"blocks.{l + 1}.hook_resid_pre"]), f"{m.kind}: block {l}")
        pattern = cache[p + "attn.hook_pattern"]  # (1, n_head, T, T)
        check(pattern.shape == (1, s.n_head, T, T), f"{m.kind}: hook_pattern {tuple(pattern.shape)}")
        stream = max(stream, error(pattern.sum(-1), torch.ones(1, s.n_head, T)))
        check(bool((pattern.triu(1) == 0).all()), f"{m.kind}: a pattern looks ahead")
    check(stream <= 1e-6, f"{m.kind}: the stream does not add up ({stream:.2e})")

    lens = interpret.logit_lens(model, ids)
    logprobs = F.log_softmax(logits[0].double(), -1)
    e = error(lens["logprob_next"][L], [logprobs[p, clean[p + 1]].item() for p in range(T - 1)])
    check(e <= 1e-6 and lens["top"][L] == logits[0].argmax(-1).tolist(),
          f"{m.kind}: the lens at L is not the logits ({e:.2e})")
    check(len(lens["logprob_next"]) == L + 1 and all(len(r) == T - 1 for r in lens["logprob_next"]),
          f"{m.kind}: lens shape")

    for wrong_token in (wrong, None):
        dla = interpret.direct_logit_attribution(model, ids, answer, wrong_token)
        total = dla["embed"] + sum(map(sum, dla["heads"])) + sum(dla["mlps"]) + dla["bias"]
        e = error([total], [dla["logit_diff"]])
        check(e <= 1e-5, f"{m.kind}: the attribution's parts sum to {total}, the logit difference is {dla['logit_diff']}")
        check(abs(dla["bias"]) > 0 or s.norm == "rms", f"{m.kind}: no bias")
        check(len(dla["mlps"]) == (L if s.has_mlp else 0), f"{m.kind}: {len(dla['mlps'])} MLPs")
        worst["dla sum"] = max(worst.get("dla sum", 0.0), e)

    # activation patching's hooks: resid_pre of any block taken from the clean run at every position is the clean run
    clean_cache = interpret.run_with_cache(model, ids, "blocks.*.hook_resid_pre")
    clean_metric = interpret.metric(logits.double(), answer, wrong).item()
    for l in range(L):
        name = f"blocks.{l}.hook_resid_pre"
        with interpret.Hooks(model) as hooks, torch.no_grad():
            hooks.add(name, lambda out, name=name: clean_cache[name].clone())
            patched = interpret.metric(model(torch.tensor([corrupt])).double(), answer, wrong).item()
        check(patched == clean_metric, f"{m.kind}: {name} patched everywhere gives {patched}, not {clean_metric}")
    result = interpret.patch(model, clean, corrupt, answer, wrong, "resid_pre")
    check(result["clean"] == clean_metric and len(result["effects"]) == L and len(result["effects"][0]) == T,
          f"{m.kind}: patch gave {result}")
    check(result["clean"] != result["corrupt"], f"{m.kind}: the prompts do not move the metric")
    # into the first block a row is its token and position: the first rows, where clean and corrupt have the
    # same tokens, are equal in both runs, and patching one changes nothing
    check(result["effects"][0][0] == result["corrupt"], f"{m.kind}: patching a shared row changed the metric")
    check(result["effects"][0][T - 1] != result["corrupt"], f"{m.kind}: patching the last row changed nothing")

    # attribution patching: effect - metric(corrupt) = d/dt metric(corrupt + t (clean - corrupt)) at 0, checked by a
    # central difference on a float64 copy (through forward hooks that blend the two runs)
    if not s.has_mlp:
        try:
            interpret.patch(model, clean, corrupt, answer, wrong, "mlp_out")
            check(False, f"{m.kind}: patching mlp_out was accepted")
        except ValueError:
            pass
    wide = copy.deepcopy(model).double()
    for site in sites(s):
        estimate = interpret.patch(wide, clean, corrupt, answer, wrong, site, "attribution")
        names = [interpret.site_point(site, l) for l in range(L)]
        clean_acts = interpret.run_with_cache(wide, [clean], ",".join(names))
        l, i = L - 1, (s.n_head - 1 if site == "head" else T - 1)  # one site each: the last layer's last row/head
        name, h = names[l], 1e-4

        def blended(t):
            def blend(out):
                out = out.clone()
                sl = (slice(None), slice(None), i) if site == "head" else (slice(None), i)
                out[sl] = out[sl] + t * (clean_acts[name][sl] - out[sl])
                return out
            with interpret.Hooks(wide) as hooks, torch.no_grad():
                hooks.add(name, blend)
                return interpret.metric(wide(torch.tensor([corrupt])), answer, wrong).item()
        derivative = (blended(h) - blended(-h)) / (2 * h)
        e = error([estimate["effects"][l][i] - estimate["corrupt"]], [derivative])
        check(e <= 1e-5, f"{m.kind}: attribution patching of {site} estimates "
                         f"{estimate['effects'][l][i] - estimate['corrupt']}, the derivative is {derivative}")
        worst["attribution vs derivative"] = max(worst.get("attribution vs derivative", 0.0), e)

    # zero ablation of head h: the model with head h's rows of the output projection zeroed
    B, Tw, n = 2, 6, 2
    gen = torch.Generator().manual_seed(1)
    V = logits.shape[-1]
    x, y = torch.randint(0, V, (n, B, Tw), generator=gen), torch.randint(0, V, (n, B, Tw), generator=gen)
    ablation = interpret.ablate_heads(model, x, y, n, B, Tw, "zero")
    for l, h in ((0, 0), (L - 1, s.n_head - 1)):
        cut = copy.deepcopy(model)
        W_O = interpret.Stream(cut).W_O[l][0]  # (n_head H, C), a view of the layer's weight
        H = W_O.shape[0] // s.n_head
        with torch.no_grad():
            W_O[h * H:(h + 1) * H] = 0
            loss = sum(F.cross_entropy(cut(xi).reshape(B * Tw, -1).double(), yi.reshape(-1)).item()
                       for xi, yi in zip(x, y)) / n
        e = error([ablation["heads"][l][h]], [loss])
        check(e <= 1e-5, f"{m.kind}: head {l}.{h} zeroed: {ablation['heads'][l][h]}, its projection rows zeroed: {loss}")
        check(ablation["heads"][l][h] != ablation["loss"], f"{m.kind}: ablating head {l}.{h} changed nothing")
    mean = interpret.ablate_heads(model, x, y, n, B, Tw, "mean")
    check(mean["loss"] == ablation["loss"] and mean["heads"] != ablation["heads"], f"{m.kind}: mean ablation")
    print(f"{m.kind}: reference checks passed (stream adds up to {stream:.1e}, L {L}, n_head {s.n_head}, T {T})")


# --- the programs against the reference -------------------------------------------------------------------

def program(o, name, args):
    return json.loads(run([getattr(o, name), *args, "--json"]))


def sites(s):
    """The patching sites the model has (all but mlp_out without MLPs)."""
    return [site for site in ("resid_pre", "attn_out", "mlp_out", "head") if site != "mlp_out" or s.has_mlp]


def check_programs(o, m, tg, interpret, worst):
    model, kind = m.model, m.kind
    clean, corrupt, answer, wrong = prompts(m)
    s = interpret.Stream(model)
    L = s.n_layer

    def compare(what, ours, theirs):
        e = error(ours, theirs)
        worst[f"{kind} {what}"] = max(worst.get(f"{kind} {what}", 0.0), e)
        check(e <= TOLERANCE, f"{kind}: {what} differs by {e:.2e} relative (over {TOLERANCE}): {ours} vs {theirs}")

    # cache: every hook point, its file against torch's cache
    out = os.path.join(o.work, f"{kind}_cache.safetensors")
    got = program(o, "cache", [m.ckpt, "--prompt", m.prompt(clean), "--out", out])
    check(got["ids"] == clean, f"{kind}: cache read the prompt as {got['ids']}, not {clean}")
    reference = interpret.run_with_cache(model, [clean])
    tensors, _ = tg.read_safetensors(out)
    check(sorted(tensors) == sorted(reference) and got["tensors"] == len(reference),
          f"{kind}: cache wrote {sorted(tensors)}, torch's hook points are {sorted(reference)}")
    check(got["bytes"] == os.path.getsize(out), f"{kind}: cache says {got['bytes']} bytes")
    for name, t in reference.items():
        check(tensors[name].shape == t.shape, f"{kind}: {name} is {tuple(tensors[name].shape)}, torch's {tuple(t.shape)}")
        compare(f"cache {name.split('.')[-1]}", tensors[name], t)

    # lens
    got = program(o, "lens", [m.ckpt, "--prompt", m.prompt(clean)])
    lens = interpret.logit_lens(model, [clean])
    compare("lens logprob_next", got["logprob_next"], lens["logprob_next"])
    check(len(got["top"]) == L + 1, f"{kind}: lens top has {len(got['top'])} rows")
    for l, (ours, theirs) in enumerate(zip(got["top"], lens["top"])):
        stream = reference[f"blocks.{l}.hook_resid_pre" if l < L else f"blocks.{L - 1}.hook_resid_post"]
        with torch.no_grad():
            logits = s.unembed(s.final_norm(stream))[0]  # (T, V)
        for p, (a, b) in enumerate(zip(ours, theirs)):
            check(a == b or abs(logits[p, a] - logits[p, b]) <= TOLERANCE * logits[p].abs().max(),
                  f"{kind}: lens top at layer {l} position {p} is {a}, torch's {b}")

    # attribute, with and without --wrong
    for wrong_token in (wrong, None):
        args = [m.ckpt, "--prompt", m.prompt(clean), "--answer", m.token(answer)]
        if wrong_token is not None:
            args += ["--wrong", m.token(wrong_token)]
        got = program(o, "attribute", args)
        dla = interpret.direct_logit_attribution(model, [clean], answer, wrong_token)
        for key in ("embed", "heads", "mlps", "bias", "logit_diff"):
            compare(f"attribute {key}", got[key], dla[key])

    # patch: every site, both methods
    if not s.has_mlp:
        out = subprocess.run([o.patch, m.ckpt, "--clean", m.prompt(clean), "--corrupt", m.prompt(corrupt), "--answer",
                              m.token(answer), "--wrong", m.token(wrong), "--site", "mlp_out", "--json"],
                             capture_output=True, text=True)
        check(out.returncode != 0 and not out.stdout and len(out.stderr.strip().splitlines()) == 1,
              f"{kind}: patch --site mlp_out gave {out.returncode}: {out.stdout!r} {out.stderr!r}")
    for site in sites(s):
        for method in ("activation", "attribution"):
            got = program(o, "patch", [m.ckpt, "--clean", m.prompt(clean), "--corrupt", m.prompt(corrupt), "--answer",
                                       m.token(answer), "--wrong", m.token(wrong), "--site", site, "--method", method])
            ref = interpret.patch(model, clean, corrupt, answer, wrong, site, method)
            check(got["site"] == site and got["method"] == method, f"{kind}: patch said {got['site']} {got['method']}")
            compare(f"patch {method}", [got["clean"], got["corrupt"]], [ref["clean"], ref["corrupt"]])
            compare(f"patch {method}", got["effects"], ref["effects"])

    # ablate: evaluate's windows of a token file (text for the character model)
    B, T, N = 2, 8, 3
    if m.vocab:
        data, ids = os.path.join(o.work, "text.txt"), m.encode(TEXT)
    else:
        gen = torch.Generator().manual_seed(4)
        ids = torch.randint(0, m.vocab_size(), (N * B * T + 5,), generator=gen)
        data = os.path.join(o.work, f"{kind}.bin")
        with open(data, "wb") as f:
            f.write(ids.to(torch.int16).numpy().tobytes())  # nanoGPT's raw uint16 (ids below 32768)
        ids = ids.tolist()
    windows = torch.tensor(ids[:N * B * T + 1])
    for mode in ("zero", "mean"):
        got = program(o, "ablate", [m.ckpt, "--data", data, "--batch", B, "--block", T, "--batches", N, "--mode", mode])
        ref = interpret.ablate_heads(model, windows[:-1], windows[1:], N, B, T, mode)
        check(got["mode"] == mode and got["batches"] == N and got["tokens"] == N * B * T, f"{kind}: ablate said {got}")
        compare(f"ablate {mode}", [got["loss"]], [ref["loss"]])
        compare(f"ablate {mode}", got["heads"], ref["heads"])
    print(f"{kind}: the programs agree with PyTorch; largest error "
          f"{max(v for k, v in worst.items() if k.startswith(kind + ' ')):.2e}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=["reference", "programs", "all"])
    for flag in ("--train", "--export", "--llama-folder", "--python-dir", "--work"):
        p.add_argument(flag, required=True)
    for flag in ("--cache", "--lens", "--patch", "--attribute", "--ablate"):
        p.add_argument(flag)
    o = p.parse_args()
    sys.path.insert(0, o.python_dir)
    import tinygpt_torch as tg
    from tinygpt_torch import interpret
    torch.set_num_threads(1)
    shutil.rmtree(o.work, ignore_errors=True)
    os.makedirs(o.work)
    start = time.time()
    models = make_models(o, tg)
    worst = {}
    for m in models.values():
        if o.case in ("reference", "all"):
            check_reference(m, interpret, worst)
        if o.case in ("programs", "all"):
            check(all((o.cache, o.lens, o.patch, o.attribute, o.ablate)), "programs: --cache ... --ablate are needed")
            check_programs(o, m, tg, interpret, worst)
    for what, e in sorted(worst.items()):
        print(f"  {what}: {e:.2e}")
    print(f"{o.case}: passed in {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
