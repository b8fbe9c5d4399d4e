"""safetensors files with tinygpt's checksums (nn/model_files/include/nn/model_files/safetensors.h), read and written
without the safetensors package."""
import json
import math
import os
import struct

import torch

from .crc32c import crc32c
from .files import open_regular, read_exactly, write_atomically
from .progress import Progress
from .strings import INT64_MAX, short

# What tinygpt's loader (nn::load_safetensors, nn/model_files/src/safetensors.cpp) refuses, read_safetensors
# refuses too, each with a ValueError naming the file and the problem: the C++ loader's limits, a header
# that is not strict JSON (nlohmann's: no NaN, no lone surrogate, no repeated key), not an object, nested
# too deep for Python (ValueError, not RecursionError), a tensor that is not {"dtype": "F32", "shape":
# [non-negative integers], "data_offsets": [begin, end]} with begin <= end and exactly its bytes, tensors
# that do not tile the data section (overlap, gap, past the end, trailing bytes), and checksums that are
# not 8 hex digits for every tensor or do not match. tests/python/test_hostile.py checks both loaders
# against the fuzzers' corpus (fuzz/corpus/safetensors and checkpoint).
MAX_HEADER_BYTES = 100 << 20   # nn::SafetensorsLimits
MAX_FILE_BYTES = 16 << 30


class _Signed(int):
    """A JSON integer written with a minus sign (even -0): nlohmann's number_integer, not unsigned."""


def _json_float(text):
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number overflow parsing '{text[:40]}'")  # (nlohmann's words)
    return value


def _json_integer(text):
    if len(text) > 21:  # past 2^64 (or a 4300-digit bomb): nlohmann reads it as a float
        return _json_float(text)
    value = int(text)
    if text.startswith("-"):
        return _Signed(value)
    return value if value < 1 << 64 else float(value)


def _is_unsigned(value):
    return type(value) is int and 0 <= value < 1 << 64  # (not bool, not _Signed, not float)


def _json_type(value):
    """nlohmann's name of a JSON value's type, as the C++ loader's messages give it."""
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def _parse_header(raw, where):
    def refuse(what):
        return ValueError(f"{where}: {what}")

    if raw.startswith(b"\xef\xbb\xbf"):  # nlohmann skips a UTF-8 byte order mark
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise refuse(f"the header is not valid JSON (invalid UTF-8 at byte {e.start})") from None
    repeated = []
    objects = [0]

    def object_of(pairs):  # called innermost first: the last call is the header itself
        objects[0] += 1
        out = {}
        for key, value in pairs:
            if key in out and not repeated:
                repeated.append((objects[0], key))
            out[key] = value
        return out

    def no_constant(name):
        raise ValueError(f"{name} is not a JSON value")

    try:
        header = json.loads(text, object_pairs_hook=object_of, parse_int=_json_integer, parse_float=_json_float,
                            parse_constant=no_constant)
    except RecursionError:
        raise refuse("the header nests arrays or objects too deeply to read (a safetensors header nests 3 deep)") from None
    except ValueError as e:
        raise refuse(f"the header is not valid JSON ({e})") from None
    if repeated:
        call, key = repeated[0]
        raise refuse(f"the header names tensor {short(key)} twice" if call == objects[0] and isinstance(header, dict)
                     else f"the header repeats the key {short(key)} in one object")
    pending = [header]
    while pending:  # strings: a lone surrogate (\ud800) is not Unicode text; nlohmann refuses it
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise refuse(f"the header is not valid JSON (a lone surrogate in the string {ascii(value)[:80]})") from None
    if not isinstance(header, dict):
        raise refuse(f"the header is not a JSON object but {_json_type(header)}")
    return header


_HALF_DTYPES = {"F16": torch.float16, "BF16": torch.bfloat16}  # read with widen_half, widened to float32


def _tensor_entry(name, value, where, widen_half=False):
    """(shape, begin, end, dtype) of a header entry, checked as nn::load_safetensors checks it."""
    who = f"{where}: tensor {short(name)}"
    if not isinstance(value, dict):
        raise ValueError(f"{who} must be an object, got {_json_type(value)}")
    for field in ("dtype", "shape", "data_offsets"):
        if field not in value:
            raise ValueError(f'{who} has no "{field}"')
    dtype = value["dtype"]
    if not isinstance(dtype, str):
        raise ValueError(f'{who}: "dtype" must be a string, got {_json_type(dtype)}')
    if dtype != "F32" and not (widen_half and dtype in _HALF_DTYPES):
        raise ValueError(f"{who} has dtype {short(dtype)}; only F32{', F16 and BF16' if widen_half else ''} is supported")
    size = 4 if dtype == "F32" else 2

    def unsigned_array(field):
        array = value[field]
        if not isinstance(array, list) or not all(_is_unsigned(v) for v in array):
            raise ValueError(f'{who}: "{field}" must be an array of non-negative integers, got {short(array)}')
        return array

    numel = 1
    shape = unsigned_array("shape")
    for d in shape:
        if d > INT64_MAX or (d != 0 and numel > INT64_MAX // 4 // d):
            raise ValueError(f"{who}: shape {short(shape)} has too many elements")
        numel *= d
    offsets = unsigned_array("data_offsets")
    if len(offsets) != 2 or offsets[0] > offsets[1]:
        raise ValueError(f'{who}: "data_offsets" must be [begin, end] with begin <= end, got {short(offsets)}')
    begin, end = offsets
    if end - begin != size * numel:
        raise ValueError(f"{who}: data_offsets [{begin}, {end}] hold {end - begin} bytes, but shape {shape} of {dtype} "
                         f"needs {size * numel}")
    return shape, begin, end, dtype


METADATA_CHECKSUM = "crc32c.__metadata__"


def metadata_checksum(metadata):
    """The metadata's own checksum, as tinygpt writes "crc32c.__metadata__": the CRC32C of every other
    entry (the tensors' checksums included) in key order, each key and value as its 8-byte little-endian
    length and its UTF-8 bytes. The tensors' checksums cover only their values: this covers the settings."""
    covered = bytearray()
    for key in sorted(k for k in metadata if k != METADATA_CHECKSUM):
        for text in (key, metadata[key]):
            raw = text.encode("utf-8", "surrogatepass")
            covered += struct.pack("<Q", len(raw)) + raw
    return f"{crc32c(bytes(covered)):08x}"


def _header_entries(header, data_size, where, widen_half):
    """(entries (name, shape, begin, end, dtype) sorted by begin, metadata, checksums) of a parsed header,
    checked against a data section of data_size bytes before it is read."""
    metadata, checksums, entries = {}, {}, []
    for name, value in header.items():
        if name == "__metadata__":
            if not isinstance(value, dict):
                raise ValueError(f'{where}: "__metadata__" must be an object of strings, got {_json_type(value)}')
            for key, text in value.items():
                if not isinstance(text, str):
                    raise ValueError(f'{where}: "__metadata__" must be an object of strings, but {short(key)} is {_json_type(text)}')
                if key == METADATA_CHECKSUM:
                    continue
                if key.startswith("crc32c."):
                    checksums[key[len("crc32c."):]] = text
                else:
                    metadata[key] = text
        elif not name:  # as tinygpt's loader and save_safetensors: no parameter is nameless
            raise ValueError(f"{where}: a tensor has an empty name")
        else:
            entries.append((name, *_tensor_entry(name, value, where, widen_half)))

    # Sorted by begin, the tensors must tile the data section exactly: no overlap, no gap, no tail.
    entries.sort(key=lambda e: (e[2], e[3]))
    expected = 0
    for i, (name, _, begin, end, _) in enumerate(entries):
        if begin < expected:
            before = entries[i - 1]
            raise ValueError(f"{where}: tensor {short(name)} (data_offsets [{begin}, {end}]) overlaps tensor "
                             f"{short(before[0])} (data_offsets [{before[2]}, {before[3]}])")
        if begin > expected:
            raise ValueError(f"{where}: a gap of {begin - expected} bytes before tensor {short(name)} (data_offsets "
                             f"[{begin}, {end}]): the data before it ends at {expected}")
        if end > data_size:
            raise ValueError(f"{where}: tensor {short(name)} (data_offsets [{begin}, {end}]) ends past the end of the "
                             f"file: the data section holds {data_size} bytes (truncated?)")
        expected = end
    if expected != data_size:
        raise ValueError(f"{where}: {data_size - expected} bytes of trailing data after the last tensor (the tensors "
                         f"end at {expected}, the data section holds {data_size} bytes)")

    # Checksums: none at all (a file written before them), or one of 8 hex digits for every tensor.
    names = {e[0] for e in entries}
    for name, crc in checksums.items():
        if len(crc) != 8 or any(c not in "0123456789abcdef" for c in crc):
            raise ValueError(f"{where}: the checksum of tensor {short(name)} is not 8 hex digits: {short(crc)}")
        if name not in names:
            raise ValueError(f"{where}: a checksum names tensor {short(name)}, which the file does not hold")
    if checksums:
        for name in names - set(checksums):
            raise ValueError(f"{where}: tensor {short(name)} has no checksum while the file's other tensors have theirs")
    all_metadata = header.get("__metadata__", {})
    if METADATA_CHECKSUM in all_metadata:
        computed = metadata_checksum(all_metadata)
        if all_metadata[METADATA_CHECKSUM] != computed:
            raise ValueError(f"{where}: the metadata does not match its checksum (CRC32C {short(all_metadata[METADATA_CHECKSUM])} "
                             f"stored, {computed} computed): its settings were edited or damaged")
    return entries, metadata, checksums


def read_safetensors(path, verify=True, widen_half=False, check_shapes=None):
    """(tensors by name in file order, metadata without the checksums) of an F32 safetensors file, or a
    ValueError naming the file and what is wrong with it (an OSError if it cannot be read). Every tensor's
    "crc32c.NAME" must match it (verify=False skips only that comparison). widen_half: F16 and BF16 tensors
    too, widened to float32 exactly (as other writers' files may hold them). Only what the file holds is
    read (never a buffer of the size limit): the header by its length once that is within the file, the
    data once the header is checked. check_shapes: called with {name: shape} of the header's tensors
    before the data is read; it may refuse them (load_hf_folder holds config.json's sizes to them)."""
    where = str(path)
    f, size = open_regular(path, "a safetensors file", MAX_FILE_BYTES)
    with f:
        if size < 8:
            raise ValueError(f"{where}: the file is {size} bytes, too short for the 8-byte header length")
        (n,) = struct.unpack("<Q", f.read(8))
        if n > size - 8:
            raise ValueError(f"{where}: the header length {n} runs past the end of the file ({size - 8} bytes follow the length)")
        if n > MAX_HEADER_BYTES:
            raise ValueError(f"{where}: the header length {n} is over the limit of {MAX_HEADER_BYTES}")
        header = _parse_header(read_exactly(f, n, where), where)
        entries, metadata, checksums = _header_entries(header, size - 8 - n, where, widen_half)
        if check_shapes:
            check_shapes({name: shape for name, shape, *_ in entries})
        bar = Progress(f"loading {os.path.basename(where)}", "MB", 1e6)
        tensors = {}
        for name, shape, begin, end, dtype in entries:  # in file order: they tile the data section
            raw = read_exactly(f, end - begin, where)
            if verify and checksums:
                found = f"{crc32c(raw):08x}"
                if found != checksums[name]:
                    raise ValueError(f"{where}: tensor {short(name)} does not match its checksum (CRC32C {checksums[name]} "
                                     f"stored, {found} computed): the file is corrupt")
            if end == begin:
                t = torch.zeros(0)
            elif dtype == "F32":
                t = torch.frombuffer(bytearray(raw), dtype=torch.float32)
            else:
                t = torch.frombuffer(bytearray(raw), dtype=_HALF_DTYPES[dtype]).to(torch.float32)
            tensors[name] = t.reshape(shape)
            bar.update(8 + n + end, size)
        bar.update(size, size)
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    """Writes F32 tensors (in the given order) and metadata plus each tensor's "crc32c.NAME" and the
    metadata's "crc32c.__metadata__", atomically (write_atomically)."""
    blobs, entries, offset = [], {}, 0
    all_metadata = dict(metadata)
    for name, t in tensors.items():
        raw = _stored_bytes(t)
        all_metadata[f"crc32c.{name}"] = f"{crc32c(raw):08x}"
        entries[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    all_metadata[METADATA_CHECKSUM] = metadata_checksum(all_metadata)
    header = json.dumps({"__metadata__": all_metadata, **entries}, separators=(",", ":"), ensure_ascii=False).encode()
    header += b" " * ((8 - len(header) % 8) % 8)  # the data starts 8-byte aligned, as tinygpt writes it
    write_atomically(path, [struct.pack("<Q", len(header)), header, *blobs])


def _stored_bytes(t):
    """float32, little-endian, row-major: the bytes a tinygpt file stores (torch's .numpy() needs numpy,
    which python3-torch depends on)."""
    return t.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4", copy=False).tobytes()
