"""MBPP+ (a user-given MbppPlus jsonl or jsonl.gz, EvalPlus's release) -> Tasks with V and GT suites.

- visible V = the calls of the task's ``assertion`` (the original MBPP asserts), recorded by running
  them against the reference in the sandbox (``recorder.record_assertions``): whatever their shape
  (``==``, ``set(...) ==``, ``math.isclose``), the inputs are exactly what the asserts call;
- hidden GT = ``base_input`` + ``plus_input`` after EvalPlus's tuple restoration (``mbpp_inputs``);
  every JSON coercion the table restores is noted ``json-coercion`` (per task, with the rule), and one it
  does not restore is detected against the asserts and noted ``json-coercion-unrestored`` (kept as
  EvalPlus tests it);
- expected values = the reference's outputs (``prompt + canonical_solution``, no contract, as EvalPlus's
  ground truth), run in the sandbox; for EvalPlus's "not None" tasks the output is reduced to
  ``output is not None`` there, as EvalPlus's ground truth does;
- dialect: EvalPlus's special oracles by entry point (``oracles.MBPP``: set equality, not None, any
  result, or zero, recomputed values); ``python-call+counter-eq/1`` when every output is a
  ``collections.Counter`` (Mbpp/88: EvalPlus compares ``out == exp`` with ``exp`` a Counter);
  otherwise the task's ``atol`` when not 0, else
  ``python-call+atol=1e-06/1`` when an output is a float or a list/tuple of floats, else exact -- as
  for HumanEval+.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acceptgate.suites import dialects
from acceptgate._util.errors import InvalidInput
from acceptgate.datasets.importers import mbpp_inputs, oracles, recorder
from acceptgate.datasets.importers.common import (KEPT, Draft, Progress, all_counters, assemble, check_unique_ids,
                                         parallel_map, read_jsonl, short)
from acceptgate.datasets.importers.humanevalplus import EVALPLUS_FLOAT_ATOL, is_floats
from acceptgate.datasets.importers.coercion import JSON_COERCION
from acceptgate.sandbox.backend import Backend
from acceptgate.datasets.task import HIDDEN, VISIBLE, ImportIssue, ImportResult, Task

DATASET = "mbppplus"
FIELDS = {"task_id": str, "prompt": str, "entry_point": str, "canonical_solution": str,
          "base_input": list, "plus_input": (list, dict), "atol": (int, float), "contract": str, "assertion": str}
UNRESTORED = "json-coercion-unrestored"
NOT_NONE_ENTRY = "_acceptgate_is_not_none"


def load(path: str | Path, backend: Backend, *, limit: int | None = None,
         progress: Progress = None) -> ImportResult:
    rows, digest = read_jsonl(path, FIELDS)
    check_unique_ids(rows, path)
    if limit is not None:
        rows = rows[: max(0, limit)]
    for i, row in enumerate(rows, start=1):
        if isinstance(row["plus_input"], dict):  # Mbpp/793 has {}: EvalPlus iterates it as no inputs
            if row["plus_input"]:
                raise InvalidInput("expected a list of inputs, got a non-empty object", source=str(path),
                                   record=f"record {i}", field="plus_input")
            row["plus_input"] = []
    built = parallel_map(lambda row: build_task(row, backend), rows, progress=progress)
    tasks = [t for t, _ in built if t is not None]
    issues = [i for _, task_issues in built for i in task_issues]
    source_cases = sum(len(r["base_input"]) + len(r["plus_input"]) for r in rows)
    return ImportResult(DATASET, str(path), digest, tasks, issues, source_hidden_cases=source_cases,
                        notes={"input_restoration": "evalplus 0.3.1 mbpp_deserialize_inputs"})


def reference_of(row: dict) -> str:
    return row["prompt"] + row["canonical_solution"]


def build_task(row: dict, backend: Backend) -> tuple[Task | None, list[ImportIssue]]:
    task_id, entry_point = row["task_id"], row["entry_point"]
    reference = reference_of(row)
    issues: list[ImportIssue] = []
    oracle = oracles.mbpp_oracle(entry_point)
    if oracle is not None:
        issues.append(ImportIssue(task_id, oracles.CHECK_DIALECT, f"{oracle.why}: judged by the "
                                  f"{oracle.dialect(float(row['atol']))} dialect", excluded=KEPT))
    # V: the original asserts' calls
    calls, failed, why = recorder.record_assertions(reference, row["assertion"], entry_point, backend)
    visible: list[Draft] = []
    if calls is None:
        issues.append(ImportIssue(task_id, "assertion-unrecorded", why, suite=VISIBLE, excluded="suite"))
        calls = []
    else:
        visible = [Draft(tuple(a), dict(k), i, f"assertion call {i}") for i, (a, k) in enumerate(calls)]
        if failed:
            issues.append(ImportIssue(task_id, "assertion-disagrees", f"{failed} of the task's asserts fail with "
                                      "the reference; their inputs are kept with the reference's outputs",
                                      suite=VISIBLE, excluded=KEPT))
    # GT: base + plus, restored as EvalPlus restores them
    hidden: list[Draft] = []
    rule = mbpp_inputs.rule_for(task_id)
    base = mbpp_inputs.deserialize(task_id, row["base_input"])
    plus = mbpp_inputs.deserialize(task_id, row["plus_input"])
    if rule is not None:
        restored = mbpp_inputs.RESTORES.get(rule, "tuples")
        issues.append(ImportIssue(task_id, JSON_COERCION, f"{restored} restored in {len(base) + len(plus)} inputs "
                                  f"with EvalPlus's rule {rule!r}", suite=HIDDEN, excluded=KEPT))
    for index, args, original in mbpp_inputs.unrestored_coercions(base, [a for a, k in calls if not k]):
        issues.append(ImportIssue(task_id, UNRESTORED, f"base_input[{index}] {short(list(args))} is the assert's "
                                  f"input {short(list(original))} after a JSON round trip; kept as EvalPlus "
                                  "tests it", suite=HIDDEN, case_index=index, excluded=KEPT))
    for label, inputs in (("base_input", base), ("plus_input", plus)):
        for i, args in enumerate(inputs):
            origin = i if label == "base_input" else len(base) + i
            if not isinstance(args, (list, tuple)):
                issues.append(ImportIssue(task_id, "malformed-input", f"{label}[{i}] is not a list of arguments: "
                                          f"{short(args)}", suite=HIDDEN, case_index=origin))
                continue
            hidden.append(Draft(tuple(args), {}, origin, f"{label}[{i}]"))
    run_source, run_entry = reference, entry_point
    if oracle is not None and oracle.reduce_not_none:
        # EvalPlus's ground truth for these tasks is ``output is not None`` (the output may be a re.Match)
        run_source = reference + f"\n\ndef {NOT_NONE_ENTRY}(*args, **kwargs):\n" \
                                 f"    return {entry_point}(*args, **kwargs) is not None\n"
        run_entry = NOT_NONE_ENTRY
    task, more = assemble(task_id, DATASET, row["prompt"], run_entry, reference, run_source,
                          {VISIBLE: visible, HIDDEN: hidden}, _dialect_rule(row, oracle), backend, issues)
    if task is not None and run_entry != entry_point:
        task = _rename_entry(task, entry_point)
    return task, more


def _rename_entry(task: Task, entry_point: str) -> Task:
    from acceptgate.suites import suitespec
    task.entry_point = entry_point
    task.suites = {k: suitespec.build(s.dialect, entry_point, [(c.args, c.kwargs, c.expected) for c in s.cases])
                   for k, s in task.suites.items()}
    from acceptgate.datasets.wrongs import gauge_plan

    task.wrong_samples, _ = gauge_plan(task)
    return task


def _dialect_rule(row: dict, oracle: oracles.Oracle | None):
    atol = float(row["atol"])

    def choose(expected: dict[str, list[Any]]) -> str:
        if oracle is not None:
            return oracle.dialect(atol)
        if all_counters(expected):  # EvalPlus's out == exp with exp a Counter (Mbpp/88)
            return dialects.COUNTER_EQ
        if atol:
            return dialects.atol_name(atol)
        if any(is_floats(v) for values in expected.values() for v in values):
            return dialects.atol_name(EVALPLUS_FLOAT_ATOL)
        return "python-call/1"
    return choose


