"""CPU pins for batch workers: each worker thread, and the sandbox it drives, on a CPU of its own.

Why: a case is a round trip -- the harness writes the arguments, the runner answers -- so every case
wakes a process twice. When both sit on one CPU a wake-up is a plain context switch; across CPUs it is
an inter-processor interrupt, and on a virtual CPU that idles in the host, a VM exit each time
(bench/bench_samples.py --breakdown measures the round trip both ways: "raw frames").

Pins are taken only by the worker threads of one parallel map, and only when it has no more workers
than the process has CPUs (else they would queue on one CPU while another idles). They change no
limit and no verdict: an execution's time limit is its cgroup's CPU counter, whichever CPU runs it.
A thread started by a pinned one inherits the pin, so long-lived helper threads call ``unpin`` first.
"""

from __future__ import annotations

import itertools
import os
import threading
from typing import Callable, Iterable

_local = threading.local()
_UNSET = object()


def process_cpus() -> frozenset[int]:
    """The CPUs this process may use: its main thread's mask (the main thread is never pinned here)."""
    return frozenset(os.sched_getaffinity(os.getpid()))


def current() -> int | None:
    """The CPU the calling thread is pinned to, or None."""
    return getattr(_local, "cpu", None)


def worker_pins(workers: int):
    """A ThreadPoolExecutor initializer that pins each of ``workers`` threads to its own CPU, or None
    when pinning would not pay (one CPU, or more workers than CPUs)."""
    cpus = sorted(process_cpus())
    if len(cpus) < 2 or workers > len(cpus):
        return None
    turn = itertools.count()

    def pin() -> None:
        cpu = cpus[next(turn) % len(cpus)]
        try:
            os.sched_setaffinity(0, {cpu})  # 0: this thread only
        except OSError:
            return
        _local.cpu = cpu

    return pin


def unpin() -> None:
    """This thread (a helper perhaps started by a pinned worker) back on every CPU of the process."""
    _local.cpu = None
    cpus = process_cpus()
    if frozenset(os.sched_getaffinity(0)) != cpus:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            pass


def follow(holder, pids: Callable[[], Iterable[int]]) -> None:
    """Put the processes ``pids()`` of a sandbox (``holder`` remembers what they were given) on the
    calling thread's CPU, or back on all of the process's CPUs when the caller is not pinned. Once per
    change, not per execution; a process that is gone or refuses is left as it is."""
    cpu = current()
    if getattr(holder, "_affinity", _UNSET) == cpu:
        return
    mask = {cpu} if cpu is not None else process_cpus()
    for pid in pids():
        try:
            os.sched_setaffinity(pid, mask)
        except OSError:
            pass
    holder._affinity = cpu
