"""Per-execution cost of each local isolation layer: one tiny candidate, one case, sequential runs.

    python3 bench/bench_isolation.py [--runs 200]

Rows: bare process (rlimits, no cap), rlimits + per-slot uid cap, bwrap, bwrap + per-slot uid,
bwrap + cgroup (one sandbox per execution), bwrap + cgroup + fork server (what "local" picks on a host
that allows it: fresh namespaces and process per execution in a long-lived sandbox). Layers the host
refuses are skipped. Every row includes the seccomp filter (sandbox/seccomp.py); its own cost is
measured apart, in a forked child: loading it once, and the added cost per system call afterwards.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import time

from acceptgate.suites import render, suitespec
from acceptgate.sandbox.backend import BackendUnavailable
from acceptgate.sandbox.executor import execute
from acceptgate.sandbox.local import LocalBackend

LAYERS = [
    ("bare (rlimits only)", dict(namespaces=False, process_cap="none")),
    ("rlimits + slot uid/NPROC", dict(namespaces=False, process_cap="uid")),
    ("bwrap", dict(namespaces=True, process_cap="none")),
    ("bwrap + slot uid/NPROC", dict(namespaces=True, process_cap="uid")),
    ("bwrap + cgroup", dict(namespaces=True, process_cap="cgroup")),
    ("bwrap + cgroup + fork server", dict(namespaces=True, process_cap="cgroup", forkserver=True)),
]


def seccomp_cost(calls: int = 200_000) -> tuple[float, float]:
    """(µs to load the filter, ns added per system call), measured in a forked child."""
    from acceptgate.sandbox import seccomp

    program = seccomp.bpf()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        nr_getppid = 110  # x86_64; not a libc-cached call

        def per_call() -> float:
            started = time.perf_counter_ns()
            for _ in range(calls):
                libc.syscall(nr_getppid)
            return (time.perf_counter_ns() - started) / calls

        class Program(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        code = ctypes.create_string_buffer(program, len(program))
        prog = Program(len(program) // 8, ctypes.cast(code, ctypes.c_void_p))
        before = min(per_call() for _ in range(3))
        libc.prctl(38, 1, 0, 0, 0)
        started = time.perf_counter_ns()
        libc.prctl(22, 2, ctypes.byref(prog), 0, 0)
        load_us = (time.perf_counter_ns() - started) / 1000
        after = min(per_call() for _ in range(3))
        os.write(w, f"{load_us} {after - before}".encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    load_us, extra_ns = (float(x) for x in os.read(r, 100).split())
    os.close(r)
    return load_us, extra_ns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    harness = render.harness_for(suitespec.build("python-call/1", "add", [((1, 2), {}, 3)]))
    backends = {}
    for label, options in LAYERS:
        try:
            backends[label] = LocalBackend(**options)
        except BackendUnavailable as exc:
            print(f"{label:28} skipped: {exc}")
    # Interleaved, so that load from elsewhere on the machine falls on every row alike.
    times: dict[str, list[float]] = {label: [] for label in backends}
    for _ in range(args.runs):
        for label, backend in backends.items():
            started = time.perf_counter()
            result = execute(harness, "def add(a, b): return a + b", backend)
            times[label].append((time.perf_counter() - started) * 1000)
            assert result.verdict == "pass", result.as_dict()
    print(f"{'layers':28} {'median ms':>10} {'p10 ms':>8} {'p90 ms':>8}")
    for label, xs in times.items():
        xs.sort()
        print(f"{label:28} {statistics.median(xs):10.1f} {xs[len(xs) // 10]:8.1f} {xs[len(xs) * 9 // 10]:8.1f}")
    for backend in backends.values():
        backend.close()
    if os.uname().machine == "x86_64":
        load_us, extra_ns = seccomp_cost()
        print(f"seccomp filter: {load_us:.1f} µs to load, {extra_ns:+.0f} ns per system call after it")


if __name__ == "__main__":
    main()
