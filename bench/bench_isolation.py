"""Per-execution cost of each local isolation layer: one tiny candidate, one case, sequential runs.

    python3 bench/bench_isolation.py [--runs 200]

Rows: bare process (rlimits, no cap), rlimits + per-slot uid cap, bwrap, bwrap + per-slot uid,
bwrap + cgroup (one sandbox per execution), bwrap + cgroup + fork server (what "local" picks on a host
that allows it: fresh namespaces and process per execution in a long-lived sandbox). Layers the host
refuses are skipped.
"""

from __future__ import annotations

import argparse
import statistics
import time

from acceptgate import render, suitespec
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


if __name__ == "__main__":
    main()
