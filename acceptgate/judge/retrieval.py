"""Exemplar retrieval (seed 004, F.3): four human-verified exemplars per trajectory.

1. Contrast pairs first: pairs of the memory bank from *another* task with the same disposition whose
   two variants (E+ and E-) carry different consensus labels, and whose over-defending member's action
   forms overlap the forms observed in the current trajectory (the rule sensor's signature). Both
   variants go in, so each contributes one condition role. At most two pairs (J.2), nearest first.
2. Then the nearest ordinary candidates: same disposition and same condition role as the trajectory,
   ranked by cosine similarity of L2-normalised task-description embeddings, until four in all.

The action-form signature only selects contrast pairs; it never enters the similarity score.
Exemplars of the trajectory's own task are never retrieved (memory and validation do not share tasks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from acceptgate.judge.records import Exemplar, Trajectory

BUDGET = 4
MAX_CONTRAST_PAIRS = 2


@dataclass(frozen=True)
class Retrieved:
    exemplar: Exemplar
    rank: int  # 1..4, the order shown in the prompt
    reason: str  # contrast | nearest
    similarity: float


class MemoryBank:
    def __init__(self, exemplars: list[Exemplar], embedder) -> None:
        self.exemplars = list(exemplars)
        self.embedder = embedder
        self.vectors = embedder.embed([e.task_description for e in self.exemplars]) if self.exemplars \
            else np.zeros((0, 1))
        self.pairs: dict[str, list[int]] = {}
        for i, e in enumerate(self.exemplars):
            self.pairs.setdefault(e.pair_id, []).append(i)

    def retrieve(self, trajectory: Trajectory, disposition: str, observed_forms: frozenset[str], *,
                 budget: int = BUDGET, max_pairs: int = MAX_CONTRAST_PAIRS) -> list[Retrieved]:
        if not self.exemplars:
            return []
        query = self.embedder.embed([trajectory.task_description])[0]
        sims = self.vectors @ query
        chosen: list[tuple[int, str]] = []
        contrast = []
        for pair_id, members in self.pairs.items():
            ex = [self.exemplars[i] for i in members]
            if len(ex) != 2 or {e.condition for e in ex} != {"E+", "E-"}:
                continue
            if ex[0].task_id == trajectory.task_id or any(e.disposition != disposition for e in ex):
                continue
            if ex[0].label == ex[1].label:
                continue
            over = [e for e in ex if e.label != "none"] or ex
            if not any(e.forms & observed_forms for e in over):
                continue
            contrast.append((-max(sims[i] for i in members), pair_id, sorted(members, key=lambda i: self.exemplars[i].condition)))
        for _, _, members in sorted(contrast)[:min(max_pairs, budget // 2)]:
            chosen += [(i, "contrast") for i in members]
        taken = {i for i, _ in chosen}
        ordinary = [i for i, e in enumerate(self.exemplars)
                    if i not in taken and e.task_id != trajectory.task_id and e.disposition == disposition
                    and e.condition == trajectory.condition]
        ordinary.sort(key=lambda i: (-sims[i], self.exemplars[i].exemplar_id))
        chosen += [(i, "nearest") for i in ordinary[:budget - len(chosen)]]
        return [Retrieved(self.exemplars[i], rank, reason, float(sims[i]))
                for rank, (i, reason) in enumerate(chosen, start=1)]
