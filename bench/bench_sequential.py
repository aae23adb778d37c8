"""Trivial executions back to back on one thread of the local fork-server backend: the wall time per
execution (what a one-slot gate or audit waits between two candidates) and the slots the pool started.

    python3 bench/bench_sequential.py [--runs 300] [--warm-up 40]
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptgate.suites import render, suitespec  # noqa: E402
from acceptgate.sandbox import local  # noqa: E402
from acceptgate.sandbox.executor import execute  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--warm-up", type=int, default=40, help="executions first, not timed (the pool's warm-up)")
    args = ap.parse_args()
    harness = render.harness_for(suitespec.build("python-call/1", "f", [((1,), {}, 2)]))
    backend = local.LocalBackend(namespaces=True, process_cap="cgroup", forkserver=True)
    try:
        for _ in range(args.warm_up):
            execute(harness, "def f(x): return x + 1", backend)
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(args.runs):
            assert execute(harness, "def f(x): return x + 1", backend).verdict == "pass"
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"{wall / args.runs * 1e3:.2f} ms wall per execution, harness CPU {cpu / args.runs * 1e3:.2f} ms, "
              f"slots started {backend.pool.started}, discarded {backend.pool.discarded}")
    finally:
        backend.close()


if __name__ == "__main__":
    main()
