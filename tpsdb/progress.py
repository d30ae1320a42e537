"""Progress of long work (refresh, add, publish) for a person watching: one line on standard error, rewritten in
place, only when standard error is a terminal. In a pipe, a log file or a test it writes nothing, so what a
command prints there stays its result alone (issue 20: "progress on a terminal, silent in pipes").

`TPSDB_PROGRESS=1` shows it even when standard error is not a terminal (as a line per update, without the
carriage returns a log would keep), `TPSDB_PROGRESS=0` hides it on a terminal.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import TextIO


def wanted(stream: TextIO) -> bool:
    setting = os.environ.get("TPSDB_PROGRESS")
    if setting in ("0", "1"):
        return setting == "1"
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


class Progress:
    """`update(done, total)` or `say(text)` as the work goes; `close()` (or the `with` block) clears the line.
    Updates closer than `interval` seconds apart are skipped (a terminal is slow), except the last."""

    def __init__(self, label: str, stream: TextIO | None = None, interval: float = 0.1) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = wanted(self.stream)
        self.inline = self.enabled and _isatty(self.stream)
        self.interval = interval
        self._last = 0.0
        self._shown = False

    def update(self, done: int, total: int | None = None) -> None:
        if total:
            self.say(f"{done}/{total} ({100 * done // total}%)", final=done >= total)
        else:
            self.say(str(done))

    def say(self, text: str, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not final and now - self._last < self.interval:
            return
        self._last = now
        line = f"{self.label}: {text}"
        if self.inline:
            width = shutil.get_terminal_size((80, 24)).columns - 1
            self.stream.write("\r" + line[:width].ljust(width))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self.enabled and self.inline and self._shown:
            width = shutil.get_terminal_size((80, 24)).columns - 1
            self.stream.write("\r" + " " * width + "\r")
            self.stream.flush()
        self._shown = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
