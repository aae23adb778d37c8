"""The one parallel map: a function over items on a thread pool, results in the items' order.

Threads are enough everywhere it is used: each call's work happens in a sandbox process, a container
or an HTTP call, so the GIL is not the limit.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable, Iterable, TypeVar

from acceptgate._util import affinity
T = TypeVar("T")
R = TypeVar("R")


def parallel_map(fn: Callable[[T], R], items: Iterable[T], *, workers: int | None = None,
                 progress: Callable[[int, int], None] | None = None, pin: bool = False) -> list[R]:
    """``fn`` over ``items`` on ``workers`` threads (default: the CPUs), results in order; ``progress(done,
    total)`` after each call finishes. The first exception raised by a call is raised here. ``pin``:
    each thread on a CPU of its own where there are enough (affinity.py; for sandbox round trips)."""
    items = list(items)
    results: list[R | None] = [None] * len(items)
    done = 0
    workers = max(1, workers or os.cpu_count() or 1)
    pins = affinity.worker_pins(min(workers, len(items))) if pin else None
    with ThreadPoolExecutor(max_workers=workers, initializer=pins) as pool:
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            done += 1
            if progress:
                progress(done, len(items))
    return results  # type: ignore[return-value]
