"""What gVisor (runsc, a user-space kernel per container) costs the docker backend, beside runc.

    bash scripts/dockerd.sh start      # registers runsc as a runtime where it is installed (apt-get install runsc)
    python3 bench/bench_gvisor.py [--runs 100]

Per runtime: a container's start (the keeper's hello: its fork server, if it starts there, included:
what every execution would cost where no container may serve two), whether the keeper's fork server
runs (its namespaces and each execution's root), the cost of a warm execution (one tiny candidate, one
case, sequential), and a system-call-heavy candidate (100,000 stat calls, the kind of work gVisor
intercepts) and a pure computation (no system call), each the median of its runs. A runtime the engine
does not know is reported as such. runsc is spoken to through the engine's attach (it does not let the
keeper connect to the harness's socket).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from acceptgate.suites import render, suitespec
from acceptgate.sandbox.backend import BackendUnavailable, Limits
from acceptgate.sandbox.docker.pool import ContainerConfig
from acceptgate.sandbox.docker_backend import DockerBackend
from acceptgate.sandbox.executor import execute

TINY = "def f(x):\n    return x\n"
SYSCALLS = ("import os\ndef f(x):\n    for i in range(x):\n        try:\n            os.stat('/tmp/absent-%d' % i)\n"
            "        except OSError:\n            pass\n    return x\n")
COMPUTE = "def f(x):\n    s = 0\n    for i in range(x):\n        s += i * i\n    return x\n"


def harness(x: int):
    return render.harness_for(suitespec.build("python-call/1", "f", [((x,), {}, x)]))


def timed(backend, h, source, runs: int) -> float:
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        result = execute(h, source, backend)
        seconds.append(time.perf_counter() - start)
        if result.verdict != "pass":
            raise RuntimeError(f"{source[:30]!r}: {result.verdict} {result.detail}")
    return statistics.median(seconds)


def one_runtime(runtime: str | None, runs: int) -> dict:
    name = runtime or "runc (default)"
    try:
        # gVisor does not let the keeper connect to the harness's unix socket: the engine's attach instead
        backend = DockerBackend(runtime=runtime, pool_size=1, channel="attach" if runtime else "auto")
    except BackendUnavailable as exc:
        return {"runtime": name, "error": str(exc)}
    try:
        config = ContainerConfig.for_limits(backend.image, Limits(), True, runtime)
        started = time.perf_counter()
        try:
            wc = backend.pool.acquire(config)
        except BackendUnavailable as exc:
            return {"runtime": name, "error": str(exc)[:200]}
        start_s = time.perf_counter() - started
        fork_server = wc.hello.get("fork_server_problem") or ("runs" if wc.hello.get("fork_server") else "none")
        backend.pool.release(wc, reusable=True)
        return {"runtime": name, "container start s": round(start_s, 2), "fork server": fork_server,
                "warm execution ms": round(1000 * timed(backend, harness(1), TINY, runs), 1),
                "100k stat calls ms": round(1000 * timed(backend, harness(100_000), SYSCALLS, max(3, runs // 20)), 1),
                "3M-step loop ms": round(1000 * timed(backend, harness(3_000_000), COMPUTE, max(3, runs // 20)), 1)}
    finally:
        backend.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f} at start")
    rows = [one_runtime(runtime, args.runs) for runtime in (None, "runsc")]
    keys = [k for k in rows[0] if k != "error"] if "error" not in rows[0] else ["runtime", "error"]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row.get(k, row.get("error", "")))[:120] for k in keys) + " |")
    print(f"load {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
