"""Writes a llm.c GPT-2 model file (version 3, fp32) of any shape: how the tests get GPT-2-shaped models
(its vocabulary of 50257, a long block) without training one. Every weight is --value (the default zeros
are a sparse file, on no disk; a huge but finite 1e38 makes logits that overflow), or with --seed S drawn
uniformly from [-0.5, 0.5), times --scale X (large weights make large attention scores: saturated heads).

    python3 llmc_model.py OUT.bin --block T --vocab V --layers L --heads NH --width C [--value X | --seed S [--scale X]]
"""
import argparse
import os
import random
import struct


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    for flag in ("block", "vocab", "layers", "heads", "width"):
        p.add_argument(f"--{flag}", type=int, required=True)
    p.add_argument("--value", type=float, default=0.0)
    p.add_argument("--seed", type=int)
    p.add_argument("--scale", type=float, default=1.0)
    a = p.parse_args()
    padded = (a.vocab + 127) // 128 * 128
    C, L = a.width, a.layers
    values = padded * C + a.block * C + L * (12 * C * C + 13 * C) + 2 * C  # llm.c's tensors, in its order
    header = [20240326, 3, a.block, a.vocab, L, a.heads, C, padded] + [0] * 248
    with open(a.out, "wb") as f:
        f.write(struct.pack("<256i", *header))
        if a.seed is not None:
            draw = random.Random(a.seed)
            for first in range(0, values, 1 << 16):
                n = min(1 << 16, values - first)
                f.write(struct.pack(f"<{n}f", *((draw.random() - 0.5) * a.scale for _ in range(n))))
        elif a.value == 0.0:
            f.truncate(4 * 256 + 4 * values)
        else:
            chunk = struct.pack("<f", a.value) * (1 << 16)
            for first in range(0, values, 1 << 16):
                f.write(chunk[: 4 * min(1 << 16, values - first)])
    os.chmod(a.out, 0o644)


if __name__ == "__main__":
    main()
