"""The generic wrong samples of a task, written from its signature (``return None``, ``raise``, constant
returns, "echo the first argument"), and which of them are left out because they are right on every
hidden input. The gauge check (``acceptgate.scoring.gauge``) blocks them besides the task's own."""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from acceptgate.suites import dialects, render, suitespec
from acceptgate._util.errors import InvalidInput
from acceptgate._util.hashing import sha256_text
from acceptgate.datasets.importers.docstring import function_def
from acceptgate.datasets.importers.signature import first_parameter, parameter_list
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sandbox.executor import ExecutionResult, execute_many
from acceptgate.suites.suitespec import SuiteSpec
from acceptgate.datasets.task import HIDDEN, SUITE_KINDS, ImportIssue, Task, WrongSample

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
GENERIC_LABELS = frozenset([label for label, _, _ in _CONSTANTS] + [_RAISE[0], _ECHO])


# ---------------------------------------------------------------------------------------------
# generic wrong samples


def generic_wrong_samples(task: Task) -> list[WrongSample]:
    return gauge_plan(task)[0]


def gauge_plan(task: Task) -> tuple[list[WrongSample], list[ImportIssue]]:
    """The task's generic wrong samples, and an issue for each one left out (with why): a constant that
    is the expected value of every hidden case is right on every hidden input, so it is not wrong."""
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
                                       "suite, so it is not wrong for this task", suite=kind, excluded="none"))
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
    """The suite that says this fixed behaviour is right: the hidden one when the task has it (what
    "wrong" means), else the first suite on which it passes every case."""
    for kind in ((HIDDEN,) if HIDDEN in task.suites else SUITE_KINDS):
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
