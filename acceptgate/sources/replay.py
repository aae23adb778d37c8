"""Replay of recorded samples in the EvalPlus jsonl format, as a candidate source.

One JSON object per line with ``task_id`` and either ``solution`` (a complete program) or
``completion`` (text appended to the task's prompt). A task's samples, in file order, are its draw
order: attempt N replays the task's N-th sample. ``.jsonl.gz`` is read transparently.
"""

from __future__ import annotations

from pathlib import Path

from acceptgate.datasets.samples import SampleFile, read_samples, require_valid
from acceptgate.sources.base import Candidate, CandidateSource, DrawContext, PublicTask, SourceExhausted


class ReplaySource(CandidateSource):
    """Attempt N of a task replays that task's N-th recorded sample. Invalid lines (kept in
    ``problems``) are never drawn; the gate run reports and counts them as ``invalid``."""

    def __init__(self, sample_file: SampleFile, *, origin: str = "replay:evalplus") -> None:
        self.path = sample_file.path
        self.samples = sample_file.by_task()
        self.problems = list(sample_file.problems)
        self.lines = {tid: [s.line for s in rows] for tid, rows in self.samples.items()}
        self.name = origin

    @classmethod
    def from_path(cls, path: str | Path, *, strict: bool = True) -> "ReplaySource":
        return cls(require_valid(read_samples(path), strict=strict))

    def available(self, task_id: str) -> int | None:
        return len(self.samples.get(task_id, ()))

    def carried(self, task_ids: set[str]) -> "ReplaySource":
        return self._carry(task_ids, "samples", "lines")

    def task_ids(self) -> set[str] | None:
        return set(self.samples)

    def draw(self, task: PublicTask, attempt: int, context: DrawContext) -> Candidate:
        rows = self.samples.get(task.task_id, [])
        if attempt < 1 or attempt > len(rows):
            raise SourceExhausted(f"{self.path}: no sample {attempt} for {task.task_id} "
                                  f"({len(rows)} recorded)")
        s = rows[attempt - 1]
        return Candidate(task_id=task.task_id, program=s.program(task.prompt), origin=self.name,
                         attempt=attempt, arm=context.arm, raw=s.text, sample_index=s.index,
                         extraction=s.kind, meta={"line": s.line})
