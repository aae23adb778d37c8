"""OFF: no gate. The first candidate is delivered without running anything."""

from __future__ import annotations

import time

from acceptgate.gates.records import AttemptRecord, GateOutcome, MessageLog
from acceptgate.sources.base import CandidateSource, DrawContext, PublicTask, SourceExhausted

ARM = "off"


def run_off(task: PublicTask, source: CandidateSource) -> GateOutcome:
    started = time.monotonic()
    out = GateOutcome(task.task_id, ARM, source.name, task.visible.spec_hash)
    log = MessageLog()
    try:
        cand = source.draw(task, 1, DrawContext(arm=ARM))
    except SourceExhausted:
        out.stop_reason = "source has no candidate"
    else:
        log.add(1, "task", "generation", cand.generation_prompt(task.prompt))
        log.add(1, "model", "generation", cand.raw or cand.program)
        out.attempts.append(AttemptRecord(1, cand, outcome="delivered"))
        out.tokens_used = cand.usage.total
        out.decision = "delivered"
        out.stop_reason = "first candidate (no gate)"
    log.add(1, "harness", "stop_decision", f"{out.decision}: {out.stop_reason}")
    out.messages = log.messages
    out.wall_seconds = time.monotonic() - started
    return out
