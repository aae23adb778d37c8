"""Seed 004's remaining statistics: Table 3's confidence intervals on each condition's rate, and M.2's
single overall condition x run interaction test over all configurations.

- Per-condition rates (Table 3): each condition's run-averaged rate over all units, with a percentile
  bootstrap CI that resamples whole units -- the same draws as the paired effect's CI
  (``resampling.BOOTSTRAP`` stream), so a rate's CI and its Delta's CI come from one set of resamples.
- Overall interaction (M.2, "a task-pair-level permutation test of the overall condition x run
  interaction", p = 0.43 in the seed): statistic T = sum over configurations c and runs r of
  (Delta_cr - Delta_c)^2, with Delta_cr the paired effect of run r. Under no interaction, within each
  task pair the run labels are exchangeable; the null permutes them, one permutation per pair applied to
  every configuration (the pair stays one sampling unit, with its configurations together). Only pairs
  every configuration has are used. Beside it, a model-based check: a binomial GLM (statsmodels) on the
  counts per (configuration, condition, run), the likelihood-ratio test of the condition x run terms
  within configuration (df = configurations x (runs - 1)); it treats trajectories as independent, so the
  permutation test is the one reported as M.2's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from acceptgate.stats import resampling as rs
from acceptgate.stats.paired import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, PairedData
from acceptgate.stats.stability import _spread


@dataclass(frozen=True)
class ConditionRate:
    config: str
    condition: str
    n_units: int
    runs: int
    rate: float
    ci_low: float
    ci_high: float
    resamples: int
    confidence: float
    seed: int

    def as_row(self) -> dict:
        return asdict(self)


@rs.single_thread_blas()
def condition_rates(data: Sequence[PairedData], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                    confidence: float = DEFAULT_CONFIDENCE) -> list[ConditionRate]:
    """Both conditions' rates of every configuration, each with its bootstrap CI over whole units."""
    out = []
    for d in data:
        counts = rs.bootstrap_counts(rs.generator(seed, rs.BOOTSTRAP, d.n), d.n, resamples)
        for name, values in zip((d.a_name, d.b_name), d.unit_means()):
            low, high = rs.percentile_ci(counts @ values / d.n, confidence)
            out.append(ConditionRate(d.config, name, d.n, d.runs, float(values.mean()), float(low), float(high),
                                     resamples, confidence, int(seed)))
    return out


@dataclass(frozen=True)
class OverallInteraction:
    configs: int
    n_units: int  # task pairs every configuration has
    runs: int
    statistic: float  # sum_c sum_r (Delta_cr - Delta_c)^2
    p: float
    exact_test: bool
    lr_statistic: float | None  # the GLM likelihood-ratio check
    lr_df: int | None
    lr_p: float | None
    resamples: int
    seed: int

    def as_row(self) -> dict:
        return asdict(self)


def common_units(data: Sequence[PairedData]) -> tuple[list[str], np.ndarray]:
    """The units every configuration has, and (n, R, C) per-unit per-run differences b - a on them."""
    runs = {d.runs for d in data}
    if len(runs) != 1:
        raise ValueError(f"configurations have different numbers of runs: {sorted(runs)}")
    shared = set(data[0].units)
    for d in data[1:]:
        shared &= set(d.units)
    units = sorted(shared)
    cols = []
    for d in data:
        index = {u: i for i, u in enumerate(d.units)}
        rows = [index[u] for u in units]
        cols.append(d.b[rows] - d.a[rows])
    return units, np.stack(cols, axis=2) if units else np.zeros((0, runs.pop(), len(data)))


@rs.single_thread_blas()
def overall_interaction(data: Sequence[PairedData], *, resamples: int = DEFAULT_RESAMPLES,
                        seed: int = 0) -> OverallInteraction:
    """One condition x run interaction test over all configurations (seed 004, M.2)."""
    if not data or data[0].runs < 2:
        raise ValueError("the condition x run interaction needs at least 2 runs")
    units, E = common_units(data)
    n, runs, cols = E.shape
    if n == 0:
        raise ValueError("no task pair is shared by every configuration")
    observed = float(_spread(E.mean(axis=0)[None])[0].sum())
    null_means, exact = rs.within_unit_permuted_means(E, rs.generator(seed, rs.INTERACTION, n), resamples)
    null = _spread(null_means).sum(axis=1)
    p = float(rs.p_greater(null[:, None], np.array([observed]), exact)[0])
    lr = glm_interaction_lr(data)
    return OverallInteraction(cols, n, runs, observed, p, bool(exact), *lr, resamples, int(seed))


def glm_interaction_lr(data: Sequence[PairedData]) -> tuple[float | None, int | None, float | None]:
    """Binomial GLM on counts per (configuration, condition, run): the likelihood-ratio test of the
    condition x run terms within configuration. (None, None, None) when the counts cannot be fitted
    (every cell 0 or every cell full)."""
    import pandas as pd
    import statsmodels.api as sm
    import statsmodels.formula.api as smf
    from scipy import stats

    rows = []
    for d in data:
        for name, values in ((d.a_name, d.a), (d.b_name, d.b)):
            for r in range(d.runs):
                col = values[:, r]
                rows.append({"config": d.config, "condition": name, "run": r + 1, "yes": float(col.sum()),
                             "no": float(len(col) - col.sum())})
    frame = pd.DataFrame(rows)
    if frame["yes"].sum() == 0 or frame["no"].sum() == 0:
        return None, None, None
    many = frame["config"].nunique() > 1
    cfg = "C(config) * " if many else ""
    full = "C(condition) * C(run)" if not many else "C(config) * C(condition) * C(run)"
    reduced = f"{cfg}C(condition) + {cfg}C(run)" if many else "C(condition) + C(run)"
    import warnings

    fam = sm.families.Binomial()
    with warnings.catch_warnings():  # the full model is saturated: statsmodels warns about its zero df
        warnings.simplefilter("ignore")
        fits = [smf.glm(f"yes + no ~ {f}", frame, family=fam).fit() for f in (full, reduced)]
    stat = max(0.0, 2 * (fits[0].llf - fits[1].llf))
    df = int(round(fits[0].df_model - fits[1].df_model))
    return float(stat), df, float(stats.chi2.sf(stat, df))


# -- into the stats run (pipeline.StatsResult.extra) -------------------------------------------------------

CONDITION_RATE_COLUMNS = ["run_id", "measure", "config", "condition", "n_units", "runs", "rate", "ci_low", "ci_high",
                          "resamples", "confidence", "seed", "input_sha256"]
INTERACTION_COLUMNS = ["run_id", "measure", "configs", "n_units", "runs", "statistic", "p", "exact_test",
                       "lr_statistic", "lr_df", "lr_p", "resamples", "seed", "input_sha256"]


def add(extra: dict, measure: str, data: Sequence[PairedData], *, resamples: int, seed: int,
        confidence: float) -> list[str]:
    """Compute both for one measure into ``extra`` (table -> rows without run id); returns notes."""
    extra.setdefault("stats_condition_rates", []).extend(
        {"measure": measure, **r.as_row()} for r in condition_rates(data, resamples=resamples, seed=seed,
                                                                     confidence=confidence))
    multi = [d for d in data if d.runs >= 2]
    if not multi:
        return []
    try:
        o = overall_interaction(multi, resamples=resamples, seed=seed)
    except ValueError as exc:
        return [f"overall condition x run interaction for {measure} not computed: {exc}"]
    extra.setdefault("stats_overall_interaction", []).append({"measure": measure, **o.as_row()})
    lr = "" if o.lr_p is None else f"; GLM likelihood-ratio check chi2 = {o.lr_statistic:.3g}, df {o.lr_df}, p = {o.lr_p:.3g}"
    return [f"overall condition x run interaction, {measure}, {o.configs} configurations over the {o.n_units} "
            f"task pairs all share, {o.runs} runs: permutation p = {o.p:.3g}{lr}"]


def frames(extra: dict, run_id: str, input_sha256: str) -> dict:
    import pandas as pd

    out = {}
    for table, cols in (("stats_condition_rates", CONDITION_RATE_COLUMNS),
                        ("stats_overall_interaction", INTERACTION_COLUMNS)):
        rows = [{"run_id": run_id, "input_sha256": input_sha256, **r} for r in extra.get(table, [])]
        frame = pd.DataFrame(rows, columns=cols)
        for c in ("lr_statistic", "lr_p"):
            if c in frame:
                frame[c] = frame[c].astype("Float64")
        if "lr_df" in frame:
            frame["lr_df"] = frame["lr_df"].astype("Int64")
        out[table] = frame
    return out
