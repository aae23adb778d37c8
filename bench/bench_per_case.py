"""What one call-and-answer costs: one thread, one execution of many trivial cases on the local fork server.

    python3 bench/bench_per_case.py [--cases 20000] [--repeats 3]
    python3 bench/bench_per_case.py --cpu 0      # the bench and its sandboxes bound to CPU 0 first

Each case is ``f(x) = x`` on an int, one call at a time as in every execution. Reported per case, for
each repeat: the harness thread's CPU (``time.thread_time``), the sandbox's CPU (the slot's cgroup
counter) and the wall time. ``--cpu K`` binds this process to CPU K before the backend starts, so the
harness thread and every sandbox process run on that one CPU: each call and its answer are then a
switch on one CPU instead of a wake-up of the other (on a VM, an idle vCPU's wake-up is costly).
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptgate.suites import render, suitespec  # noqa: E402
from acceptgate.sandbox import local  # noqa: E402
from acceptgate.sandbox.backend import Limits  # noqa: E402
from acceptgate.sandbox.executor import execute  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=None, help="bind this process (and so its sandboxes) to this CPU")
    args = ap.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, (args.cpu,))
    harness = render.harness_for(suitespec.build("python-call/1", "f", [((i,), {}, i) for i in range(args.cases)]))
    backend = local.LocalBackend(namespaces=True, process_cap="cgroup", forkserver=True)
    limits = Limits(wall_seconds=600, case_seconds=1.0)
    source = "def f(x):\n    return x\n"
    print(f"{args.cases} cases per execution, CPUs {sorted(os.sched_getaffinity(0))}, load {os.getloadavg()[0]:.1f}")
    try:
        execute(harness, source, backend, limits=limits)  # the slot's start
        for _ in range(args.repeats):
            cpu, wall = time.thread_time(), time.perf_counter()
            result = execute(harness, source, backend, limits=limits)
            cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
            if result.verdict != "pass" or result.cpu_seconds is None:
                raise SystemExit(f"bench_per_case: {result.verdict} {result.detail} (cpu {result.cpu_seconds})")
            n = args.cases
            print(f"harness {cpu / n * 1e6:.1f} us, sandbox {result.cpu_seconds / n * 1e6:.1f} us, "
                  f"wall {wall / n * 1e6:.1f} us per case")
    finally:
        backend.close()


if __name__ == "__main__":
    main()
