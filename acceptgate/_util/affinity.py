"""CPU pins for batch workers: each worker thread, and the sandbox it drives, on a CPU of its own.

Why: a case is a round trip -- the harness writes the arguments, the runner answers -- so every case
wakes a process twice. When both sit on one CPU a wake-up is a plain context switch; across CPUs it is
an inter-processor interrupt, and on a virtual CPU that idles in the host, a VM exit each time
(bench/bench_samples.py --breakdown measures the round trip both ways: "raw frames").

Pins are taken only by the workers of one batch (the threads of a parallel map, or the processes of
workerprocs: its main thread is then the process), and only when it has no more workers
than the process has CPUs (else they would queue on one CPU while another idles). Each worker takes
the CPU that the fewest pinned workers of this host hold -- those of every process of this user, so
that two harnesses (two single-threaded Dask workers, say) do not both take the first CPU: a worker
holds a name of its CPU while it lives (an abstract unix socket name, ``claims_prefix``), which the
kernel frees with the thread's socket or the process. Pins change no limit and no verdict: an
execution's time limit is its cgroup's CPU counter, whichever CPU runs it. A thread started by a
pinned one inherits the pin, so long-lived helper threads call ``unpin`` first.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Callable, Iterable

from acceptgate._util import forksafe
_local = threading.local()
_UNSET = object()
_choosing = threading.Lock()
ENABLED = True  # False: no map pins (bench/bench_samples.py --no-pin measures without them)
SLOTS_PER_CPU = 32  # claim names per CPU: more pinned workers than this on one CPU count as this many


forksafe.renew_in_child(globals(), _choosing=threading.Lock)  # another thread may have held it at the fork


def process_cpus() -> frozenset[int]:
    """The CPUs this process may use: its main thread's mask (the main thread is never pinned here)."""
    return frozenset(os.sched_getaffinity(os.getpid()))


def current() -> int | None:
    """The CPU the calling thread is pinned to, or None."""
    return getattr(_local, "cpu", None)


def worker_pins(workers: int):
    """A ThreadPoolExecutor initializer that pins each of ``workers`` threads to a CPU (the one the
    fewest pinned workers of the host hold), or None when pinning would not pay (one CPU, or more
    workers than CPUs) or is switched off."""
    cpus = sorted(process_cpus())
    if not ENABLED or len(cpus) < 2 or workers > len(cpus):
        return None

    def pin() -> None:
        cpu, claim = _claim(cpus)
        try:
            os.sched_setaffinity(0, {cpu})  # 0: this thread only
        except OSError:
            if claim is not None:
                claim.close()
            return
        _local.cpu, _local.claim = cpu, claim  # the claim's socket closes with the thread's locals

    return pin


def claims_prefix() -> str:
    """The names of this user's CPU claims: abstract unix socket names (no file to leave behind; the
    kernel frees a name with its socket, at the thread's end or the process's death)."""
    return f"acceptgate-cpu-{os.getuid()}-"


def _bind(name: str) -> socket.socket | None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.bind("\0" + name)
    except OSError:  # in use: claimed by a live worker
        s.close()
        return None
    return s


def _claim(cpus: list[int]):
    """(the CPU with the fewest claims on this host, the socket whose name claims it), or the first CPU
    with no claim (None) where no name can be bound."""
    prefix = claims_prefix()
    with _choosing:  # across processes two choosers may meet: at worst one CPU gets one worker more
        counts = {cpu: 0 for cpu in cpus}
        free: dict[int, socket.socket] = {}
        for cpu in cpus:
            for slot in range(SLOTS_PER_CPU):
                s = _bind(f"{prefix}{cpu}-{slot}")
                if s is None:
                    counts[cpu] += 1
                elif cpu in free:
                    s.close()  # another free name: only counted
                else:
                    free[cpu] = s  # held from now: this CPU's first free name
        best = min((cpu for cpu in cpus if cpu in free), key=lambda c: counts[c], default=None)
        for cpu, s in free.items():
            if cpu != best:
                s.close()
        if best is None:
            return cpus[0], None
        return best, free[best]


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
