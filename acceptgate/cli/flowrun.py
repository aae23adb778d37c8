"""What every command that runs a Prefect flow does before it imports the flow: Prefect's console
logging only for the critical (a failure is reported in one line), the temporary Prefect server
started with a line on stderr (unless --quiet), and SIGTERM during a flow made a stop request
(``acceptgate._util.interrupt``). Flows and Prefect are imported here, and only when a command runs.

(A helper module, not a command: it is not listed in ``COMMAND_MODULES``.)
"""

from __future__ import annotations

import os
import sys
import time


class Say:
    """One timestamped line on stderr per call, nothing with --quiet."""

    def __init__(self, command: str, quiet: bool = False) -> None:
        self.command = command
        self.quiet = quiet
        self.started = time.monotonic()

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(f"[{time.monotonic() - self.started:6.1f}s] {self.command}: {text}", file=sys.stderr, flush=True)


def add_quiet(p) -> None:
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines on stderr (for scheduled use); errors and the summary still print")


def add_verbose(p) -> None:
    p.add_argument("--verbose", action="store_true",
                   help="also print where the time went (load, gauge, execute, write) on stderr")


def prepare(say: Say) -> None:
    """Call right before importing a flow module."""
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
    from acceptgate.tasks import _prefect_env

    if "prefect" not in sys.modules:
        _prefect_env.start_temporary_server(say)
    _prefect_env.bridge_signals()
