"""Rewrites a safetensors file with some of its metadata changed, the tensors' bytes untouched: how the
fault scripts make a checkpoint whose settings an editor, a damaged disk or an attacker changed. The
metadata's own checksum ("crc32c.__metadata__"), when the file has one, is computed anew (as an attacker
who knows the format would), so that what is tested is the check of the setting itself; --keep-checksum
leaves the old one, as a plain editor or a damaged disk would.

    python3 set_metadata.py [--keep-checksum] IN.st OUT.st KEY=VALUE|-KEY [...]

-KEY removes KEY: a checkpoint as a version that did not write it saved it.
"""
import json
import struct
import sys

METADATA_CHECKSUM = "crc32c.__metadata__"


def crc32c(data, crc=0xFFFFFFFF):
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def metadata_checksum(metadata):
    """As tinygpt's: every entry but this one in key order, each key and value as its 8-byte little-endian
    length and its UTF-8 bytes."""
    covered = b""
    for key in sorted(k for k in metadata if k != METADATA_CHECKSUM):
        for text in (key.encode(), metadata[key].encode()):
            covered += struct.pack("<Q", len(text)) + text
    return f"{crc32c(covered):08x}"


def main(*args):
    keep = args[0] == "--keep-checksum"
    source, target, *assignments = args[1:] if keep else args
    with open(source, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    metadata = header.setdefault("__metadata__", {})
    for assignment in assignments:
        if assignment.startswith("-"):
            del metadata[assignment[1:]]
            continue
        key, _, value = assignment.partition("=")
        metadata[key] = value
    if METADATA_CHECKSUM in metadata and not keep:
        metadata[METADATA_CHECKSUM] = metadata_checksum(metadata)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(target, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


if __name__ == "__main__":
    main(*sys.argv[1:])
