"""How tinygpt's files write numbers as text and how the bridge's messages quote what it read."""
import json
import math
import re

import numpy

INT64_MAX = (1 << 63) - 1


def short(value):
    """A value as JSON text, cut at 80 characters: how a message quotes what a file holds."""
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:80] + "..."


def one_line(text):
    """`text` with its control characters escaped (\\n, \\x1b...): a file name holding a newline cannot
    split an error message in two."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in str(text))


def strtof(text, key, where):
    """C's strtof on the whole of `text`, as tinygpt reads a float from a file: leading white space, a
    decimal or hexadecimal number, inf or nan; rounded to float32."""
    number = r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?|(?i:inf|infinity|nan(?:\([0-9A-Za-z_]*\))?))"
    match = re.fullmatch(r"[ \t\n\v\f\r]*(" + number + ")", text)
    if not match:
        raise ValueError(f"{where}: '{key}' is {short(text)}, not a number")
    body = match.group(1)
    unsigned = body.lstrip("+-").lower()
    if unsigned.startswith("0x"):
        value = float.fromhex(body if "p" in unsigned else body + "p0")
    elif unsigned.startswith("nan"):
        value = math.nan
    else:
        value = float(body)
    with numpy.errstate(over="ignore"):  # (past float32's range: an infinity, as strtof gives)
        return float(numpy.float32(value))


def float_text(x):
    """A float as text that C's strtof reads back to the same float32: the shortest that round-trips as a
    float32 (numpy's), as tinygpt writes it."""
    text = str(numpy.float32(x))
    return text[:-2] if text.endswith(".0") else text
