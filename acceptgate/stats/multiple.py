"""Holm's step-down correction (family-wise error), hand-written: statsmodels' ``multipletests`` calls
``gc.collect()`` on every call (about 19 ms), which dominates a batch of eight tests. The tests check
this against ``statsmodels.stats.multitest.multipletests(method="holm")``."""

from __future__ import annotations

import numpy as np


def holm(pvalues) -> np.ndarray:
    """Holm-adjusted p-values, in the input order: p_(i) * (m - i + 1), made monotone, capped at 1.

    NaN p-values (tests that could not be computed) stay NaN and do not count in m.
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return out
    values = p[ok]
    order = np.argsort(values, kind="stable")
    scaled = values[order] * (m - np.arange(m))
    adjusted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    result = np.empty(m)
    result[order] = adjusted
    out[ok] = result
    return out
