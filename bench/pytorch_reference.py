#!/usr/bin/python3
"""PyTorch's side of the speed comparison (bench/compare.sh runs both).

The models of bench/train_step.h are python/tinygpt_torch's, which have nn/src/models.cpp's architecture:
token + position embeddings; blocks of LayerNorm -> multi-head attention (separate heads without biases,
concatenated, projected with a bias) -> residual, LayerNorm -> Linear(C, 4C) -> exact GELU -> Linear(4C, C)
-> residual; a final LayerNorm; lm_head with a bias (LayerNorm eps 1e-5). The tutorial model is embeddings ->
one head -> lm_head. GPT-2 small (configs gpt2, gpt2-T1024) is its GPT2, Hugging Face's maths (Conv1D
layers, tanh GELU, the head tied to the token table). The SmolLM-135M-shaped Llama (config smollm) is its Llama
(python/tinygpt_torch/llama.py: LlamaForCausalLM's maths, grouped-query attention, rotary halves, RMSNorm,
SwiGLU, tied output). Same optimizer (AdamW, betas 0.9/0.99, eps 1e-8, weight decay 0.1 on Linear weights
(Conv1D for GPT-2) only, lr 1e-3), same clipping (global norm 1.0), timed the same way: the median of individual steps after
a warm-up.

Before timing it loads OUR weights and batch (written by build/bench/export_weights DIR) and requires the
same loss before the first step and after each of the first three steps, to 1e-4 relative, so both sides
do the same work.

Run with Debian's python3 and python3-torch (another python3 may come first on PATH without torch):

    build/bench/export_weights /tmp/tg && /usr/bin/python3 bench/pytorch_reference.py --weights /tmp/tg --threads 1
    /usr/bin/python3 bench/pytorch_reference.py --train tinyshakespeare.txt --steps 20   # for peak memory
    /usr/bin/python3 bench/pytorch_reference.py --train tinyshakespeare.txt --config nano --block 1024
    /usr/bin/python3 bench/pytorch_reference.py --windows nano --blocks 64,256,1024  # step time by window T
    build/bench/export_weights /tmp/tg gpt2 && /usr/bin/python3 bench/pytorch_reference.py --weights /tmp/tg --configs gpt2
    /usr/bin/python3 bench/pytorch_reference.py --windows gpt2-T1024 --blocks 1024   # GPT-2 small, B 1, T 1024
    build/bench/export_weights /tmp/tg smollm && /usr/bin/python3 bench/pytorch_reference.py --weights /tmp/tg --configs smollm
    /usr/bin/python3 bench/pytorch_reference.py --sample baby,shakespeare --chars 2000  # sampling speed
    build/bench/export_weights /tmp/tg gpt2 && /usr/bin/python3 bench/pytorch_reference.py --weights /tmp/tg \
        --configs gpt2 --precision bf16     # under torch.autocast("cpu", dtype=torch.bfloat16) (issue 44)

With --precision bf16 the forward and the loss run under CPU autocast to bfloat16 (PyTorch's mixed precision:
its matmuls and linears in bfloat16, the master weights, the backward's sums and AdamW float32), and the
loss check against our float32 losses allows llm.c's bf16 tolerance, 0.05 absolute, instead of 1e-4
relative: rounding the products' inputs to 8 bits moves a loss by a few 1e-3.

Prints one JSON line per configuration: {"config", "threads", "median_ms", "tokens_per_s", "loss", ...}.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as tnn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import tinygpt_torch as tg  # noqa: E402  (the models, named as ours, and our files' reader)

CONFIGS = {  # the same as bench/train_step.h
    "tutorial": dict(kind="head", n_embd=32, n_head=1, n_layer=1, block=8, batch=32),
    "small": dict(kind="gpt", n_embd=64, n_head=4, n_layer=4, block=32, batch=16),
    "baby": dict(kind="gpt", n_embd=128, n_head=4, n_layer=4, block=64, batch=12),
    "nano": dict(kind="gpt", n_embd=384, n_head=6, n_layer=6, block=256, batch=4),
    "gpt2": dict(kind="gpt2", n_embd=768, n_head=12, n_layer=12, block=64, batch=4, vocab=50257),
    "gpt2-T1024": dict(kind="gpt2", n_embd=768, n_head=12, n_layer=12, block=1024, batch=1, vocab=50257),
    "smollm": dict(kind="llama", n_embd=576, n_head=9, n_kv_head=3, n_layer=30, ffn_hidden=1536, block=64, batch=4,
                   vocab=49152),
}
SAMPLE_CONFIGS = {  # bench/bench_generate.cpp's: the baby GPT and nanoGPT's shakespeare_char model
    "baby": dict(kind="gpt", n_embd=128, n_head=4, n_layer=4, block=64),
    "shakespeare": dict(kind="gpt", n_embd=384, n_head=6, n_layer=6, block=256),
}
VOCAB = 65


def make_model(c):
    """tinygpt_torch's model of config c: the ladder's SingleHead or GPT, or GPT2, or Llama."""
    if c["kind"] == "llama":  # nn::LlamaOptions' fields; run.c's rotary base and epsilon, as ours by default
        return tg.Llama(dict(vocab=c["vocab"], n_embd=c["n_embd"], n_head=c["n_head"], n_kv_head=c["n_kv_head"],
                             n_layer=c["n_layer"], ffn_hidden=c["ffn_hidden"], block=c["block"], rope_theta=10000.0,
                             norm_eps=1e-5, tied_embeddings=True))
    return tg.make_model(tg.ModelConfig(kind=c["kind"], vocab=c.get("vocab", VOCAB), n_embd=c["n_embd"],
                                        n_head=c["n_head"], n_layer=c["n_layer"], block=c["block"]))


def make_optimizer(model):
    # weight decay on Linear (GPT-2: Conv1D) weights only, as ours (not biases, norms or embeddings)
    decay = [m.weight for m in model.modules() if isinstance(m, (tnn.Linear, tg.Conv1D))]
    decay_ids = {id(p) for p in decay}
    rest = [p for p in model.parameters() if id(p) not in decay_ids]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                             lr=1e-3, betas=(0.9, 0.99), eps=1e-8)


def autocast(precision):
    """The forward's context: CPU autocast to bfloat16 for bf16 (PyTorch's recipe: the forward and the loss
    inside, backward outside), nothing for float32."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")


def train_step(model, optimizer, ids, targets, precision="float32"):
    optimizer.zero_grad(set_to_none=True)  # ours drops the gradients too
    with autocast(precision):
        logits = model(ids)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


def close(a, b, rel=1e-4):
    return abs(a - b) <= rel * max(abs(a), abs(b))


# llm.c's bf16 tolerance on a loss (test_gpt2.cu), for autocast's losses against our float32 ones
BF16_LOSS_TOLERANCE = 0.05


def same_loss(a, b, precision):
    return close(a, b) if precision == "float32" else abs(a - b) <= BF16_LOSS_TOLERANCE


# Timed steps from one start before the weights are reset, as bench/train_step.h's kStepsPerRun: thousands
# of steps on one fixed batch drive the gradients into subnormal floats (several times slower on x86).
STEPS_PER_RUN = 50


def check_logits(name, weights, ids, logits, program):
    """tinygpt's logits of the same weights and ids (tests/python's tinygpt_logits) against these, to 1e-5 of
    the largest logit, as the PyTorch tests check the small models."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.bin")
        B, T = ids.shape
        subprocess.run([program, weights, out, str(B), str(T), *map(str, ids.reshape(-1).tolist())], check=True,
                       stderr=subprocess.DEVNULL)
        with open(out, "rb") as f:
            theirs = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).reshape(logits.shape)
    rel = ((logits - theirs).abs().max() / theirs.abs().max()).item()
    print(f"logits check {name}: {tuple(logits.shape)}, max |pytorch - tinygpt| / max |logit| = {rel:.2g}", file=sys.stderr)
    if not rel <= 1e-5:
        sys.exit(f"{name}: the logits differ by more than 1e-5 of the largest")


def check_and_time(name, c, weights_dir, threads, warmup, steps, check=True, logits_program=None, precision="float32"):
    model = make_model(c)
    tensors, _ = tg.read_safetensors(f"{weights_dir}/{name}.safetensors")
    tg.load_tinygpt_state(model, tensors)
    batch, meta = tg.read_safetensors(f"{weights_dir}/{name}.batch.safetensors")
    ids, targets = batch["ids"].long(), batch["targets"].long()
    optimizer = make_optimizer(model)

    with torch.no_grad(), autocast(precision):
        logits = model(ids)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1)).item()
    if logits_program and precision == "float32":
        check_logits(name, f"{weights_dir}/{name}.safetensors", ids, logits, logits_program)
    ours = float(meta["loss"])
    ours_steps = [float(s) for s in meta["step_losses"].split(",")]
    theirs_steps = [train_step(model, optimizer, ids, targets, precision) for _ in ours_steps]
    ok = same_loss(loss, ours, precision) and all(same_loss(a, b, precision) for a, b in zip(ours_steps, theirs_steps))
    tolerance = "1e-4 relative" if precision == "float32" else f"{BF16_LOSS_TOLERANCE} absolute"
    if check:
        print(f"loss check {name}: {precision} to {tolerance}, ours (float32) {ours:.6f} pytorch {loss:.6f} "
              f"(rel diff {abs(loss - ours) / abs(ours):.1e}); steps 1-3 ours {', '.join(f'{v:.6f}' for v in ours_steps)} "
              f"pytorch {', '.join(f'{v:.6f}' for v in theirs_steps)}: {'equal' if ok else 'DIFFERENT'}", file=sys.stderr)
    if not ok:
        sys.exit(f"{name}: the losses differ by more than {tolerance}: not the same work, not timing")
    if steps == 0:  # --check-only
        return {"config": name, "loss": loss, "step_losses": theirs_steps}

    for _ in range(warmup):
        train_step(model, optimizer, ids, targets, precision)
    seconds = []
    for i in range(steps):
        if i % STEPS_PER_RUN == 0:  # back to the checkpoint's weights and a new optimizer, untimed
            tg.load_tinygpt_state(model, tensors)
            optimizer = make_optimizer(model)
        start = time.perf_counter()
        train_step(model, optimizer, ids, targets, precision)
        seconds.append(time.perf_counter() - start)
    median = sorted(seconds)[len(seconds) // 2]
    tokens = c["batch"] * c["block"]
    return {"config": name, "threads": threads, "median_ms": median * 1e3, "tokens_per_s": tokens / median,
            "steps": steps, "loss": loss, "precision": precision}


def time_windows(name, blocks, threads, min_time):
    """Step times of config `name` with its window T (= block) changed: PyTorch's initial weights and a random
    batch (no loss check: the same architecture as the checked config, only T differs)."""
    rows = []
    for block in blocks:
        c = dict(CONFIGS[name], block=block)
        torch.manual_seed(1337)
        model = make_model(c)
        optimizer = make_optimizer(model)
        ids = torch.randint(0, c.get("vocab", VOCAB), (c["batch"], block))
        targets = torch.randint(0, c.get("vocab", VOCAB), (c["batch"], block))
        for _ in range(2):  # warm-up
            train_step(model, optimizer, ids, targets)
        seconds = []
        while len(seconds) < 3 or sum(seconds) < min_time:
            start = time.perf_counter()
            train_step(model, optimizer, ids, targets)
            seconds.append(time.perf_counter() - start)
        median = sorted(seconds)[len(seconds) // 2]
        rows.append({"config": name, "block": block, "threads": threads, "median_ms": median * 1e3,
                     "steps": len(seconds)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def train_for_memory(path, steps, threads, name="baby", block=None):
    """A training run of config `name` (its window changed to `block` if given) on a text file (random
    windows), for peak resident memory only."""
    torch.manual_seed(1337)
    text = open(path, encoding="utf-8").read()
    chars = sorted(set(text))
    assert len(chars) <= VOCAB, f"{path}: {len(chars)} characters, more than {VOCAB}"
    index = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([index[ch] for ch in text], dtype=torch.long)
    c = dict(CONFIGS[name], block=block or CONFIGS[name]["block"])
    model = make_model(c)
    optimizer = make_optimizer(model)
    B, T = c["batch"], c["block"]
    start = time.perf_counter()
    for _ in range(steps):
        ix = torch.randint(len(data) - T - 1, (B,))
        x = torch.stack([data[i:i + T] for i in ix])
        y = torch.stack([data[i + 1:i + T + 1] for i in ix])
        loss = train_step(model, optimizer, x, y)
    print(json.dumps({"config": name, "block": T, "threads": threads, "steps": steps, "loss": loss,
                      "seconds": time.perf_counter() - start}))


# --- sampling the nanoGPT way (model.py's generate): every character reruns the window, cropped to block ---

@torch.no_grad()
def sample_nanogpt(model, block, chars, temperature=1.0, top_k=None):
    idx = torch.randint(0, VOCAB, (1, block))  # a whole block of prompt, as bench_generate: full windows
    for _ in range(chars):
        idx_cond = idx if idx.size(1) <= block else idx[:, -block:]
        logits = model(idx_cond)[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
    return idx


def time_sampling(name, chars, threads):
    c = SAMPLE_CONFIGS[name]
    torch.manual_seed(1337)
    model = make_model(c).eval()  # untrained, PyTorch's default init: the speed does not depend on it
    sample_nanogpt(model, c["block"], 5)  # warm-up
    t0 = time.perf_counter()
    sample_nanogpt(model, c["block"], chars)
    seconds = time.perf_counter() - t0
    return {"config": name, "threads": threads, "sampler": "pytorch", "chars": chars, "seconds": round(seconds, 4),
            "chars_per_s": round(chars / seconds, 2)}


def blas_in_use():
    """The BLAS library torch multiplies with, found in this process's memory map after a product, and its
    core when it is OpenBLAS (openblas_get_corename): Debian's torch uses whatever libblas.so.3 points to,
    the reference BLAS (about 25x slower) unless an OpenBLAS package is installed."""
    import ctypes
    a = torch.randn(64, 64)
    a @ a
    libs = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libblas.so" in line or "openblas" in line})
    for path in libs:
        lib = ctypes.CDLL(path)
        if hasattr(lib, "openblas_get_corename"):
            lib.openblas_get_corename.restype = lib.openblas_get_config.restype = ctypes.c_char_p
            return {"blas": "openblas", "core": lib.openblas_get_corename().decode(),
                    "config": lib.openblas_get_config().decode(), "path": path}
    return {"blas": "not openblas", "core": None, "config": None, "path": ", ".join(libs) or "none found"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", help="directory written by build/bench/export_weights")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--configs", default="tutorial,small,baby,nano")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=2.0, help="seconds of timed steps per config (at least 10 steps)")
    parser.add_argument("--train", metavar="TEXT", help="train --config on TEXT instead (peak memory)")
    parser.add_argument("--config", default="baby", choices=sorted(CONFIGS), help="the model for --train")
    parser.add_argument("--block", type=int, help="the window T for --train (default: the config's)")
    parser.add_argument("--steps", type=int, default=20, help="steps for --train")
    parser.add_argument("--windows", metavar="CONFIG", help="time CONFIG's step at each of --blocks instead")
    parser.add_argument("--blocks", default="64,128,256,512,1024", help="windows T for --windows")
    parser.add_argument("--sample", metavar="CONFIGS", help="time sampling the nanoGPT way instead: baby,shakespeare")
    parser.add_argument("--chars", type=int, default=2000, help="characters per --sample config")
    parser.add_argument("--blas", action="store_true", help="print the BLAS torch multiplies with and its core")
    parser.add_argument("--logits", metavar="TINYGPT_LOGITS",
                        help="with --weights: also compare the logits with tinygpt's (tests/python's tinygpt_logits)")
    parser.add_argument("--precision", choices=("float32", "bf16"), default="float32",
                        help="with --weights: bf16 runs the forward and the loss under CPU autocast to bfloat16")
    parser.add_argument("--check-only", action="store_true",
                        help="with --weights: check that both sides do the same work (the losses), time nothing")
    args = parser.parse_args()

    if args.blas:
        print(json.dumps(blas_in_use()))
        return
    torch.set_num_threads(args.threads)
    if args.sample:
        for name in args.sample.split(","):
            print(json.dumps(time_sampling(name, args.chars, args.threads)), flush=True)
        return
    if args.train:
        train_for_memory(args.train, args.steps, args.threads, args.config, args.block)
        return
    if args.windows:
        time_windows(args.windows, [int(b) for b in args.blocks.split(",")], args.threads, args.min_time)
        return
    if not args.weights:
        parser.error("--weights DIR or --train TEXT")
    for name in args.configs.split(","):
        c = CONFIGS[name]
        if args.check_only:
            check_and_time(name, c, args.weights, args.threads, warmup=0, steps=0, logits_program=args.logits,
                           precision=args.precision)
            continue
        if c["kind"] in ("gpt2", "llama"):  # seconds a step: one warm-up and five timed steps, as bench_train_step
            print(json.dumps(check_and_time(name, c, args.weights, args.threads, warmup=1, steps=5,
                                            logits_program=args.logits, precision=args.precision)), flush=True)
            continue
        # estimate a step to fill about --min-time
        probe = check_and_time(name, c, args.weights, args.threads, warmup=args.warmup, steps=3,
                               logits_program=args.logits, precision=args.precision)
        steps = max(10, int(args.min_time / (probe["median_ms"] * 1e-3)))
        print(json.dumps(check_and_time(name, c, args.weights, args.threads, args.warmup, steps, check=False,
                                        precision=args.precision)), flush=True)


if __name__ == "__main__":
    main()
