"""Rewrites a safetensors file with some of its metadata changed, the tensors' bytes untouched: how the
fault scripts make a checkpoint whose settings an editor, a damaged disk or an attacker changed.

    python3 set_metadata.py IN.st OUT.st KEY=VALUE [KEY=VALUE ...]
"""
import json
import struct
import sys


def main(source, target, *assignments):
    with open(source, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    for assignment in assignments:
        key, _, value = assignment.partition("=")
        header.setdefault("__metadata__", {})[key] = value
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(target, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


if __name__ == "__main__":
    main(*sys.argv[1:])
