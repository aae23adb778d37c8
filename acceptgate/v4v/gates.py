"""The six V4V gates, per task and verifier, each with a receipt (inputs, hashes, decisions, witnesses).

| gate | passes when |
| --- | --- |
| replay | every candidate's decision is valid and matches its construction label |
| repeatability | k >= 3 runs from reset give the same decision for every re-run candidate |
| provenance | every decision is bound to the candidate's sha256 (matching its text), the task, the spec and render hashes the run used, and the verifier version |
| input-label-consistency | no two candidates with the same normalised text carry opposite labels, and no visible input appears with two different expected values |
| trivial-baselines | the pool exposes always-accept (an illegal candidate), always-reject (a legal one) and gold-exact-match (a legal candidate unlike the gold), at most half the verifier's decisions are ERROR, and a *valid* decision of the verifier differs from each baseline's somewhere (an ERROR is never evidence of discrimination) |
| mutation | each mutation operator (drop a case, perturb an expected value, weaken the comparison) has a mutant that some candidate gets a different valid decision from; crashes do not count. Only for suite verifiers (``n/a`` otherwise, with the reason in the receipt: an external verifier is a black box). The mutation score is detected / all mutants |

A gate's receipt is plain JSON; its sha256 is stored beside it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from acceptgate.suites import literals
from acceptgate.suites.render import Harness
from acceptgate.v4v.pools import LEGAL, PoolCandidate
from acceptgate._util.hashing import sha256_text
from acceptgate.v4v.verifiers import FAIL, PASS, Decision, normalise

GATES = ("replay", "repeatability", "provenance", "input-label-consistency", "trivial-baselines", "mutation")
STATUSES = ("pass", "fail", "n/a")
MIN_K = 3
WITNESSES = 10  # witnesses kept per receipt


@dataclass(frozen=True)
class GateResult:
    task_id: str
    verifier: str
    gate: str
    status: str  # pass | fail | n/a
    reason: str
    receipt: str  # JSON

    @property
    def receipt_sha256(self) -> str:
        return sha256_text(self.receipt)


def _result(task_id: str, verifier: str, gate: str, ok: bool | None, reason: str, receipt: dict) -> GateResult:
    status = "n/a" if ok is None else ("pass" if ok else "fail")
    return GateResult(task_id, verifier, gate, status, reason, json.dumps(receipt, sort_keys=True, ensure_ascii=False))


@dataclass(frozen=True)
class DecisionRecord:
    """One decision with what it is bound to (the provenance gate reads these fields)."""

    task_id: str
    verifier: str
    candidate_id: str
    candidate_sha256: str | None
    round: int
    decision: Decision
    verifier_version: str | None
    spec_hash: str | None
    render_hash: str | None
    ran_spec_hash: str | None = None  # what the run the decision came from executed (suite verifiers)
    ran_candidate_sha256: str | None = None


def replay(task_id: str, verifier: str, pool: list[PoolCandidate], decisions: dict[str, Decision]) -> GateResult:
    wrong = [{"candidate": c.candidate_id, "label": c.label, "decision": decisions[c.candidate_id].label,
              "why": decisions[c.candidate_id].reason}
             for c in pool if not _matches(c, decisions[c.candidate_id])]
    receipt = {"candidates": [[c.candidate_id, c.sha256, c.label, decisions[c.candidate_id].label] for c in pool],
               "mismatches": len(wrong), "witnesses": wrong[:WITNESSES]}
    reason = "every decision matches its label" if not wrong else \
        f"{len(wrong)} of {len(pool)} decisions contradict their label (first: {wrong[0]['candidate']} " \
        f"{wrong[0]['label']} -> {wrong[0]['decision']})"
    return _result(task_id, verifier, "replay", not wrong and bool(pool), reason if pool else "empty pool", receipt)


def _matches(c: PoolCandidate, d: Decision) -> bool:
    return (c.label == LEGAL and d.outcome == PASS) or (c.label != LEGAL and d.outcome == FAIL)


def repeatability(task_id: str, verifier: str, rounds: dict[str, list[Decision]], k: int, scope: str) -> GateResult:
    """``rounds``: candidate id -> its decisions in round order (round 0 first), for the re-run candidates."""
    differing = [{"candidate": cid, "decisions": [d.label for d in ds]}
                 for cid, ds in sorted(rounds.items()) if len({d.label for d in ds}) > 1]
    short = [{"candidate": cid, "runs": len(ds)} for cid, ds in sorted(rounds.items()) if len(ds) < k]
    receipt = {"k": k, "scope": scope, "candidates": sorted(rounds), "differing": differing[:WITNESSES],
               "differing_count": len(differing), "short": short[:WITNESSES]}
    if k < MIN_K:
        return _result(task_id, verifier, "repeatability", False, f"k = {k} < {MIN_K} runs from reset", receipt)
    if not rounds:
        return _result(task_id, verifier, "repeatability", False, "no candidate was re-run", receipt)
    if short:
        return _result(task_id, verifier, "repeatability", False,
                       f"{len(short)} candidates have fewer than {k} runs", receipt)
    if differing:
        return _result(task_id, verifier, "repeatability", False,
                       f"{len(differing)} of {len(rounds)} candidates changed decision across {k} runs "
                       f"(first: {differing[0]['candidate']} {differing[0]['decisions']})", receipt)
    return _result(task_id, verifier, "repeatability", True,
                   f"{len(rounds)} candidates x {k} runs from reset: same decisions", receipt)


def provenance(task_id: str, verifier: str, pool: list[PoolCandidate], records: list[DecisionRecord],
               suite_verifier: bool) -> GateResult:
    by_id = {c.candidate_id: c for c in pool}
    unbound = []
    for r in records:
        c = by_id.get(r.candidate_id)
        missing = [f for f in ("candidate_sha256", "verifier_version", "spec_hash", "render_hash")
                   if not getattr(r, f)]
        if missing:
            unbound.append({"candidate": r.candidate_id, "round": r.round, "why": f"missing {', '.join(missing)}"})
        elif c is None or r.task_id != task_id:
            unbound.append({"candidate": r.candidate_id, "round": r.round, "why": "not a candidate of this task"})
        elif r.candidate_sha256 != sha256_text(c.source):
            unbound.append({"candidate": r.candidate_id, "round": r.round,
                            "why": "candidate_sha256 does not match the candidate's text"})
        elif suite_verifier and (r.ran_spec_hash != r.spec_hash or r.ran_candidate_sha256 != r.candidate_sha256):
            unbound.append({"candidate": r.candidate_id, "round": r.round,
                            "why": "the run it came from executed another spec or candidate"})
    decided = {r.candidate_id for r in records}
    undecided = [c.candidate_id for c in pool if c.candidate_id not in decided]
    receipt = {"decisions": len(records), "unbound": unbound[:WITNESSES], "unbound_count": len(unbound),
               "undecided": undecided[:WITNESSES],
               "bindings": sorted({(r.verifier_version or "", r.spec_hash or "", r.render_hash or "")
                                   for r in records})}
    if unbound or undecided:
        why = unbound[0]["why"] if unbound else "a candidate has no decision"
        first = unbound[0]["candidate"] if unbound else undecided[0]
        return _result(task_id, verifier, "provenance", False,
                       f"{len(unbound) + len(undecided)} decisions not bound ({first}: {why})", receipt)
    return _result(task_id, verifier, "provenance", True, f"{len(records)} decisions bound", receipt)


def input_label_consistency(task_id: str, verifier: str, pool: list[PoolCandidate],
                            visible: Harness | None) -> GateResult:
    labels: dict[str, set[str]] = defaultdict(set)
    members: dict[str, list[str]] = defaultdict(list)
    for c in pool:
        key = normalise(c.source)
        labels[key].add(c.label)
        members[key].append(c.candidate_id)
    clashes = [{"candidates": members[k], "labels": sorted(v)} for k, v in labels.items() if len(v) > 1]
    wants: dict[str, set[str]] = defaultdict(set)
    for args, kwargs, want in (visible.cases if visible is not None else []):
        wants[literals.canonical(args) + literals.canonical(kwargs)].add(literals.canonical(want))
    inputs = [{"input": k[:200], "expected": sorted(v)} for k, v in wants.items() if len(v) > 1]
    receipt = {"normalised_texts": len(labels), "candidate_clashes": clashes[:WITNESSES],
               "visible_inputs": len(wants), "input_clashes": inputs[:WITNESSES]}
    if clashes:
        return _result(task_id, verifier, "input-label-consistency", False,
                       f"the same normalised candidate carries opposite labels ({', '.join(clashes[0]['candidates'])})",
                       receipt)
    if inputs:
        return _result(task_id, verifier, "input-label-consistency", False,
                       f"a visible input has {len(inputs[0]['expected'])} different expected values", receipt)
    return _result(task_id, verifier, "input-label-consistency", True,
                   f"{len(labels)} normalised candidates and {len(wants)} visible inputs, no clash", receipt)


def trivial_baselines(task_id: str, verifier: str, pool: list[PoolCandidate], decisions: dict[str, Decision],
                      baselines: dict[str, dict[str, Decision]], gold_normalised: str) -> GateResult:
    """``baselines``: baseline name -> its decisions on this pool. Only the verifier's valid decisions
    (PASS/FAIL) can tell it apart from a baseline: an ERROR decides nothing."""
    exposed = {
        "always-accept": any(c.label != LEGAL for c in pool),
        "always-reject": any(c.label == LEGAL for c in pool),
        "gold-exact-match": any(c.label == LEGAL and normalise(c.source) != gold_normalised for c in pool),
    }
    differs = {name: next((c.candidate_id for c in pool if decisions[c.candidate_id].valid
                           and decisions[c.candidate_id].label != theirs[c.candidate_id].label), None)
               for name, theirs in sorted(baselines.items())}
    errors = sum(not decisions[c.candidate_id].valid for c in pool)
    receipt = {"pool_exposes": exposed, "verifier_differs_from": differs, "errors": errors,
               "pool": {"legal": sum(c.label == LEGAL for c in pool), "illegal": sum(c.label != LEGAL for c in pool)}}
    not_exposed = [name for name, ok in exposed.items() if not ok]
    if not_exposed:
        what = {"always-accept": "no illegal candidate", "always-reject": "no legal candidate",
                "gold-exact-match": "no legal candidate unlike the gold"}
        return _result(task_id, verifier, "trivial-baselines", False,
                       "the pool cannot expose " + "; ".join(f"{n} ({what[n]})" for n in not_exposed), receipt)
    if pool and 2 * errors > len(pool):
        return _result(task_id, verifier, "trivial-baselines", False,
                       f"mostly ERROR: {errors} of {len(pool)} decisions are errors, and an error is never evidence "
                       "that the verifier differs from a baseline", receipt)
    same = [name for name, witness in differs.items() if witness is None]
    if same:
        return _result(task_id, verifier, "trivial-baselines", False,
                       f"decides exactly like {', '.join(same)} on this pool", receipt)
    return _result(task_id, verifier, "trivial-baselines", True,
                   "the pool exposes every baseline and the verifier is none of them", receipt)


@dataclass(frozen=True)
class MutantOutcome:
    mutant_id: str
    operator: str
    detected: bool
    witness: str | None  # a candidate whose valid decision changed


def detect(pool: list[PoolCandidate], original: dict[str, Decision], mutated: dict[str, Decision]) -> str | None:
    for c in pool:
        a, b = original[c.candidate_id], mutated[c.candidate_id]
        if a.valid and b.valid and a.outcome != b.outcome:
            return c.candidate_id
    return None


EXTERNAL_NOT_MUTATED = ("not applicable: an external verifier is a black box whose checks acceptgate cannot "
                        "see or change, so it is not mutated; this gate is not counted as passed")


def mutation(task_id: str, verifier: str, outcomes: list[MutantOutcome] | None, operators: tuple[str, ...],
             why_not: str | None = None) -> GateResult:
    if outcomes is None:
        why = why_not or "no checks to mutate (not a suite verifier)"
        return _result(task_id, verifier, "mutation", None, why, {"mutants": [], "not_applicable": why})
    by_op: dict[str, list[MutantOutcome]] = defaultdict(list)
    for o in outcomes:
        by_op[o.operator].append(o)
    detected = sum(o.detected for o in outcomes)
    receipt = {"mutants": [[o.mutant_id, o.operator, o.detected, o.witness] for o in outcomes],
               "score": detected / len(outcomes) if outcomes else None,
               "per_operator": {op: [sum(o.detected for o in by_op[op]), len(by_op[op])] for op in operators}}
    missed = [op for op in operators if not any(o.detected for o in by_op[op])]
    if missed:
        return _result(task_id, verifier, "mutation", False,
                       f"no {'/'.join(missed)} mutant changes a valid decision ({detected}/{len(outcomes)} detected)",
                       receipt)
    return _result(task_id, verifier, "mutation", True, f"{detected}/{len(outcomes)} mutants detected", receipt)


def receipt_dict(result: GateResult) -> dict[str, Any]:
    return json.loads(result.receipt)
