"""A dependency-free progress bar on stderr (one redrawn line on a terminal, a few lines otherwise)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Count finished items of one arm and show it.

    Args:
        label: what is running (an arm name).
        total: items to finish.
        stream: where to draw (default stderr); None draws nothing.
        noun: what ``passed`` counts, as shown.
    """

    def __init__(
        self, label: str, total: int, stream: TextIO | None = sys.stderr, *, noun: str = "passed"
    ) -> None:
        """Start the bar."""
        self.label, self.total, self.stream, self.noun = label, total, stream, noun
        self.done = self.passed = self.skipped = 0
        self._start = time.perf_counter()
        self._lock = threading.Lock()
        self._tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self._every = max(1, total // 10)

    def advance(self, *, passed: bool | None = None, skipped: bool = False) -> None:
        """Count one finished item (``skipped``: read back from an earlier run)."""
        with self._lock:
            self.done += 1
            self.passed += bool(passed)
            self.skipped += skipped
            if self._tty or self.done % self._every == 0 or self.done == self.total:
                self._draw()

    def line(self) -> str:
        """Return the bar's current text."""
        width = 24
        filled = width * self.done // max(1, self.total)
        bar = "#" * filled + "." * (width - filled)
        extra = f", {self.skipped} from earlier run" if self.skipped else ""
        elapsed = time.perf_counter() - self._start
        return (
            f"{self.label:<18} [{bar}] {self.done}/{self.total} "
            f"({self.passed} {self.noun}{extra}) {elapsed:.1f}s"
        )

    def _draw(self) -> None:
        if self.stream is None:
            return
        end = "\n" if not self._tty or self.done == self.total else ""
        self.stream.write(("\r" if self._tty else "") + self.line() + end)
        self.stream.flush()
