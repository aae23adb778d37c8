"""Run stability (seed 004, appendix M.2): the paired effect in each run, pooled, their range, and a
unit-level permutation test of the condition x run interaction.

Per-run Delta_r = mean over units of (V_pr^b - V_pr^a), each with a bootstrap CI that resamples whole
units (the same draws for every run, so the runs are compared on the same resamples). Pooled Delta is
eq. 5 (= the mean of the per-run Deltas). Interaction: the statistic is the spread of the per-run
effects, T = sum_r (Delta_r - Delta)^2; under "no condition x run interaction" the run labels of a
unit's per-run differences are exchangeable, so the null permutes them independently within every
unit (the whole unit stays one sampling unit). p = P(T_null >= T), +1 smoothed when sampled.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from acceptgate.stats import resampling as rs
from acceptgate.stats.paired import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, PairedData


@dataclass(frozen=True)
class RunStability:
    config: str
    n_units: int
    runs: int
    per_run_delta: tuple[float, ...]
    per_run_ci_low: tuple[float, ...]
    per_run_ci_high: tuple[float, ...]
    pooled_delta: float
    delta_range: float  # max - min of the per-run Deltas
    interaction_statistic: float
    interaction_p: float
    exact_test: bool
    resamples: int
    confidence: float
    seed: int

    def as_row(self) -> dict:
        return asdict(self)


def interaction_test(effects: np.ndarray, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                     stream: int = rs.INTERACTION) -> tuple[np.ndarray, np.ndarray, bool]:
    """effects: (n units, L levels, C columns). Statistic per column: sum over levels of (level mean -
    grand mean)^2. Returns (statistic (C,), p (C,), exact)."""
    effects = np.asarray(effects, dtype=float)
    if effects.ndim == 2:
        effects = effects[:, :, None]
    n = effects.shape[0]
    observed = _spread(effects.mean(axis=0)[None])[0]
    null_means, exact = rs.within_unit_permuted_means(effects, rs.generator(seed, stream, n), resamples)
    null = _spread(null_means)
    return observed, rs.p_greater(null, observed, exact), exact


def _spread(level_means: np.ndarray) -> np.ndarray:
    """(rows, L, C) -> (rows, C): sum over levels of squared deviations from the mean over levels."""
    return ((level_means - level_means.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)


@rs.single_thread_blas()
def run_stability(data: Sequence[PairedData], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                  confidence: float = DEFAULT_CONFIDENCE) -> list[RunStability]:
    out: dict[str, RunStability] = {}
    groups: dict[tuple[int, int], list[PairedData]] = {}
    for d in data:
        if d.runs < 2:
            raise ValueError(f"{d.config}: run stability needs at least 2 runs, got {d.runs}")
        groups.setdefault((d.n, d.runs), []).append(d)
    for (n, runs), group in groups.items():
        E = np.stack([g.b - g.a for g in group], axis=2)  # (n, R, C): per-unit, per-run differences
        counts = rs.bootstrap_counts(rs.generator(seed, rs.BOOTSTRAP, n), n, resamples)
        boot = (counts @ E.reshape(n, -1) / n).reshape(resamples, runs, len(group))
        low, high = rs.percentile_ci(boot, confidence)  # (R, C)
        stat, p, exact = interaction_test(E, resamples=resamples, seed=seed)
        per_run = E.mean(axis=0)  # (R, C)
        for j, g in enumerate(group):
            out[g.config] = RunStability(
                config=g.config, n_units=n, runs=runs, per_run_delta=tuple(float(x) for x in per_run[:, j]),
                per_run_ci_low=tuple(float(x) for x in low[:, j]), per_run_ci_high=tuple(float(x) for x in high[:, j]),
                pooled_delta=float(per_run[:, j].mean()), delta_range=float(per_run[:, j].max() - per_run[:, j].min()),
                interaction_statistic=float(stat[j]), interaction_p=float(p[j]), exact_test=bool(exact),
                resamples=resamples, confidence=confidence, seed=int(seed))
    return [out[d.config] for d in data]
