"""CPU pins for batch workers: each worker thread, and the sandbox it drives, on a CPU of its own.

Why: a case is a round trip -- the harness writes the arguments, the runner answers -- so every case
wakes a process twice. When both sit on one CPU a wake-up is a plain context switch; across CPUs it is
an inter-processor interrupt, and on a virtual CPU that idles in the host, a VM exit each time
(bench/bench_samples.py --breakdown measures the round trip both ways: "raw frames").

Pins are taken only by the worker threads of one parallel map, and only when it has no more workers
than the process has CPUs (else they would queue on one CPU while another idles). Each worker takes
the CPU that the fewest pinned workers of this host hold -- those of every process of this user, so
that two harnesses (two single-threaded Dask workers, say) do not both take the first CPU: a worker
holds a lock on a file of its CPU in a directory of the user's (``claims_dir``) while it lives, and
the kernel drops it with the thread's file or the process. Pins change no limit and no verdict: an
execution's time limit is its cgroup's CPU counter, whichever CPU runs it. A thread started by a
pinned one inherits the pin, so long-lived helper threads call ``unpin`` first.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
from typing import Callable, Iterable

_local = threading.local()
_UNSET = object()
_choosing = threading.Lock()
SLOTS_PER_CPU = 64  # lock files per CPU: more pinned workers than this on one CPU count as this many


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

    def pin() -> None:
        cpu, claim = _claim(cpus)
        try:
            os.sched_setaffinity(0, {cpu})  # 0: this thread only
        except OSError:
            if claim is not None:
                claim.close()
            return
        _local.cpu, _local.claim = cpu, claim  # the claim's file closes with the thread's locals

    return pin


def claims_dir() -> str:
    return os.path.join(tempfile.gettempdir(), f"acceptgate-cpus-{os.getuid()}")


def _claim(cpus: list[int]):
    """(the CPU with the fewest claims on this host, an open file whose lock claims it), or the first CPU
    with no claim (None) where the directory cannot be used."""
    try:
        os.makedirs(claims_dir(), mode=0o700, exist_ok=True)
        with _choosing, open(os.path.join(claims_dir(), "choosing"), "a") as choosing:
            fcntl.flock(choosing, fcntl.LOCK_EX)  # one chooser at a time on the host: no two take one count
            counts = {cpu: 0 for cpu in cpus}
            free: dict[int, object] = {}
            for cpu in cpus:
                # A CPU's files are made in order (only its first free one is ever made), so the first
                # missing one ends them; every existing one is either held by a worker or free.
                for slot in range(SLOTS_PER_CPU):
                    path = os.path.join(claims_dir(), f"cpu{cpu}-{slot}")
                    if cpu in free and not os.path.exists(path):
                        break
                    f = open(path, "a")
                    try:
                        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        counts[cpu] += 1
                        f.close()
                        continue
                    if cpu in free:
                        f.close()  # another free one: only counted
                    else:
                        free[cpu] = f  # held from now: this CPU's first free slot
            best = min((cpu for cpu in cpus if cpu in free), key=lambda c: counts[c], default=None)
            for cpu, f in free.items():
                if cpu != best:
                    f.close()
            if best is None:
                return cpus[0], None
            return best, free[best]
    except OSError:
        return cpus[0], None


def unpin() -> None:
    """This thread (a helper perhaps started by a pinned worker) back on every CPU of the process."""
    claim = getattr(_local, "claim", None)
    if claim is not None:
        claim.close()
    _local.cpu = _local.claim = None
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
