"""Each pool candidate executed once per suite, with every case's output kept.

A ``SuiteRun`` holds what the candidate returned (or raised) for each case of one suite, computed in
one sandboxed process by ``executor.run_calls`` (which returns outputs, not verdicts). Every suite
verifier built from that suite -- and each of its mutants -- decides from these outputs, so a
candidate is never executed again for a mutant. Only the repeatability gate re-runs (from reset: a
fresh sandbox process each time).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from typing import Any, Callable

from acceptgate.suites import literals
from acceptgate._util.parallel import parallel_map
from acceptgate.suites.render import Harness
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sandbox.executor import run_calls

BROKEN_STATUSES = ("timeout", "crash", "memory", "protocol")
STORED_CHARS = 2000  # per case output kept in the warehouse


@dataclass
class SuiteRun:
    candidate_sha256: str
    spec_hash: str
    render_hash: str
    statuses: list[str]  # per answered case: ok | error | protocol | memory
    values: list[Any]  # per answered case: the returned literal (None when not ok)
    errors: list[str | None]  # per answered case: the exception type, when it raised
    failing: list[int]  # cases not answered "ok" with a value the suite's own comparison accepts
    load_error: str | None = None
    broken: tuple[str, str] | None = None  # (timeout|crash|memory|protocol, detail): the run ended early
    wall_seconds: float = 0.0
    round: int = 0  # 0 = the run every verifier decides from; 1.. = repeatability re-runs
    stored: str | None = None  # ``outputs_json()``, once the values are dropped (``for_storage``)

    def outputs(self) -> list[list]:
        """Per case [status, got canonical text or exception type]: what the warehouse stores. A text
        longer than ``STORED_CHARS`` is cut there and marked (the decisions used the whole value)."""
        out = []
        for status, value, err in zip(self.statuses, self.values, self.errors):
            text = literals.canonical(value) if status == "ok" else err
            if text is not None and len(text) > STORED_CHARS:
                text = text[:STORED_CHARS] + f"...<{len(text)} chars>"
            out.append([status, text])
        return out

    def outputs_json(self) -> str:
        return self.stored if self.stored is not None else json.dumps(self.outputs(), ensure_ascii=False)

    def for_storage(self) -> "SuiteRun":
        """A copy with what the warehouse stores (the outputs as their JSON text) instead of the values
        and exception types: what a certify shard sends back once every decision is made, so the
        client neither unpickles every returned value nor renders them again."""
        return dataclasses.replace(self, values=[], errors=[], stored=self.outputs_json())


def collect(harness: Harness, source: str, candidate_sha256: str, backend: Backend, *,
            limits: Limits = Limits(), round: int = 0) -> SuiteRun:
    """Run the candidate on every case of the harness in one sandboxed process; keep every output."""
    started = time.monotonic()
    calls = [(args, kwargs) for args, kwargs, _ in harness.cases]
    outcomes, detail = run_calls(harness.entry_point, calls, source, backend, limits=limits)
    run = SuiteRun(candidate_sha256, harness.spec_hash, harness.render_hash, [], [], [], [], round=round)
    if not outcomes and detail.startswith("did not load"):
        run.load_error = detail[len("did not load: "):]
    for index, outcome in enumerate(outcomes):
        if outcome.status in BROKEN_STATUSES and index == len(outcomes) - 1 and detail:
            run.broken = (outcome.status, detail)
            break
        run.statuses.append(outcome.status)
        run.values.append(outcome.value if outcome.status == "ok" else None)
        run.errors.append(outcome.error_type)
        if outcome.status != "ok" or not harness.compare(outcome.value, harness.cases[index][2]):
            run.failing.append(index)
    if run.load_error is None and run.broken is None and len(run.statuses) < len(harness.cases):
        run.broken = ("protocol", f"answered {len(run.statuses)} of {len(harness.cases)} cases")
    run.wall_seconds = time.monotonic() - started
    return run


@dataclass(frozen=True)
class RunJob:
    key: Any  # the caller's key, returned with the run
    harness: Harness
    source: str
    candidate_sha256: str
    round: int = 0


# A run stopped by the wall-clock backstop before it used its CPU time was starved by the machine's
# load, not decided by its own behaviour: it runs again, alone, with this much wall time (the CPU-time
# limit unchanged), so that a certification does not depend on how busy the machine was.
STARVED_RETRY_SECONDS = 120.0


def starved(run: SuiteRun) -> bool:
    return run.broken is not None and run.broken[0] == "timeout" and "wall-clock backstop" in run.broken[1]


def collect_many(jobs: list[RunJob], backend: Backend, *, limits: Limits = Limits(), workers: int | None = None,
                 progress: Callable[[int, int], None] | None = None) -> dict[Any, SuiteRun]:
    """Run jobs in parallel (threads: the work is in the sandbox processes); results by key. A starved
    run (``starved``) is run once more, alone, with ``STARVED_RETRY_SECONDS`` of wall time."""
    runs = parallel_map(lambda j: collect(j.harness, j.source, j.candidate_sha256, backend, limits=limits,
                                          round=j.round), jobs, workers=workers, progress=progress,
                        pin=True)
    out = {j.key: run for j, run in zip(jobs, runs)}
    again = [j for j in jobs if starved(out[j.key])]
    if again:
        slow = dataclasses.replace(limits, backstop_seconds=max(STARVED_RETRY_SECONDS,
                                                                limits.backstop(limits.wall_seconds)))
        for j in again:
            out[j.key] = collect(j.harness, j.source, j.candidate_sha256, backend, limits=slow, round=j.round)
    return out
