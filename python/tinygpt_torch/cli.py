"""The scripts' command lines and their rules for the files they write (examples/support/cli.h's
check_outputs): refusals before any work, one line each."""
import argparse
import os
import stat

from .files import file_kind
from .strings import one_line


class UsageError(ValueError):
    """A flag or an output the scripts refuse before any work: they exit 2 with its message."""


def same_file(a, b):
    """By device and inode when both exist (a hard or symbolic link to the input counts), else by the path
    with its symbolic links resolved."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_outputs(outputs, inputs, force):
    """Checks, before any work, the files a script will write, as tinygpt's programs do. `outputs` and
    `inputs` are (flag, path) pairs; a path of None was not given. Raises UsageError for an output that is
    the same file as an input or another output (even with --force), that is a symbolic link, a directory,
    a device, a FIFO or a socket, or that exists without `force`; OSError when its directory cannot take a
    new file (a probe file is created there and removed, as the real write will)."""
    inputs = [(flag, path) for flag, path in inputs if path is not None]
    for i, (flag, out) in enumerate(outputs):
        what = f"{flag} {out}"
        for in_flag, path in inputs:
            if same_file(out, path):
                raise UsageError(f"{what} is the same file as {in_flag} {path}: writing it would destroy the input")
        for other_flag, other in outputs[:i]:
            if same_file(out, other):
                raise UsageError(f"{what} is also {other_flag} {other}: two outputs cannot share a file")
        try:
            st = os.lstat(out)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise UsageError(f"{what} is a symbolic link; name the file it points to")
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{what} is {file_kind(st.st_mode)}, not a file to write")
        if st is not None and not force:
            raise UsageError(f"{what} exists; add --force to replace it")
        directory = os.path.dirname(out) or "."
        probe = os.path.join(directory, f".{os.path.basename(out)}.probe-{os.getpid()}")
        try:
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
            os.unlink(probe)
        except OSError as e:
            raise OSError(f"{what}: cannot create a file in {directory}: {e.strerror}") from None


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose refusal of a flag is one line on stderr and exit 2, as tinygpt's programs'."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {one_line(message)} (--help lists the flags)\n")
