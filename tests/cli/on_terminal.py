"""Runs a program with its stderr on a pseudo-terminal, as a user at a terminal sees it, for the tests of
the progress bars (examples/support/progress.h), which are drawn only there.

    python3 on_terminal.py OUT ERR [--columns N] [--interrupt REGEX] -- PROGRAM ARGS...

stdout goes to the file OUT, what the terminal received from stderr to ERR (bytes as written: \\r and the
escape sequences kept). --columns gives the terminal a width (0: none, as a pty has by default).
--interrupt sends SIGINT once, when what stderr has written so far matches REGEX (Python's re, on
the text). Exits with the program's status (128 + N for a signal N that ended it).
"""
import argparse
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import fcntl


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("err")
    p.add_argument("--columns", type=int, default=0)
    p.add_argument("--interrupt")
    if "--" not in sys.argv:
        p.error("give the program after --")
    split = sys.argv.index("--")
    a, command = p.parse_args(sys.argv[1:split]), sys.argv[split + 1:]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, a.columns, 0, 0))
    with open(a.out, "wb") as out:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=slave)
    os.close(slave)
    seen, interrupted = b"", False
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        seen += chunk
        if a.interrupt and not interrupted and re.search(a.interrupt, seen.decode("utf-8", "replace")):
            proc.send_signal(signal.SIGINT)
            interrupted = True
    status = proc.wait()
    os.close(master)
    with open(a.err, "wb") as err:
        err.write(seen)
    sys.exit(128 - status if status < 0 else status)


if __name__ == "__main__":
    main()
