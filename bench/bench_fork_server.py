"""What one execution costs the machine and the fork servers, trivial executions one after another.

    python3 bench/bench_fork_server.py                 # 2,000 executions of f(x) = x
    python3 bench/bench_fork_server.py --runs 500

One local fork-server backend runs ``f(x) = x`` (one case) ``--runs`` times in a row after a warm-up.
Reported per execution: the wall time; the machine's CPU time (/proc/stat, every CPU, outside idle
and iowait), page faults (/proc/vmstat ``pgfault``) and context switches (/proc/stat ``ctxt``), all
machine-wide, so run it on a quiet machine; and the fork servers' own share (each slot's fork server,
its /proc/<pid>/stat: minor faults, user and kernel CPU), which covers the clone of each execution's
init with its namespaces, the runner's fork and the fork server's own copy-on-write faults while the
spare runner shares its pages.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from acceptgate.suites import render, suitespec
from acceptgate.sandbox import local
from acceptgate.sandbox.executor import execute

TICK = os.sysconf("SC_CLK_TCK")


def machine() -> dict[str, float]:
    with open("/proc/stat") as f:
        lines = f.read().splitlines()
    cpu = [int(x) for x in lines[0].split()[1:]]
    ctxt = next(int(line.split()[1]) for line in lines if line.startswith("ctxt "))
    with open("/proc/vmstat") as f:
        faults = next(int(line.split()[1]) for line in f if line.startswith("pgfault "))
    return {"cpu_s": (sum(cpu) - cpu[3] - cpu[4]) / TICK, "ctxt": ctxt, "faults": faults}


def process(pid: int) -> dict[str, float]:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return {"faults": int(fields[7]), "user_s": int(fields[11]) / TICK, "sys_s": int(fields[12]) / TICK}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args(argv)
    harness = render.harness_for(suitespec.build("python-call/1", "f", [((1,), {}, 1)]))
    source = "def f(x): return x"
    backend = local.LocalBackend(namespaces=True, process_cap="cgroup", forkserver=True)
    if backend.pool is None:
        raise SystemExit(f"bench_fork_server: no fork server here: {backend.forkserver_problem}")
    with backend:
        for _ in range(50):
            assert execute(harness, source, backend).verdict == "pass"
        servers = [slot.zygote_pid() for slot in backend.pool.idle_slots()]
        load0 = os.getloadavg()[0]
        m0, z0, wall = machine(), [process(pid) for pid in servers], time.perf_counter()
        for _ in range(args.runs):
            result = execute(harness, source, backend)
            if result.verdict != "pass":
                raise SystemExit(f"bench_fork_server: an execution did not pass: {result.as_dict()}")
        wall = time.perf_counter() - wall
        m1, z1 = machine(), [process(pid) for pid in servers]
        if backend.pool.started != len(servers):
            raise SystemExit("bench_fork_server: a slot was restarted meanwhile: its fork server was not counted")
    n = args.runs
    per = {
        "wall_ms": wall / n * 1e3,
        "machine_cpu_ms": (m1["cpu_s"] - m0["cpu_s"]) / n * 1e3,
        "machine_page_faults": (m1["faults"] - m0["faults"]) / n,
        "machine_context_switches": (m1["ctxt"] - m0["ctxt"]) / n,
        "fork_servers_page_faults": sum(b["faults"] - a["faults"] for a, b in zip(z0, z1)) / n,
        "fork_servers_user_ms": sum(b["user_s"] - a["user_s"] for a, b in zip(z0, z1)) / n * 1e3,
        "fork_servers_sys_ms": sum(b["sys_s"] - a["sys_s"] for a, b in zip(z0, z1)) / n * 1e3,
    }
    command = " ".join(["python3", "bench/bench_fork_server.py", *(argv if argv is not None else sys.argv[1:])])
    print(f"`{command}`, {time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores, {n:,} executions, "
          f"{len(servers)} slots, load {load0:.1f}→{os.getloadavg()[0]:.1f}\n")
    print("| per execution | |\n|---|---:|")
    for key, value in per.items():
        print(f"| {key.replace('_', ' ')} | {value:,.2f} |")
    print(json.dumps(per), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
