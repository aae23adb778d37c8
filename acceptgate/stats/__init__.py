"""Statistics for paired comparisons (seed 004, appendix M), on plain arrays and tidy frames.

Core only (no Prefect). Every randomized result carries the seed and the number of resamples it used,
and a run with the same inputs, seed and resamples reproduces it exactly.

- ``rates``: rates that carry their denominator.
- ``paired``: per-unit paired effects with runs averaged first (eq. 5), bootstrap CIs over whole units,
  two-sided paired permutation tests (whole conditions swapped within a unit), Holm, ER both ways.
- ``stability``: per-run effects, their range, and the condition x run interaction permutation test.
- ``agreement``: accuracy, Cohen's kappa, and the centered-difference comparison of two judges.
- ``resampling``: the shared draws (bootstrap counts, sign flips, within-unit permutations).
- ``tidy``: tidy frames (unit, condition, run, value) to the arrays above, with validation.
"""

from acceptgate.stats.agreement import JudgeComparison, accuracy, cohen_kappa, compare_judges
from acceptgate.stats.multiple import holm
from acceptgate.stats.paired import PairedData, PairedEffect, er_mean_of_runs, er_of_averaged_rates, paired_effects
from acceptgate.stats.rates import Rate
from acceptgate.stats.stability import RunStability, run_stability

__all__ = [
    "JudgeComparison", "PairedData", "PairedEffect", "Rate", "RunStability", "accuracy", "cohen_kappa",
    "compare_judges", "er_mean_of_runs", "er_of_averaged_rates", "holm", "paired_effects", "run_stability",
]
