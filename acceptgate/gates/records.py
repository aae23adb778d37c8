"""What a gate run leaves behind: every attempt, every message with its author and purpose, the decision.

Authorship is what the leak audit judges by (SYSTEM.md section 4): hidden-test material in text the
*harness* wrote is a violation; the same literal in the task's statement or in the model's own reply
is not. So a chat message made of several authors' texts is stored as one row per part, in order;
``content_of`` rebuilds what was sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acceptgate._util.hashing import sha256_text
from acceptgate.sources.base import Candidate

AUTHORS = ("task", "harness", "model")
PURPOSES = ("generation", "selection", "revision_feedback", "stop_decision")
ROLES = ("user", "assistant", "none")  # none: recorded, never sent to the generator
DECISIONS = ("delivered", "refused")
PART_JOINER = "\n\n"  # how the parts of one chat message are joined when sent


@dataclass(frozen=True)
class Message:
    seq: int  # order within the task's gate run
    attempt: int  # the attempt (1-based) the message belongs to
    author: str
    purpose: str
    role: str
    text: str
    request: int | None = None  # the generator request (1-based) it was sent in; None: never sent
    chat_index: int | None = None  # position of its chat message in that request
    part: int = 0  # position within that chat message

    @property
    def sha256(self) -> str:
        return sha256_text(self.text)

    def as_row(self) -> dict[str, Any]:
        return {"seq": self.seq, "attempt": self.attempt, "author": self.author,
                "purpose": self.purpose, "role": self.role, "request": self.request,
                "chat_index": self.chat_index, "part": self.part, "text": self.text,
                "text_sha256": self.sha256}


class MessageLog:
    """Appends messages with running sequence numbers, checking author and purpose."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def add(self, attempt: int, author: str, purpose: str, text: str, *, role: str = "none",
            request: int | None = None, chat_index: int | None = None, part: int = 0) -> Message:
        if author not in AUTHORS:
            raise ValueError(f"unknown author {author!r}; valid: {', '.join(AUTHORS)}")
        if purpose not in PURPOSES:
            raise ValueError(f"unknown purpose {purpose!r}; valid: {', '.join(PURPOSES)}")
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; valid: {', '.join(ROLES)}")
        msg = Message(len(self.messages), attempt, author, purpose, role, text, request, chat_index, part)
        self.messages.append(msg)
        return msg


def content_of(messages: list[Message], request: int) -> list[tuple[str, str]]:
    """The chat messages (role, content) of one request, rebuilt from the stored parts."""
    sent = sorted((m for m in messages if m.request == request), key=lambda m: (m.chat_index, m.part))
    out: list[tuple[str, str]] = []
    current = None
    for m in sent:
        if m.chat_index != current:
            out.append((m.role, m.text))
            current = m.chat_index
        else:
            role, text = out[-1]
            out[-1] = (role, text + PART_JOINER + m.text)
    return out


@dataclass
class AttemptRecord:
    attempt: int
    candidate: Candidate
    precheck: str = "skipped"  # "ok", a precheck failure kind, or "skipped" (arm without precheck)
    v_verdict: str = "not-run"  # executor verdict on the visible suite, or "not-run"
    v_cases_passed: int | None = None
    v_cases_total: int | None = None
    v_detail: str = ""
    signature: str = ""  # failure signature "kind|exception type|message hash"; "" on pass
    outcome: str = "rejected"  # "delivered" | "rejected"
    exec_seconds: float = 0.0

    def as_row(self) -> dict[str, Any]:
        c = self.candidate
        return {"attempt": self.attempt, "candidate_sha256": c.sha256, "origin": c.origin,
                "sample_index": c.sample_index, "extraction": c.extraction, "program": c.program,
                "raw": c.raw, "precheck": self.precheck, "v_verdict": self.v_verdict,
                "v_cases_passed": self.v_cases_passed, "v_cases_total": self.v_cases_total,
                "v_detail": self.v_detail, "signature": self.signature, "outcome": self.outcome,
                "prompt_tokens": c.usage.prompt_tokens, "completion_tokens": c.usage.completion_tokens,
                "latency_seconds": round(c.latency_seconds, 4),
                "exec_seconds": round(self.exec_seconds, 4)}


@dataclass
class GateOutcome:
    """One task through one gate arm."""

    task_id: str
    arm: str
    source: str
    visible_spec_hash: str
    decision: str = "refused"
    stop_reason: str = ""
    attempts: list[AttemptRecord] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    tokens_used: int = 0
    wall_seconds: float = 0.0
    # the task's certification this decision relied on: the certify run id, or "skipped" (--no-certify);
    # and V's FPR on the attacks measured there (seed 002's FPR_h), beside every false-delivery rate
    certification: str = "skipped"
    v_fpr_h: float | None = None

    @property
    def delivered(self) -> Candidate | None:
        for a in self.attempts:
            if a.outcome == "delivered":
                return a.candidate
        return None

    @property
    def delivered_attempt(self) -> int | None:
        c = self.delivered
        return None if c is None else c.attempt

    @property
    def attempts_used(self) -> int:
        return len(self.attempts)

    def as_row(self) -> dict[str, Any]:
        c = self.delivered
        return {"task_id": self.task_id, "arm": self.arm, "source": self.source,
                "visible_spec_hash": self.visible_spec_hash, "decision": self.decision,
                "stop_reason": self.stop_reason, "attempts_used": self.attempts_used,
                "delivered_attempt": self.delivered_attempt,
                "delivered_sha256": None if c is None else c.sha256,
                "tokens_used": self.tokens_used, "wall_seconds": round(self.wall_seconds, 4),
                "certification": self.certification, "v_fpr_h": self.v_fpr_h}
