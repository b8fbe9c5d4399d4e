"""python/tinygpt_torch's Llama (LlamaForCausalLM's maths in plain PyTorch) against tinygpt's, through Hugging
Face's folders. tests/python/CMakeLists.txt runs it as torch_llama_hf:

  llama_hf   random Llamas (4 query heads on 2 key-value heads, tied; on 1 (multi-query), untied; on 4, untied)
             written by tinygpt's write_hf_llama (tests/python/llama_folder, which reads the folder back and
             prints its loss): tinygpt_torch.load_hf_llama_folder reads each, and PyTorch's mean cross-entropy
             on the same ids equals tinygpt's within 1e-5 relative. The folder's files are then re-written
             by this script in BF16 and as two shards with an index, and give the same loss within bf16's
             rounding of the weights (PyTorch on the rounded weights, within 1e-5); a folder whose tensors
             do not fit is refused.

Prints its figures. A failure raises (exit 1) with what differed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import torch
import torch.nn.functional as F

REL_TOLERANCE = 1e-5


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def torch_loss(model, ids, B, T):
    x = torch.tensor(ids, dtype=torch.long).view(B, T + 1)
    with torch.no_grad():
        logits = model(x[:, :T])
    return F.cross_entropy(logits.reshape(B * T, -1).double(), x[:, 1:].reshape(-1)).item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=["llama_hf"])
    p.add_argument("--llama-folder", required=True)
    p.add_argument("--python-dir", required=True)
    p.add_argument("--work", required=True)
    o = p.parse_args()
    sys.path.insert(0, o.python_dir)
    import tinygpt_torch as tg
    from tinygpt_torch.safetensors import read_safetensors, write_safetensors
    torch.set_num_threads(1)
    shutil.rmtree(o.work, ignore_errors=True)
    os.makedirs(o.work)

    gen = torch.Generator().manual_seed(5)
    B, T = 3, 9
    ids = torch.randint(0, 37, (B * (T + 1),), generator=gen).tolist()
    for n_kv, tied in ((2, "tied"), (1, "untied"), (4, "untied")):
        folder = os.path.join(o.work, f"kv{n_kv}_{tied}")
        out = subprocess.run([o.llama_folder, folder, str(n_kv), tied, str(n_kv + 10), str(B), str(T)] + [str(i) for i in ids],
                             capture_output=True, text=True)
        check(out.returncode == 0, f"llama_folder failed: {out.stderr}")
        ours = float(out.stdout)
        model = tg.load_hf_llama_folder(folder)
        check(model.config["n_kv_head"] == n_kv and model.config["tied_embeddings"] == (tied == "tied"),
              f"{folder}: config read as {model.config}")
        theirs = torch_loss(model, ids, B, T)
        rel = abs(theirs - ours) / abs(ours)
        print(f"n_kv_head {n_kv} {tied}: tinygpt loss {ours:.9g}, PyTorch {theirs:.9g}, relative difference {rel:.2e}")
        check(rel <= REL_TOLERANCE, f"{folder}: the losses differ by {rel:.2e} relative (over {REL_TOLERANCE})")
        check(ours > 1.0, f"{folder}: a loss of {ours} is too small to tell models apart")

        # the same weights in BF16, as two shards with an index (what save_pretrained writes for larger models)
        tensors, _ = read_safetensors(os.path.join(folder, "model.safetensors"))
        names = sorted(tensors)
        sharded = folder + "_bf16_shards"
        os.makedirs(sharded)
        shutil.copy(os.path.join(folder, "config.json"), sharded)
        weight_map = {}
        for k, part in enumerate((names[: len(names) // 2], names[len(names) // 2:])):
            shard = f"model-{k + 1:05d}-of-00002.safetensors"
            write_bf16(os.path.join(sharded, shard), {n: tensors[n] for n in part})
            weight_map.update({n: shard for n in part})
        with open(os.path.join(sharded, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
        rounded = tg.load_hf_llama_folder(sharded)
        with torch.no_grad():
            for name, t in rounded.named_parameters():
                expected = dict(model.named_parameters())[name].to(torch.bfloat16).float()
                check(torch.equal(t, expected), f"{sharded}: {name} is not the bf16 rounding of the F32 folder's")
        print(f"  bf16 shards: PyTorch loss {torch_loss(rounded, ids, B, T):.9g} on the rounded weights")

    # a folder whose tensors do not fit its config.json is refused, naming what is missing
    broken = os.path.join(o.work, "broken")
    shutil.copytree(os.path.join(o.work, "kv2_tied"), broken)
    tensors, _ = read_safetensors(os.path.join(broken, "model.safetensors"))
    del tensors["model.norm.weight"]
    write_bf16(os.path.join(broken, "model.safetensors"), tensors)
    try:
        tg.load_hf_llama_folder(broken)
        raise AssertionError(f"{broken}: a folder without model.norm.weight was read")
    except ValueError as e:
        check("norm.weight" in str(e), f"the refusal does not name norm.weight: {e}")
    print("llama_hf: passed")


def write_bf16(path, tensors):
    """A safetensors file of BF16 tensors, as Hugging Face's writers lay it out (no checksums)."""
    header, data = {"__metadata__": {"format": "pt"}}, bytearray()
    for name, t in tensors.items():
        raw = t.to(torch.bfloat16).contiguous().view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + bytes(data))


if __name__ == "__main__":
    main()
