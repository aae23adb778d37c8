"""CONFORM: draw candidates in sequence, run the visible suite on each, deliver the first that passes.

At most ``max_draws`` (5) draws; none passing -> refuse. A source that runs out of samples earlier,
or a model endpoint that fails after its retries, ends the task as a refusal too, with that reason.
Each draw sends the same generation message (``gates.generation``): CONFORM resamples, it does not
converse.
"""

from __future__ import annotations

import time

from acceptgate.gates import generation
from acceptgate.gates.feedback import from_execution
from acceptgate.gates.records import AttemptRecord, GateOutcome, MessageLog
from acceptgate.gates.visible import run_visible
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sources.base import CandidateSource, PublicTask, SourceError, SourceExhausted

ARM = "conform"
MAX_DRAWS = 5


def run_conform(task: PublicTask, source: CandidateSource, backend: Backend, *,
                max_draws: int = MAX_DRAWS, limits: Limits = Limits()) -> GateOutcome:
    started = time.monotonic()
    out = GateOutcome(task.task_id, ARM, source.name, task.visible.spec_hash)
    log = MessageLog()
    for attempt in range(1, max_draws + 1):
        try:
            cand = generation.draw(log, source, task, attempt, ARM)
        except SourceExhausted:
            out.stop_reason = f"source exhausted after {attempt - 1} draws"
            break
        except SourceError as exc:
            out.stop_reason = f"generator failed: {exc}"
            break
        result = run_visible(task, cand.program, backend, limits)
        rec = AttemptRecord(attempt, cand, v_verdict=result.verdict, v_cases_passed=result.cases_passed,
                            v_cases_total=result.cases_total,
                            v_detail="" if result.passed else from_execution(result).text,
                            exec_seconds=result.wall_seconds)
        out.attempts.append(rec)
        out.tokens_used += cand.usage.total
        log.add(attempt, "harness", "selection",
                f"attempt {attempt}: visible suite {result.verdict} "
                f"({result.cases_passed}/{result.cases_total} cases)")
        if result.passed:
            rec.outcome = "delivered"
            out.decision = "delivered"
            out.stop_reason = f"attempt {attempt} passed the visible suite"
            break
    else:
        out.stop_reason = f"no candidate passed the visible suite in {max_draws} draws"
    log.add(max(1, out.attempts_used), "harness", "stop_decision", f"{out.decision}: {out.stop_reason}")
    out.messages = log.messages
    out.wall_seconds = time.monotonic() - started
    return out
