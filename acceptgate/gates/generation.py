"""The generation request of CONFORM and OFF: one user message of task text and allowed imports.

It is H-MIX's first message without its check-by-hand line (SYSTEM.md section 3), so the arms differ
only where the seed says they do. A live model is sent this message; a replay ignores it, and the
log then keeps the prompt the recorded sample was generated from instead, since nothing was sent.
"""

from __future__ import annotations

from acceptgate.gates.hmix import imports_line
from acceptgate.gates.precheck import ALLOWED_IMPORTS
from acceptgate.gates.records import PART_JOINER, MessageLog
from acceptgate.sources.base import Candidate, CandidateSource, ChatMessage, DrawContext, PublicTask


def generation_parts(task: PublicTask, allowed: tuple[str, ...] = ALLOWED_IMPORTS) -> list[tuple[str, str]]:
    """(author, text) parts of the generation message: the task text, then the allowed imports."""
    return [("task", task.prompt.rstrip("\n")), ("harness", imports_line(allowed))]


def draw(log: MessageLog, source: CandidateSource, task: PublicTask, attempt: int, arm: str, *,
         allowed: tuple[str, ...] = ALLOWED_IMPORTS) -> Candidate:
    """Draw one candidate with the generation message and log what was sent and received.
    Raises what the source raises (SourceExhausted, SourceError)."""
    parts = generation_parts(task, allowed)
    context = DrawContext(arm=arm, messages=(ChatMessage("user", PART_JOINER.join(t for _, t in parts)),))
    cand = source.draw(task, attempt, context)
    if source.sends_messages:
        for part, (author, text) in enumerate(parts):
            log.add(attempt, author, "generation", text, role="user", request=attempt, chat_index=0, part=part)
        log.add(attempt, "model", "generation", cand.raw, role="assistant")
    else:
        log.add(attempt, "task", "generation", cand.generation_prompt(task.prompt))
        log.add(attempt, "model", "generation", cand.raw or cand.program)
    return cand
