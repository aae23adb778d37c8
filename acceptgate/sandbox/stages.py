"""Where the harness's time goes, per stage of an execution (``bench/bench_samples.py --breakdown``).

Off by default (one attribute test per mark). When on, each thread's CPU time (``time.thread_time``:
what the load does not inflate) and wall time between two marks are added to the stage the second
mark names: ``spawn``, ``load``, ``round trip`` (a call written, its answer read), ``compare``,
``compare (digest)``, ``block boundary`` (a hidden suite's block judged at its end), ``teardown``.
"""

from __future__ import annotations

import threading
import time

ON = False
_lock = threading.Lock()
_totals: dict[str, list[float]] = {}  # stage -> [count, thread CPU seconds, wall seconds]
_local = threading.local()


def start() -> None:
    """Begin an execution's first stage in this thread."""
    _local.cpu, _local.wall = time.thread_time(), time.perf_counter()


def mark(stage: str) -> None:
    """The time since the previous mark (or start) in this thread was spent in ``stage``."""
    cpu, wall = time.thread_time(), time.perf_counter()
    d_cpu, d_wall = cpu - _local.cpu, wall - _local.wall
    _local.cpu, _local.wall = cpu, wall
    with _lock:
        row = _totals.setdefault(stage, [0, 0.0, 0.0])
        row[0] += 1
        row[1] += d_cpu
        row[2] += d_wall


def enable() -> None:
    global ON
    reset()
    ON = True


def disable() -> dict[str, tuple[int, float, float]]:
    """Stop and return {stage: (count, thread CPU seconds, wall seconds)}."""
    global ON
    ON = False
    with _lock:
        return {k: (int(v[0]), v[1], v[2]) for k, v in _totals.items()}


def reset() -> None:
    with _lock:
        _totals.clear()
