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
is not carried over from the checkpoint (it starts fresh, as train --init-from does). The default --lr is
3e-4, not train's 1e-3: a finished run ends its cosine at 1e-4, and restarting it at 1e-3 with a fresh
AdamW made the validation loss rise (docs/pytorch.md).

Prints on rank 0: the mean loss of --eval-batches fixed validation windows before and after ("loss before:
X", "loss after: Y"), the progress ("step 50/500 loss 1.9123 lr 0.000294 ETA 1m10s": a tenth of the run at
a time, or every --log-every steps), and "replicas: N ranks, identical" (or "differ"). With
--nproc-per-node, each process gets OMP_NUM_THREADS = the cores / N unless it is set (torchrun would set 1
and print a warning block saying so).

Files and failures, as tinygpt's programs: --out is never --init or --data (compared by device and inode),
an existing --out is replaced only with --force, and it is written atomically (a temporary file beside
it, fsynced, renamed). Flags, --out, --init and --data are checked before any process starts. Every
refusal is one line on stderr: exit 2 for a flag or --out, 1 for a bad file. When another rank dies, or
no step finishes within --timeout seconds (a rank stopped, a rendezvous that never completes), or the
torchrun that started this rank is gone, each remaining rank says so in one line and exits 1 within
--timeout, saving nothing.
"""
import datetime
import hashlib
import math
import os
import sys
import threading
import time

# torch's C++ side logs a failed rendezvous on stderr as well; this script says it in its one line (set
# TORCH_CPP_LOG_LEVEL=WARNING to see them). Read when torch's libraries load: before the import.
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as tnn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinygpt_torch as tg  # noqa: E402


def parse_args():
    p = tg.ArgumentParser(prog="train_ddp.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--init", required=True, help="the tinygpt checkpoint to start from")
    p.add_argument("--data", required=True, help="text to train on (first 90%% train, last 10%% validation)")
    p.add_argument("--out", required=True, help="the tinygpt checkpoint to write at the end")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=32, help="windows per step per process")
    p.add_argument("--lr", type=float, default=3e-4,
                   help="peak learning rate (default 3e-4: a checkpoint whose run decayed to 1e-4 loses ground at 1e-3)")
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--timeout", type=float, default=1800,
                   help="seconds a rank waits for the others (rendezvous, each step, the end) before it fails")
    p.add_argument("--eval-batches", type=int, default=20, help="validation batches for the loss before and after")
    p.add_argument("--log-every", type=int, default=None,
                   help="print the training loss every N steps (default: a tenth of the run; 0: never)")
    p.add_argument("--backend", default="auto", choices=("auto", "gloo", "nccl"),
                   help="gloo, nccl, or auto (nccl with CUDA, gloo otherwise)")
    p.add_argument("--nproc-per-node", type=int, default=0,
                   help="start this many processes on this machine through torch.distributed.run (torchrun), "
                        "instead of being started by it")
    o = p.parse_args()
    limits = [("--steps", o.steps >= 1, "at least 1"), ("--batch", o.batch >= 1, "at least 1"),
              ("--lr", 0 < o.lr <= 10, "above 0 and at most 10"), ("--warmup", o.warmup >= 0, "at least 0"),
              ("--weight-decay", 0 <= o.weight_decay <= 10, "in [0, 10]"),
              ("--grad-clip", 0 <= o.grad_clip < math.inf, "at least 0 (0: no clipping)"),
              ("--timeout", 0 < o.timeout <= 7 * 24 * 3600, "above 0 and at most a week"),
              ("--eval-batches", o.eval_batches >= 1, "at least 1"),
              ("--log-every", o.log_every is None or o.log_every >= 0, "at least 0"),
              ("--nproc-per-node", 0 <= o.nproc_per_node <= 1024, "in [0, 1024]"),
              ("--seed", 0 <= o.seed < 1 << 62, "in [0, 2^62)")]
    for flag, ok, wanted in limits:  # (a NaN fails every comparison: refused too)
        if not ok:
            p.error(f"{flag} must be {wanted}, got {getattr(o, flag[2:].replace('-', '_'))}")
    if o.log_every is None:
        o.log_every = max(1, o.steps // 10)
    return o


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
    # The processes share the cores; torchrun would set 1 thread each, with a warning block on stderr
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc)))
    import socket
    with socket.socket() as sock:  # a free port (--standalone would take 29400, whoever else uses it)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    try:
        torchrun.main(["--nproc_per_node", str(nproc), "--master_port", str(port), os.path.abspath(__file__), *rest])
    except ChildFailedError as e:  # (each rank has said why in its line; torchrun's report is in its log)
        print(f"train_ddp.py: {len(e.failures)} of {nproc} processes failed (exit {e.get_first_failure()[1].exitcode})",
              file=sys.stderr)
        return 1
    return 0


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


def read_inputs(o):
    """(model, vocab, train ids, validation ids) from --init and --data, or ValueError/OSError naming the file."""
    model, vocab = tg.load(o.init)  # every rank reads the same file: identical replicas from the start
    text = tg.read_text(o.data, f"--data {o.data}")  # (a regular file, as tinygpt reads text)
    try:
        ids = tg.encode(vocab, text)
    except ValueError as e:
        raise ValueError(f"--data {o.data}: {e} of --init {o.init}") from None
    split = int(0.9 * len(ids))
    T = model.block_size()
    if len(ids) - split <= T or split <= T:
        raise ValueError(f"--data {o.data} is too short for windows of {T} characters "
                         f"({len(ids)} characters; 90% train and 10% validation must each be longer)")
    return model, vocab, ids[:split], ids[split:]


class Watchdog:
    """Ends this rank (one line on stderr, exit 1) when it makes no progress for `timeout` seconds, or when
    the torchrun that started it is gone. Gloo bounds its own collectives by the process group's timeout,
    but not every wait: the rendezvous polls its store, and a rank whose launcher was killed would go on
    alone. os._exit: a thread cannot raise into a main thread blocked in C++, and a clean exit would wait
    for it."""

    def __init__(self, timeout, rank_name):
        self.timeout, self.rank_name, self.where = timeout, rank_name, "the rendezvous"
        self.deadline = time.monotonic() + timeout
        self.parent = os.getppid() if "TORCHELASTIC_RUN_ID" in os.environ else None
        threading.Thread(target=self._watch, daemon=True).start()

    def progress(self, where):
        self.where, self.deadline = where, time.monotonic() + self.timeout

    def _watch(self):
        while True:
            time.sleep(min(1.0, self.timeout / 10))
            if self.parent is not None and os.getppid() != self.parent:
                self._stop(f"the torchrun that started it (PID {self.parent}) is gone")
            if time.monotonic() > self.deadline:
                self._stop(f"no progress for {self.timeout:g} s (--timeout) in {self.where}: another rank died, "
                           "stopped or never came")

    def _stop(self, why):
        os.write(2, f"train_ddp.py: {self.rank_name}: {why}; stopping, nothing saved\n".encode())
        os._exit(1)


def train(o, model, vocab, train_ids, val_ids, watchdog):
    backend = o.backend if o.backend != "auto" else ("nccl" if torch.cuda.is_available() else "gloo")
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=o.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    watchdog.rank_name = f"rank {rank}"
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local_rank}" if backend == "nccl" else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(o.seed)
    T = model.block_size()
    model.to(device).train()
    watchdog.progress("setting up DistributedDataParallel")
    ddp = DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)

    # weight decay on Linear weights only, as tinygpt's AdamW
    decay = {id(m.weight) for m in model.modules() if isinstance(m, tnn.Linear)}
    params = list(model.parameters())
    optimizer = torch.optim.AdamW([{"params": [p for p in params if id(p) in decay], "weight_decay": o.weight_decay},
                                   {"params": [p for p in params if id(p) not in decay], "weight_decay": 0.0}],
                                  lr=o.lr, betas=(0.9, 0.99), eps=1e-8)
    watchdog.progress("the loss before")
    before = mean_loss(model, val_ids, T, o, device)
    if rank == 0:
        print(f"{model.config.kind} model, {sum(p.numel() for p in params)} parameters, {world} processes ({backend}), "
              f"{o.batch} x {world} windows of {T} per step")
        print(f"loss before: {before:.6f}", flush=True)

    gen = torch.Generator().manual_seed(o.seed + rank)  # each rank its own batches
    started = time.monotonic()
    for step in range(o.steps):
        watchdog.progress(f"step {step + 1}")
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
                left = (time.monotonic() - started) / (step + 1) * (o.steps - step - 1)
                print(f"step {step + 1}/{o.steps} loss {mean.item() / world:.4f} lr {lr_at(step, o):.3g} "
                      f"ETA {int(left) // 60}m{int(left) % 60:02}s", flush=True)

    watchdog.progress("the loss after and the comparison of the replicas")
    after = mean_loss(model, val_ids, T, o, device)
    digests = [None] * world
    dist.all_gather_object(digests, weights_digest(model))
    if rank == 0:
        print(f"loss after: {after:.6f}")
        same = len(set(digests)) == 1
        print(f"replicas: {world} ranks, {'identical' if same else 'differ'} (sha256 {digests[0][:16]})", flush=True)
        if same:  # (replicas that differ are a failure, not a checkpoint)
            tg.save(model.cpu(), vocab, o.out, {"torch.ddp.steps": str(o.steps), "torch.ddp.world": str(world)})
            print(f"saved {o.out}")
    watchdog.progress("the last barrier (rank 0 saving)")
    dist.barrier()
    if len(set(digests)) != 1:
        raise ValueError(f"rank {rank}: the ranks ended with different weights")
    return ddp  # alive until the process ends: see main()


def main():
    o = parse_args()
    try:
        tg.check_outputs([("--out", o.out)], [("--init", o.init), ("--data", o.data)], o.force)
    except tg.UsageError as e:
        print(f"train_ddp.py: {tg.one_line(e)}", file=sys.stderr)
        return 2
    try:  # before any process starts: a bad file is one line here, not one per rank
        model, vocab, train_ids, val_ids = read_inputs(o)
    except (ValueError, OSError) as e:
        print(f"train_ddp.py: {tg.one_line(e)}", file=sys.stderr)
        return 1
    if o.nproc_per_node:
        return launch(o.nproc_per_node, sys.argv[1:])
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        print("train_ddp.py: not started by torch.distributed.run (no RANK and WORLD_SIZE in the environment): "
              "add --nproc-per-node N, or start it with python3 -m torch.distributed.run", file=sys.stderr)
        return 2
    name = f"rank {os.environ['RANK']}"
    watchdog = Watchdog(o.timeout, name)
    # Every way out is os._exit, without destructors. Torch 1.13's ProcessGroupGloo, destroyed with the
    # DistributedDataParallel that holds it, joins its worker thread while holding the GIL, and that thread
    # may still be freeing a tensor, which takes the GIL: a deadlock, in about one launch in 20 on a busy
    # machine (gdb: the main thread in ~ProcessGroupGloo -> std::thread::join, the worker in ~TensorImpl ->
    # PyEval_AcquireThread; gloo's loop thread polls every 10 ms meanwhile). The run's work is done and
    # saved (fsynced) by then; only the exit was hanging.
    try:
        keep = train(o, model, vocab, train_ids, val_ids, watchdog)  # noqa: F841 (not destroyed: see above)
    except (RuntimeError, ValueError, OSError) as e:
        # a collective that failed (a peer died: gloo's "Connection reset by peer" / "closed by peer"), or the save
        sys.stdout.flush()
        hint = "another rank died or cannot be reached; " if isinstance(e, RuntimeError) else ""
        os.write(2, f"train_ddp.py: {watchdog.rank_name} in {watchdog.where}: {tg.one_line(str(e).rstrip('.'))}; "
                    f"{hint}stopping, nothing saved\n".encode())
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
