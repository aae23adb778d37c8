"""Paired condition effects over units (seed 004, appendix M.1), for several configurations at once.

A *unit* is the independent sampling unit (a task pair; a task for the gates). Each unit has two
conditions, ``a`` and ``b``, each measured in R runs (R = 1 for one gate run). Equation 5:

    Vbar_p^a = mean over runs of V_pr^a,   Delta = mean over units of (Vbar_p^b - Vbar_p^a)

so runs are averaged first and a unit counts once whatever R is. The bootstrap resamples whole units
(with all their runs); the permutation test swaps the two whole conditions (all runs) within a unit,
i.e. flips the sign of that unit's difference. Holm adjusts the configurations' p-values together.

ER (evidence responsiveness) = 1 - rate(a) / rate(b), computed two ways, which the seed notes differ
by up to 0.2 pp: the ratio of run-averaged rates (Table 3) and the mean of per-run ERs (Table 2).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from acceptgate.stats import resampling as rs
from acceptgate.stats.multiple import holm
from acceptgate.stats.rates import Rate

DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class PairedData:
    """One configuration: per unit, R run values for condition a and for condition b (0/1 or in [0, 1])."""

    config: str
    units: tuple[str, ...]
    a: np.ndarray  # (n, R)
    b: np.ndarray  # (n, R)
    a_name: str = "a"
    b_name: str = "b"
    unit_name: str = "units"

    def __post_init__(self) -> None:
        a, b = np.asarray(self.a, dtype=float), np.asarray(self.b, dtype=float)
        if a.ndim == 1:
            a = a[:, None]
        if b.ndim == 1:
            b = b[:, None]
        if a.shape != b.shape or a.ndim != 2:
            raise ValueError(f"{self.config}: conditions need the same (units, runs) shape, got {a.shape} and {b.shape}")
        if a.shape[0] != len(self.units) or a.shape[0] == 0:
            raise ValueError(f"{self.config}: {a.shape[0]} rows for {len(self.units)} units")
        if np.isnan(a).any() or np.isnan(b).any():
            raise ValueError(f"{self.config}: missing values (every unit needs every run of both conditions)")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)

    @property
    def n(self) -> int:
        return self.a.shape[0]

    @property
    def runs(self) -> int:
        return self.a.shape[1]

    def unit_means(self) -> tuple[np.ndarray, np.ndarray]:
        return self.a.mean(axis=1), self.b.mean(axis=1)

    def unit_deltas(self) -> np.ndarray:
        """Vbar_p^b - Vbar_p^a per unit (eq. 5, runs averaged first)."""
        a, b = self.unit_means()
        return b - a

    def rates(self) -> tuple[Rate, Rate]:
        """Run-averaged rates of a and b, over all units (numerators are sums of run averages)."""
        a, b = self.unit_means()
        name = f"{self.unit_name}" + (f", {self.runs} runs averaged" if self.runs > 1 else "")
        return Rate(float(a.sum()), self.n, name), Rate(float(b.sum()), self.n, name)


def er_of_averaged_rates(a: np.ndarray, b: np.ndarray) -> float:
    """ER = 1 - rate(a) / rate(b), rates averaged over units and runs first (seed Table 3)."""
    ra, rb = float(np.mean(a)), float(np.mean(b))
    return float("nan") if rb == 0 else 1.0 - ra / rb


def er_mean_of_runs(a: np.ndarray, b: np.ndarray) -> float:
    """ER computed in each run, then averaged over runs (seed Table 2). NaN if a run's rate(b) is 0."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.ndim == 1:
        a, b = a[:, None], b[:, None]
    ra, rb = a.mean(axis=0), b.mean(axis=0)
    if np.any(rb == 0):
        return float("nan")
    return float(np.mean(1.0 - ra / rb))


@dataclass(frozen=True)
class PairedEffect:
    """Delta = rate(b) - rate(a) for one configuration, with everything needed to reproduce it."""

    config: str
    a_name: str
    b_name: str
    n_units: int
    runs: int
    rate_a: float
    rate_b: float
    delta: float
    ci_low: float
    ci_high: float
    p: float
    p_holm: float
    er: float  # ratio of run-averaged rates
    er_ci_low: float
    er_ci_high: float
    er_mean_of_runs: float
    resamples: int
    permutations: int  # rows of the null distribution (2**n when exact)
    exact_test: bool
    confidence: float
    seed: int

    def as_row(self) -> dict:
        return asdict(self)


@rs.single_thread_blas()
def paired_effects(data: Sequence[PairedData], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                   confidence: float = DEFAULT_CONFIDENCE) -> list[PairedEffect]:
    """Delta, its percentile bootstrap CI (whole units resampled), the two-sided paired permutation p,
    and Holm's p over all configurations given, plus ER both ways (CI for the ratio form)."""
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    names = [d.config for d in data]
    if len(set(names)) != len(names):
        raise ValueError("configuration names must be distinct")
    partial: dict[str, dict] = {}
    by_n: dict[int, list[PairedData]] = {}
    for d in data:
        by_n.setdefault(d.n, []).append(d)
    for n, group in by_n.items():
        A = np.column_stack([g.unit_means()[0] for g in group])  # (n, C)
        B = np.column_stack([g.unit_means()[1] for g in group])
        D = B - A
        counts = rs.bootstrap_counts(rs.generator(seed, rs.BOOTSTRAP, n), n, resamples)
        boot = counts @ np.hstack([D, A, B]) / n  # (resamples, 3C)
        C = len(group)
        boot_d, boot_a, boot_b = boot[:, :C], boot[:, C:2 * C], boot[:, 2 * C:]
        d_low, d_high = rs.percentile_ci(boot_d, confidence)
        with np.errstate(divide="ignore", invalid="ignore"):
            boot_er = 1.0 - boot_a / boot_b
        er_low, er_high = _nan_percentile_ci(boot_er, confidence)
        flips, exact = rs.sign_flips(rs.generator(seed, rs.PERMUTATION, n), n, resamples)
        null = flips @ D / n
        observed = D.mean(axis=0)
        p = rs.p_two_sided(null, observed, exact)
        for j, g in enumerate(group):
            partial[g.config] = dict(
                config=g.config, a_name=g.a_name, b_name=g.b_name, n_units=n, runs=g.runs,
                rate_a=float(A[:, j].mean()), rate_b=float(B[:, j].mean()), delta=float(observed[j]),
                ci_low=float(d_low[j]), ci_high=float(d_high[j]), p=float(p[j]),
                er=er_of_averaged_rates(g.a, g.b), er_ci_low=float(er_low[j]), er_ci_high=float(er_high[j]),
                er_mean_of_runs=er_mean_of_runs(g.a, g.b), resamples=resamples, permutations=int(null.shape[0]),
                exact_test=bool(exact), confidence=confidence, seed=int(seed))
    adjusted = holm([partial[c]["p"] for c in names])
    return [PairedEffect(**partial[c], p_holm=float(q)) for c, q in zip(names, adjusted)]


def _nan_percentile_ci(distribution: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile CI; NaN for a column where any resample is undefined (rate(b) = 0 in a resample):
    a CI that silently dropped those resamples would be narrower than the data support."""
    bad = ~np.isfinite(distribution).all(axis=0)
    safe = np.where(np.isfinite(distribution), distribution, 0.0)
    low, high = rs.percentile_ci(safe, confidence)
    low[bad], high[bad] = np.nan, np.nan
    return low, high
