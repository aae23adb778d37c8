"""TPR / TNR / BA_norm per task and verifier, their unweighted means, FPR on attacks, execution health,
diagnoses by name, and the median-BA round of repeated rounds.

Per task: TPR = 100 x legal candidates accepted / legal candidates; TNR = 100 x illegal candidates
rejected (a valid FAIL) / illegal candidates. An ERROR stays in the denominator with no credit, on
either side. Over tasks: the unweighted mean of the per-task rates (never one pooled denominator);
BA_norm = TPR + TNR - 100. FPR_attack (seed 002's FPR_h) = 100 x attacks accepted / attacks, per task,
then the mean. Only candidates labelled by construction count; model samples (unlabelled) are
counted apart (decided, accepted). The held-out part of the pools (made fresh per run) has its own
TPR / TNR / BA_norm: a verifier that memorised the published part is all-accept (or all-reject) there.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from acceptgate.v4v.pools import HELD_OUT, LEGAL, PoolCandidate
from acceptgate.v4v.verifiers import FAIL, PASS, Decision, normalise

DIAGNOSES = ("all-reject", "all-accept", "gold-only", "mostly-error", "memoriser")


@dataclass
class TaskMetrics:
    task_id: str
    verifier: str
    round: int
    legal: int
    illegal: int
    attacks: int
    legal_accepted: int
    illegal_rejected: int
    attacks_accepted: int
    passes: int
    fails: int
    errors: Counter = field(default_factory=Counter)  # error kind -> count
    fails_by_exception: int = 0
    legal_rejected: int = 0  # false rejections: a valid FAIL on a legal candidate (an ERROR is none)
    copied: int = 0  # decisions of this round copied from round 0 (the candidate was not re-run)
    all_reject: bool = False
    all_accept: bool = False
    gold_only: bool | None = None  # None when the pool has no legal candidate unlike the gold
    heldout_legal: int = 0  # the held-out part (included in the counts above)
    heldout_illegal: int = 0
    heldout_legal_accepted: int = 0
    heldout_illegal_rejected: int = 0
    samples: int = 0  # model samples (unlabelled): decided, never in TPR/TNR
    samples_accepted: int = 0

    @property
    def heldout_tpr(self) -> float | None:
        return 100.0 * self.heldout_legal_accepted / self.heldout_legal if self.heldout_legal else None

    @property
    def heldout_tnr(self) -> float | None:
        return 100.0 * self.heldout_illegal_rejected / self.heldout_illegal if self.heldout_illegal else None

    @property
    def heldout_ba_norm(self) -> float | None:
        tpr, tnr = self.heldout_tpr, self.heldout_tnr
        return None if tpr is None or tnr is None else tpr + tnr - 100.0

    @property
    def published_ba_norm(self) -> float | None:
        legal, illegal = self.legal - self.heldout_legal, self.illegal - self.heldout_illegal
        if not legal or not illegal:
            return None
        return (100.0 * (self.legal_accepted - self.heldout_legal_accepted) / legal
                + 100.0 * (self.illegal_rejected - self.heldout_illegal_rejected) / illegal - 100.0)

    @property
    def memorised(self) -> bool | None:
        """Decides the published part (BA_norm > 0) and none of the held-out part (one answer for all of
        it); None when the held-out part lacks a label or the published part cannot be scored."""
        ba = self.published_ba_norm
        if ba is None or not (self.heldout_legal and self.heldout_illegal):
            return None
        one_answer = (self.heldout_legal_accepted == self.heldout_legal and self.heldout_illegal_rejected == 0) or \
            (self.heldout_legal_accepted == 0 and self.heldout_illegal_rejected == self.heldout_illegal)
        return ba > 0 and one_answer

    @property
    def tpr(self) -> float | None:
        return 100.0 * self.legal_accepted / self.legal if self.legal else None

    @property
    def tnr(self) -> float | None:
        return 100.0 * self.illegal_rejected / self.illegal if self.illegal else None

    @property
    def ba_norm(self) -> float | None:
        return None if self.tpr is None or self.tnr is None else self.tpr + self.tnr - 100.0

    @property
    def fpr_attack(self) -> float | None:
        return 100.0 * self.attacks_accepted / self.attacks if self.attacks else None


def task_metrics(task_id: str, verifier: str, round: int, pool: list[PoolCandidate],
                 decisions: dict[str, Decision], gold_normalised: str, copied: frozenset[str] = frozenset()) -> TaskMetrics:
    """``copied``: the candidates whose decision here is round 0's, copied (not an independent sample)."""
    m = TaskMetrics(task_id, verifier, round, 0, 0, 0, 0, 0, 0, 0, 0)
    m.copied = sum(c.candidate_id in copied for c in pool)
    accepted_legal_unlike_gold, legal_unlike_gold, gold_accepted = 0, 0, False
    for c in pool:
        d = decisions[c.candidate_id]
        if not c.labelled:  # a model sample: measured apart, no label to score it against
            m.samples += 1
            m.samples_accepted += d.outcome == PASS
            continue
        held_out = c.part == HELD_OUT
        if d.outcome == PASS:
            m.passes += 1
        elif d.outcome == FAIL:
            m.fails += 1
            m.fails_by_exception += d.by_exception
        else:
            m.errors[d.error_kind] += 1
        if c.label == LEGAL:
            m.legal += 1
            m.legal_accepted += d.outcome == PASS
            m.legal_rejected += d.outcome == FAIL
            m.heldout_legal += held_out
            m.heldout_legal_accepted += held_out and d.outcome == PASS
            unlike = normalise(c.source) != gold_normalised
            legal_unlike_gold += unlike
            accepted_legal_unlike_gold += unlike and d.outcome == PASS
            gold_accepted |= c.kind == "gold" and d.outcome == PASS
        else:
            m.illegal += 1
            m.illegal_rejected += d.outcome == FAIL
            m.heldout_illegal += held_out
            m.heldout_illegal_rejected += held_out and d.outcome == FAIL
            if c.kind == "attack":
                m.attacks += 1
                m.attacks_accepted += d.outcome == PASS
    decided = m.legal + m.illegal
    m.all_reject = bool(decided) and m.fails == decided
    m.all_accept = bool(decided) and m.passes == decided
    if legal_unlike_gold:
        m.gold_only = gold_accepted and accepted_legal_unlike_gold == 0
    return m


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.fmean(vals) if vals else None


@dataclass
class VerifierMetrics:
    verifier: str
    round: int  # the round reported (the median-BA round)
    rounds: int
    round_ba: list[float | None]
    tasks: int
    tpr: float | None
    tnr: float | None
    ba_norm: float | None
    fpr_attack: float | None
    passes: int
    fails: int
    errors: dict[str, int]
    fails_by_exception: int
    diagnosis: str
    copied: int = 0  # decisions in the reported round copied from round 0
    basis: str = "every candidate"  # what the median round was chosen on
    false_rejections: int = 0  # valid FAILs on legal candidates, reported round
    all_reject_false_rejections: int = 0  # of those, on tasks where this verifier rejects everything
    heldout_tpr: float | None = None  # the held-out part only (unweighted means over tasks)
    heldout_tnr: float | None = None
    heldout_ba_norm: float | None = None
    samples: int = 0  # model samples decided (reported round), and accepted
    samples_accepted: int = 0

    @property
    def all_reject_share(self) -> float | None:
        """Share of false rejections that come from all-reject tasks (seed 002: 87.9-96.0 %)."""
        return self.all_reject_false_rejections / self.false_rejections if self.false_rejections else None


def aggregate(verifier: str, per_task: list[TaskMetrics]) -> tuple[float | None, float | None, float | None, float | None]:
    tpr = _mean(t.tpr for t in per_task)
    tnr = _mean(t.tnr for t in per_task)
    ba = None if tpr is None or tnr is None else tpr + tnr - 100.0
    return tpr, tnr, ba, _mean(t.fpr_attack for t in per_task)


def diagnose(per_task: list[TaskMetrics]) -> str:
    """Names that hold on every task where they can be told (gold-only: where the pool has a legal
    candidate unlike the gold); mostly-error: more than half of all its decisions are ERROR."""
    found = []
    if per_task and all(t.all_reject for t in per_task):
        found.append("all-reject")
    if per_task and all(t.all_accept for t in per_task):
        found.append("all-accept")
    told = [t for t in per_task if t.gold_only is not None]
    if told and all(t.gold_only for t in told):
        found.append("gold-only")
    decisions = sum(t.passes + t.fails + sum(t.errors.values()) for t in per_task)
    if decisions and 2 * sum(sum(t.errors.values()) for t in per_task) > decisions:
        found.append("mostly-error")
    told = [t.memorised for t in per_task if t.memorised is not None]
    if told and all(told):
        found.append("memoriser")
    return ",".join(found) or "-"


def summarize(verifier: str, rounds: dict[int, list[TaskMetrics]],
              ranking: dict[int, list[TaskMetrics]] | None = None, basis: str = "every candidate") -> VerifierMetrics:
    """The verifier's figures from the round with the median BA_norm (rounds ordered by BA_norm, then
    by round number; the lower middle one for an even count), as seed 002 prescribes: one whole round,
    not the best round per class.

    Decisions copied from round 0 into a later round (a candidate not re-run) are no independent sample
    (seed 002), so when there are any the rounds are ranked by ``ranking``: the same metrics over only
    the candidates decided afresh in every round (``basis`` says which). ``round_ba`` is that ranking."""
    copies = sum(t.copied for ts in rounds.values() for t in ts)
    if ranking is None or not copies:
        ranking, basis = rounds, "every candidate"
    bas = {r: aggregate(verifier, ts)[2] for r, ts in sorted(ranking.items())}
    order = sorted(bas, key=lambda r: (bas[r] if bas[r] is not None else float("-inf"), r))
    chosen = order[(len(order) - 1) // 2]
    per_task = rounds[chosen]
    tpr, tnr, ba, fpr = aggregate(verifier, per_task)
    errors: Counter = Counter()
    for t in per_task:
        errors.update(t.errors)
    h_tpr, h_tnr = _mean(t.heldout_tpr for t in per_task), _mean(t.heldout_tnr for t in per_task)
    held_out = dict(heldout_tpr=h_tpr, heldout_tnr=h_tnr,
                    heldout_ba_norm=None if h_tpr is None or h_tnr is None else h_tpr + h_tnr - 100.0,
                    samples=sum(t.samples for t in per_task), samples_accepted=sum(t.samples_accepted for t in per_task))
    return VerifierMetrics(verifier, chosen, len(rounds), [bas[r] for r in sorted(bas)], len(per_task), tpr, tnr,
                           ba, fpr, sum(t.passes for t in per_task), sum(t.fails for t in per_task),
                           dict(sorted(errors.items())), sum(t.fails_by_exception for t in per_task),
                           diagnose(per_task), sum(t.copied for t in per_task), basis,
                           sum(t.legal_rejected for t in per_task),
                           sum(t.legal_rejected for t in per_task if t.all_reject), **held_out)


def all_reject_share(summaries: Iterable[VerifierMetrics]) -> tuple[int, int, float | None]:
    """Over several verifiers: (false rejections on all-reject tasks, all false rejections, share)."""
    summaries = list(summaries)
    part = sum(s.all_reject_false_rejections for s in summaries)
    whole = sum(s.false_rejections for s in summaries)
    return part, whole, (part / whole if whole else None)
