"""One interface for every way a candidate program is produced: replayed samples or a live model.

A gate asks a source for the candidate of attempt N of a task. The source sees only the task's
*public* view (``PublicTask``: statement, entry point, visible suite) and, for conversational
sources, the messages the gate chose to send. The hidden GT suite has no field here: a source, like
a gate, cannot be handed it.
"""

from __future__ import annotations

import copy

import abc
from dataclasses import dataclass, field
from typing import Any

from acceptgate._util.hashing import sha256_text
from acceptgate.suites.suitespec import SuiteSpec
from acceptgate.datasets.task import VISIBLE, Task


class SourceError(RuntimeError):
    """A source could not produce a candidate (endpoint down after retries, malformed reply)."""


class SourceExhausted(SourceError):
    """A replay source has no recorded sample for this attempt."""


@dataclass(frozen=True)
class PublicTask:
    """What a gate and a generator may see of a task: never the hidden suite."""

    task_id: str
    entry_point: str
    prompt: str
    visible: SuiteSpec
    dataset: str = ""
    contract: str = ""

    @classmethod
    def from_task(cls, task: Task) -> "PublicTask":
        if VISIBLE not in task.suites:
            raise ValueError(f"{task.task_id}: task has no visible suite")
        return cls(task_id=task.task_id, entry_point=task.entry_point, prompt=task.prompt,
                   visible=task.suites[VISIBLE], dataset=task.dataset, contract=task.contract)


@dataclass(frozen=True)
class ChatMessage:
    role: str  # system | user | assistant
    content: str


@dataclass(frozen=True)
class DrawContext:
    """What a gate passes along with a request: its arm and, for chat sources, the conversation."""

    arm: str
    messages: tuple[ChatMessage, ...] = ()
    timeout_seconds: float | None = None  # what is left of the gate's time budget


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Candidate:
    """A program with its provenance: who produced it, for which task, attempt and arm."""

    task_id: str
    program: str  # the complete program text that is executed
    origin: str  # source kind and model, e.g. "replay:codet" or "openai:gpt-4o-mini"
    attempt: int  # 1-based
    arm: str
    raw: str = ""  # what the producer emitted before extraction/assembly (sample body, chat reply)
    sample_index: int | None = None  # position in the recorded samples, for replays
    usage: Usage = Usage()
    latency_seconds: float = 0.0
    extraction: str = ""  # how the program was taken from raw: "fenced", "bare", "solution", ...
    meta: dict[str, Any] = field(default_factory=dict)

    def generation_prompt(self, task_prompt: str) -> str:
        """The prompt the producer generated from, where recorded (CodeT's has no doctests), else the task's."""
        return self.meta.get("generation_prompt", task_prompt)

    @property
    def sha256(self) -> str:
        return sha256_text(self.program)


class CandidateSource(abc.ABC):
    """Produces the candidate for one attempt. Replays ignore the conversation; chat sources use it."""

    name: str = "?"
    sends_messages: bool = False  # True: the gate's DrawContext.messages reach a model (and are logged as sent)

    @abc.abstractmethod
    def draw(self, task: PublicTask, attempt: int, context: DrawContext) -> Candidate:
        """The candidate for ``attempt`` (1-based). Raises SourceExhausted / SourceError."""

    def available(self, task_id: str) -> int | None:
        """How many candidates this source holds for a task (None: unbounded, e.g. a live model)."""
        return None

    def task_ids(self) -> set[str] | None:
        """Task ids the source has samples for (None: any task)."""
        return None

    def carried(self, task_ids: set[str]) -> "CandidateSource | None":
        """This source's candidates for ``task_ids`` only, as a plain picklable object a shard can carry
        to another machine (``acceptgate.pipelines.shards``); None: it holds nothing to carry (a live model),
        and the shard opens it by name where it runs."""
        return None

    def _carry(self, task_ids: set[str], *per_task: str) -> "CandidateSource":
        """A shallow copy whose per-task dicts (the attributes named) keep ``task_ids`` only; its input
        problems stay with the client, which reports them once."""
        out = copy.copy(self)
        for name in per_task:
            setattr(out, name, {t: v for t, v in getattr(self, name).items() if t in task_ids})
        out.problems = []
        return out

    def close(self) -> None:
        """Release connections."""

    def __enter__(self) -> "CandidateSource":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
