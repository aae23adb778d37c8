"""H-MIX: a model revises its code from visible-suite feedback, under caps (SYSTEM.md section 3).

Round k: send the conversation -> extract code -> static precheck (no sandbox) -> visible suite in
the sandbox -> pass: deliver. Otherwise the failure's signature (kind, exception type, hash of the
message) is compared with the previous round's: the first repeat adds "try a different approach" to
the feedback, the second repeat refuses. Caps per task: 5 calls, 32,000 tokens, 900 s; a cap is
checked before each new call (a reply that arrived is still judged). The conversation of round k>1
is exactly: the first user message, the previous model reply, the current feedback.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from acceptgate.gates import feedback
from acceptgate.gates.precheck import ALLOWED_IMPORTS, precheck
from acceptgate.gates.records import PART_JOINER, AttemptRecord, GateOutcome, MessageLog
from acceptgate.gates.visible import run_visible
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sources.base import (
    CandidateSource, ChatMessage, DrawContext, PublicTask, SourceError, SourceExhausted,
)

ARM = "hmix"
# Seed 001's wording (seed 000: 先用題目中的範例手動檢查你的函式): "in the task", not "in the docstring".
CHECK_BY_HAND = "First check your function by hand against the examples in the task."


@dataclass(frozen=True)
class HmixCaps:
    calls: int = 5
    tokens: int = 32_000
    wall_seconds: float = 900.0


def imports_line(allowed: tuple[str, ...] = ALLOWED_IMPORTS) -> str:
    return ("Complete the Python function above. You may import only these standard-library "
            f"modules: {', '.join(allowed)}.")


def first_message(task: PublicTask, allowed: tuple[str, ...] = ALLOWED_IMPORTS) -> list[tuple[str, str]]:
    """(author, text) parts of the first user message: task text, allowed imports, check by hand."""
    return [("task", task.prompt.rstrip("\n")), ("harness", imports_line(allowed)), ("harness", CHECK_BY_HAND)]


def _estimate_tokens(texts: list[str]) -> int:
    # Only when an endpoint reports no usage: ~4 characters a token keeps the cap meaningful.
    return sum(len(t) for t in texts) // 4 + 1


class _Round:
    """The conversation state carried from one round to the next."""

    def __init__(self, first: list[tuple[str, str]]) -> None:
        self.first = first
        self.prev_reply: str | None = None
        self.feedback: list[str] = []
        self.prev_signature: str | None = None
        self.repeats = 0

    def chat(self) -> list[tuple[str, str, list[tuple[str, str]]]]:
        """(role, purpose, parts) of each chat message of the next request."""
        chat = [("user", "generation", self.first)]
        if self.prev_reply is not None:
            chat.append(("assistant", "generation", [("model", self.prev_reply)]))
            chat.append(("user", "revision_feedback", [("harness", t) for t in self.feedback]))
        return chat


def _stop_reason(out: GateOutcome, caps: HmixCaps, elapsed: float) -> str | None:
    if out.attempts_used >= caps.calls:
        return f"cap reached: {caps.calls} calls"
    if out.tokens_used >= caps.tokens:
        return f"cap reached: {out.tokens_used} tokens (cap {caps.tokens})"
    if elapsed >= caps.wall_seconds:
        return f"cap reached: {elapsed:.1f} s (cap {caps.wall_seconds:g} s)"
    return None


def _send(log: MessageLog, state: _Round, attempt: int, elapsed: float, caps: HmixCaps, sent: bool) -> DrawContext:
    """The request of round ``attempt``, logged part by part. ``sent``: a model receives it; a replayed
    source does not (it hands out its next recorded sample whatever it is told), so its parts are
    recorded as never sent (role none, no request): the feedback reached no one."""
    messages = []
    for index, (role, purpose, parts) in enumerate(state.chat()):
        for part, (author, text) in enumerate(parts):
            if sent:
                log.add(attempt, author, purpose, text, role=role, request=attempt, chat_index=index, part=part)
            else:
                log.add(attempt, author, purpose, text, role="none", part=part)
        messages.append(ChatMessage(role, PART_JOINER.join(text for _, text in parts)))
    return DrawContext(arm=ARM, messages=tuple(messages), timeout_seconds=caps.wall_seconds - elapsed)


def run_hmix(task: PublicTask, source: CandidateSource, backend: Backend, *, caps: HmixCaps = HmixCaps(),
             limits: Limits = Limits(), allowed_imports: tuple[str, ...] = ALLOWED_IMPORTS,
             clock: Callable[[], float] = time.monotonic) -> GateOutcome:
    started = clock()
    out = GateOutcome(task.task_id, ARM, source.name, task.visible.spec_hash)
    log = MessageLog()
    state = _Round(first_message(task, allowed_imports))
    while True:
        stop = _stop_reason(out, caps, clock() - started)
        if stop:
            out.stop_reason = stop
            break
        attempt = out.attempts_used + 1
        context = _send(log, state, attempt, clock() - started, caps, source.sends_messages)
        try:
            cand = source.draw(task, attempt, context)
        except SourceExhausted as exc:
            out.stop_reason = f"source exhausted: {exc}"
            break
        except SourceError as exc:
            out.stop_reason = f"generator failed: {exc}"
            break
        reported = cand.usage.total
        out.tokens_used += reported or _estimate_tokens([m.content for m in context.messages] + [cand.raw])
        log.add(attempt, "model", "generation", cand.raw, role="assistant" if source.sends_messages else "none")
        rec = AttemptRecord(attempt, cand)
        out.attempts.append(rec)
        failure = _judge(task, rec, backend, limits, allowed_imports)
        if failure is None:
            rec.outcome = "delivered"
            out.decision = "delivered"
            out.stop_reason = f"attempt {attempt} passed the visible suite"
            log.add(attempt, "harness", "selection", f"attempt {attempt}: precheck ok, visible suite pass "
                    f"({rec.v_cases_passed}/{rec.v_cases_total} cases)")
            break
        rec.signature = failure.signature
        log.add(attempt, "harness", "selection", f"attempt {attempt}: {_judged(rec)}; signature {failure.signature}")
        if failure.signature == state.prev_signature:
            state.repeats += 1
            if state.repeats >= 2:
                out.stop_reason = "same failure signature as the previous round (second repeat)"
                break
            state.feedback = [failure.text, feedback.DIFFERENT_APPROACH]
        else:
            state.feedback = [failure.text]
        state.prev_signature = failure.signature
        state.prev_reply = cand.raw
    log.add(max(1, out.attempts_used), "harness", "stop_decision", f"{out.decision}: {out.stop_reason}")
    out.messages = log.messages
    out.wall_seconds = clock() - started
    return out


def _judged(rec: AttemptRecord) -> str:
    if rec.precheck != "ok":
        return f"precheck {rec.precheck}"
    return f"precheck ok, visible suite {rec.v_verdict} ({rec.v_cases_passed}/{rec.v_cases_total} cases)"


def _judge(task: PublicTask, rec: AttemptRecord, backend: Backend, limits: Limits,
           allowed_imports: tuple[str, ...]) -> feedback.Failure | None:
    """None when the candidate passes; else the failure to feed back."""
    pre = precheck(rec.candidate.program, task.entry_point, allowed_imports=allowed_imports)
    rec.precheck = pre.kind
    if not pre.ok:
        failure = feedback.from_precheck(pre)
        rec.v_detail = failure.text
        return failure
    result = run_visible(task, rec.candidate.program, backend, limits)
    rec.v_verdict = result.verdict
    rec.v_cases_passed, rec.v_cases_total = result.cases_passed, result.cases_total
    rec.exec_seconds = result.wall_seconds
    if result.passed:
        return None
    failure = feedback.from_execution(result)
    rec.v_detail = failure.text
    return failure
