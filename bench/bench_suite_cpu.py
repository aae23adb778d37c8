"""Where the test suite's CPU goes: each test file's CPU, with every process it started.

    python3 bench/bench_suite_cpu.py                     # the test command, as written (scripts/test.sh)
    python3 bench/bench_suite_cpu.py --under-load        # with two busy loops beside it
    python3 bench/bench_suite_cpu.py -- -k doc_examples  # extra arguments go to scripts/test.sh (pytest)

The suite is CPU-bound (both cores busy through a run), so its wall time moves only with the CPU its
tests spend. This runs ``scripts/test.sh`` with two additions: this module as a pytest plugin (each
worker appends "time, worker pid, test id" as a test starts) and a sampler that reads ``/proc`` every
second and sums, per pytest-xdist worker, the CPU of its whole process tree (a process's own and its
reaped children's). Each second's growth goes to the test the worker was running; the shared Prefect
server's tree is counted apart. Processes outside the workers' trees (Docker's containers, the host)
are not counted. Writes ``bench/out/suite_cpu-<time>.json`` and prints the files and tests that cost
the most.
"""

from __future__ import annotations

import bisect
import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOG_ENV = "ACCEPTGATE_SUITE_CPU_LOG"
HZ = os.sysconf("SC_CLK_TCK")
WORKER_MARK = b"exec(eval(sys.stdin.readline()))"  # how execnet starts a pytest-xdist worker
SHARED_MARK = b"shared_prefect_server"


# -- the plugin (loaded in every worker with -p bench_suite_cpu) -------------------------------------

def pytest_runtest_logstart(nodeid, location):
    log = os.environ.get(LOG_ENV)
    if log and os.environ.get("PYTEST_XDIST_WORKER"):
        with open(log, "a") as f:
            f.write(f"{time.time():.3f}\t{os.getpid()}\t{nodeid}\n")


# -- the sampler ----------------------------------------------------------------------------------------

def _processes() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds of it and its reaped children)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()
        out[int(entry)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / HZ)
    return out


def _cmdline(pid: int, cache: dict[int, bytes]) -> bytes:
    if pid not in cache:
        try:
            cache[pid] = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            cache[pid] = b""
    return cache[pid]


def sample(stop: threading.Event, out: list[dict]) -> None:
    """Every second: each worker's tree CPU (key: the worker's pid; "shared": the Prefect server's tree)."""
    cmdlines: dict[int, bytes] = {}
    while not stop.is_set():
        procs = _processes()
        workers = {p for p in procs if WORKER_MARK in _cmdline(p, cmdlines)}
        totals: dict[str, float] = collections.Counter()
        for pid, (_, cpu) in procs.items():
            p, shared, hops = pid, False, 0
            while p in procs and p not in workers and hops < 64:
                shared = shared or SHARED_MARK in _cmdline(p, cmdlines)
                p, hops = procs[p][0], hops + 1
            if p in workers:
                totals["shared" if shared else str(p)] += cpu
        out.append({"t": time.time(), "cpu": dict(totals)})
        stop.wait(1.0)


def attribute(samples: list[dict], log: Path) -> tuple[collections.Counter, collections.Counter]:
    """CPU seconds per test file and per test (parameters folded)."""
    starts: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for line in log.read_text().splitlines():
        t, pid, node = line.split("\t", 2)
        starts[pid].append((float(t), node))
    files, tests = collections.Counter(), collections.Counter()
    last: dict[str, float] = {}
    for s in samples:
        for key, total in s["cpu"].items():
            grown = max(0.0, total - last.get(key, total))
            last[key] = total
            if key == "shared":
                files["(the shared Prefect server)"] += grown
                continue
            runs = starts.get(key, [])
            i = bisect.bisect_right([t for t, _ in runs], s["t"]) - 1
            node = runs[i][1] if i >= 0 else "(collection)"
            files[node.split("::")[0]] += grown
            tests[node.split("[")[0]] += grown
    return files, tests


def main(argv: list[str]) -> int:
    load_first = argv[:1] == ["--under-load"]  # scripts/test.sh takes it as its first argument only
    argv = argv[1:] if load_first else argv
    extra = argv[1:] if argv[:1] == ["--"] else argv
    out_dir = REPO / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    log = out_dir / f"suite_cpu-{stamp}.log"
    env = {**os.environ, LOG_ENV: str(log),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "bench"), os.environ.get("PYTHONPATH")]))}
    samples: list[dict] = []
    stop = threading.Event()
    sampler = threading.Thread(target=sample, args=(stop, samples), daemon=True)
    load, started = os.getloadavg()[0], time.monotonic()
    sampler.start()
    command = ["bash", "scripts/test.sh", *(["--under-load"] if load_first else []), "-p", "bench_suite_cpu", *extra]
    code = subprocess.call(command, cwd=REPO, env=env)
    stop.set()
    sampler.join()
    wall = time.monotonic() - started
    files, tests = attribute(samples, log) if log.exists() else (collections.Counter(), collections.Counter())
    total = sum(files.values())
    report = {"command": " ".join(command), "started_utc": stamp, "load_before": load, "wall_seconds": wall, "exit_code": code,
              "cpu_seconds": total, "files": dict(files.most_common()), "tests": dict(tests.most_common())}
    (out_dir / f"suite_cpu-{stamp}.json").write_text(json.dumps(report, indent=1))
    print(f"\n{wall:.0f} s wall, {total:.0f} s of CPU in the workers' trees (load {load:.1f} before), exit {code}")
    print("| CPU | share | test file |\n|---:|---:|---|")
    for name, cpu in files.most_common(30):
        print(f"| {cpu:.0f} s | {cpu / total:.1%} | `{name}` |")
    print("\nThe costliest tests:")
    for name, cpu in tests.most_common(20):
        print(f"{cpu:7.1f} s  {name}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
