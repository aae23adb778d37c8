"""Load-independent verdicts (issue 21 item 10): the time limit is on the candidate's CPU time, counted
on the host (a cgroup), and the wall clock is only a backstop whose expiry is recorded apart.

The same slow-but-correct program is run alone and beside two busy loops started here: on a 2-core
machine they at least halve its share of the CPU, which a wall-clock limit would turn into a timeout.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from acceptgate.suites import render, suitespec
from acceptgate.sandbox.backend import Limits, wall_backstop
from acceptgate.sandbox.executor import TIMEOUT_CLOCKS, execute, run_calls

BACKENDS = ("local", "local-bwrap", "local-rlimits", pytest.param("docker", marks=pytest.mark.docker))

# Each case burns about `x` seconds of its own CPU time (a busy loop on the process clock).
BURNER = ("import time\n"
          "def f(x):\n"
          "    start = time.process_time()\n"
          "    while time.process_time() - start < x:\n"
          "        pass\n"
          "    return x\n")
SLEEPER = "import time\ndef f(x):\n    time.sleep(x)\n    return x\n"
# Half a second of CPU per case; the execution's own limit and the backstop far enough not to decide.
PER_CASE = Limits(wall_seconds=3, case_seconds=0.5)


def one_case(x: float):
    return render.harness_for(suitespec.build("python-call/1", "f", [((x,), {}, x)]))


class BusyLoops:
    """Two CPU-bound processes beside the test (killed on exit, whatever happens)."""

    def __enter__(self) -> "BusyLoops":
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs)


@pytest.fixture(params=BACKENDS)
def backend(request, open_backend):
    return open_backend(request.param)


def test_the_same_verdict_alone_and_beside_two_busy_loops(backend):
    slow_but_correct, too_slow = one_case(0.25), one_case(1.0)
    alone = [execute(h, BURNER, backend, limits=PER_CASE) for h in (slow_but_correct, too_slow)]
    with BusyLoops() as loops:
        loaded = [execute(h, BURNER, backend, limits=PER_CASE) for h in (slow_but_correct, too_slow)]
        assert loops.alive()
    for result in alone + loaded:
        assert result.cpu_seconds is not None, f"{backend.name} counts no CPU time here: {result.as_dict()}"
    assert [r.verdict for r in alone] == [r.verdict for r in loaded] == ["pass", "timeout"], \
        [r.as_dict() for r in alone + loaded]
    for result in (alone[1], loaded[1]):
        assert result.timeout_clock == "cpu" and result.detail.startswith("CPU time limit"), result.as_dict()
        assert 0.5 <= result.cpu_seconds < 1.0, result.as_dict()  # stopped at the case's limit
    assert alone[0].cpu_seconds >= 0.25 and loaded[0].cpu_seconds >= 0.25


def test_the_execution_limit_is_on_cpu_time_too(backend):
    """No per-case limit: three cases of 0.4 s each exceed a 1 s execution limit, one does not. The
    execution's CPU time also counts the interpreter's start, which a loaded machine inflates (measured
    0.06-0.24 s beside ten busy loops): the margins either side are wider than that."""
    three = render.harness_for(suitespec.build("python-call/1", "f", [((0.4,), {}, 0.4)] * 3))
    limits = Limits(wall_seconds=1.0)
    with BusyLoops():
        over = execute(three, BURNER, backend, limits=limits)
        under = execute(one_case(0.4), BURNER, backend, limits=limits)
    assert (over.verdict, over.timeout_clock, under.verdict) == ("timeout", "cpu", "pass"), \
        (over.as_dict(), under.as_dict())
    # the first case passes within the limit; the one that crosses it is the last recorded
    assert over.cases[0].status == "pass" and over.cases[-1].status == "timeout", over.as_dict()


def test_a_sleeper_meets_the_limit_on_the_wall_clock(backend):
    """A program that sleeps uses no CPU: the limit holds on its wall time less the time it waited for a
    CPU too, so a 30 s sleep ends at the 1 s limit (the execution's, and a case's), not at the
    backstop; recorded apart (timeout_clock "wall")."""
    for limits in (Limits(wall_seconds=1.0), Limits(wall_seconds=5.0, case_seconds=1.0)):
        result = execute(one_case(30.0), SLEEPER, backend, limits=limits)
        assert result.verdict == "timeout" and result.timeout_clock == "wall", result.as_dict()
        assert result.detail.startswith("time limit") and "waiting for a CPU" in result.detail, result.as_dict()
        assert result.cpu_seconds < 0.5 and result.wall_seconds < 0.5 * limits.backstop(1.0), result.as_dict()
        assert result.as_dict()["timeout_clock"] in TIMEOUT_CLOCKS
        assert result.cases[0].status == "timeout"


def test_a_sleeper_meets_the_wall_clock_backstop_recorded_apart(backend):
    limits = Limits(wall_seconds=5.0, case_seconds=3.0, backstop_seconds=1.0)
    result = execute(one_case(30.0), SLEEPER, backend, limits=limits)
    assert result.verdict == "timeout" and result.timeout_clock == "wall", result.as_dict()
    assert result.detail.startswith("wall-clock backstop") and result.cpu_seconds < 0.5, result.as_dict()
    assert result.cases[0].status == "timeout"


MIXED = "import time\n" + BURNER.replace("def f(x):", "def f(x):\n    time.sleep(x)", 1)


def test_a_program_starved_of_cpu_is_not_penalised_on_the_wall_clock(backend):
    """0.3 s of sleep and 0.3 s of CPU per case under a 1 s limit per case: alone and beside two busy loops
    (which at least double its wall time) the same pass, since the time it waits for a CPU is not its."""
    harness = render.harness_for(suitespec.build("python-call/1", "f", [((0.3,), {}, 0.3)] * 3))
    limits = Limits(wall_seconds=5.0, case_seconds=0.8)
    alone = execute(harness, MIXED, backend, limits=limits)
    with BusyLoops() as loops:
        loaded = execute(harness, MIXED, backend, limits=limits)
        assert loops.alive()
    assert (alone.verdict, loaded.verdict) == ("pass", "pass"), (alone.as_dict(), loaded.as_dict())


def test_module_level_code_counts_against_the_load_limit(backend):
    """Every phase has a limit: a candidate whose top level computes for 3 s of CPU (or sleeps 30 s) is
    stopped at a 1 s load limit (the evalplus profile sets one), before its first case."""
    limits = Limits(wall_seconds=20.0, case_seconds=1.0, load_seconds=1.0)
    for top in ("import time\nt = time.process_time()\nwhile time.process_time() - t < 3: pass\n",
                "import time\ntime.sleep(30)\n"):
        result = execute(one_case(0.1), top + BURNER, backend, limits=limits)
        assert result.verdict == "timeout" and "of its load" in result.detail, result.as_dict()
        assert result.cases == [] and result.wall_seconds < 10, result.as_dict()


def test_run_calls_measures_the_programs_cpu_time_not_the_wall_clock(backend):
    calls = [((0.25,), {}), ((1.0,), {})]
    with BusyLoops():
        outcomes, detail = run_calls("f", calls, BURNER, backend, limits=PER_CASE)
    assert [o.status for o in outcomes] == ["ok", "timeout"], (outcomes, detail)
    assert outcomes[0].value == 0.25 and outcomes[1].message.startswith("CPU time limit")
    slept, _ = run_calls("f", [((30.0,), {})], SLEEPER, backend,
                         limits=Limits(wall_seconds=1.0, backstop_seconds=2.0))
    assert slept[0].status == "timeout" and slept[0].message.startswith("time limit"), slept


def test_run_calls_reads_answers_on_the_harness_cpu_budget(local_backend, monkeypatch):
    """As execute: an answer too costly to read is that call's outcome (never the program's timeout),
    and the next call is still answered."""
    from acceptgate.sandbox import executor

    monkeypatch.setattr(executor, "JUDGE_CPU_SECONDS", 0.0)
    big = "def f(n):\n    return [[i] for i in range(n)]\n"
    outcomes, detail = run_calls("f", [((200_000,), {}), ((1,), {})], big, local_backend,
                                 limits=Limits(wall_seconds=5))
    assert [o.status for o in outcomes] == ["protocol", "ok"], outcomes  # a short answer needs no budget
    assert "CPU budget" in outcomes[0].message and detail == ""
    monkeypatch.setattr(executor, "JUDGE_CPU_SECONDS", 10.0)
    outcomes, _ = run_calls("f", [((200_000,), {}), ((1,), {})], big, local_backend, limits=Limits(wall_seconds=5))
    assert [o.status for o in outcomes] == ["ok", "ok"] and outcomes[1].value == [[0]]


def test_the_backstop_is_generous():
    assert wall_backstop(1.0) == 21.0 and wall_backstop(10.0) == 30.0 and wall_backstop(100.0) == 300.0
    assert Limits(wall_seconds=2).backstop(2) == 22.0 and Limits(backstop_seconds=3).backstop(10) == 3.0
