"""Agreement between a judge and human labels, and between two judges (seed 004, appendix K).

- accuracy and Cohen's kappa on paired labels (checked against ``sklearn.metrics``);
- the centered-difference comparison of two judges per configuration (Table 14): per task and
  configuration, d_pc = rate_audit - rate_main; the configuration's difference d_c = mean over tasks;
  the centered difference d_c - mean_c d_c shows a configuration's shift beyond the overall shift. Its
  CI resamples whole tasks (all configurations of a task together). The total interaction test permutes
  the configuration labels of each task's differences within the task: p small = the judges' gap
  depends on the configuration.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from acceptgate.stats import resampling as rs
from acceptgate.stats.paired import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES
from acceptgate.stats.stability import interaction_test


def _pairs(a: Sequence, b: Sequence) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(list(a), dtype=object), np.asarray(list(b), dtype=object)
    if a.shape != b.shape:
        raise ValueError(f"label lists differ in length: {len(a)} and {len(b)}")
    if len(a) == 0:
        raise ValueError("no labels to compare")
    return a, b


def accuracy(a: Sequence, b: Sequence) -> float:
    a, b = _pairs(a, b)
    return float(np.mean(a == b))


def cohen_kappa(a: Sequence, b: Sequence) -> float:
    """(p_o - p_e) / (1 - p_e); NaN when p_e = 1 (both raters used one and the same label throughout)."""
    a, b = _pairs(a, b)
    labels = sorted(set(a.tolist()) | set(b.tolist()), key=repr)
    index = {label: i for i, label in enumerate(labels)}
    k = len(labels)
    table = np.zeros((k, k))
    np.add.at(table, ([index[x] for x in a], [index[x] for x in b]), 1)
    table /= table.sum()
    observed = np.trace(table)
    expected = float(table.sum(axis=1) @ table.sum(axis=0))
    return float("nan") if expected == 1 else float((observed - expected) / (1 - expected))


@dataclass(frozen=True)
class JudgeComparison:
    configs: tuple[str, ...]
    n_tasks: int
    rate_main: tuple[float, ...]
    rate_audit: tuple[float, ...]
    difference: tuple[float, ...]  # audit - main per configuration
    overall_difference: float
    centered: tuple[float, ...]
    centered_ci_low: tuple[float, ...]
    centered_ci_high: tuple[float, ...]
    interaction_statistic: float
    interaction_p: float
    resamples: int
    confidence: float
    seed: int

    def as_row(self) -> dict:
        return asdict(self)


@rs.single_thread_blas()
def compare_judges(main: np.ndarray, audit: np.ndarray, configs: Sequence[str], *,
                   resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                   confidence: float = DEFAULT_CONFIDENCE) -> JudgeComparison:
    """main, audit: (n tasks, C configurations) per-task rates (e.g. the share of a task's trajectories
    judged evidence-linked), both judges on the same trajectories."""
    main, audit = np.asarray(main, dtype=float), np.asarray(audit, dtype=float)
    if main.shape != audit.shape or main.ndim != 2 or main.shape[1] != len(configs):
        raise ValueError(f"need two (tasks, {len(configs)}) arrays of the same shape, got {main.shape}, {audit.shape}")
    diff = audit - main
    n = diff.shape[0]
    d_c = diff.mean(axis=0)
    overall = float(d_c.mean())
    counts = rs.bootstrap_counts(rs.generator(seed, rs.BOOTSTRAP, n), n, resamples)
    boot = counts @ diff / n  # (B, C)
    boot_centered = boot - boot.mean(axis=1, keepdims=True)
    low, high = rs.percentile_ci(boot_centered, confidence)
    stat, p, _ = interaction_test(diff[:, :, None], resamples=resamples, seed=seed)
    return JudgeComparison(
        configs=tuple(configs), n_tasks=n, rate_main=tuple(map(float, main.mean(axis=0))),
        rate_audit=tuple(map(float, audit.mean(axis=0))), difference=tuple(map(float, d_c)),
        overall_difference=overall, centered=tuple(map(float, d_c - overall)),
        centered_ci_low=tuple(map(float, low)), centered_ci_high=tuple(map(float, high)),
        interaction_statistic=float(stat[0]), interaction_p=float(p[0]), resamples=resamples,
        confidence=confidence, seed=int(seed))
