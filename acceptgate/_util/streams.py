"""Standard output and error whose reader has gone (``acceptgate audit 2>&1 | head -3``, a service
manager that closed its log pipe): what the command writes from then on is dropped, and nothing else
changes -- the run goes on, ends and publishes as it would, a stop still stops (exit 128 + signal),
and the exit code is the run's. The lines are commentary on work whose result is in the warehouse or
an --out file; a reader that stopped reading (``| head``) wanted no more of them, and a result written
to stdout is only ever lost past the point where its reader chose to stop.

Python ignores SIGPIPE, so such a write raises BrokenPipeError wherever it happens: inside a stage (the
run failed), in a thread, in an event loop's signal callback (the stop swallowed), in the stop's own
last line (the exit code lost). Here the first one points the descriptor at /dev/null, as Python's
documentation suggests for stdout (signal module, "Note on SIGPIPE"); the processes started after
that inherit /dev/null too.
"""

from __future__ import annotations

import io
import os
import sys


class _ReaderTolerant(io.FileIO):
    """A standard stream's descriptor (not closed with this object) whose writes never raise BrokenPipeError."""

    def write(self, data) -> int | None:
        try:
            return super().write(data)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self.fileno())
            finally:
                os.close(devnull)
            return len(data)


def _tolerant(stream: io.TextIOWrapper) -> io.TextIOWrapper:
    stream.flush()
    raw = _ReaderTolerant(stream.fileno(), "w", closefd=False)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding, errors=stream.errors, newline="\n",
                            line_buffering=stream.line_buffering, write_through=stream.write_through)


def tolerate_gone_readers() -> dict:
    """Replace sys.stdout and sys.stderr, where they are still the process's own (not a caller's
    capture, as under pytest), by streams that drop what a gone reader cannot take. Returns what
    ``restore`` puts back."""
    previous = {}
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and stream is getattr(sys, f"__{name}__") and isinstance(stream, io.TextIOWrapper):
            previous[name] = stream
            setattr(sys, name, _tolerant(stream))
    return previous


def restore(previous: dict) -> None:
    for name, stream in previous.items():
        try:
            getattr(sys, name).flush()
        except (OSError, ValueError):
            pass
        setattr(sys, name, stream)
