"""Writes the hostile safetensors and checkpoint files that the fuzzers' corpus (fuzz/corpus/safetensors,
fuzz/corpus/checkpoint) shares with test_hostile.py's comparison of tinygpt's loaders and tinygpt_torch's:
each is a case where the two once disagreed (issue 25), or one of the refusals the issue lists. Run once by
hand; the files are committed:

    python3 tests/python/hostile_seeds.py fuzz/corpus

Each file's name says what it holds. The safetensors seeds are variations of a Linear(3, 2)'s file
("weight" (3, 2) then "bias" (2): what fuzz/safetensors.cpp loads into), the checkpoint seeds variations
of fuzz/corpus/checkpoint/valid_head.
"""
import json
import os
import struct
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import tinygpt_torch as tg  # noqa: E402

WEIGHT = struct.pack("<6f", 0.5, -1.0, 2.0, 0.25, -0.5, 1.5)
BIAS = struct.pack("<2f", 0.1, -0.1)


def file_of(header_text, data):
    raw = header_text.encode("utf-8") if isinstance(header_text, str) else header_text
    return struct.pack("<Q", len(raw)) + raw + data


def linear(weight_offsets=(0, 24), bias_offsets=(24, 32), weight_shape=(3, 2), extra_weight="", metadata=None):
    meta = "" if metadata is None else f'"__metadata__":{metadata},'
    return (f'{{{meta}"weight":{{"dtype":"F32","shape":{list(weight_shape)},"data_offsets":{list(weight_offsets)}{extra_weight}}},'
            f'"bias":{{"dtype":"F32","shape":[2],"data_offsets":{list(bias_offsets)}}}}}').replace(" ", "")


def safetensors_seeds():
    data = WEIGHT + BIAS
    crcs = f'{{"crc32c.weight":"{tg.crc32c(WEIGHT):08x}","crc32c.bias":"{tg.crc32c(BIAS):08x}"}}'
    deep = 20000  # past Python's recursion limit (1000), well inside the fuzzers' 1 MB header limit
    return {
        "valid_checksummed": file_of(linear(metadata=crcs), data),
        "negative_offset": file_of(linear(bias_offsets=(-8, 0)), data),
        "negative_zero_offset": file_of(linear(weight_offsets=("-0", 24)).replace("'-0'", "-0"), data),
        "duplicated_tensor": file_of('{"weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                                     '"weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', BIAS),
        "duplicated_range": file_of(linear(bias_offsets=(0, 8)), data),
        "gap_between_tensors": file_of(linear(bias_offsets=(28, 36)), data + b"\0" * 4),
        "trailing_bytes": file_of(linear(), data + b"\0" * 4),
        "begin_after_end": file_of(linear(bias_offsets=(32, 24)), data),
        "no_data_offsets": file_of('{"weight":{"dtype":"F32","shape":[3,2]}}', WEIGHT),
        "float_offsets": file_of(linear(bias_offsets=("24.0", "32.0")).replace("'", ""), data),
        "bool_shape": file_of(linear(weight_shape=("true", 6)).replace("'", ""), data),
        "list_header": file_of('[{"weight":{"dtype":"F32","shape":[3,2],"data_offsets":[0,24]}}]', WEIGHT),
        "huge_shape": file_of(linear(weight_shape=(1 << 40, 1 << 40)), data),
        "shape_past_uint64": file_of(linear(weight_shape=(18446744073709551616, 0)), data),
        "deep_nesting": file_of("[" * deep + "]" * deep, b""),
        "deep_nesting_in_shape": file_of(linear(weight_shape=("[" * deep + "]" * deep, 6)).replace("'", ""), data),
        "nan_literal": file_of(linear(extra_weight=',"note":NaN'), data),
        "float_overflow": file_of(linear(extra_weight=',"note":1e999'), data),
        "integer_overflow": file_of(linear(extra_weight=',"note":1' + "0" * 400), data),
        "lone_surrogate": file_of(linear(metadata='{"note":"\\ud800"}'), data),
        "utf16_header": file_of(linear().encode("utf-16"), data),
        "metadata_not_strings": file_of(linear(metadata='{"step":3}'), data),
        "checksum_not_hex": file_of(linear(metadata='{"crc32c.weight":"XYZ","crc32c.bias":"00000000"}'), data),
        "checksum_of_no_tensor": file_of(linear(metadata=crcs[:-1] + ',"crc32c.other":"00000000"}'), data),
        "checksum_missing_one": file_of(linear(metadata=f'{{"crc32c.weight":"{tg.crc32c(WEIGHT):08x}"}}'), data),
        "checksum_wrong": file_of(linear(metadata=crcs.replace(f"{tg.crc32c(BIAS):08x}", "00000000")), data),
    }


def checkpoint_seeds(valid_head):
    (n,) = struct.unpack("<Q", valid_head[:8])
    header = json.loads(valid_head[8:8 + n])
    data = valid_head[8 + n:]

    def edited(meta=None, data=data, tensors=None):
        h = json.loads(json.dumps(header))
        h["__metadata__"].update(meta or {})
        h.update(tensors or {})
        text = json.dumps(h, separators=(",", ":"), ensure_ascii=False)
        return file_of(text + " " * ((8 - len(text.encode()) % 8) % 8), data)

    # a NaN in lm_head.bias (valid_head predates checksums): only the finiteness check refuses it
    assert not any(k.startswith("crc32c.") for k in header["__metadata__"])
    begin = header["lm_head.bias"]["data_offsets"][0]
    nan_data = data[:begin] + struct.pack("<f", float("nan")) + data[begin + 4:]
    vocabulary = header["__metadata__"]["tokenizer.vocabulary"]
    return {
        "nan_weight": edited(data=nan_data),
        "dropout_hex_float": edited({"model.dropout": "0x0p+0"}),
        "n_embd_with_underscore": edited({"model.n_embd": "0_4"}),
        "block_in_arabic_digits": edited({"model.block": "\u0664"}),
        "n_embd_leading_space": edited({"model.n_embd": " 4"}),
        "vocabulary_unsorted": edited({"tokenizer.vocabulary": vocabulary[::-1]}),
        "format_other_version": edited({"format": "tinygpt-checkpoint-0"}),
    }


def main():
    corpus = sys.argv[1]
    for name, blob in safetensors_seeds().items():
        with open(os.path.join(corpus, "safetensors", name), "wb") as f:
            f.write(blob)
    with open(os.path.join(corpus, "checkpoint", "valid_head"), "rb") as f:
        valid_head = f.read()
    for name, blob in checkpoint_seeds(valid_head).items():
        with open(os.path.join(corpus, "checkpoint", name), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main()
