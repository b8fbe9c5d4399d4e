"""tinygpt's progress bar (examples/support/progress.h), drawn while a large file loads."""
import os
import sys
import time


class Progress:
    """tinygpt's progress bar (examples/support/progress.h) on stderr when it is a terminal, and nothing when it
    is not: `label [#########.....................] 540/1485 MB  61.2 MB/s  ETA 0m15s`, redrawn at most ten times a
    second, and at the total with the time it took (`in 0m24s`), where its line ends. `unit` names what is
    counted, each `per_unit` of update's counts (1e6: bytes shown as MB)."""

    def __init__(self, label, unit, per_unit=1):
        self.label, self.unit, self.per_unit = label, unit, per_unit
        self.terminal = sys.stderr.isatty()
        self.start = self.drawn = time.monotonic()
        self.done = False

    @staticmethod
    def _amount(v):
        return f"{v:.0f}" if v >= 100 else f"{v:.3g}"

    def update(self, done, total):
        if not self.terminal or self.done:
            return
        now = time.monotonic()
        complete = done >= total
        if not complete and now - self.drawn < 0.1 and self.drawn != self.start:
            return
        self.drawn = now
        seconds = now - self.start
        text = f"{self._amount(done / self.per_unit)}/{self._amount(total / self.per_unit)} {self.unit}"
        if done > 0 and seconds > 0:
            rate = done / seconds
            text += f"  {self._amount(rate / self.per_unit)} {self.unit}/s  "
            text += f"in {_duration(seconds)}" if complete else f"ETA {_duration((total - done) / rate)}"
        filled = int(30 * min(max(done / total if total else 1.0, 0.0), 1.0))
        line = f"{self.label} [{'#' * filled}{'.' * (30 - filled)}] {text}"
        try:
            columns = os.get_terminal_size(sys.stderr.fileno()).columns
        except OSError:
            columns = 0
        if columns:  # a full line would wrap, and \r then redraw only its last row
            line = line[:columns - 1]
        try:
            sys.stderr.write(f"\r{line}\x1b[K" + ("\n" if complete else ""))
            sys.stderr.flush()
        except OSError:  # a closed stderr only silences the bar
            pass
        self.done = complete


def _duration(seconds):
    s = round(seconds)
    return f"{s // 3600}h{s // 60 % 60:02}m" if s >= 3600 else f"{s // 60}m{s % 60:02}s"
