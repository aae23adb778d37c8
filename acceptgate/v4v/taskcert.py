"""Task certification (seed 002, "six gates first, then the agent"): a task -- its pool, labelled by
construction, together with its source verifier GT -- is certified before any other verifier is
measured on it or any gate delivers with it.

Where GT's decision contradicts a construction label, nobody's word is taken: the candidate is tested
against the reference (``differential``) and the disagreement is stored as a finding with its witness.

| GT says | differential test | finding | action |
| --- | --- | --- | --- |
| PASS on an illegal candidate | differs from the reference on some input | gt-weak: GT lets a wrong program through | the task fails certification |
| PASS on an illegal candidate | equal on every input tried | construction-wrong: an equivalent program | excluded from the pool |
| FAIL on a legal candidate | differs | construction-wrong: the transformation changed behaviour | excluded |
| FAIL on a legal candidate | equal (the gold always is) | gt-wrong: GT rejects what the reference does | the task fails |
| no decision on a legal candidate (timeout, crash) | - | gt-undecided: GT cannot decide a right program | the task fails |
| no decision on an illegal candidate | - | undecidable: it runs past the limits (a starved run was retried with more wall time) | excluded |
| either | no input inside the domain to try | undetermined | the task fails |

No candidate is relabelled: an excluded one leaves the pool with its finding, and a task that fails
keeps every candidate, so GT's replay gate fails with the disagreement as its witness. The six gates
then run on GT against the remaining labels; the task is certified when all six pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.v4v import differential
from acceptgate.v4v.candidates import LEGAL, PoolCandidate, TaskMaterial
from acceptgate.v4v.verifiers import FAIL, PASS, Decision

FINDINGS = ("construction-wrong", "gt-weak", "gt-wrong", "gt-undecided", "undecidable", "undetermined")
ACTIONS = ("excluded", "task-fails")
GT_INPUTS = 20  # failing GT inputs replayed first in a differential test


@dataclass(frozen=True)
class Finding:
    task_id: str
    candidate_id: str
    kind: str
    recipe: str
    part: str
    label: str  # the construction label, unchanged
    gt_decision: str  # PASS | FAIL | ERROR:<kind>
    finding: str  # one of FINDINGS
    action: str  # excluded | task-fails
    reason: str
    witness: str  # JSON: the input, the reference's answer, the candidate's (null when none)
    inputs_tried: int  # inputs inside the domain the candidate was compared on


def _failing_gt_inputs(m: TaskMaterial, run) -> list[tuple[tuple, dict]]:
    h = m.harnesses["hidden"]
    failing = list(getattr(run, "failing", []) or [])[:GT_INPUTS]
    return [(tuple(h.cases[i][0]), dict(h.cases[i][1])) for i in failing if i < len(h.cases)]


def _finding(c: PoolCandidate, d: Decision, finding: str, action: str, reason: str,
             evidence: differential.Evidence | None) -> Finding:
    witness = json.dumps(evidence.witness if evidence else None, sort_keys=True, ensure_ascii=False)
    return Finding(c.task_id, c.candidate_id, c.kind, c.recipe, c.part, c.label, d.label, finding, action, reason,
                   witness, evidence.inputs_tried if evidence else 0)


def settle(m: TaskMaterial, c: PoolCandidate, d: Decision, run, backend: Backend, *, n: int,
           limits: Limits) -> Finding:
    """The finding for one candidate whose construction label GT's decision ``d`` contradicts."""
    legal = c.label == LEGAL
    if not d.valid and not legal:
        return _finding(c, d, "undecidable", "excluded",
                        f"a wrong program that runs past the execution's limits on GT ({d.reason}): no valid "
                        "decision can be made on it, so it certifies nothing", None)
    if not d.valid:
        return _finding(c, d, "gt-undecided", "task-fails", f"GT reached no decision on a right program: {d.reason}",
                        None)
    evidence = differential.compare(m, c, _failing_gt_inputs(m, run) if legal else [], backend, n=n, limits=limits)
    if evidence.inputs_tried == 0 and not evidence.differs:
        return _finding(c, d, "undetermined", "task-fails",
                        "no input inside the task's domain to compare the candidate with the reference on", evidence)
    if not legal and evidence.differs:
        return _finding(c, d, "gt-weak", "task-fails",
                        f"GT accepts a wrong program: it differs from the reference on a {evidence.witness['origin']}"
                        " that GT does not check", evidence)
    if not legal:
        return _finding(c, d, "construction-wrong", "excluded",
                        f"an equivalent program: equal to the reference on {evidence.inputs_tried} inputs "
                        "(differential test), so its illegal label was wrong", evidence)
    if evidence.differs:
        return _finding(c, d, "construction-wrong", "excluded",
                        f"the transformation changed behaviour: it differs from the reference on a "
                        f"{evidence.witness['origin']}, so its legal label was wrong", evidence)
    return _finding(c, d, "gt-wrong", "task-fails",
                    f"GT rejects a program equal to the reference on {evidence.inputs_tried} inputs ({d.reason})",
                    evidence)


def disagreements(pool: list[PoolCandidate], gt: dict[str, Decision]) -> list[PoolCandidate]:
    """The candidates labelled by construction whose label GT's decision contradicts (or leaves undecided)."""
    out = []
    for c in pool:
        d = gt.get(c.candidate_id)
        agrees = d is not None and ((c.label == LEGAL and d.outcome == PASS) or (c.label != LEGAL and d.outcome == FAIL))
        if c.labelled and not agrees:
            out.append(c)
    return out


def check_construction(m: TaskMaterial, pool: list[PoolCandidate], gt: dict[str, Decision], gt_runs: dict,
                       backend: Backend, *, n: int = differential.RANDOM_INPUTS,
                       limits: Limits = Limits()) -> tuple[list[PoolCandidate], list[Finding]]:
    """The pool without the candidates whose construction was shown wrong, and every finding.
    ``gt``: candidate id -> GT's decision (round 0); ``gt_runs``: candidate id -> its run on GT."""
    findings = [settle(m, c, gt[c.candidate_id], gt_runs.get(c.candidate_id), backend, n=n, limits=limits)
                for c in disagreements(pool, gt)]
    return kept_after(pool, findings), findings


def kept_after(pool: list[PoolCandidate], findings: list[Finding]) -> list[PoolCandidate]:
    """The pool without the candidates a finding excluded (nothing else changes)."""
    excluded = {f.candidate_id for f in findings if f.action == "excluded"}
    return [c for c in pool if c.candidate_id not in excluded]


@dataclass(frozen=True)
class TaskCertificate:
    """One task's certification: bound to its suites and the pool its reference builds (``pool_key``)."""

    task_id: str
    certified: bool
    failed_gates: tuple[str, ...]
    reason: str
    visible_spec_hash: str | None
    hidden_spec_hash: str
    reference_sha256: str
    pool_key: str
    pool_sha256: str  # the labelled candidates certified (published and held-out), ids, hashes and labels
    candidates: int
    held_out: int
    findings: int
    excluded: int


def certificate(m: TaskMaterial, pool: list[PoolCandidate], gt_gates: list, findings: list[Finding],
                pool_sha256: str) -> TaskCertificate:
    """Certified when GT passes all six gates on the task's labelled candidates."""
    failed = tuple(g.gate for g in gt_gates if g.status != "pass")
    mine = [f for f in findings if f.task_id == m.task_id]
    if failed:
        first = next(g for g in gt_gates if g.status != "pass")
        reason = f"GT fails {', '.join(failed)}: {first.reason}"
        blocking = [f for f in mine if f.action == "task-fails"]
        if blocking:
            reason += f"; finding {blocking[0].finding} on {blocking[0].candidate_id}: {blocking[0].reason}"
    else:
        reason = "GT passes the six gates on the construction labels"
    labelled = [c for c in pool if c.labelled]
    return TaskCertificate(m.task_id, not failed, failed, reason,
                           m.suites["visible"].spec_hash if "visible" in m.suites else None,
                           m.suites["hidden"].spec_hash, m.gold_sha256, m.pool_key, pool_sha256, len(labelled),
                           sum(c.part != "published" for c in labelled), len(mine),
                           sum(f.action == "excluded" for f in mine))
