"""Where a command's time went, by phase (load, gauge, execute, write), and a progress line for long runs.

``Phases`` times named steps in wall-clock seconds and in this process's CPU seconds (the sandboxed
programs run in other processes: their CPU is in the wall time, not in this process's figure).
``ProgressLine`` reports ``done/total`` on stderr at most every few seconds and once at the end.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO


class Phases:
    def __init__(self) -> None:
        self.spent: dict[str, list[float]] = {}  # name -> [wall seconds, CPU seconds], in first-seen order
        self.started = time.monotonic()

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        wall, cpu = time.monotonic(), time.process_time()
        try:
            yield
        finally:
            spent = self.spent.setdefault(name, [0.0, 0.0])
            spent[0] += time.monotonic() - wall
            spent[1] += time.process_time() - cpu

    def add(self, name: str, wall: float, cpu: float = 0.0) -> None:
        """Time spent elsewhere (a task that measured its own parts)."""
        spent = self.spent.setdefault(name, [0.0, 0.0])
        spent[0] += wall
        spent[1] += cpu

    def line(self, command: str) -> str:
        """e.g. ``score: time: load 1.2 s (CPU 1.1 s), gauge 0.3 s (CPU 0.3 s), ...; total 46.1 s``."""
        parts = [f"{name} {wall:.1f} s (CPU {cpu:.1f} s)" for name, (wall, cpu) in self.spent.items()]
        total = time.monotonic() - self.started
        other = total - sum(wall for wall, _ in self.spent.values())
        return (f"{command}: time: " + ", ".join(parts) + f", other {max(0.0, other):.1f} s; total {total:.1f} s "
                "(CPU: this process's; the sandboxed programs' is in the wall time)")


class ProgressLine:
    """``<command>: <what> done/total (pct), elapsed`` on stderr, at most every ``every`` seconds and
    when the last item is done; nothing when ``quiet``. Safe to call from several threads."""

    def __init__(self, command: str, what: str, *, quiet: bool = False, every: float = 5.0,
                 stream: TextIO | None = None) -> None:
        self.command, self.what, self.quiet, self.every = command, what, quiet, every
        self.stream = stream
        self.started = self.last = time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        with self._lock:
            if done < total and now - self.last < self.every:
                return
            self.last = now
        pct = 100 * done / total if total else 100.0
        print(f"{self.command}: {self.what} {done}/{total} ({pct:.0f}%), {now - self.started:.1f} s",
              file=self.stream or sys.stderr, flush=True)


def tenths(say: Callable[[str], None], what: str) -> Callable[[int, int], None]:
    """done/total of a stage as about ten lines ``<what>: done/total`` through ``say``."""
    shown = [0]

    def progress(done: int, total: int) -> None:
        if done == total or done - shown[0] >= max(1, total // 10):
            shown[0] = done
            say(f"{what}: {done}/{total}")
    return progress
