"""A batch's workers as threads of one process against forked processes (``executor.run_jobs``).

    python3 bench/bench_worker_processes.py                       # HumanEval+, 3,280 samples, 2 rounds
    python3 bench/bench_worker_processes.py --suites HumanEval    # HumanEval's suites and limits
    python3 bench/bench_worker_processes.py --tasks 20 --rounds 1

``execute_many`` (and so ``score``, the gauge, the audit) runs a large batch's workers as processes
forked from the harness, each with a backend of its own (``acceptgate/sandbox/workerprocs.py``); with
``executor.WORKER_PROCESSES = False`` they are threads of the harness, as before stop 40. Here the
same jobs (``bench_samples.py``'s samples, suites and limits, ``fail_fast``, 2 workers) run the two
ways alternately, threads first in each round.

Reported per run: the wall time of the batch, the machine's CPU time meanwhile (/proc/stat, all
CPUs), and the verdicts; samples whose verdict differs from the first run are listed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_samples  # noqa: E402

from acceptgate.suites import render  # noqa: E402
from acceptgate.sandbox import backend as backends  # noqa: E402
from acceptgate.sandbox import executor  # noqa: E402
from acceptgate.sandbox.executor import execute_many  # noqa: E402
from acceptgate.datasets.task import HIDDEN  # noqa: E402

LIMITS = {"HumanEval": bench_samples.HE_LIMITS, "HumanEval+": bench_samples.HEP_LIMITS}


def _said(result) -> str:
    """A verdict, with its detail when it is not a pass (shown where the two modes differ)."""
    return result.verdict if result.verdict == "pass" else f"{result.verdict} ({(result.detail or '')[:120]})"


def machine_cpu() -> float:
    """CPU seconds the whole machine has spent outside idle and iowait."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def run(jobs: list, workers: int, limits, processes: bool) -> tuple[float, float, list[str]]:
    executor.WORKER_PROCESSES = processes
    try:
        with backends.create("local") as backend:
            execute_many(jobs[:4], backend, limits=limits, fail_fast=True, workers=workers)
            cpu, wall = machine_cpu(), time.perf_counter()
            results = execute_many(jobs, backend, limits=limits, fail_fast=True, workers=workers)
            wall, cpu = time.perf_counter() - wall, machine_cpu() - cpu
    finally:
        executor.WORKER_PROCESSES = True
    return wall, cpu, [_said(r) for r in results]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples-per-task", type=int, default=20)
    parser.add_argument("--tasks", "--limit", type=int, default=None, help="first N tasks only (default: all 164)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="threads then processes, this many times")
    parser.add_argument("--suites", choices=sorted(LIMITS), default="HumanEval+")
    parser.add_argument("--out", type=Path, default=bench_samples.REPO / "bench" / "out")
    args = parser.parse_args(argv)
    problems = bench_samples.human_eval_problems()
    samples = bench_samples.load_samples(problems, args.samples_per_task, args.tasks)
    with backends.create("local") as backend:
        imported = bench_samples.import_suites(backend, args.tasks)[args.suites][0]
    harnesses = {t.task_id: render.harness_for(t.suites[HIDDEN]) for t in imported.tasks if HIDDEN in t.suites}
    ran = [s for s in samples if s.task_id in harnesses]
    jobs = [(harnesses[s.task_id], s.program) for s in ran]
    gc.collect()
    print(f"{len(jobs)} samples, {args.workers} workers, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    rows: list[dict] = []
    first: dict[int, str] = {}
    for round_ in range(1, args.rounds + 1):
        for mode, processes in (("threads", False), ("processes", True)):
            load0 = os.getloadavg()[0]
            wall, cpu, verdicts = run(jobs, args.workers, LIMITS[args.suites], processes)
            differ = sorted(f"{ran[i].task_id}#{ran[i].index}: {first[i]} / {v}"
                            for i, v in enumerate(verdicts) if i in first and first[i] != v)
            if not first:
                first = dict(enumerate(verdicts))
            rows.append({"round": round_, "mode": mode, "wall_s": wall, "machine_cpu_s": cpu,
                         "passed": verdicts.count("pass"), "differ_from_first_run": differ,
                         "load": [load0, os.getloadavg()[0]]})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    command = " ".join(["python3", "bench/bench_worker_processes.py", *(argv if argv is not None else sys.argv[1:])])
    lines = [f"`{command}`, {time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores, {args.suites} "
             f"({len(jobs):,} samples)", "",
             "| round | workers as | wall s | machine CPU s | passed | verdicts unlike the first run | load |",
             "|---:|---|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r['round']} | {r['mode']} | {r['wall_s']:.1f} | {r['machine_cpu_s']:.1f} | {r['passed']} | "
                     f"{'; '.join(r['differ_from_first_run']) or '—'} | {r['load'][0]:.1f}→{r['load'][1]:.1f} |")
    md = "\n".join(lines)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"bench_worker_processes-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"command": command, "rows": rows, "markdown": md}, indent=1))
    print(md)
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
