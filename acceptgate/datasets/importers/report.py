"""Counts of an import: what came in, what was left out and why (what the CLI prints)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from acceptgate.datasets.importers.coercion import JSON_COERCION
from acceptgate.datasets.task import SUITE_KINDS, ImportResult


def summary(result: ImportResult) -> dict[str, Any]:
    by_excluded: dict[str, Counter] = {k: Counter() for k in ("task", "suite", "case", "none")}
    for issue in result.issues:
        by_excluded.setdefault(issue.excluded, Counter())[issue.reason] += 1
    return {
        "dataset": result.dataset,
        "source": result.source,
        "source_sha256": result.source_sha256,
        "tasks_imported": len(result.tasks),
        "tasks_excluded": sum(by_excluded["task"].values()),
        "tasks_excluded_by_reason": dict(sorted(by_excluded["task"].items())),
        "suites": {k: sum(1 for t in result.tasks if k in t.suites) for k in SUITE_KINDS},
        "cases": {k: sum(len(t.suites[k].cases) for t in result.tasks if k in t.suites) for k in SUITE_KINDS},
        "suites_excluded_by_reason": dict(sorted(by_excluded["suite"].items())),
        "cases_excluded_by_reason": dict(sorted(by_excluded["case"].items())),
        "kept_with_notes_by_reason": dict(sorted(by_excluded["none"].items())),
        "coercions": sum(1 for i in result.issues if i.reason == JSON_COERCION),
        "wrong_samples": sum(len(t.wrong_samples) for t in result.tasks),
        "source_hidden_cases": result.source_hidden_cases,
        "tasks_in_source": len(result.tasks) + sum(by_excluded["task"].values()),
        "notes": dict(result.notes),
    }


def coverage_line(counts: dict[str, Any]) -> str:
    """``hidden cases 124,253/124,253`` against the inputs the dataset's own evaluator tests."""
    source = counts.get("source_hidden_cases")
    line = (f"coverage: tasks {counts['tasks_imported']:,}/{counts['tasks_in_source']:,}, hidden cases "
            f"{counts['cases']['hidden']:,}/{source:,}" if source is not None else
            f"coverage: tasks {counts['tasks_imported']:,}/{counts['tasks_in_source']:,}, hidden cases "
            f"{counts['cases']['hidden']:,}/unknown")
    if source:
        line += f" ({100 * counts['cases']['hidden'] / source:.2f}%)"
    return line


def format_summary(counts: dict[str, Any]) -> str:
    lines = [f"{counts['dataset']}: {counts['tasks_imported']} tasks imported, "
             f"{counts['tasks_excluded']} excluded"]
    for reason, n in counts["tasks_excluded_by_reason"].items():
        lines.append(f"  task excluded  {reason}: {n}")
    for kind in SUITE_KINDS:
        lines.append(f"  {kind} suites: {counts['suites'][kind]} ({counts['cases'][kind]} cases)")
    for reason, n in counts["suites_excluded_by_reason"].items():
        lines.append(f"  suite excluded {reason}: {n}")
    for reason, n in counts["cases_excluded_by_reason"].items():
        lines.append(f"  case excluded  {reason}: {n}")
    for reason, n in counts["kept_with_notes_by_reason"].items():
        lines.append(f"  noted (kept)   {reason}: {n}")
    lines.append(f"  JSON coercions detected: {counts['coercions']}")
    for key, value in counts.get("notes", {}).items():
        lines.append(f"  {key}: {value}")
    lines.append(coverage_line(counts))
    return "\n".join(lines)
