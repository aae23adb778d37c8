"""Dialects: how a suite's results are compared. Comparison rules live here, never in a spec.

Registry by name (an unknown name lists the valid ones). Every dialect's source is rendered into the
harness, so it is part of ``render_hash``; the shared functions are in ``harness_prelude.py``.

Value dialects compare the result with the expected value:

- ``python-call/1``: exact equality (Python ``==`` on literals, NaN equal to NaN);
- ``python-call+atol=<float>/1``: numbers (recursively inside lists and tuples) with
  ``|got - want| <= atol + 1e-7 * |want|`` -- numpy's ``assert_allclose`` rule that EvalPlus uses --
  and everything else exactly.

Check dialects (EvalPlus's "special oracles", as data: the spec names one, the code is here) judge the
result from the call's arguments too, through ``judge(got, want, args, kwargs)``; each is total (an
exception while judging is a failed case, never a crash of the harness):

- ``python-call+poly-root=<atol>/1``: HumanEval/32 ``find_zero``: ``|poly(xs, got)| <= atol`` with
  EvalPlus's ``_poly`` (any root is right; ``want`` is the reference's root, shown only);
- ``python-call+set-eq/1``: ``set(got) == set(want)`` (MBPP+ tasks whose output order is free);
- ``python-call+not-none/1``: ``want`` is whether the reference returned something other than None;
  a bool result must equal it, any other result must be non-None exactly when ``want`` is True; a
  non-literal result (a ``re.Match``) counts as a non-None value here, as in EvalPlus;
- ``python-call+any-result/1``: any literal result passes (MBPP+ ``are_equivalent``, Mbpp/164);
- ``python-call+or-zero/1``: equal to ``want``, or 0 (MBPP+ ``sum_div``, Mbpp/295);
- ``python-call+pyramid-area=<atol>/1``: equal, or within atol of the recomputed rounded surface area
  with the height read as the apex distance (MBPP+ ``surface_Area``, Mbpp/581);
- ``python-call+digit-distance/1``: equal, or equal to the digit distance of zero-padded numbers
  (MBPP+ ``digit_distance_nums``, Mbpp/558);
- ``python-call+counter-eq/1``: the reference returned a ``collections.Counter`` (its items are
  ``want``, as a dict); a result that is exactly a Counter (the runner sends it in a "counter" frame,
  the harness rebuilds it) is compared as Counters (a zero count equals a missing key), any other
  result as ``strict_equal`` to the dict -- Python's ``out == exp``, which EvalPlus evaluates
  (MBPP+ ``freq_count``, Mbpp/88).

A candidate's exact Counter reaches every dialect as a Counter: against a dict ``want`` it compares as
a dict, as Python's ``==`` does. Complex numbers compare with ``==`` in every dialect, tolerance
dialects included (EvalPlus applies ``np.allclose`` only when the expected value is a float or a
list/tuple of floats, or the task sets an atol; no MBPP+ or HumanEval+ task expects a complex under
a tolerance).

Value dialects define ``compare(got, want)``; the harness adapts it to ``judge``. Check dialects
define ``judge`` (and a ``compare`` without arguments for callers that have none).
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
    # True when the dialect judges with the call's arguments (defines ``judge``).
    uses_args: bool = False


_EXACT = Dialect(
    name="python-call/1",
    compare_source="def compare(got, want):\n    return strict_equal(got, want)\n",
)

COUNTER_EQ = "python-call+counter-eq/1"

_FLOAT = r"(?P<atol>[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?)"
_ATOL = re.compile(rf"^python-call\+atol={_FLOAT}/1$")
_POLY = re.compile(rf"^python-call\+poly-root={_FLOAT}/1$")
_PYRAMID = re.compile(rf"^python-call\+pyramid-area={_FLOAT}/1$")


def _atol_dialect(name: str, atol: float) -> Dialect:
    return Dialect(
        name=name,
        compare_source=f"def compare(got, want):\n    return close(got, want, {atol!r})\n",
    )


def atol_name(atol: float) -> str:
    """The dialect name for an absolute tolerance, spelled one way only."""
    return f"python-call+atol={atol!r}/1"


def poly_root_name(atol: float) -> str:
    return f"python-call+poly-root={atol!r}/1"


def pyramid_area_name(atol: float) -> str:
    return f"python-call+pyramid-area={atol!r}/1"


def _check(name: str, body: str, *, nonliteral_judged: bool = False, imports: str = "") -> Dialect:
    """A check dialect: ``body`` computes ``ok`` from got, want, args and kwargs.

    ``nonliteral_judged``: a result that is no literal (e.g. a ``re.Match``) is judged as an opaque
    non-None value instead of being a protocol error -- only for rules that look at nothing but
    whether the result is None (the object itself never reaches the harness). ``imports``: lines put
    first (the harness's own imports, e.g. ``collections.Counter``).
    """
    indented = "".join(f"        {line}\n" for line in body.strip("\n").split("\n"))
    source = (
        (f"{imports}\n\n\n" if imports else "") +
        ("NONLITERAL_JUDGED = True\n\n\n" if nonliteral_judged else "") +
        "def judge(got, want, args, kwargs):\n"
        "    try:\n"
        f"{indented}"
        "        return bool(ok)\n"
        "    except Exception:  # a result the rule cannot even evaluate is not right\n"
        "        return False\n"
        "\n"
        "\n"
        "def compare(got, want):\n"
        "    return judge(got, want, (), {})\n"
    )
    return Dialect(name=name, compare_source=source, uses_args=True)


def _poly_root(name: str, atol: float) -> Dialect:
    # EvalPlus's _poly (evalplus/eval/_special_oracle.py) and its find_zero oracle.
    return _check(name, f"""
xs = args[0]
ok = abs(sum([coeff * math.pow(got, i) for i, coeff in enumerate(xs)])) <= {atol!r}
""")


def _pyramid(name: str, atol: float) -> Dialect:
    # EvalPlus's _surface_Area oracle for Mbpp/581, applied when the result is not exactly want.
    return _check(name, f"""
if strict_equal(got, want):
    ok = True
else:
    base_edge, height = args
    slant_height = math.sqrt((base_edge / 2) ** 2 + height ** 2)
    recomputed = round(base_edge ** 2 + 4 * (base_edge * slant_height) / 2)
    ok = type(got) in (int, float) and abs(got - recomputed) <= {atol!r}
""")


_FIXED: dict[str, Dialect] = {d.name: d for d in (
    _EXACT,
    _check("python-call+set-eq/1", "ok = set(got) == set(want)"),
    _check("python-call+not-none/1", """
if type(got) is bool:
    ok = got == want
else:
    ok = want == (got is not None)
""", nonliteral_judged=True),
    _check("python-call+any-result/1", "ok = True"),
    _check("python-call+or-zero/1", "ok = strict_equal(got, want) or (type(got) in (int, float) and got == 0)"),
    _check("python-call+digit-distance/1", """
if strict_equal(got, want):
    ok = True
else:
    a, b = str(args[0]), str(args[1])
    width = max(len(a), len(b))
    a, b = a.zfill(width), b.zfill(width)
    ok = type(got) is int and got == sum(abs(int(x) - int(y)) for x, y in zip(a, b))
"""),
    _check(COUNTER_EQ, """
if type(got) is Counter:
    ok = got == Counter(want)
else:
    ok = strict_equal(got, want)
""", imports="from collections import Counter"),
)}

_PARAMETRIZED = ((_ATOL, atol_name, _atol_dialect), (_POLY, poly_root_name, _poly_root),
                 (_PYRAMID, pyramid_area_name, _pyramid))

KNOWN = (*_FIXED, "python-call+atol=<float>/1 (e.g. python-call+atol=1e-06/1)",
         "python-call+poly-root=<float>/1", "python-call+pyramid-area=<float>/1")


def get(name: str) -> Dialect:
    found = _FIXED.get(name)
    if found is not None:
        return found
    for pattern, spell, make in _PARAMETRIZED:
        m = pattern.match(name)
        if m:
            value = float(m.group("atol"))
            if math.isfinite(value) and name == spell(value):
                return make(name, value)
            raise ValueError(f"dialect {name!r}: spell the tolerance as {spell(value)!r}")
    raise ValueError(f"unknown dialect {name!r}; valid dialects: {', '.join(KNOWN)}")
