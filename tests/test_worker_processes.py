"""A large batch's workers as forked processes (acceptgate/sandbox/workerprocs.py, executor.run_jobs).

The same verdicts, details and isolation as the threads give, progress as the results come in; a
worker's error reaches the caller, a worker that dies fails the batch instead of hanging it, and no
worker process outlives its batch. (The Ctrl-C of a ``score`` run whose workers are processes is in
tests/test_signals.py.)
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest

from conftest import sandbox_cgroups_of

from acceptgate._util import interrupt

from acceptgate.suites import render, suitespec
from acceptgate.sandbox import executor, workerprocs
from acceptgate.sandbox.backend import BackendUnavailable, Limits

HARNESS = render.harness_for(suitespec.build("python-call/1", "f", [((i,), {}, 2 * i) for i in range(5)]))
CANDIDATES = [
    "def f(x):\n    return 2 * x",  # pass
    "def f(x):\n    return x",  # fail (case 1)
    "def f(x):\n    raise ValueError('no')",  # error
    "def f(x) return x",  # does not load
]
LOOPER = "def f(x):\n    while True:\n        pass"
LIMITS = Limits(wall_seconds=1.0)
TIMING = ("wall_seconds", "cpu_seconds")


def _batch() -> list[tuple]:
    jobs = [(HARNESS, CANDIDATES[i % len(CANDIDATES)], LIMITS) for i in range(executor.MIN_PROCESS_JOBS + 4)]
    jobs[5] = jobs[40] = (HARNESS, LOOPER, LIMITS)  # two timeouts
    return jobs


def _same_cmdline_children() -> list[int]:
    """Processes below this one that are forks of it (a worker process has its parent's command line)."""
    own = Path("/proc/self/cmdline").read_bytes()
    found = []
    for pid in interrupt.descendants():
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == own:
                found.append(pid)
        except OSError:
            continue
    return found


def _plain(result) -> dict:
    """The result without its timings, and with the slot uids' range masked: every harness process, a
    worker process too, runs its slots as a block of host uids of its own."""
    d = result.as_dict()
    for key in TIMING:
        d.pop(key)
    d["isolation"] = json.loads(re.sub(r"\(\d+\.\.\d+", "(UIDS", json.dumps(d["isolation"])))
    return d


@pytest.fixture
def spied(monkeypatch):
    calls = []
    real = workerprocs.map_jobs

    def spy(*args, **kwargs):
        calls.append(len(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(workerprocs, "map_jobs", spy)
    return calls


def test_a_large_batch_in_worker_processes_gives_what_threads_give(local_backend, spied, monkeypatch):
    jobs = _batch()
    seen = []
    in_processes = executor.run_jobs(jobs, local_backend, fail_fast=True, workers=2,
                                     progress=lambda done, total: seen.append((done, total)))
    assert spied == [len(jobs)], "the batch did not run in worker processes"
    assert seen == [(i, len(jobs)) for i in range(1, len(jobs) + 1)]
    assert not _same_cmdline_children(), "a worker process outlived its batch"
    monkeypatch.setattr(executor, "WORKER_PROCESSES", False)
    in_threads = executor.run_jobs(jobs, local_backend, fail_fast=True, workers=2)
    assert spied == [len(jobs)]
    verdicts = [r.verdict for r in in_processes]
    assert verdicts[:4] == ["pass", "fail", "error", "error"] and verdicts[5] == verdicts[40] == "timeout", verdicts
    assert [_plain(r) for r in in_processes] == [_plain(r) for r in in_threads]


def test_a_small_batch_or_one_worker_stays_on_threads(local_backend, spied):
    jobs = [job for job in _batch() if job[1] != LOOPER]
    executor.run_jobs(jobs[:executor.MIN_PROCESS_JOBS - 1], local_backend, workers=2)
    executor.run_jobs(jobs, local_backend, workers=1)
    assert spied == []


def test_an_error_in_a_worker_process_reaches_the_caller(local_backend, spied, monkeypatch):
    def refused():
        raise BackendUnavailable("no sandbox for this worker (test)")

    monkeypatch.setattr(local_backend, "reopener", lambda: refused)
    with pytest.raises(BackendUnavailable, match="no sandbox for this worker"):
        executor.run_jobs(_batch(), local_backend, workers=2)
    assert spied, "the batch did not run in worker processes"
    assert not _same_cmdline_children(), "a worker process outlived its batch"


def test_a_worker_process_that_dies_fails_the_batch_instead_of_hanging(local_backend, spied):
    """One worker is killed once six results are in (both have started by then: each job takes 0.15 s
    and a worker takes its next job as soon as it has sent a result, so the killed one holds a job).
    The other answers the rest, then the batch fails naming the dead worker."""
    sleeper = "import time\ndef f(x):\n    if x == 0:\n        time.sleep(0.15)\n    return 2 * x"
    jobs = [(HARNESS, sleeper, Limits(wall_seconds=30.0))] * executor.MIN_PROCESS_JOBS
    killed = []

    def progress(done: int, total: int) -> None:
        if done == 6:
            workers = _same_cmdline_children()
            assert len(workers) == 2, workers
            os.kill(workers[0], signal.SIGKILL)
            killed.append(workers[0])

    with pytest.raises(RuntimeError, match=r"jobs unanswered: .*killed by SIGKILL"):
        executor.run_jobs(jobs, local_backend, workers=2, progress=progress)
    assert spied and killed
    assert not _same_cmdline_children(), "a worker process outlived its batch"


def _sleepers() -> list[tuple]:
    sleeper = "import time\ndef f(x):\n    if x == 0:\n        time.sleep(0.15)\n    return 2 * x"
    return [(HARNESS, sleeper, Limits(wall_seconds=30.0))] * executor.MIN_PROCESS_JOBS


def test_a_worker_process_that_dies_leaves_no_cgroup(local_backend, spied):
    """A worker killed mid-batch never closes its backend: the batch removes the cgroups it made."""
    from acceptgate.sandbox import hostprobe

    if hostprobe.probe().cgroups is None:
        pytest.skip("no cgroups on this host")
    workers: list[int] = []

    def progress(done: int, total: int) -> None:
        if done == 6:
            workers.extend(_same_cmdline_children())
            assert sandbox_cgroups_of(workers), "the worker processes made no cgroup: nothing to look for"
            os.kill(workers[0], signal.SIGKILL)

    with pytest.raises(RuntimeError, match="jobs unanswered"):
        executor.run_jobs(_sleepers(), local_backend, workers=2, progress=progress)
    assert len(workers) == 2 and not sandbox_cgroups_of(workers), sandbox_cgroups_of(workers)


def test_a_stop_whose_grace_runs_out_leaves_no_cgroup(local_backend, spied, monkeypatch):
    """A stop on a loaded machine: the workers' own clean-up outlasts the grace and they are killed in it
    (no grace at all here); their cgroups and sandboxes go all the same."""
    from acceptgate._util.errors import Interrupted
    from acceptgate.sandbox import hostprobe

    if hostprobe.probe().cgroups is None:
        pytest.skip("no cgroups on this host")
    monkeypatch.setattr(workerprocs, "GRACE_SECONDS", 0.0)
    workers: list[int] = []

    def progress(done: int, total: int) -> None:
        if done == 6:
            workers.extend(_same_cmdline_children())
            assert sandbox_cgroups_of(workers), "the worker processes made no cgroup: nothing to look for"
            raise Interrupted(signal.SIGINT)

    with pytest.raises(Interrupted):
        executor.run_jobs(_sleepers(), local_backend, workers=2, progress=progress)
    assert len(workers) == 2 and not sandbox_cgroups_of(workers), sandbox_cgroups_of(workers)
    assert not _same_cmdline_children()
