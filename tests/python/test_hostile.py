"""The PyTorch bridge (python/) against hostile files, flags and peers (issue 25). tests/python/CMakeLists.txt
runs one case per CTest test (torch_hostile_CASE):

  pickles      a ckpt.pt and a meta.pkl whose unpickling would run a command: from_nanogpt.py refuses each,
               naming the file and what it held, and the command never runs; a benign pair still converts
  outputs      from_nanogpt.py and train_ddp.py never write over an input (device and inode: a hard link
               counts), replace an existing file only with --force, refuse links, directories and devices,
               and leave every file as it was when they refuse; the write is atomic
  errors       bad files and flags give one line on stderr, exit 1 (a file) or 2 (a flag or an output),
               never a traceback: nanoGPT model_args with n_head 0, garbage checkpoints and meta.pkl files (and
               pickles claiming 2^40 bytes), a vocab.json nested 100000 deep, a device as a text file or ckpt.pt
  corpus       tinygpt_torch's read_safetensors and load accept exactly the files of fuzz/corpus/safetensors
               and fuzz/corpus/checkpoint that tinygpt's loaders accept (tests/python/load_check), each
               refusal a ValueError naming the file; 5 M nested brackets are a ValueError, not a RecursionError
  bounds       a file is read by what it holds, never by a limit's worth: load of a small checkpoint works in an
               8 GiB address space (a read of the 16 GiB size limit reserved it all first: MemoryError);
               load_hf_folder holds config.json's sizes to model.safetensors' shapes before it reads the
               tensors or builds the model (n_positions 10^9, n_layer 10^6, ...: a ValueError in that address
               space), and refuses a config.json nested 100000 deep, over 1 MB or not a file
  peer_dies    two ranks of train_ddp.py; rank 0 is killed (then, again, stopped) mid-run: rank 1 ends within
               --timeout with one line saying so and writes nothing; a rank whose peer never comes ends
               within --timeout too; the ranks of a killed launcher (--nproc-per-node) end. Each launch runs
               in its own process group, killed at the end.

Each prints what it checked. A failure raises (exit 1) with what differed.
"""
import argparse
import glob
import hashlib
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import textwrap
import time
import zipfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_torch  # noqa: E402  (nanoGPT's model, reproduced; the text the models train on)


check = test_torch.check
refusal = test_torch.refusal


class Case(test_torch.Case):
    """test_torch's: a fresh work directory holding text.txt, tinygpt_torch imported."""

    def __init__(self, o):
        o.python_dir, o.work = os.path.abspath(o.python_dir), os.path.abspath(o.work)  # (the scripts run in work)
        super().__init__(o)
        self.text = self.data

    def script(self, name):
        return os.path.join(self.o.python_dir, name)

    def files(self):
        """Every file in the work directory and its contents' hash: what a refusal must leave as it was."""
        out = {}
        for name in sorted(os.listdir(self.o.work)):
            p = self.path(name)
            if os.path.islink(p):
                out[name] = "link to " + os.readlink(p)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    out[name] = hashlib.sha256(f.read()).hexdigest()
            else:
                out[name] = "not a file"
        return out

    def refused(self, label, command, code, *needles, timeout=120):
        """Runs a script that must refuse: exit `code`, exactly one line on stderr holding every needle,
        no traceback, and no file of the work directory created, changed or removed."""
        before = self.files()
        r = subprocess.run([sys.executable, *map(str, command)], capture_output=True, text=True, timeout=timeout,
                           cwd=self.o.work, stdin=subprocess.DEVNULL)
        lines = r.stderr.splitlines()
        print(f"{label}: exit {r.returncode}: {r.stderr.strip()[:300]}")
        check(r.returncode == code, f"{label}: exit {r.returncode}, expected {code}\n{r.stderr}")
        check(len(lines) == 1 and "Traceback" not in r.stderr, f"{label}: not one line on stderr:\n{r.stderr}")
        for needle in needles:
            check(needle in lines[0], f"{label}: the message does not say {needle!r}: {lines[0]}")
        after = self.files()
        check(before == after, f"{label}: files changed: {sorted(set(before.items()) ^ set(after.items()))}")
        return lines[0]

    def nanogpt(self, name, **overrides):
        """A nanoGPT ckpt.pt (as nanoGPT's train.py saves it) for the text's vocabulary."""
        vocab = sorted(set(test_torch.TEXT))
        cfg = dict(n_layer=1, n_head=2, n_embd=8, block_size=8, bias=False, vocab_size=len(vocab), dropout=0.0)
        model = test_torch.NanoGPT(cfg)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95))
        model(torch.zeros(1, 8, dtype=torch.long)).sum().backward()
        optimizer.step()
        cfg.update(overrides)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "model_args": cfg, "iter_num": 10,
                    "best_val_loss": torch.tensor(2.0), "config": {"dataset": "shakespeare_char", "learning_rate": 1e-3,
                                                                   "compile": False, "init_from": "scratch"}},
                   self.path(name))
        return self.path(name)

    def bpe_dir(self, name, vocabulary='{"a": 0,'):
        """A directory of GPT-2's BPE files whose vocab.json holds `vocabulary` (by default, not JSON)."""
        os.makedirs(self.path(name))
        for file, text in (("vocab.json", vocabulary), ("merges.txt", "#version: 0.2\n")):
            with open(os.path.join(self.path(name), file), "w") as f:
                f.write(text)
        return name

    def claiming_ckpt(self, name):
        """A ckpt.pt (torch's zip) whose data.pkl is CLAIM."""
        with zipfile.ZipFile(self.nanogpt(f"{name}.base")) as base, zipfile.ZipFile(self.path(name), "w") as out:
            for info in base.infolist():
                out.writestr(info, CLAIM if info.filename.endswith("/data.pkl") else base.read(info))
        return self.path(name)

    def write(self, name, raw):
        """A file holding the bytes `raw`."""
        with open(self.path(name), "wb") as f:
            f.write(raw)
        return self.path(name)

    def meta(self, name, obj=None):
        chars = sorted(set(test_torch.TEXT))
        with open(self.path(name), "wb") as f:
            pickle.dump(obj if obj is not None else {"vocab_size": len(chars), "itos": dict(enumerate(chars)),
                                                     "stoi": {c: i for i, c in enumerate(chars)}}, f)
        return self.path(name)


# a pickle whose BINBYTES8 claims 2^40 bytes and holds 3 (pickle's unpickler reserves the claim before it reads)
CLAIM = b"\x80\x04\x8e" + (1 << 40).to_bytes(8, "little") + b"abc"


class RunsCommand:
    """Unpickling this object runs `command` (what an attacker's ckpt.pt or meta.pkl would do)."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


# --- 1: no file from_nanogpt.py reads runs code -------------------------------------------------------------

def case_pickles(c):
    script = c.script("from_nanogpt.py")
    ckpt, meta = c.nanogpt("ckpt.pt"), c.meta("meta.pkl")
    marker = c.path("PWNED")
    attack = RunsCommand(f"touch {marker}")

    # a ckpt.pt whose "config" runs a command when unpickled
    evil_ckpt = c.path("evil_ckpt.pt")
    checkpoint = torch.load(ckpt)
    checkpoint["config"] = attack
    torch.save(checkpoint, evil_ckpt)
    c.refused("a ckpt.pt that runs a command", [script, evil_ckpt, "out.st", "--meta", meta], 1,
              "evil_ckpt.pt", "system")
    check(not os.path.exists(marker), "unpickling the ckpt.pt ran its command")

    # a meta.pkl that runs a command, and one that holds a float (not a dict, list, str or int)
    evil_meta = c.meta("evil_meta.pkl", {"vocab_size": 3, "itos": attack})
    c.refused("a meta.pkl that runs a command", [script, ckpt, "out.st", "--meta", evil_meta], 1,
              "evil_meta.pkl", "system")
    check(not os.path.exists(marker), "unpickling the meta.pkl ran its command")
    odd_meta = c.meta("odd_meta.pkl", {"itos": {0: "a"}, "scale": 1.5})
    c.refused("a meta.pkl holding a float", [script, ckpt, "out.st", "--meta", odd_meta], 1, "odd_meta.pkl", "float")

    # the benign pair converts (so the refusals above are about the attack, not the files)
    r = subprocess.run([sys.executable, script, ckpt, c.path("out.st"), "--meta", meta], capture_output=True, text=True)
    check(r.returncode == 0, f"a benign ckpt.pt and meta.pkl were refused: {r.stderr}")
    c.tg.load(c.path("out.st"))
    print("a benign ckpt.pt and meta.pkl convert; nothing the hostile ones held ran")


# --- 3: outputs are never inputs, replaced only with --force, written atomically ------------------------------

def case_outputs(c):
    tg = c.tg
    nano = c.script("from_nanogpt.py")
    ddp = c.script("train_ddp.py")
    ckpt = c.nanogpt("ckpt.pt")
    init = c.path("init.st")
    subprocess.run([sys.executable, nano, ckpt, init, "--vocab-from", c.text], check=True, capture_output=True)
    os.link(c.text, c.path("hardlink.txt"))
    os.symlink("notes.txt", c.path("symlink.txt"))
    os.mkdir(c.path("a_dir"))
    with open(c.path("notes.txt"), "w") as f:
        f.write("an unrelated file\n")
    same = "is the same file as"

    for label, out in (("OUT is --vocab-from", "text.txt"), ("OUT is a hard link to --vocab-from", "hardlink.txt")):
        c.refused(f"from_nanogpt.py: {label}, --force", [nano, ckpt, out, "--vocab-from", "text.txt", "--force"], 2,
                  f"OUT {out} {same} --vocab-from text.txt")
    c.refused("from_nanogpt.py: OUT is CKPT", [nano, ckpt, ckpt, "--vocab-from", "text.txt", "--force"], 2, same)
    c.refused("from_nanogpt.py: OUT exists", [nano, ckpt, "notes.txt", "--vocab-from", "text.txt"], 2,
              "OUT notes.txt exists; add --force to replace it")
    c.refused("from_nanogpt.py: OUT is a symbolic link", [nano, ckpt, "symlink.txt", "--vocab-from", "text.txt", "--force"],
              2, "symbolic link")
    c.refused("from_nanogpt.py: OUT is a directory", [nano, ckpt, "a_dir", "--vocab-from", "text.txt", "--force"], 2,
              "is a directory")
    c.refused("from_nanogpt.py: OUT is a device", [nano, ckpt, "/dev/null", "--vocab-from", "text.txt", "--force"], 2,
              "is a character device")

    run = [ddp, "--init", "init.st", "--data", "text.txt", "--steps", 2]
    c.refused("train_ddp.py: --out is --data, --force", [*run, "--out", "text.txt", "--force"], 2,
              f"--out text.txt {same} --data text.txt")
    c.refused("train_ddp.py: --out is --init, --force", [*run, "--out", "init.st", "--force"], 2,
              f"--out init.st {same} --init init.st")
    c.refused("train_ddp.py: --out is a hard link to --data", [*run, "--out", "hardlink.txt", "--force"], 2, same)
    c.refused("train_ddp.py: --out exists", [*run, "--out", "notes.txt"], 2, "--out notes.txt exists; add --force")
    c.refused("train_ddp.py --nproc-per-node: --out is --data", [*run, "--nproc-per-node", 2, "--out", "text.txt"], 2, same)

    # --force replaces an existing file, with the permissions a new file gets (not mkstemp's 0600)
    r = subprocess.run([sys.executable, nano, ckpt, c.path("notes.txt"), "--vocab-from", c.text, "--force"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"--force did not replace notes.txt: {r.stderr}")
    tg.load(c.path("notes.txt"))
    umask = os.umask(0)
    os.umask(umask)
    mode = os.stat(c.path("notes.txt")).st_mode & 0o777
    check(mode == 0o666 & ~umask, f"the written file has mode {mode:o}, a new file {0o666 & ~umask:o}")

    # atomic: a write that fails half-way leaves the old file and no temporary file
    with open(c.path("precious.st"), "wb") as f:
        f.write(b"the old contents")

    def failing_chunks():
        yield b"half of the new"
        raise OSError("the disk filled up")

    e = refusal(lambda: tg.write_atomically(c.path("precious.st"), failing_chunks()), "a write that fails", OSError)
    check("disk filled" in str(e), f"another error: {e}")
    with open(c.path("precious.st"), "rb") as f:
        check(f.read() == b"the old contents", "a failed write changed the file")
    leftovers = [n for n in os.listdir(c.o.work) if ".tmp" in n or ".probe" in n]
    check(not leftovers, f"temporary files left: {leftovers}")
    print("--force replaces with a new file's mode; a failed write leaves the old file and no temporary file")


# --- 12: one-line errors, exit 1 or 2, never a traceback --------------------------------------------------------

def case_errors(c):
    nano = c.script("from_nanogpt.py")
    ddp = c.script("train_ddp.py")
    ckpt, meta = c.nanogpt("ckpt.pt"), c.meta("meta.pkl")
    with open(c.path("garbage.bin"), "wb") as f:
        f.write(bytes(range(256)) * 4)
    with open(c.path("latin1.txt"), "wb") as f:
        f.write("caf\xe9\n".encode("latin-1"))
    torch.save(["not", "a", "dict"], c.path("list.pt"))
    for label, args, needles in (
            ("n_head 0", [c.nanogpt("n_head0.pt", n_head=0), "o.st", "--meta", meta], ["n_head0.pt", "n_head"]),
            ("n_embd a string", [c.nanogpt("n_embd_text.pt", n_embd="8"), "o.st", "--meta", meta], ["n_embd"]),
            ("vocab_size negative", [c.nanogpt("vocab_neg.pt", vocab_size=-3), "o.st", "--meta", meta], ["vocab_size"]),
            ("a garbage ckpt.pt", ["garbage.bin", "o.st", "--meta", meta], ["garbage.bin"]),
            ("a ckpt.pt holding a list", ["list.pt", "o.st", "--meta", meta], ["list.pt", "not a nanoGPT checkpoint"]),
            ("a missing ckpt.pt", ["missing.pt", "o.st", "--meta", meta], ["missing.pt"]),
            ("a garbage meta.pkl", [ckpt, "o.st", "--meta", "garbage.bin"], ["garbage.bin"]),
            ("a meta.pkl claiming 2^40 bytes (was a MemoryError)", [ckpt, "o.st", "--meta", c.write("claim.pkl", CLAIM)],
             ["claim.pkl", "expected 1099511627776 bytes", "but only 3 remain"]),
            ("a ckpt.pt claiming 2^40 bytes (was a MemoryError)", [c.claiming_ckpt("claim.pt"), "o.st", "--meta", meta],
             ["claim.pt", "expected 1099511627776 bytes", "but only 3 remain"]),
            ("a device as ckpt.pt", ["/dev/null", "o.st", "--meta", meta], ["/dev/null: is a character device, not a checkpoint"]),
            ("a meta.pkl without itos", [ckpt, "o.st", "--meta", c.meta("no_itos.pkl", {"vocab_size": 3})], ["itos"]),
            ("a meta.pkl with gaps in itos", [ckpt, "o.st", "--meta", c.meta("gaps.pkl", {"itos": {0: "a", 5: "b"}})],
             ["itos"]),
            ("--vocab-from not UTF-8", [ckpt, "o.st", "--vocab-from", "latin1.txt"], ["latin1.txt", "UTF-8"]),
            ("--tokenizer with a garbage vocab.json", [ckpt, "o.st", "--tokenizer", c.bpe_dir("garbage_bpe")],
             ["vocab.json", "not JSON"]),
            ("--tokenizer with a vocab.json nested 100000 deep (was a RecursionError)",
             [ckpt, "o.st", "--tokenizer", c.bpe_dir("deep_bpe", "[" * 100_000)],
             ["deep_bpe/vocab.json: nests arrays and objects 100000 deep, over the limit of 32"]),
            ("--vocab-from a device (was read as empty text)", [ckpt, "o.st", "--vocab-from", "/dev/null"],
             ["--vocab-from /dev/null: is a character device, not a text file"])):
        c.refused(f"from_nanogpt.py: {label}", [nano, *args], 1, *needles)
    c.refused("from_nanogpt.py: no vocabulary flag", [nano, ckpt, "o.st"], 2, "--meta")

    init = c.path("init.st")
    subprocess.run([sys.executable, nano, ckpt, init, "--vocab-from", c.text], check=True, capture_output=True)
    run = [ddp, "--init", "init.st", "--data", "text.txt", "--out", "o.st"]
    for label, args, code, needles in (
            ("--steps -1", ["--steps", "-1"], 2, ["--steps"]),
            ("--steps x", ["--steps", "x"], 2, ["--steps"]),
            ("--batch 0", ["--batch", "0"], 2, ["--batch"]),
            ("--lr nan", ["--lr", "nan"], 2, ["--lr"]),
            ("--timeout 0", ["--timeout", "0"], 2, ["--timeout"]),
            ("--backend mpi", ["--backend", "mpi"], 2, ["--backend"])):
        c.refused(f"train_ddp.py {label}", [*run, *args], code, *needles)
    c.refused("train_ddp.py: a garbage --init", [ddp, "--init", "garbage.bin", "--data", "text.txt", "--out", "o.st"], 1,
              "garbage.bin")
    c.refused("train_ddp.py: a missing --init", [ddp, "--init", "missing.st", "--data", "text.txt", "--out", "o.st"], 1,
              "missing.st")
    c.refused("train_ddp.py: --data a device", [ddp, "--init", "init.st", "--data", "/dev/null", "--out", "o.st"], 1,
              "/dev/null: is a character device, not a text file")
    c.refused("train_ddp.py: --data not UTF-8", [ddp, "--init", "init.st", "--data", "latin1.txt", "--out", "o.st"], 1,
              "latin1.txt")
    with open(c.path("other.txt"), "w") as f:
        f.write("\u20ac uber alles " * 20)
    c.refused("train_ddp.py: --data outside the vocabulary", [ddp, "--init", "init.st", "--data", "other.txt",
                                                              "--out", "o.st"], 1, "other.txt", "not in the vocabulary")
    with open(c.path("short.txt"), "w") as f:
        f.write("the cat")
    c.refused("train_ddp.py: --data too short", [ddp, "--init", "init.st", "--data", "short.txt", "--out", "o.st"], 1,
              "short.txt", "too short")
    c.refused("train_ddp.py: not under torchrun", [*run, "--steps", 1], 2, "torch.distributed.run")
    os.link(c.path("garbage.bin"), c.path("name\nwith a newline"))
    c.refused("from_nanogpt.py: a file name with a newline", [nano, "name\nwith a newline", "o.st", "--meta", meta], 1,
              "name\\nwith a newline")


# --- 10: tinygpt_torch refuses what tinygpt refuses ------------------------------------------------------------

def case_corpus(c):
    tg = c.tg
    corpus = c.o.corpus
    loaders = {"safetensors": tg.read_safetensors, "checkpoint": tg.load}
    compared = 0
    for kind, load in loaders.items():
        files = sorted(glob.glob(os.path.join(corpus, kind, "*")))
        check(len(files) >= 10, f"{corpus}/{kind} holds {len(files)} files")
        out = subprocess.run([c.o.load_check, kind, *files], capture_output=True, text=True, errors="replace",
                             check=True).stdout
        verdicts = {}
        for line in out.splitlines():
            verdict, path = line.split("\t")[:2]
            verdicts[path] = verdict
        check(sorted(verdicts) == files, f"load_check answered for {sorted(verdicts)}")
        disagreements = []
        for path in files:
            try:
                load(path)
                ours = "accepted"
            except ValueError as e:
                ours = "refused" if path in str(e) and "\n" not in str(e) else f"refused without naming the file: {e}"
            except BaseException as e:  # noqa: B036 (a RecursionError, a KeyError: what must not escape)
                ours = f"raised {type(e).__name__}: {str(e)[:120]}"
            if ours != verdicts[path]:
                disagreements.append(f"{os.path.basename(path)}: tinygpt {verdicts[path]}, tinygpt_torch {ours}")
            compared += 1
        accepted = sum(v == "accepted" for v in verdicts.values())
        print(f"{kind}: {len(files)} files, tinygpt accepts {accepted}; tinygpt_torch: "
              f"{'the same' if not disagreements else str(len(disagreements)) + ' disagreements'}")
        check(not disagreements, f"{kind}: tinygpt_torch and tinygpt disagree:\n  " + "\n  ".join(disagreements))

    # 5 million nested brackets: a ValueError naming the file, not a RecursionError, and quickly
    deep = c.path("five_million_brackets.safetensors")
    header = b"[" * 5_000_000 + b"]" * 5_000_000
    with open(deep, "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
    start = time.monotonic()
    e = refusal(lambda: tg.read_safetensors(deep), "5 M nested brackets")
    check(deep in str(e), f"the refusal does not name the file: {e}")
    print(f"5 M nested brackets: ValueError in {time.monotonic() - start:.2f} s: {e}")
    # a FIFO is refused, not waited on
    fifo = c.path("fifo.safetensors")
    os.mkfifo(fifo)
    e = refusal(lambda: tg.read_safetensors(fifo), "a FIFO")
    check("FIFO" in str(e), f"a FIFO: {e}")
    print(f"{compared} corpus files: tinygpt_torch accepts and refuses exactly what tinygpt does")


# --- issue 39: a file is read by what it holds ----------------------------------------------------------------

ADDRESS_LIMIT = 8 << 30  # torch imports in under 1 GiB of address space; a 16 GiB reservation fails


def under_address_limit(c, code):
    """What `code` prints, run with tinygpt_torch imported as tg by a python3 whose address space is limited to
    ADDRESS_LIMIT (RLIMIT_AS, as `ulimit -v`), in the work directory; first the limit is shown to hold back a
    16 GiB reservation (one that touches no memory)."""
    prelude = textwrap.dedent(f"""\
        import mmap, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_LIMIT}, {ADDRESS_LIMIT}))
        sys.path.insert(0, {c.o.python_dir!r})
        import tinygpt_torch as tg
        try:
            mmap.mmap(-1, 16 << 30)
            sys.exit("the address space limit lets 16 GiB be reserved")
        except OSError:
            pass
        """)
    r = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                       cwd=c.o.work, stdin=subprocess.DEVNULL)
    check(r.returncode == 0, f"in {ADDRESS_LIMIT >> 30} GiB of address space: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout


def case_bounds(c):
    tg = c.tg
    vocab = sorted(set(test_torch.TEXT))
    model = tg.make_model(tg.ModelConfig(kind="gpt", vocab=len(vocab), n_embd=32, n_head=4, n_layer=4, block=8))
    tg.save(model, vocab, c.path("small.safetensors"))
    size = os.path.getsize(c.path("small.safetensors"))
    out = under_address_limit(c, """
        model, vocab = tg.load("small.safetensors")
        print(sum(p.numel() for p in model.parameters()), "parameters")""")
    print(f"a checkpoint of {size} bytes loads in {ADDRESS_LIMIT >> 30} GiB of address space: {out.strip()}")

    # load_hf_folder: config.json's sizes are held to model.safetensors' shapes before its data is read (each
    # bad config is beside a file whose data fails its checksum: the config must be what is refused) or the
    # model built (n_positions 10^7 was a model of 5.3 GB before the shapes refused it)
    C, L, T = 32, 2, 8
    gpt2 = tg.make_model(tg.ModelConfig(kind="gpt2", vocab=len(vocab), n_embd=C, n_head=2, n_layer=L, block=T))
    good = {f"transformer.{name}": p for name, p in gpt2.named_parameters()}
    config = {"model_type": "gpt2", "vocab_size": len(vocab), "n_positions": T, "n_embd": C, "n_layer": L, "n_head": 2,
              "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}}}
    wide = 1 << 16  # a file as thin as its config is wide: wte, wpe and one layer of one vector
    thin = {"wte.weight": torch.zeros(2, wide), "wpe.weight": torch.zeros(1, wide), "h.0.ln_1.bias": torch.zeros(wide)}
    nested = '{"a":' * 100_000 + "1" + "}" * 100_000
    folders = {  # name: (config.json's text, the tensors, what the refusal says)
        "good": (json.dumps(config), good, None),
        "n_positions": (json.dumps({**config, "n_positions": 10**9}), good, f"n_positions is {10**9} but"),
        "n_layer": (json.dumps({**config, "n_layer": 10**6}), good, f"n_layer is {10**6} but"),
        "vocab_size": (json.dumps({**config, "vocab_size": 10**9}), good, f"vocab_size is {10**9} but"),
        "n_embd": (json.dumps({**config, "n_embd": 1 << 20}), good, f"n_embd is {1 << 20} but"),
        "thin": (json.dumps({"vocab_size": 2, "n_positions": 1, "n_embd": wide, "n_layer": 1, "n_head": 1}), thin,
                 "parameters, but the file stores"),
        "nested_objects": (nested, good, "nests arrays and objects 100000 deep, over the limit of 32"),
        "nested_arrays": ("[" * 100_000, good, "nests arrays and objects 100000 deep"),
        "oversized": (json.dumps(config) + " " * (1 << 20), good, "over the limit of 1048576"),
        "a_device": (None, good, "is a character device, not a config file")}
    for name, (text, tensors, _) in folders.items():
        folder = c.path(f"hf_{name}")
        os.makedirs(folder)
        weights = os.path.join(folder, "model.safetensors")
        tg.write_safetensors(weights, tensors, {"format": "pt"})
        if name != "good":
            with open(weights, "r+b") as f:  # the last byte of the data: its tensor's checksum fails
                f.seek(-1, os.SEEK_END)
                last = f.read(1)
                f.seek(-1, os.SEEK_END)
                f.write(bytes([last[0] ^ 1]))
        if text is None:
            os.symlink("/dev/null", os.path.join(folder, "config.json"))
        else:
            with open(os.path.join(folder, "config.json"), "w") as f:
                f.write(text)
    out = under_address_limit(c, f"""
        for name in {list(folders)!r}:
            try:
                tg.load_hf_folder("hf_" + name)
                print(name, "accepted", sep="\t")
            except BaseException as e:
                print(name, type(e).__name__, tg.one_line(e), sep="\t")""")
    answers = dict(line.split("\t", 1) for line in out.splitlines())
    for name, (_, _, needle) in folders.items():
        answer = answers.get(name, "no answer")
        print(f"{name}: {answer}")
        if needle is None:
            check(answer == "accepted", f"{name}: {answer}")
        else:
            check(answer.startswith(f"ValueError\thf_{name}/") and needle in answer,
                  f"{name}: not a ValueError naming the folder's file and saying {needle!r}: {answer}")


# --- 13: a rank ends when its peer dies, within --timeout ----------------------------------------------------------

def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_rank(c, rank, port, args, log):
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2", RANK=str(rank),
               LOCAL_RANK=str(rank), OMP_NUM_THREADS="1")
    # its own process group: whatever happens, the group is killed at the end and nothing is left behind
    return subprocess.Popen([sys.executable, "-u", c.script("train_ddp.py"), *map(str, args)], env=env, cwd=c.o.work,
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


def _kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def _lose_rank0(c, how, timeout):
    """Two ranks train; once rank 0 has logged steps, it is killed (SIGKILL) or stopped (SIGSTOP: alive,
    silent). Rank 1 must end within --timeout with one line saying it stops, and write nothing."""
    args = ["--init", "init.st", "--data", "text.txt", "--out", f"{how}.st", "--steps", 1_000_000, "--batch", 4,
            "--eval-batches", 1, "--log-every", 10, "--timeout", timeout]
    port = _free_port()
    logs = [open(c.path(f"{how}_rank{r}.log"), "w+") for r in (0, 1)]
    ranks = [_start_rank(c, r, port, args, logs[r]) for r in (0, 1)]

    def log_of(r):
        with open(c.path(f"{how}_rank{r}.log")) as f:
            return f.read()

    try:
        for _ in range(600):  # until rank 0 has logged two lines of steps: both are training
            if log_of(0).count("\nstep ") >= 2:
                break
            check(all(p.poll() is None for p in ranks), f"a rank ended early:\n{log_of(0)}\n{log_of(1)}")
            time.sleep(0.1)
        else:
            raise AssertionError(f"rank 0 logged no steps in 60 s:\n{log_of(0)}")
        os.kill(ranks[0].pid, signal.SIGKILL if how == "killed" else signal.SIGSTOP)
        lost = time.monotonic()
        try:
            code = ranks[1].wait(timeout=timeout + 10)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"rank 1 still runs {timeout + 10} s after rank 0 was {how} (--timeout {timeout})")
        waited = time.monotonic() - lost
        log = log_of(1)
        lines = [line for line in log.splitlines() if line.startswith("train_ddp.py")]
        print(f"rank 0 {how}; rank 1 exited {code} after {waited:.1f} s: {lines}")
        check(code == 1, f"rank 1 exited {code}, expected 1:\n{log}")
        check("Traceback" not in log and len(lines) == 1 and "rank 1" in lines[0] and "stopping" in lines[0],
              f"rank 1 did not say in one line that it stops:\n{log}")
        check(not os.path.exists(c.path(f"{how}.st")), "a checkpoint was written")
    finally:
        for p in ranks:
            _kill_group(p)
        for log in logs:
            log.close()


def case_peer_dies(c):
    nano = c.script("from_nanogpt.py")
    subprocess.run([sys.executable, nano, c.nanogpt("ckpt.pt"), c.path("init.st"), "--vocab-from", c.text], check=True,
                   capture_output=True)
    _lose_rank0(c, "killed", 20)
    _lose_rank0(c, "stopped", 6)

    # the launcher killed (--nproc-per-node: this script as torchrun): its orphaned ranks end too
    with open(c.path("orphans.log"), "w+") as log:
        launcher = subprocess.Popen([sys.executable, "-u", c.script("train_ddp.py"), "--nproc-per-node", "2", *map(str, [
            "--init", "init.st", "--data", "text.txt", "--out", "orphans.st", "--steps", 1_000_000, "--batch", 4,
            "--eval-batches", 1, "--log-every", 10])], cwd=c.o.work, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            for _ in range(900):
                log.seek(0)
                if log.read().count("\nstep ") >= 2:
                    break
                check(launcher.poll() is None, f"the launch ended early:\n{log.read()}")
                time.sleep(0.1)
            else:
                raise AssertionError("the launch logged no steps in 90 s")
            launcher.kill()
            launcher.wait()
            killed = time.monotonic()
            while time.monotonic() - killed < 10:
                try:
                    os.killpg(launcher.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                raise AssertionError("the ranks of a killed launcher still run 10 s later")
            log.seek(0)
            said = [line for line in log.read().splitlines() if line.startswith("train_ddp.py: rank")]
            print(f"the launcher killed: its ranks ended after {time.monotonic() - killed:.1f} s: {said}")
            # (the first to notice says its torchrun is gone; the other may first lose that rank)
            check(len(said) == 2 and all("stopping" in line for line in said) and any("is gone" in line for line in said),
                  f"the ranks did not say in a line each that they stop because their torchrun is gone: {said}")
        finally:
            _kill_group(launcher)

    # a peer that never comes: the rendezvous is bounded by --timeout too
    lonely_timeout = 5
    args = ["--init", "init.st", "--data", "text.txt", "--out", "lonely.st", "--timeout", lonely_timeout]
    with open(c.path("lonely.log"), "w+") as log:
        lonely = _start_rank(c, 1, _free_port(), args, log)
        try:
            start = time.monotonic()
            code = lonely.wait(timeout=lonely_timeout + 25)
            waited = time.monotonic() - start
        except subprocess.TimeoutExpired:
            raise AssertionError(f"a rank without a peer still waits {lonely_timeout + 25} s later (--timeout {lonely_timeout})")
        finally:
            _kill_group(lonely)
        log.seek(0)
        text = log.read()
    print(f"a rank alone: exit {code} after {waited:.1f} s: {text.strip()}")
    check(code == 1 and "Traceback" not in text and len(text.strip().splitlines()) == 1,
          f"a rank without its peer: exit {code}:\n{text}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case")
    for flag in ("--python-dir", "--work", "--load-check", "--corpus"):
        p.add_argument(flag, required=True)
    o = p.parse_args()
    torch.set_num_threads(1)
    c = Case(o)
    {"pickles": case_pickles, "outputs": case_outputs, "errors": case_errors, "corpus": case_corpus,
     "peer_dies": case_peer_dies, "bounds": case_bounds}[o.case](c)
    print(f"{o.case}: passed")


if __name__ == "__main__":
    main()
