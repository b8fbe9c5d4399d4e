"""Files read and written as tinygpt's loaders and AtomicFile do: only regular files of bounded size, read by
the size they have; JSON nested within bounds; outputs replaced atomically."""
import json
import os
import re
import stat

import numpy

from .strings import one_line

def file_kind(mode):
    """nn::file_kind's words for what a path is when it is not a regular file."""
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return kind
    return "not a regular file"


def open_regular(path, what, limit=None, text=False):
    """(the file open for reading, its size) once `path` is known to be a regular file of at most `limit`
    bytes, or a ValueError naming it, as tinygpt's loaders refuse (an OSError when it cannot be opened): a
    FIFO is refused, not waited on, and a device is not read without end. `what` names the kind of file the
    path should have been ("a safetensors file"). text: open as open(path, encoding="utf-8") opens it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # (O_NONBLOCK: opening a FIFO does not wait)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path}: is {file_kind(st.st_mode)}, not {what}")
        if limit is not None and st.st_size > limit:
            raise ValueError(f"{path}: the file is {st.st_size} bytes, over the limit of {limit}")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "r", encoding="utf-8") if text else os.fdopen(fd, "rb"), st.st_size


def read_exactly(f, n, where):
    """n bytes of f, which fstat said it holds: a file cut while it is read is refused."""
    raw = f.read(n)
    if len(raw) != n:
        raise ValueError(f"{where}: the file ended after {len(raw)} of {n} bytes: it changed while it was read")
    return raw


def read_regular(path, what, limit=None):
    """The bytes of a regular file of at most `limit` bytes (open_regular), read by its size."""
    f, size = open_regular(path, what, limit)
    with f:
        return read_exactly(f, size, path)


def read_text(path, name=None):
    """The text of a regular file, read as open(path, encoding="utf-8") reads it (open_regular's refusals), or
    a ValueError saying that `name` (the path, unless given) is not UTF-8 text."""
    f, _ = open_regular(path, "a text file", text=True)
    with f:
        try:
            return f.read()
        except UnicodeDecodeError as e:
            raise ValueError(f"{name or path} is not UTF-8 text ({e})") from None


def write_atomically(path, chunks):
    """Writes the byte strings to `path` as tinygpt's AtomicFile does: a temporary file beside it (created
    0666 less the umask, as any new file), flushed, fsynced and renamed over `path`, then the directory
    fsynced. A failure or an interruption leaves the file that was there as it was, and no temporary file."""
    directory = os.path.dirname(os.path.abspath(path))
    for attempt in range(100):
        tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp-{os.getpid()}-{attempt}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(f"{path}: cannot create a temporary file in {directory}: 100 names taken")
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


MAX_JSON_DEPTH = 32  # Hugging Face's GPT-2 config.json nests 3 deep (task_specific_params), a vocab.json 1
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_BRACKET_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def json_nesting(raw):
    """How deep a JSON text's arrays and objects nest, from its brackets outside strings, without parsing it
    (json.loads recurses once a level: a deep nest is a RecursionError)."""
    steps = _JSON_STRING.sub(b"", raw).translate(_BRACKET_STEP, _NOT_BRACKET)
    return int(numpy.frombuffer(steps, dtype=numpy.int8).cumsum(dtype=numpy.int32).max(initial=0))


def read_json(path, what, limit):
    """(value, text) of a small JSON file, or a ValueError naming it: not a regular file (`what` says what it
    should be), over `limit` bytes, nesting arrays and objects over MAX_JSON_DEPTH deep (counted before it is
    parsed), not UTF-8 JSON."""
    raw = read_regular(path, what, limit)
    depth = json_nesting(raw)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"{path}: nests arrays and objects {depth} deep, over the limit of {MAX_JSON_DEPTH}")
    try:
        text = raw.decode("utf-8")
        return json.loads(text), text
    except ValueError as e:  # (UnicodeDecodeError too)
        raise ValueError(f"{path}: not JSON ({one_line(e)})") from None
