"""One decision of the service: a submitted candidate, or a gated generation, through the real gates.

A submission is CONFORM with a single draw whose candidate the assistant wrote; a generation is
CONFORM or H-MIX with a live OpenAI-compatible model. Either way the gate sees only the task's
``PublicTask`` (statement, entry point, visible suite). The returned feedback is the visible suite's
first failure in the seed's format (``AssertionError: args=… got=… want=…``) and is recorded as a
harness-written ``revision_feedback`` message, so the leak audit scans exactly what the assistant saw.
Every message, attempt and decision is kept as warehouse rows (``record``) for the publisher.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from acceptgate.suites import suitespec
from acceptgate._util.errors import InvalidInput
from acceptgate.gates import run as gate_run
from acceptgate.gates import run_gate
from acceptgate.gates.conform import run_conform
from acceptgate.gates.records import MessageLog
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sources.base import Candidate, CandidateSource, DrawContext, PublicTask, SourceExhausted
from acceptgate.datasets.task import HIDDEN, VISIBLE, Task, WrongSample

SUBMIT = "submission"
GENERATE = "generation"
DECISION_WORDS = {"delivered": "deliver", "refused": "refuse"}


class SubmittedSource(CandidateSource):
    """The assistant's own candidate as a one-draw source (its author is the model)."""

    def __init__(self, client: str, program: str) -> None:
        self.name = f"api:{client}"
        self._program = program

    def draw(self, task: PublicTask, attempt: int, context: DrawContext) -> Candidate:
        if attempt != 1:
            raise SourceExhausted("a submission is one candidate")
        return Candidate(task_id=task.task_id, program=self._program, origin=self.name, attempt=1,
                         arm=context.arm, raw=self._program, extraction="submitted")

    def available(self, task_id: str) -> int | None:
        return 1


@dataclass(frozen=True)
class ServiceTask:
    client: str
    task: Task
    gauge: str = gate_run.GAUGE_SKIPPED  # checked: its suites passed the gauge at registration
    certification: str = gate_run.CERTIFY_SKIPPED  # the certificate's id ("svc-..."), or skipped
    v_fpr_h: float | None = None  # V's FPR on the attacks of the task's certified pool

    @property
    def public(self) -> PublicTask:
        return PublicTask.from_task(self.task)


def task_from_json(task_id: str, statement: str, entry_point: str, visible_json: str, hidden_json: str,
                   reference: str = "", wrong_json: str = "[]") -> Task:
    visible = suitespec.loads(visible_json, source="visible")
    hidden = suitespec.loads(hidden_json, source="hidden")
    wrong = [WrongSample(w["label"], w["program"]) for w in json.loads(wrong_json or "[]")]
    return Task(task_id=task_id, dataset="api", entry_point=entry_point, prompt=statement, reference=reference,
                suites={VISIBLE: visible, HIDDEN: hidden}, wrong_samples=wrong)


def gauge_task(task: Task, backend: Backend, limits: Limits) -> None:
    """The registration's gauge: the reference passes both suites and every known wrong sample (the
    client's, else the generic ones written from the signature) is blocked by each. InvalidInput
    naming the task otherwise."""
    from acceptgate.scoring import gauge
    if not task.reference.strip():
        raise InvalidInput(f"task {task.task_id}: a reference solution is required to gauge its suites before "
                           f"use (or \"gauge\": false to register without the check, stored with every decision)",
                           field="reference")
    try:
        gauge.require([task], backend, store=None, limits=limits)
    except InvalidInput as exc:
        raise InvalidInput(exc.message.replace(gauge.NO_GAUGE_HINT, '"gauge": false registers without this check'),
                           field="reference") from None


def certify_task(task: Task, backend: Backend, limits: Limits) -> dict[str, Any]:
    """The registration's task certification (seed 002: six gates first): the task's pool, labelled by
    construction from its reference, with a held-out part from a fresh secret seed, decided by its
    hidden suite GT through the six gates, and V measured on it. InvalidInput naming the task when it
    has no reference or fails; else the certificate as the journal keeps it."""
    from acceptgate.v4v import certify as v4v
    from acceptgate.v4v import heldout
    from acceptgate.v4v.candidates import TaskMaterial

    if not task.reference.strip():
        raise InvalidInput(f"task {task.task_id}: a reference solution is required to certify the task before use "
                           "(its pool is built from it); a service started with --no-certify registers tasks "
                           "without certification", field="reference")
    material = TaskMaterial.from_suites(task.task_id, task.entry_point, task.prompt, task.reference,
                                        dict(task.suites), [])
    seed = heldout.new_seed()
    cert = v4v.certify([material], backend, v4v.Settings(verifiers=("GT", "V"), heldout_seed=seed, workers=1,
                                                           limits=limits))
    c = cert.certificates[0]
    if not c.certified:
        raise InvalidInput(f"task {task.task_id} failed certification: {c.reason}", field="hidden")
    v = next((x.metrics[0] for x in cert.verdicts if x.verifier == "V"), None)
    return {"id": "svc-" + c.pool_sha256[:16], "pool_key": c.pool_key, "pool_sha256": c.pool_sha256,
            "heldout_seed": seed, "findings": c.findings, "v_fpr_h": v.fpr_attack if v else None}


def new_decision_id() -> str:
    # time-ordered, then random: sortable in listings, unguessable across clients
    return f"{int(time.time() * 1000):012x}{secrets.token_hex(6)}"


def _rows(frame) -> list[dict[str, Any]]:
    return [{k: (None if _is_na(v) else v) for k, v in r.items()} for r in frame.to_dict("records")]


def _is_na(v: Any) -> bool:
    try:
        return v is None or (v != v)  # NaN / pd.NA
    except TypeError:  # pd.NA compares ambiguously
        return True


def decide(st: ServiceTask, kind: str, arm: str, source: CandidateSource, backend: Backend, *,
           backend_name: str, limits: Limits) -> dict[str, Any]:
    """Run the gate, and return the decision with everything the journal and warehouse keep."""
    started = time.monotonic()
    if kind == SUBMIT:  # the assistant's one candidate: CONFORM with a single draw
        outcome = run_conform(st.public, source, backend, max_draws=1, limits=limits)
    else:
        outcome = run_gate(arm, st.public, source, backend, limits=limits)
    feedback = [a.v_detail for a in outcome.attempts if a.v_detail]
    if outcome.decision == "refused" and feedback:
        # what the caller is told, recorded under the harness's name for the leak audit
        log = MessageLog()
        log.messages = list(outcome.messages)
        log.add(max(1, outcome.attempts_used), "harness", "revision_feedback", feedback[-1])
        outcome.messages = log.messages
    decision_id = new_decision_id()
    outcome.certification, outcome.v_fpr_h = st.certification, st.v_fpr_h
    run = gate_run.make_run(source=source.name, tasks=[st.task], tasks_from=f"api:{st.client}", arms=[arm],
                            per_task=max(1, outcome.attempts_used), backend=backend_name,
                            run_id=f"api-{st.client}-{decision_id}", run_id_origin="user", gauge=st.gauge,
                            certify=gate_run.CERTIFY_SKIPPED if st.certification == gate_run.CERTIFY_SKIPPED
                            else gate_run.CERTIFY_CHECKED)
    frames = gate_run.gate_frames(run, [outcome])
    last = outcome.attempts[-1] if outcome.attempts else None
    return {
        "decision_id": decision_id, "client": st.client, "task_id": st.task.task_id, "kind": kind, "arm": arm,
        "decision": DECISION_WORDS[outcome.decision],
        "verdict": last.v_verdict if last else "not-run",
        "cases_passed": last.v_cases_passed if last else None,
        "cases_total": last.v_cases_total if last else None,
        "feedback": feedback[-1] if outcome.decision == "refused" and feedback else None,
        "created_at": time.time(), "latency_seconds": round(time.monotonic() - started, 4),
        "record": {"run": _rows(run.frame())[0],
                   "gate_decisions": _rows(frames["gate_decisions"]),
                   "gate_attempts": _rows(frames["gate_attempts"]),
                   "gate_messages": _rows(frames["gate_messages"]),
                   "stop_reason": outcome.stop_reason,
                   "attempts": [{"attempt": a.attempt, "verdict": a.v_verdict, "cases_passed": a.v_cases_passed,
                                 "cases_total": a.v_cases_total, "feedback": a.v_detail or None,
                                 "candidate_sha256": a.candidate.sha256} for a in outcome.attempts],
                   "delivered_program": outcome.delivered.program if outcome.delivered else None},
    }
