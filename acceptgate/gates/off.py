"""OFF: no gate. The first candidate (drawn with the generation message) is delivered without running anything."""

from __future__ import annotations

import time

from acceptgate.gates import generation
from acceptgate.gates.records import AttemptRecord, GateOutcome, MessageLog
from acceptgate.sources.base import CandidateSource, PublicTask, SourceError, SourceExhausted

ARM = "off"


def run_off(task: PublicTask, source: CandidateSource) -> GateOutcome:
    started = time.monotonic()
    out = GateOutcome(task.task_id, ARM, source.name, task.visible.spec_hash)
    log = MessageLog()
    try:
        cand = generation.draw(log, source, task, 1, ARM)
    except SourceExhausted:
        out.stop_reason = "source has no candidate"
    except SourceError as exc:
        out.stop_reason = f"generator failed: {exc}"
    else:
        out.attempts.append(AttemptRecord(1, cand, outcome="delivered"))
        out.tokens_used = cand.usage.total
        out.decision = "delivered"
        out.stop_reason = "first candidate (no gate)"
    log.add(1, "harness", "stop_decision", f"{out.decision}: {out.stop_reason}")
    out.messages = log.messages
    out.wall_seconds = time.monotonic() - started
    return out
