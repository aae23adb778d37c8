"""The gauge check: a suite is usable only if it can tell right from wrong.

For every suite of a task, the reference must pass and every known wrong sample must be blocked
(verdict other than pass). A suite that fails is marked not usable, with the reasons. For now the
known wrong samples are generic ones written from the task's signature: ``return None``, ``raise``,
constant returns (0, '', [], False, True) and "echo the first argument". A generic sample that returns
the expected value of every case of some suite is not wrong *for that suite*, so it is left out and
the reason recorded (``gauge_plan``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

from acceptgate import dialects, render, suitespec
from acceptgate.importers.docstring import function_def
from acceptgate.importers.signature import first_parameter, parameter_list
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sandbox.executor import ExecutionResult, execute_many
from acceptgate.suitespec import SuiteSpec
from acceptgate.task import SUITE_KINDS, ImportIssue, Task, WrongSample

WRONG_SAMPLE_SKIPPED = "wrong-sample-skipped"

# label -> (body, the constant it returns; None when the output is not a constant)
_CONSTANTS: list[tuple[str, str, Any]] = [
    ("return-none", "return None", None),
    ("constant-0", "return 0", 0),
    ("constant-empty-str", "return ''", ""),
    ("constant-empty-list", "return []", []),
    ("constant-false", "return False", False),
    ("constant-true", "return True", True),
]
_RAISE = ("raise", "raise RuntimeError('acceptgate generic wrong sample')")
_ECHO = "echo-first-arg"


# ---------------------------------------------------------------------------------------------
# generic wrong samples


def generic_wrong_samples(task: Task) -> list[WrongSample]:
    return gauge_plan(task)[0]


def gauge_plan(task: Task) -> tuple[list[WrongSample], list[ImportIssue]]:
    """The task's generic wrong samples, and an issue for each one left out (with why)."""
    fn = function_def(task.prompt, task.entry_point) or function_def(task.reference, task.entry_point)
    if fn is None:
        params, first = "*args, **kwargs", None
    else:
        params, first = parameter_list(fn), first_parameter(fn)
    samples: list[WrongSample] = []
    skipped: list[ImportIssue] = []

    def add(label: str, body: str, output: Callable[[tuple, dict], Any] | None) -> None:
        kind = _suite_always_matching(task, output) if output else None
        if kind is not None:
            skipped.append(ImportIssue(task.task_id, WRONG_SAMPLE_SKIPPED,
                                       f"{label} returns the expected value of every case of the {kind} "
                                       "suite, so it is not wrong there", suite=kind, excluded="none"))
            return
        samples.append(WrongSample(label, f"def {task.entry_point}({params}):\n    {body}\n"))

    for label, body, value in _CONSTANTS:
        add(label, body, lambda args, kwargs, v=value: v)
    add(*_RAISE, None)
    if first is None:
        skipped.append(ImportIssue(task.task_id, WRONG_SAMPLE_SKIPPED,
                                   f"{_ECHO}: the entry point takes no positional parameter", excluded="none"))
    else:
        add(_ECHO, f"return {first}", lambda args, kwargs: args[0] if args else kwargs.get(first))
    return samples, skipped


def _suite_always_matching(task: Task, output: Callable[[tuple, dict], Any]) -> str | None:
    """The first suite on which this fixed behaviour passes every case, if any."""
    for kind in SUITE_KINDS:
        spec = task.suites.get(kind)
        if spec is None:
            continue
        judge = _dialect_judge(spec.dialect)
        if all(_safe_judge(judge, output(c.args, c.kwargs), c) for c in spec.cases):
            return kind
    return None


@functools.cache
def _dialect_judge(dialect: str) -> Callable[[Any, Any, tuple, dict], bool]:
    """The dialect's judgement exactly as rendered harnesses define it (from a one-case render)."""
    example = dialects.get(dialect).example_expected
    return render.harness_for(suitespec.build(dialect, "f", [((), {}, example)])).judge


def _safe_judge(judge: Callable[[Any, Any, tuple, dict], bool], got: Any, case: Any) -> bool:
    try:
        return bool(judge(got, case.expected, case.args, case.kwargs))
    except Exception:  # comparing unlike literals cannot fail in the prelude, but never let it stop us
        return False


# ---------------------------------------------------------------------------------------------
# the check


@dataclass
class SuiteGauge:
    task_id: str
    suite: str  # visible | hidden
    spec_hash: str
    render_hash: str
    passed: bool
    reasons: list[str]
    reference: ExecutionResult
    wrong: list[tuple[WrongSample, ExecutionResult]] = field(default_factory=list)


@dataclass
class GaugeResult:
    task_id: str
    suites: list[SuiteGauge]

    @property
    def usable_suites(self) -> list[str]:
        return [s.suite for s in self.suites if s.passed]


def check_many(tasks: list[Task], backend: Backend, *, progress: Callable[[int, int], None] | None = None,
               limits: Limits = Limits()) -> list[GaugeResult]:
    """Gauge every suite of every task: the reference on each suite, then each wrong sample.

    References run every case (the reasons name each failure); wrong samples stop at their first
    failing case. Both batches go through ``execute_many``, so all cores are used.
    """
    slots: list[tuple[Task, str, SuiteSpec, render.Harness]] = []
    for task in tasks:
        for kind in SUITE_KINDS:
            spec = task.suites.get(kind)
            if spec is not None:
                slots.append((task, kind, spec, render.harness_for(spec)))
    ref_jobs = [(h, task.reference) for task, _, _, h in slots]
    wrong_jobs = [(h, ws.source) for task, _, _, h in slots for ws in task.wrong_samples]
    total = len(ref_jobs) + len(wrong_jobs)

    def shifted(offset: int):
        return None if progress is None else (lambda done, _n: progress(offset + done, total))

    ref_results = execute_many(ref_jobs, backend, limits=limits, progress=shifted(0))
    wrong_results = execute_many(wrong_jobs, backend, limits=limits, fail_fast=True,
                                 progress=shifted(len(ref_jobs)))
    by_task: dict[str, GaugeResult] = {t.task_id: GaugeResult(t.task_id, []) for t in tasks}
    cursor = 0
    for (task, kind, spec, harness), ref in zip(slots, ref_results):
        wrong = list(zip(task.wrong_samples, wrong_results[cursor: cursor + len(task.wrong_samples)]))
        cursor += len(task.wrong_samples)
        by_task[task.task_id].suites.append(_judge(task, kind, spec, harness, ref, wrong))
    return [by_task[t.task_id] for t in tasks]


def check(task: Task, backend: Backend, *, limits: Limits = Limits()) -> GaugeResult:
    return check_many([task], backend, limits=limits)[0]


def _judge(task: Task, kind: str, spec: SuiteSpec, harness: render.Harness, ref: ExecutionResult,
           wrong: list[tuple[WrongSample, ExecutionResult]]) -> SuiteGauge:
    reasons: list[str] = []
    if ref.verdict != "pass":
        reasons.append(f"reference does not pass the {kind} suite: {ref.verdict}"
                       f"{' (' + ref.detail + ')' if ref.detail else ''}{_failure_text(ref)}")
    if not wrong:
        reasons.append("no wrong sample to block")
    for sample, result in wrong:
        if result.verdict == "pass":
            reasons.append(f"wrong sample {sample.label} passes the {kind} suite")
    return SuiteGauge(task.task_id, kind, spec.spec_hash, harness.render_hash, not reasons, reasons, ref, wrong)


def _failure_text(result: ExecutionResult) -> str:
    bad = result.first_failure
    if bad is None:
        return ""
    failing = sum(1 for c in result.cases if c.status != "pass")
    parts = [f"; {failing} failing case(s), first: case {bad.index} {bad.status}"]
    if bad.args is not None:
        parts.append(f" args={bad.args}")
    if bad.got is not None:
        parts.append(f" got={bad.got}")
    if bad.want is not None:
        parts.append(f" want={bad.want}")
    if bad.error_type:
        parts.append(f" {bad.error_type}: {bad.message or ''}")
    return "".join(parts)
