"""Continue training a tinygpt checkpoint on several processes with DistributedDataParallel, and write a
tinygpt checkpoint at the end (generate, heatmap, figure and train --init-from read it).

    # two processes on this machine's CPU (gloo), started by torchrun (torch.distributed.run)
    python3 -m torch.distributed.run --nproc_per_node 2 --master_port 29517 python/train_ddp.py \\
        --init run.safetensors --data input.txt --steps 500 --out ddp.safetensors
    # the same, the script starting torchrun itself (and mending Debian 12's, see below)
    python3 python/train_ddp.py --nproc-per-node 2 --init run.safetensors --data input.txt --out ddp.safetensors
    # GPUs: one process per GPU, NCCL (chosen by --backend auto when CUDA is there); several machines:
    torchrun --nnodes 2 --node_rank 0 --master_addr HOST --nproc_per_node 8 python/train_ddp.py ...

Debian 12's torch 1.13 under Python 3.11: torchrun fails before starting anything with "AttributeError:
'NoneType' object has no attribute 'get'" (its --redirects and --tee defaults of "0" parse to None, as
Python 3.11's enum.Flag no longer lists the zero member). Give both a mapping that names no local rank,
which leaves every rank's streams alone: `--redirects 9:1 --tee 9:1`; or start with --nproc-per-node.

Every process holds the whole model; each step, each takes its own random batch (a seed per rank), DDP
averages the gradients across processes, and every process applies the same AdamW step, so the replicas
stay identical (checked at the end: each rank's weights are hashed and compared). The effective batch is
--batch times the number of processes. The text is encoded with the checkpoint's vocabulary; a character
outside it is an error. AdamW as tinygpt's trainer sets it up (betas 0.9, 0.99; weight decay on Linear
weights only; global-norm clipping at 1; linear warmup then cosine decay to lr / 10); the optimizer state
is not carried over from the checkpoint (it starts fresh, as train --init-from does).

Prints on rank 0: the mean loss of --eval-batches fixed validation windows before and after ("loss before:
X", "loss after: Y"), a line per --log-every steps, and "replicas: N ranks, identical" (or "differ").
"""
import argparse
import datetime
import hashlib
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as tnn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinygpt_torch as tg  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--init", required=True, help="the tinygpt checkpoint to start from")
    p.add_argument("--data", required=True, help="text to train on (first 90%% train, last 10%% validation)")
    p.add_argument("--out", required=True, help="the tinygpt checkpoint to write at the end")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=32, help="windows per step per process")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--timeout", type=float, default=1800,
                   help="seconds a rank waits for the others (rendezvous, gradients) before it fails")
    p.add_argument("--eval-batches", type=int, default=20, help="validation batches for the loss before and after")
    p.add_argument("--log-every", type=int, default=0, help="print the training loss every N steps (0: never)")
    p.add_argument("--backend", default="auto", help="gloo, nccl, or auto (nccl with CUDA, gloo otherwise)")
    p.add_argument("--nproc-per-node", type=int, default=0,
                   help="start this many processes on this machine through torch.distributed.run (torchrun), "
                        "instead of being started by it")
    return p.parse_args()


def launch(nproc, argv):
    """Runs torch.distributed.run --nproc_per_node N on this script with the other arguments.
    Its parser of --redirects and --tee is mended first: under Python 3.11, torch 1.13's Std.from_str("0")
    returns None (enum.Flag iteration skips the zero member), where Std.NONE was meant."""
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.api import Std
    parse = Std.from_str
    Std.from_str = classmethod(lambda cls, text: Std.NONE if parse(text) is None else parse(text))
    rest, skip = [], False
    for i, a in enumerate(argv):  # this script's arguments without --nproc-per-node N
        if skip:
            skip = False
        elif a == "--nproc-per-node":
            skip = True
        elif not a.startswith("--nproc-per-node="):
            rest.append(a)
    import socket
    with socket.socket() as sock:  # a free port (--standalone would take 29400, whoever else uses it)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    torchrun.main(["--nproc_per_node", str(nproc), "--master_port", str(port), os.path.abspath(__file__), *rest])


def lr_at(step, o):
    """Linear warmup, then a cosine from lr to lr / 10 over the run: nn::CosineSchedule::at's formula."""
    if step < o.warmup:
        return o.lr * (step + 1) / (o.warmup + 1)
    progress = (step - o.warmup) / max(1, o.steps - o.warmup)
    return o.lr / 10 + 0.5 * (o.lr - o.lr / 10) * (1 + math.cos(math.pi * min(1.0, progress)))


def batch(ids, T, B, gen, device):
    starts = torch.randint(0, len(ids) - T, (B,), generator=gen)
    x = torch.stack([ids[s:s + T] for s in starts])
    y = torch.stack([ids[s + 1:s + T + 1] for s in starts])
    return x.to(device), y.to(device)


def mean_loss(model, ids, T, o, device):
    """Loss over fixed validation windows (the same on every rank and before and after)."""
    gen = torch.Generator().manual_seed(o.seed + 999)
    model.eval()
    total = 0.0
    with torch.no_grad():
        for _ in range(o.eval_batches):
            x, y = batch(ids, T, o.batch, gen, device)
            total += F.cross_entropy(model(x).reshape(-1, model.config.vocab), y.reshape(-1)).item()
    model.train()
    return total / o.eval_batches


def weights_digest(model):
    h = hashlib.sha256()
    for name, t in tg.tinygpt_state(model).items():
        h.update(name.encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def main():
    o = parse_args()
    if o.nproc_per_node:
        return launch(o.nproc_per_node, sys.argv[1:])
    backend = o.backend if o.backend != "auto" else ("nccl" if torch.cuda.is_available() else "gloo")
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=o.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local_rank}" if backend == "nccl" else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(o.seed)

    model, vocab = tg.load(o.init)  # every rank reads the same file: identical replicas from the start
    with open(o.data, encoding="utf-8") as f:
        ids = tg.encode(vocab, f.read())
    split = int(0.9 * len(ids))
    train_ids, val_ids = ids[:split], ids[split:]
    T = model.block_size()
    if len(val_ids) <= T or len(train_ids) <= T:
        raise SystemExit(f"train_ddp.py: {o.data} is too short for windows of {T} characters")
    model.to(device).train()
    ddp = DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)

    # weight decay on Linear weights only, as tinygpt's AdamW
    decay = {id(m.weight) for m in model.modules() if isinstance(m, tnn.Linear)}
    params = list(model.parameters())
    optimizer = torch.optim.AdamW([{"params": [p for p in params if id(p) in decay], "weight_decay": o.weight_decay},
                                   {"params": [p for p in params if id(p) not in decay], "weight_decay": 0.0}],
                                  lr=o.lr, betas=(0.9, 0.99), eps=1e-8)
    before = mean_loss(model, val_ids, T, o, device)
    if rank == 0:
        print(f"{model.config.kind} model, {sum(p.numel() for p in params)} parameters, {world} processes ({backend}), "
              f"{o.batch} x {world} windows of {T} per step")
        print(f"loss before: {before:.6f}", flush=True)

    gen = torch.Generator().manual_seed(o.seed + rank)  # each rank its own batches
    for step in range(o.steps):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, o)
        x, y = batch(train_ids, T, o.batch, gen, device)
        loss = F.cross_entropy(ddp(x).reshape(-1, model.config.vocab), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # DDP averages the gradients across the processes here
        if o.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(params, o.grad_clip)
        optimizer.step()
        if o.log_every and (step + 1) % o.log_every == 0:
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            if rank == 0:
                print(f"step {step + 1}/{o.steps} loss {mean.item() / world:.4f} lr {lr_at(step, o):.3g}", flush=True)

    after = mean_loss(model, val_ids, T, o, device)
    digests = [None] * world
    dist.all_gather_object(digests, weights_digest(model))
    if rank == 0:
        print(f"loss after: {after:.6f}")
        same = len(set(digests)) == 1
        print(f"replicas: {world} ranks, {'identical' if same else 'differ'} (sha256 {digests[0][:16]})", flush=True)
        tg.save(model.cpu(), vocab, o.out, {"torch.ddp.steps": str(o.steps), "torch.ddp.world": str(world)})
        print(f"saved {o.out}")
    dist.barrier()
    dist.destroy_process_group()
    if len(set(digests)) != 1:
        raise SystemExit(f"train_ddp.py: rank {rank}: the ranks ended with different weights")


if __name__ == "__main__":
    main()
