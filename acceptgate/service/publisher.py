"""Moves decided records from the service's journal into the warehouse, then publishes the snapshot.

Runs in the background every few seconds (and once at shutdown). Each decision becomes one gate run
(``api-<client>-<decision id>``) with the same tables a gate flow writes -- gate_runs, gate_decisions,
gate_attempts, gate_messages -- validated by the same expectation suites, plus its ``deliveries`` row:
a delivered program is scored on the task's hidden suite here, after the decision was returned and
never in any response. Call latencies go to ``api_calls``. The warehouse is held only for these short
batches; a warehouse that another process holds is simply retried at the next tick.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from pathlib import Path
from typing import Any

import pandas as pd

from acceptgate.suites import suitespec
from acceptgate.store import expectations, warehouse
from acceptgate.gates.delivery import DeliveryRow
from acceptgate.gates import run as gate_run
from acceptgate.pipelines import ledger
from acceptgate.pipelines.families import SERVE_API
from acceptgate.suites.render import harness_for
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sandbox.executor import execute
from acceptgate.service.journal import Journal
from acceptgate.service.limits import Busy, ExecutionSlots

log = logging.getLogger("acceptgate.service")

CALL_COLUMNS = ["call_id", "client", "route", "method", "status", "latency_seconds", "called_at"]
COLUMNS = gate_run.GATE_STAGE_COLUMNS  # the gate stage's tables, as a gate flow writes them


def _run_of(row: dict[str, Any]) -> gate_run.GateRun:
    return gate_run.GateRun(run_id=row["run_id"], run_id_origin=row["run_id_origin"], source=row["source"],
                            source_sha256=row["source_sha256"], tasks_from=row["tasks_from"],
                            tasks_sha256=row["tasks_sha256"], task_count=int(row["task_count"]),
                            arms=tuple(row["arms"].split(",")), per_task=int(row["per_task"]),
                            backend=row["backend"], gauge=row.get("gauge", gate_run.GAUGE_SKIPPED),
                            certify=row.get("certify") or gate_run.CERTIFY_SKIPPED,
                            max_fpr_attack=row.get("max_fpr_attack"))


class Publisher:
    def __init__(self, journal: Journal, path: Path, backend: Backend, *, interval: float = 5.0,
                 limits: Limits = Limits(), batch: int = 50, slots: ExecutionSlots | None = None) -> None:
        self.journal, self.path, self.backend, self.slots = journal, Path(path), backend, slots
        self.interval, self.limits, self.batch = interval, limits, batch
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # one publish cycle at a time (timer and on-demand)
        self.published = 0
        self.last_error = ""

    def start(self) -> None:
        ledger.prepare(self.path)
        self._thread = threading.Thread(target=self._loop, name="acceptgate-publisher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=60)
        try:
            self.publish_pending()  # what was decided before shutdown still lands
        except Exception as exc:  # the journal keeps it; the next start publishes it
            log.error("publishing at shutdown failed (kept in the journal %s): %s", self.journal.path, exc)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.publish_pending()
            except Exception as exc:  # keep serving; the journal still has everything
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("publishing to %s failed, will retry: %s", self.path, self.last_error)

    def publish_pending(self) -> int:
        """Publish every unpublished decision and call; returns the decisions published."""
        with self._lock:
            written: list[str] = []
            while True:
                pending = self.journal.unpublished(self.batch)
                pending = [d for d in pending if d["decision_id"] not in written]
                if not pending:
                    break
                ids = self._publish_batch(pending)
                written += ids
                if len(ids) < len(pending):
                    break
            calls = self._publish_calls()
            if written or calls:
                # one snapshot copy for the whole batch; each decision's run attempt ends 'ok' with it
                run_ids = [r["run_id"] for r in self.journal.runs_of(written)]
                ledger.publish(self.path, run_ids)
            # "published" means analysts can see it: marked only once the snapshot has it (a crash
            # before this rewrites the same rows next time, which the per-run replace makes idempotent)
            self.journal.mark_published(written)
            self.published += len(written)
            return len(written)

    def _prepare(self, d: dict[str, Any]) -> tuple[gate_run.GateRun, dict[str, pd.DataFrame], pd.DataFrame]:
        record = json.loads(d["record_json"])
        run = _run_of(record["run"])
        expectations.validate(SERVE_API.table, run.frame(), stage="gate")
        for row in record.get("gate_decisions", []):  # a journal record from before certification was required
            row.setdefault("certification", gate_run.CERTIFY_SKIPPED)
        frames = {t: gate_run.gate_stage_frame(t, record.get(t, [])) for t in COLUMNS}
        delivery = gate_run.delivery_frames(run, [self._delivery(d, record)])["deliveries"]
        return run, frames, delivery

    def _publish_batch(self, pending: list[dict[str, Any]]) -> list[str]:
        """Validate a batch as a whole (one expectation pass per table), write it in one transaction.
        A record the checks refuse is kept in the journal with the reason and not retried; the rest land."""
        prepared, refused = [], []
        for d in pending:
            try:
                prepared.append((d, *self._prepare(d)))
            except expectations.ExpectationFailed as exc:
                refused.append((d, exc))
            except Busy:
                break  # every execution slot is taken by requests: the rest waits for the next tick
        if prepared:
            gate = {t: pd.concat([p[2][t] for p in prepared], ignore_index=True) for t in COLUMNS}
            deliveries = {"deliveries": pd.concat([p[3] for p in prepared], ignore_index=True)}
            try:
                expectations.validate_stage("gate", gate)
                expectations.validate_stage("deliveries", deliveries, related={"gate_decisions": gate["gate_decisions"]})
            except expectations.ExpectationFailed as exc:
                if len(prepared) > 1:  # find the record at fault: one by one
                    self._refuse(refused)
                    return [i for p in prepared for i in self._publish_batch([p[0]])]
                refused.append((prepared[0][0], exc))
                prepared = []
            if prepared:
                self._write(prepared, gate, deliveries["deliveries"])
        self._refuse(refused)
        return [p[0]["decision_id"] for p in prepared]

    def _refuse(self, refused) -> int:
        for d, exc in refused:
            self.journal.mark_published([d["decision_id"]], error=str(exc))
            log.error("decision %s not published: %s", d["decision_id"], exc)
        return 0

    def _write(self, prepared, gate: dict[str, pd.DataFrame], deliveries: pd.DataFrame) -> None:
        runs = pd.concat([p[1].frame() for p in prepared], ignore_index=True)
        runs["wall_seconds"] = [round(float(p[0]["latency_seconds"]), 3) for p in prepared]
        runs["started_at"] = [pd.Timestamp(p[0]["created_at"], unit="s", tz="UTC") for p in prepared]
        # the run ledger records each decision as a complete gate run (attempt, gate_runs row, stage rows)
        SERVE_API.write_runs(self.path, runs, {**gate, "deliveries": deliveries})

    def _delivery(self, d: dict[str, Any], record: dict[str, Any]) -> DeliveryRow:
        task = self.journal.task(d["client"], d["task_id"])
        hidden = suitespec.loads(task.hidden_json, source="hidden")
        program = record["delivered_program"]
        decision = record["gate_decisions"][0]
        result = None
        if program is not None:
            # GT scoring takes an execution slot like a request does (the service's cap is global)
            with self.slots.slot() if self.slots else contextlib.nullcontext():
                # the hidden suite: in blocks fixed before the run (no fail-fast oracle; executor.execute)
                result = execute(harness_for(hidden), program, self.backend, limits=self.limits)
        bad = None if result is None else result.first_failure
        return DeliveryRow(task_id=d["task_id"], arm=d["arm"], delivered=program is not None,
                           refused=program is None, attempts_used=int(decision["attempts_used"]),
                           delivered_attempt=decision["delivered_attempt"],
                           candidate_sha256=decision["delivered_sha256"], hidden_spec_hash=hidden.spec_hash,
                           gt_verdict=None if result is None else result.verdict,
                           gt_first_failure=None if bad is None else bad.index, gt_cases_total=len(hidden.cases),
                           false_delivery=result is not None and not result.passed,
                           gt_seconds=0.0 if result is None else round(result.wall_seconds, 4))

    def _publish_calls(self) -> int:
        calls = self.journal.unpublished_calls()
        if not calls:
            return 0
        frame = pd.DataFrame([{"call_id": c["id"], "client": c["client"], "route": c["route"], "method": c["method"],
                               "status": c["status"], "latency_seconds": c["latency_seconds"],
                               "called_at": pd.Timestamp(c["at"], unit="s", tz="UTC")} for c in calls],
                             columns=CALL_COLUMNS)
        expectations.validate("api_calls", frame, stage="service")
        with warehouse.transaction(self.path) as con:
            ids = [c["id"] for c in calls]  # a batch whose journal mark was lost is rewritten, not doubled
            con.execute(f"delete from api_calls where call_id in ({','.join('?' * len(ids))})", ids)
            warehouse._insert_frame(con, "api_calls", frame)
        self.journal.mark_calls_published([c["id"] for c in calls])
        return len(calls)
