#!/usr/bin/python3
"""Issue 43's speed experiment on PyTorch's side: asking GPT-2 small why, with forward hooks, the way
TransformerLens's users write it (python/tinygpt_torch/interpret.py, the reference the programs are tested
against, tests/python/test_interpret_torch.py).

GPT-2 small's shape (n_layer 12, n_head 12, n_embd 768, vocab 50257; python/tinygpt_torch's GPT2, Hugging
Face's maths) with random weights (the time does not depend on them), eval mode, one window of T 64 random ids
(clean, and corrupt: the same ids but the last 8), metric logit(answer) - logit(wrong) at the last position.
Timed, each the median of --repeats after one warm-up:
  forward           a plain forward without a graph
  cache             a forward caching every hook point (run_with_cache(model, ids): 12 x 14 + 4 = 172 of them)
  head_patching     activation patching of every head: the clean run cached, the corrupt run, and one corrupt
                    run per (layer, head) with that head's hook_z taken from the clean run (144 + 2 forwards,
                    each whole: hooks cannot restart a forward at a block)
  attribution       attribution patching of every head: one clean forward cached, one corrupt forward and
                    backward (the gradient at every hook_z)

    /usr/bin/python3 bench/interpret_pytorch.py                 # one thread; prints one JSON line
    /usr/bin/python3 bench/interpret_pytorch.py --threads 2 --repeats 5

Run with Debian's python3-torch; it multiplies with whatever libblas.so.3 points to (the reference BLAS,
many times slower, unless libopenblas0-pthread is installed): the JSON says which ("blas", "blas_path").
OPENBLAS_NUM_THREADS is set to --threads before torch loads (OpenBLAS's pthreads ignore torch.set_num_threads).
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
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each (after one warm-up)")
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
    L, n_head, V, T = 12, 12, 50257, args.T
    model = tg.make_model(tg.ModelConfig(kind="gpt2", vocab=V, n_embd=768, n_head=n_head, n_layer=L, block=1024)).eval()
    gen = torch.Generator().manual_seed(43)
    clean = torch.randint(0, V, (1, T), generator=gen)
    corrupt = clean.clone()
    corrupt[0, -8:] = torch.randint(0, V, (8,), generator=gen)
    answer, wrong = 262, 257

    def forward():
        with torch.no_grad():
            model(clean)

    def cache():
        return interpret.run_with_cache(model, clean)

    def head_patching():
        return interpret.patch(model, clean, corrupt, answer, wrong, "head", "activation")

    def attribution():
        return interpret.patch(model, clean, corrupt, answer, wrong, "head", "attribution")

    def median_seconds(fn):
        fn()  # warm-up
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    row = {"bench": "interpret_pytorch", "torch": torch.__version__, "threads": args.threads, "T": T,
           "model": "gpt2-small (random)", "repeats": args.repeats}
    blas = blas_in_use()
    row.update({"blas": blas["blas"], "blas_core": blas["core"], "blas_path": blas["path"]})
    row["hook_points"] = len(cache())
    for name, fn in (("forward", forward), ("cache", cache), ("head_patching", head_patching),
                     ("attribution", attribution)):
        row[f"{name}_s"] = round(median_seconds(fn), 4)
    row["head_patching_forwards"] = L * n_head + 2
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
