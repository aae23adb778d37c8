"""Delivery scoring: each delivered program against the hidden GT suite, and false-delivery rates.

This is the only place gate outcomes meet the hidden suite, and it runs after every gate decision is
final. False delivery = delivered and fails GT. Rates are given over *all* tasks (a refusal is in the
denominator) and over *delivered* tasks, and every rate's name says which (SYSTEM.md section 3).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Mapping

from acceptgate.scoring import profiles
from acceptgate.gates.records import GateOutcome
from acceptgate.suites.render import harness_for
from acceptgate.sandbox.backend import Backend, Limits
from acceptgate.sandbox.executor import run_jobs
from acceptgate.suites.suitespec import SuiteSpec


@dataclass(frozen=True)
class DeliveryRow:
    task_id: str
    arm: str
    delivered: bool
    refused: bool
    attempts_used: int
    delivered_attempt: int | None
    candidate_sha256: str | None
    hidden_spec_hash: str
    gt_verdict: str | None  # executor verdict on GT; None when nothing was delivered
    gt_first_failure: int | None  # index of the first failing GT case (fail-fast scoring)
    gt_cases_total: int
    false_delivery: bool
    gt_seconds: float = 0.0
    gt_profile: str = profiles.DEFAULT  # the scoring profile GT was run under (acceptgate.scoring.profiles)

    def as_row(self) -> dict:
        return asdict(self)


def score_deliveries(outcomes: Iterable[GateOutcome], hidden: Mapping[str, SuiteSpec], backend: Backend, *,
                     limits: Limits = Limits(), workers: int = 2,
                     progress: Callable[[int, int], None] | None = None, profile: str = profiles.DEFAULT,
                     reference_seconds: Mapping[str, list[float]] | None = None) -> list[DeliveryRow]:
    """Run every delivered program on its task's GT suite (each distinct program once).

    ``profile`` sets each GT suite's limits and float rule as ``acceptgate score`` does; ``evalplus``
    needs the reference's time per GT case of every delivered task (``reference_seconds``).
    """
    outcomes = list(outcomes)
    missing = sorted({o.task_id for o in outcomes} - set(hidden))
    if missing:
        raise KeyError(f"no hidden suite for {len(missing)} tasks: {', '.join(missing[:5])}")
    profiles.check(profile)
    harnesses = {}
    jobs, keys = [], {}
    for o in outcomes:
        cand = o.delivered
        if cand is None:
            continue
        key = (o.task_id, cand.sha256)
        if key in keys:
            continue
        if o.task_id not in harnesses:
            how = profiles.scoring(profile, hidden[o.task_id], limits, (reference_seconds or {}).get(o.task_id))
            harnesses[o.task_id] = (harness_for(how.spec), how.limits)
        keys[key] = len(jobs)
        jobs.append((*harnesses[o.task_id], cand.program))
    # The hidden suite: in blocks fixed before the run (no fail-fast oracle; executor.execute)
    results = run_jobs([(h, src, lim) for h, lim, src in jobs], backend, workers=workers,
                       progress=progress)
    rows = []
    for o in outcomes:
        spec = hidden[o.task_id]
        cand = o.delivered
        res = None if cand is None else results[keys[(o.task_id, cand.sha256)]]
        bad = None if res is None else res.first_failure
        rows.append(DeliveryRow(
            task_id=o.task_id, arm=o.arm, delivered=cand is not None, refused=cand is None,
            attempts_used=o.attempts_used, delivered_attempt=o.delivered_attempt,
            candidate_sha256=None if cand is None else cand.sha256, hidden_spec_hash=spec.spec_hash,
            gt_verdict=None if res is None else res.verdict,
            gt_first_failure=None if bad is None else bad.index, gt_cases_total=len(spec.cases),
            false_delivery=res is not None and not res.passed,
            gt_seconds=0.0 if res is None else round(res.wall_seconds, 4), gt_profile=profile))
    return rows


@dataclass(frozen=True)
class ArmSummary:
    arm: str
    tasks: int
    delivered: int
    refused: int
    false_deliveries: int

    @property
    def false_rate_over_all_tasks(self) -> float:
        return self.false_deliveries / self.tasks if self.tasks else 0.0

    @property
    def false_rate_over_delivered(self) -> float:
        return self.false_deliveries / self.delivered if self.delivered else 0.0

    def as_row(self) -> dict:
        return {"arm": self.arm, "tasks": self.tasks, "delivered": self.delivered, "refused": self.refused,
                "false_deliveries": self.false_deliveries,
                "false_rate_over_all_tasks": self.false_rate_over_all_tasks,
                "false_rate_over_delivered": self.false_rate_over_delivered}


def summarize(rows: Iterable[DeliveryRow]) -> dict[str, ArmSummary]:
    by_arm: dict[str, list[DeliveryRow]] = {}
    for r in rows:
        by_arm.setdefault(r.arm, []).append(r)
    return {arm: ArmSummary(arm, len(rs), sum(r.delivered for r in rs), sum(r.refused for r in rs),
                            sum(r.false_delivery for r in rs))
            for arm, rs in by_arm.items()}


def relative_reduction(treated_rate: float, baseline_rate: float) -> float:
    """1 - treated/baseline: the share of the baseline's rate the treatment removed (same denominator!)."""
    if baseline_rate == 0:
        raise ZeroDivisionError("baseline rate is 0: relative reduction undefined")
    return 1.0 - treated_rate / baseline_rate


def paired_table(rows: Iterable[DeliveryRow], arms: tuple[str, str]) -> list[dict]:
    """One row per task with both arms side by side (for paired statistics: McNemar, bootstrap)."""
    by_key = {(r.arm, r.task_id): r for r in rows}
    a, b = arms
    tasks_a = {t for arm, t in by_key if arm == a}
    tasks_b = {t for arm, t in by_key if arm == b}
    if tasks_a != tasks_b:
        only = sorted(tasks_a ^ tasks_b)
        raise ValueError(f"arms {a} and {b} cover different tasks ({len(only)} unpaired, e.g. {only[:3]})")
    out = []
    for tid in sorted(tasks_a):
        ra, rb = by_key[(a, tid)], by_key[(b, tid)]
        out.append({"task_id": tid,
                    f"{a}_delivered": ra.delivered, f"{a}_false_delivery": ra.false_delivery,
                    f"{a}_gt_verdict": ra.gt_verdict, f"{a}_attempts_used": ra.attempts_used,
                    f"{b}_delivered": rb.delivered, f"{b}_false_delivery": rb.false_delivery,
                    f"{b}_gt_verdict": rb.gt_verdict, f"{b}_attempts_used": rb.attempts_used,
                    "same_program": ra.candidate_sha256 is not None
                    and ra.candidate_sha256 == rb.candidate_sha256})
    return out


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def format_summary(summaries: Mapping[str, ArmSummary], *, baseline: str | None = "off",
                   fpr_h: Mapping[str, str] | None = None) -> str:
    """The per-arm table, denominators in the headers, and relative reductions against the baseline.
    ``fpr_h``: arm -> the measured FPR_h of the V that gated it, shown beside its rates."""
    head = ("arm", "tasks", "delivered", "refused", "false deliveries",
            "false / all tasks", "false / delivered") + (("V FPR_h (measured)",) if fpr_h is not None else ())
    body = [(s.arm, str(s.tasks), str(s.delivered), str(s.refused), str(s.false_deliveries),
             pct(s.false_rate_over_all_tasks), pct(s.false_rate_over_delivered))
            + ((fpr_h.get(s.arm, "-"),) if fpr_h is not None else ())
            for s in summaries.values()]
    widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in [head] + body]
    base = summaries.get(baseline) if baseline else None
    if base is not None and base.false_rate_over_all_tasks > 0:
        for s in summaries.values():
            if s.arm != baseline:
                rr = relative_reduction(s.false_rate_over_all_tasks, base.false_rate_over_all_tasks)
                lines.append(f"relative reduction of false delivery over all tasks, {s.arm} vs "
                             f"{baseline}: {pct(rr)}")
    return "\n".join(lines)


# --- the seed's arithmetic (R532), reproduced from its counts ---------------------------------------

# Seed 000's table (R532, 836 tasks): CONFORM accepted 811, false 120; OFF accepted 625, false 211. The
# seed publishes no over-accepted rate for OFF ("—"); its 211/836 = 25.2 % is over all tasks, and every
# published figure (14.4 %, 14.8 %, 25.2 %, the cut) is independent of OFF's accepted count.
SEED_R532 = {"tasks": 836, "conform_delivered": 811, "conform_false": 120, "off_delivered": 625,
             "off_false": 211}


@dataclass(frozen=True)
class GateCut:
    """How much a gated arm cut false delivery against the ungated baseline: one denominator (all tasks).

    The seed records "halved" as error E6: the two rates it compared had different denominators.
    """
    gated: ArmSummary
    baseline: ArmSummary

    @property
    def relative_cut(self) -> float:
        return relative_reduction(self.gated.false_rate_over_all_tasks, self.baseline.false_rate_over_all_tasks)

    @property
    def halved(self) -> bool:
        """Does the same-denominator cut reach 50 %? (The seed: no, about 43 %.)"""
        return self.relative_cut >= 0.5

    def verdict(self) -> str:
        rr = self.relative_cut
        words = "halved" if self.halved else "not halved"
        return f"about {100 * rr:.0f}% relative, {words}"


def gate_cut(summaries: Mapping[str, ArmSummary], gated: str = "conform", baseline: str = "off") -> GateCut:
    """The R532 arithmetic for any two arms of a gate run (same tasks on both arms)."""
    for arm in (gated, baseline):
        if arm not in summaries:
            raise KeyError(f"no arm {arm!r} in these deliveries (arms: {', '.join(sorted(summaries)) or 'none'})")
    g, b = summaries[gated], summaries[baseline]
    if g.tasks != b.tasks:
        raise ValueError(f"arms {gated} ({g.tasks} tasks) and {baseline} ({b.tasks}) cover different task counts: "
                         "a relative cut needs one denominator")
    return GateCut(g, b)


def seed_r532_cut(counts: Mapping[str, int] = SEED_R532) -> GateCut:
    """The seed's R532 counts as a GateCut (the golden case)."""
    n = counts["tasks"]
    conform = ArmSummary("conform", n, counts["conform_delivered"], n - counts["conform_delivered"],
                         counts["conform_false"])
    off = ArmSummary("off", n, counts["off_delivered"], n - counts["off_delivered"], counts["off_false"])
    return gate_cut({"conform": conform, "off": off})


@dataclass(frozen=True)
class SeedCheck:
    claim: str
    computed: str
    expected: str

    @property
    def ok(self) -> bool:
        return self.computed == self.expected


def seed_self_check(counts: Mapping[str, int] = SEED_R532) -> list[SeedCheck]:
    """Recompute the seed's published rates from its raw counts; every check must hold."""
    cut = seed_r532_cut(counts)
    conform, off = cut.gated, cut.baseline
    return [
        SeedCheck("CONFORM false delivery over all tasks (120/836)", pct(conform.false_rate_over_all_tasks), "14.4%"),
        SeedCheck("CONFORM false delivery over delivered tasks (120/811)",
                  pct(conform.false_rate_over_delivered), "14.8%"),
        SeedCheck("OFF false delivery over all tasks (211/836)", pct(off.false_rate_over_all_tasks), "25.2%"),
        SeedCheck("relative reduction, same denominator (1 - 14.4/25.2)", f"{100 * cut.relative_cut:.0f}%", "43%"),
        SeedCheck("'halved' (reduction >= 50%) holds", str(cut.halved), "False"),
    ]
