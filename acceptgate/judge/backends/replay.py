"""Replay of recorded judge outputs: ``{"trajectory_id": ..., "output": "<raw text>"}`` per line. The
raw text is validated like a live reply, so a malformed recording is stored as invalid with its reason."""

from __future__ import annotations

from acceptgate.judge.backends import Raw
from acceptgate.judge.records import RecordedOutput, load_jsonl, strict as refuse_invalid


class ReplayJudge:
    name = "replay"

    def __init__(self, path: str, *, strict: bool = False) -> None:
        loaded = load_jsonl(path, RecordedOutput, key="trajectory_id")
        if strict:
            refuse_invalid(loaded)
        self.errors = loaded.errors
        self.outputs = {r.trajectory_id: r.output for r in loaded.valid}

    def judge(self, trajectory, card, observations, prompt) -> Raw:
        if trajectory.trajectory_id not in self.outputs:
            return Raw("", error=f"no recorded output for trajectory {trajectory.trajectory_id}")
        return Raw(self.outputs[trajectory.trajectory_id])

    def close(self) -> None:
        pass
