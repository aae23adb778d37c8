"""Dialects: how a suite's results are compared. Comparison rules live here, never in a spec.

Registry by name. ``python-call/1`` is exact equality (Python ``==`` on literals, NaN equal to NaN).
``python-call+atol=<float>/1`` compares numbers (recursively inside lists and tuples) with
``|got - want| <= atol + 1e-7 * |want|`` -- numpy's ``assert_allclose`` rule that EvalPlus uses -- and
everything else exactly. The functions themselves are in ``harness_prelude.py``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    name: str
    # The comparison as spelled in the rendered harness, on top of harness_prelude.py.
    compare_source: str


_EXACT = Dialect(
    name="python-call/1",
    compare_source="def compare(got, want):\n    return strict_equal(got, want)\n",
)

_ATOL = re.compile(r"^python-call\+atol=(?P<atol>[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?)/1$")


def _atol_dialect(name: str, atol: float) -> Dialect:
    return Dialect(
        name=name,
        compare_source=f"def compare(got, want):\n    return close(got, want, {atol!r})\n",
    )


def atol_name(atol: float) -> str:
    """The dialect name for an absolute tolerance, spelled one way only."""
    return f"python-call+atol={atol!r}/1"


KNOWN = ("python-call/1", "python-call+atol=<float>/1 (e.g. python-call+atol=1e-06/1)")


def get(name: str) -> Dialect:
    if name == _EXACT.name:
        return _EXACT
    m = _ATOL.match(name)
    if m:
        atol = float(m.group("atol"))
        if math.isfinite(atol) and name == atol_name(atol):
            return _atol_dialect(name, atol)
        raise ValueError(f"dialect {name!r}: spell the tolerance as {atol_name(atol)!r}")
    raise ValueError(f"unknown dialect {name!r}; valid dialects: {', '.join(KNOWN)}")
