"""The random draws behind every CI and test, shared across configurations for speed.

All draws come from ``numpy.random.default_rng([seed, stream, n])``: the same seed, stream and number
of units give the same draws, whatever else is in the batch, so a stored (seed, resamples) pair
reproduces a table exactly. Configurations with the same units share one set of draws (common random
numbers), which is what makes 8 configurations x 10,000 resamples a few matrix products:

- bootstrap: a (B, n) matrix of how often each unit appears in each resample; resampled means are
  ``counts @ values / n``. The indices are drawn exactly as ``scipy.stats.bootstrap`` draws them
  (``rng.integers(0, n, (B, n))``), so with the same generator the CIs agree to rounding.
- sign flips: a (B, n) matrix of +-1 (or all 2**n patterns when 2**n <= B: then the test is exact,
  as in ``scipy.stats.permutation_test``). Flipping unit p's sign swaps its two whole conditions.
- within-unit permutations of L levels (runs, configurations): for the interaction tests.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math

import numpy as np
from threadpoolctl import ThreadpoolController

BOOTSTRAP, PERMUTATION, INTERACTION = 0, 1, 2  # stream numbers
EPS = np.finfo(np.float64).eps * 100  # scipy's tolerance for ties between the null and the observed value


@functools.cache
def _controller() -> ThreadpoolController:
    return ThreadpoolController()


@contextlib.contextmanager
def single_thread_blas():
    """The products here are (10^4 x 200) @ (200 x ~24): BLAS threads cost more than they save, and on a
    loaded 2-core machine they made the batch 2-3x slower (bench/bench_stats.py)."""
    with _controller().limit(limits=1, user_api="blas"):
        yield


def generator(seed: int, stream: int, n: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), stream, int(n)])


def bootstrap_counts(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """(resamples, n) float matrix: how many times each unit is drawn in each resample."""
    idx = rng.integers(0, n, size=(resamples, n), dtype=np.int64)
    flat = idx + (np.arange(resamples, dtype=np.int64) * n)[:, None]
    return np.bincount(flat.ravel(), minlength=resamples * n).reshape(resamples, n).astype(np.float64)


def sign_flips(rng: np.random.Generator, n: int, resamples: int) -> tuple[np.ndarray, bool]:
    """(rows, n) matrix of +-1 and whether it enumerates every pattern (an exact test)."""
    if n <= 62 and 2 ** n <= resamples:
        bits = (np.arange(2 ** n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)) & 1
        return (1 - 2 * bits).astype(np.float64), True
    raw = rng.integers(0, 2, size=(resamples, n), dtype=np.int8)
    return (1 - 2 * raw).astype(np.float64), False


def percentile_ci(distribution: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval along axis 0 (linear interpolation, as scipy's ``method='percentile'``)."""
    alpha = (1 - confidence) / 2
    low, high = np.quantile(distribution, [alpha, 1 - alpha], axis=0)
    return low, high


def p_two_sided(null: np.ndarray, observed: np.ndarray, exact: bool) -> np.ndarray:
    """scipy's two-sided p: 2 * min(P(null <= obs), P(null >= obs)), with +1 in numerator and denominator
    when the null is sampled (the observed assignment counts as one of them), capped at 1."""
    adjust = 0 if exact else 1
    rows = null.shape[0]
    gamma = np.abs(EPS * observed)
    less = (np.count_nonzero(null <= observed + gamma, axis=0) + adjust) / (rows + adjust)
    greater = (np.count_nonzero(null >= observed - gamma, axis=0) + adjust) / (rows + adjust)
    return np.clip(2 * np.minimum(less, greater), 0.0, 1.0)


def p_greater(null: np.ndarray, observed: np.ndarray, exact: bool) -> np.ndarray:
    """One-sided P(null >= observed): for statistics that are large under the alternative (sums of
    squares), so 'two-sided' is already built into the statistic."""
    adjust = 0 if exact else 1
    gamma = np.abs(EPS * observed)
    return (np.count_nonzero(null >= observed - gamma, axis=0) + adjust) / (null.shape[0] + adjust)


def within_unit_permuted_means(effects: np.ndarray, rng: np.random.Generator,
                               resamples: int) -> tuple[np.ndarray, bool]:
    """Null distribution of the per-level means when, independently in every unit, the L level labels
    are permuted. ``effects`` is (n, L, C) (C columns share the draws). Returns (rows, L, C) and
    whether every assignment was enumerated (an exact test, when (L!)**n <= resamples)."""
    n, levels, cols = effects.shape
    n_perms = math.factorial(levels)
    if n_perms > 24:  # many levels (e.g. 8 configurations): random permutations, gathered in chunks
        out = np.empty((resamples, levels, cols))
        chunk = max(1, 2_000_000 // max(1, n * levels))
        for start in range(0, resamples, chunk):
            rows = min(chunk, resamples - start)
            order = np.argsort(rng.random((rows, n, levels)), axis=2)  # a random permutation per unit
            picked = effects[np.arange(n)[None, :, None], order, :]  # (rows, n, L, C)
            out[start:start + rows] = picked.mean(axis=1)
        return out, False
    perms = np.array(list(itertools.permutations(range(levels))), dtype=np.int64)  # (L!, L)
    exact = n * math.log(n_perms) < 64 and n_perms ** n <= resamples
    if exact:  # every combination of per-unit permutations
        choice = np.array(list(itertools.product(range(n_perms), repeat=n)), dtype=np.int64)
    else:
        choice = rng.integers(0, n_perms, size=(resamples, n), dtype=np.int64)
    # permuted[p, q, j, c] = effects[p, perms[q, j], c]; one-hot over q turns the gather into matmuls
    permuted = effects[:, perms, :]  # (n, L!, L, C)
    out = np.zeros((choice.shape[0], levels * cols))
    for q in range(n_perms):
        mask = (choice == q).astype(np.float64)  # (rows, n)
        out += mask @ permuted[:, q, :, :].reshape(n, levels * cols)
    return out.reshape(-1, levels, cols) / n, exact
