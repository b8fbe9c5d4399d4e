#!/usr/bin/python3
"""Issue 43's speed experiment on PyTorch's side: asking GPT-2 small why, with forward hooks, the way
TransformerLens's users write it (python/tinygpt_torch/interpret.py, the reference the programs are tested
against, tests/python/test_interpret_torch.py).

GPT-2 small's shape (n_layer 12, n_head 12, n_embd 768, vocab 50257; python/tinygpt_torch's GPT2, Hugging
Face's maths) with random weights (the time does not depend on them), eval mode, one prompt of T 64 random ids
and a corrupt copy (its last token changed), metric logit(11) - logit(12) at the last position: the same
experiment as bench/bench_interpret.cpp (tinygpt's side), with its JSON keys. Medians of --rounds rounds (head
patching: of half as many), after one warm-up forward, in milliseconds:
  forward_ms        a plain forward without a graph
  cache_all_ms      a forward caching every hook point (run_with_cache(model, ids): 12 x 14 + 4 = 172 of them)
  patch_head_ms     activation patching of every head: the clean run cached, the corrupt run, and one corrupt
                    run per (layer, head) with that head's hook_z taken from the clean run (144 + 2 forwards,
                    each whole: a forward hook cannot restart a forward at a block)
  attribution_ms    attribution patching of every head: one clean forward cached, one corrupt forward and
                    backward (the gradient at every hook_z)

    /usr/bin/python3 bench/interpret_pytorch.py                 # one thread; prints one JSON line
    /usr/bin/python3 bench/interpret_pytorch.py --threads 2 --rounds 3

Run with Debian's python3-torch; it multiplies with whatever libblas.so.3 points to (the reference BLAS,
many times slower, unless libopenblas0-pthread is installed): the JSON says which ("blas", "blas_core",
"blas_path"). OPENBLAS_NUM_THREADS is set to --threads before torch loads (OpenBLAS's own threads do not
follow torch.set_num_threads).
"""
import argparse
import json
import os
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds of each (head patching: half as many)")
    parser.add_argument("--T", type=int, default=64, help="the window")
    args = parser.parse_args()
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)

    import torch
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "python"))
    sys.path.insert(0, here)
    import tinygpt_torch as tg
    from tinygpt_torch import interpret
    from pytorch_reference import blas_in_use

    torch.set_num_threads(args.threads)
    torch.manual_seed(1337)
    V, T = 50257, args.T
    model = tg.make_model(tg.ModelConfig(kind="gpt2", vocab=V, n_embd=768, n_head=12, n_layer=12, block=1024)).eval()
    gen = torch.Generator().manual_seed(43)
    clean = torch.randint(0, V, (1, T), generator=gen)
    corrupt = clean.clone()
    corrupt[0, -1] = (clean[0, -1] + 1) % V
    answer, wrong = 11, 12

    def median_ms(rounds, fn):
        times = []
        for _ in range(max(1, rounds)):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    def forward():
        with torch.no_grad():
            model(clean)

    forward()  # warm-up
    cached = len(interpret.run_with_cache(model, clean))
    timed = {
        "forward_ms": median_ms(args.rounds, forward),
        "cache_all_ms": median_ms(args.rounds, lambda: interpret.run_with_cache(model, clean)),
        "patch_head_ms": median_ms(args.rounds // 2, lambda: interpret.patch(model, clean, corrupt, answer, wrong,
                                                                             "head", "activation")),
        "attribution_ms": median_ms(args.rounds, lambda: interpret.patch(model, clean, corrupt, answer, wrong, "head",
                                                                         "attribution")),
    }
    blas = blas_in_use()
    row = {"side": "pytorch", "threads": args.threads, "T": T, "rounds": args.rounds, "hook_points": cached,
           **{k: round(v, 2) for k, v in timed.items()},
           "cache_over_forward": round(timed["cache_all_ms"] / timed["forward_ms"], 3),
           "activation_over_attribution": round(timed["patch_head_ms"] / timed["attribution_ms"], 1),
           "torch": torch.__version__, "blas": blas["blas"], "blas_core": blas["core"], "blas_path": blas["path"]}
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
