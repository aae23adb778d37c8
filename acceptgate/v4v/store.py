"""A certification as warehouse rows: the run, stage 'pools' and stage 'certification'.

This module builds the frames; the run ledger writes them with the certification's family
(``acceptgate.pipelines.families.CERTIFY``): each stage validated against ``expectations/<table>.json``
before any write, then its rows for the run id replaced in one transaction. The run id is derived from
the inputs' and settings' hashes unless the user names one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from acceptgate._util.hashing import sha256_text
from acceptgate import __version__
from acceptgate._util import runids
from acceptgate.v4v.certify import Certification, inputs_sha256

PIPELINE = "certify/2"  # /2: labels by construction only, findings, task certificates, held-out part
RUN_COLUMNS = ["run_id", "run_id_origin", "pipeline", "acceptgate_version", "suites_from", "dataset_from",
               "samples_from", "inputs_sha256", "settings", "task_count", "verifiers", "k", "backend",
               "heldout_seed_sha256"]


@dataclass(frozen=True)
class CertifyRun:
    run_id: str
    run_id_origin: str
    suites_from: str
    dataset_from: str
    samples_from: str | None
    inputs_sha256: str
    settings: str
    task_count: int
    verifiers: tuple[str, ...]
    k: int
    backend: str
    heldout_seed_sha256: str | None = None  # committed before the run; the seed is published at its end

    def frame(self) -> pd.DataFrame:
        row = {"run_id": self.run_id, "run_id_origin": self.run_id_origin, "pipeline": PIPELINE,
               "acceptgate_version": __version__, "suites_from": self.suites_from,
               "dataset_from": self.dataset_from, "samples_from": self.samples_from,
               "inputs_sha256": self.inputs_sha256, "settings": self.settings, "task_count": self.task_count,
               "verifiers": ",".join(self.verifiers), "k": self.k, "backend": self.backend,
               "heldout_seed_sha256": self.heldout_seed_sha256}
        return pd.DataFrame([row], columns=RUN_COLUMNS)


def make_run(materials, settings, *, suites_from: str, dataset_from: str, samples_from: str | None,
             backend: str, run_id: str, run_id_origin: str = "user", digest: str | None = None) -> CertifyRun:
    """The run's row: ``run_id`` is the user's (checked) or one derived from the materials and settings
    (``CertifyRequest.derive_run_id``, origin 'derived'); ``digest``: ``inputs_sha256(materials)`` if known."""
    digest = digest or inputs_sha256(materials)
    text = json.dumps(settings.key(), sort_keys=True)
    run_id, origin = runids.check_run_id(run_id) if run_id_origin == "user" else run_id, run_id_origin
    from acceptgate.v4v import heldout

    seed_hash = heldout.seed_sha256(settings.heldout_seed) if settings.heldout_seed else None
    return CertifyRun(run_id, origin, suites_from, dataset_from, samples_from, digest, text, len(materials),
                      tuple(settings.verifiers), settings.k, backend, seed_hash)


# -- frames ---------------------------------------------------------------------------------------------

def _frame(rows: list[dict[str, Any]], columns: list[str], ints: tuple[str, ...] = ()) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns).astype({c: "Int64" for c in ints})


CANDIDATE_COLUMNS = ["run_id", "task_id", "candidate_id", "kind", "class", "recipe", "label", "origin",
                     "candidate_sha256", "source", "part"]
FINDING_COLUMNS = ["run_id", "task_id", "candidate_id", "kind", "recipe", "part", "label", "gt_decision", "finding",
                   "action", "reason", "witness", "inputs_tried"]


def candidate_frame(run: CertifyRun, cert: Certification) -> pd.DataFrame:
    """Every proposed candidate (an excluded one too: its finding names it), with its construction label."""
    cands = [{"run_id": run.run_id, "task_id": c.task_id, "candidate_id": c.candidate_id, "kind": c.kind,
              "class": c.cls, "recipe": c.recipe, "label": c.label, "origin": c.origin,
              "candidate_sha256": c.sha256, "source": c.source, "part": c.part}
             for pool in sorted(cert.proposed, key=lambda p: p.task_id) for c in pool.candidates]
    return _frame(cands, CANDIDATE_COLUMNS)


def pool_frames(run: CertifyRun, cert: Certification) -> dict[str, pd.DataFrame]:
    findings = [{"run_id": run.run_id, **f.__dict__} for f in cert.findings]
    execs = []
    for (tid, sha, suite, rnd), r in sorted(cert.runs.items()):
        outputs = r.outputs_json()
        execs.append({"run_id": run.run_id, "task_id": tid, "candidate_sha256": sha, "suite": suite, "round": rnd,
                      "spec_hash": r.spec_hash, "render_hash": r.render_hash,
                      "cases_total": len(cert_harness(cert, tid, suite).cases), "cases_answered": len(r.statuses),
                      "cases_failing": len(r.failing), "load_error": r.load_error,
                      "broken": f"{r.broken[0]}: {r.broken[1]}" if r.broken else None,
                      "outputs_json": outputs if rnd == 0 else None, "outputs_sha256": sha256_text(outputs),
                      "wall_seconds": round(r.wall_seconds, 4)})
    return {
        "v4v_candidates": candidate_frame(run, cert),
        "v4v_findings": _frame(findings, FINDING_COLUMNS, ints=("inputs_tried",)),
        "v4v_executions": _frame(execs, ["run_id", "task_id", "candidate_sha256", "suite", "round", "spec_hash",
                                         "render_hash", "cases_total", "cases_answered", "cases_failing",
                                         "load_error", "broken", "outputs_json", "outputs_sha256",
                                         "wall_seconds"], ints=("round", "cases_total", "cases_answered",
                                                                "cases_failing")),
    }


def cert_harness(cert: Certification, task_id: str, suite: str):
    cache = cert.__dict__.setdefault("_materials_by_id", {m.task_id: m for m in cert.materials})
    return cache[task_id].harnesses[suite]


def certification_frames(run: CertifyRun, cert: Certification) -> dict[str, pd.DataFrame]:
    rid = run.run_id
    decisions = [{"run_id": rid, "task_id": r.task_id, "verifier": r.verifier, "candidate_id": r.candidate_id,
                  "round": r.round, "decision": r.decision.outcome, "error_kind": r.decision.error_kind,
                  "reason": r.decision.reason[:500], "by_exception": r.decision.by_exception,
                  "candidate_sha256": r.candidate_sha256, "verifier_version": r.verifier_version,
                  "spec_hash": r.spec_hash, "render_hash": r.render_hash} for r in cert.records]
    mutants, gate_rows, task_rows = [], [], []
    for v in cert.verdicts:
        mutants += [{"run_id": rid, "task_id": v.task_id, "verifier": v.verifier, "mutant_id": mo.mutant_id,
                     "operator": mo.operator, "detected": mo.detected, "witness": mo.witness} for mo in v.mutants]
        gate_rows += [{"run_id": rid, "task_id": g.task_id, "verifier": g.verifier, "gate": g.gate,
                       "status": g.status, "reason": g.reason, "receipt": g.receipt,
                       "receipt_sha256": g.receipt_sha256} for g in v.gates]
        for tm in v.metrics.values():
            task_rows.append({"run_id": rid, "task_id": tm.task_id, "verifier": tm.verifier, "round": tm.round,
                              "legal": tm.legal, "illegal": tm.illegal, "attacks": tm.attacks,
                              "legal_accepted": tm.legal_accepted, "illegal_rejected": tm.illegal_rejected,
                              "attacks_accepted": tm.attacks_accepted, "tpr": tm.tpr, "tnr": tm.tnr,
                              "ba_norm": tm.ba_norm, "fpr_attack": tm.fpr_attack,
                              "errors_crash": tm.errors["crash"], "errors_timeout": tm.errors["timeout"],
                              "errors_malformed": tm.errors["malformed"],
                              "fails_by_exception": tm.fails_by_exception, "all_reject": tm.all_reject,
                              "all_accept": tm.all_accept, "gold_only": tm.gold_only,
                              "legal_rejected": tm.legal_rejected, "copied_decisions": tm.copied,
                              "heldout_legal": tm.heldout_legal, "heldout_illegal": tm.heldout_illegal,
                              "heldout_legal_accepted": tm.heldout_legal_accepted,
                              "heldout_illegal_rejected": tm.heldout_illegal_rejected, "samples": tm.samples,
                              "samples_accepted": tm.samples_accepted})
    summary = []
    for rep in cert.reports:
        s = rep.summary
        summary.append({"run_id": rid, "verifier": rep.name, "family": rep.family, "tasks": s.tasks,
                        "gates_passed": rep.gates_passed, "gates_applicable": rep.gates_applicable,
                        "failed_gates": json.dumps(rep.failed_gates, sort_keys=True), "tpr": s.tpr, "tnr": s.tnr,
                        "ba_norm": s.ba_norm, "fpr_attack": s.fpr_attack, "mutation_score": rep.mutation_score,
                        "median_round": s.round, "rounds": s.rounds, "round_ba": json.dumps(s.round_ba),
                        "passes": s.passes, "fails": s.fails, "errors_crash": s.errors.get("crash", 0),
                        "errors_timeout": s.errors.get("timeout", 0),
                        "errors_malformed": s.errors.get("malformed", 0),
                        "fails_by_exception": s.fails_by_exception, "diagnosis": s.diagnosis,
                        "copied_decisions": s.copied, "median_round_basis": s.basis,
                        "false_rejections": s.false_rejections,
                        "all_reject_false_rejections": s.all_reject_false_rejections,
                        "all_reject_share": s.all_reject_share, "role": rep.role, "heldout_tpr": s.heldout_tpr,
                        "heldout_tnr": s.heldout_tnr, "heldout_ba_norm": s.heldout_ba_norm, "samples": s.samples,
                        "samples_accepted": s.samples_accepted})
    return {**task_certificate_frames(run, cert),
        "v4v_decisions": _frame(decisions, ["run_id", "task_id", "verifier", "candidate_id", "round", "decision",
                                            "error_kind", "reason", "by_exception", "candidate_sha256",
                                            "verifier_version", "spec_hash", "render_hash"], ints=("round",)),
        "v4v_mutants": _frame(mutants, ["run_id", "task_id", "verifier", "mutant_id", "operator", "detected",
                                        "witness"]),
        "v4v_gates": _frame(gate_rows, ["run_id", "task_id", "verifier", "gate", "status", "reason", "receipt",
                                        "receipt_sha256"]),
        "v4v_task_metrics": _frame(task_rows, list(task_rows[0]) if task_rows else TASK_METRIC_COLUMNS,
                                   ints=("round",)),
        "v4v_verifier_summary": _frame(summary, list(summary[0]) if summary else SUMMARY_COLUMNS,
                                       ints=("median_round", "rounds")),
    }


CERTIFICATE_COLUMNS = ["run_id", "task_id", "certified", "failed_gates", "reason", "visible_spec_hash",
                       "hidden_spec_hash", "reference_sha256", "pool_key", "pool_sha256", "candidates", "held_out",
                       "findings", "excluded", "v_tpr", "v_tnr", "v_ba_norm", "v_fpr_h"]
MEASURED_GATE_VERIFIER = "V"  # whose measured figures each certificate carries: the verifier the gates decide with


def task_certificate_frames(run: CertifyRun, cert: Certification) -> dict[str, pd.DataFrame]:
    """One row per task: its certificate (GT's six gates on the construction labels), bound to its suites and
    pool, with V's figures measured on it (round 0) for the gate's policy; and the run's held-out seed,
    published now that the run is over."""
    v_metrics = {v.task_id: v.metrics.get(0) for v in cert.verdicts if v.verifier == MEASURED_GATE_VERIFIER}
    rows = []
    for c in cert.certificates:
        tm = v_metrics.get(c.task_id)
        rows.append({"run_id": run.run_id, "task_id": c.task_id, "certified": c.certified,
                     "failed_gates": json.dumps(list(c.failed_gates)), "reason": c.reason[:2000],
                     "visible_spec_hash": c.visible_spec_hash, "hidden_spec_hash": c.hidden_spec_hash,
                     "reference_sha256": c.reference_sha256, "pool_key": c.pool_key, "pool_sha256": c.pool_sha256,
                     "candidates": c.candidates, "held_out": c.held_out, "findings": c.findings,
                     "excluded": c.excluded, "v_tpr": tm.tpr if tm else None, "v_tnr": tm.tnr if tm else None,
                     "v_ba_norm": tm.ba_norm if tm else None, "v_fpr_h": tm.fpr_attack if tm else None})
    seed = cert.settings.heldout_seed
    held = sum(c.held_out for c in cert.certificates)
    heldout_rows = [{"run_id": run.run_id, "heldout_seed": seed, "heldout_seed_sha256": run.heldout_seed_sha256,
                     "candidates": held}] if seed else []
    return {"v4v_task_certificates": _frame(rows, CERTIFICATE_COLUMNS, ints=("candidates", "held_out", "findings",
                                                                            "excluded")),
            "v4v_heldout": _frame(heldout_rows, ["run_id", "heldout_seed", "heldout_seed_sha256", "candidates"],
                                  ints=("candidates",))}


TASK_METRIC_COLUMNS = ["run_id", "task_id", "verifier", "round", "legal", "illegal", "attacks", "legal_accepted",
                       "illegal_rejected", "attacks_accepted", "tpr", "tnr", "ba_norm", "fpr_attack", "errors_crash",
                       "errors_timeout", "errors_malformed", "fails_by_exception", "all_reject", "all_accept",
                       "gold_only", "legal_rejected", "copied_decisions", "heldout_legal", "heldout_illegal",
                       "heldout_legal_accepted", "heldout_illegal_rejected", "samples", "samples_accepted"]
SUMMARY_COLUMNS = ["run_id", "verifier", "family", "tasks", "gates_passed", "gates_applicable", "failed_gates", "tpr",
                   "tnr", "ba_norm", "fpr_attack", "mutation_score", "median_round", "rounds", "round_ba", "passes",
                   "fails", "errors_crash", "errors_timeout", "errors_malformed", "fails_by_exception", "diagnosis",
                   "copied_decisions", "median_round_basis", "false_rejections", "all_reject_false_rejections",
                   "all_reject_share", "role", "heldout_tpr", "heldout_tnr", "heldout_ba_norm", "samples",
                   "samples_accepted"]
