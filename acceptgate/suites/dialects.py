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
- ``python-call+set-eq/1``: ``set(got) == set(want)`` (MBPP+ tasks whose output order is free),
  decided by sorting the elements' equality forms, never by hashing them (``SET_FORMS_SOURCE``);
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

An expected value too large to keep as a literal (HumanEval+'s 6.9 MB strings, 8 MB lists, million-digit
ints) is kept as its digest:

- ``python-call+digest/1``: each case's expected value is ``("value", v)``, compared exactly (as
  ``python-call/1``), or ``("sha256", hexdigest, length)``: the result passes when the sha256 and the
  byte length of its *equality form* are those. The equality form (``EQUALITY_DIGEST_SOURCE``, rendered
  into the harness and run by the importer next to the reference) is one byte string per class of values
  that ``==`` makes equal -- bools and integral floats spelled as ints, NaN as NaN, sets and dict items
  sorted, strings as length-prefixed UTF-8 -- so a digest case passes exactly when the result equals the
  reference's output, as it would compared in full. ``length`` also sizes the largest answer the harness
  reads for that case (``Dialect.expected_chars``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Dialect:
    name: str
    # The comparison as spelled in the rendered harness, on top of harness_prelude.py.
    compare_source: str
    # True when the dialect judges with the call's arguments (defines ``judge``).
    uses_args: bool = False
    # The shape an expected value must have (None: any literal): returns what is wrong, or None.
    expected_problem: Callable[[Any], str | None] | None = None
    # The length of the literal an expected value stands for, where it is not the value's own spelling
    # (a digest): the harness sizes the largest answer it reads from it.
    expected_chars: Callable[[Any], int] | None = None
    # An expected value of the valid shape (to render a one-case harness of the dialect).
    example_expected: Any = None


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


# The equality form and its digest. Self-contained (its own imports, names no prelude function), because
# it runs in two places that must agree byte for byte: rendered into a digest harness (judging a
# candidate's result), and appended to the reference inside the sandbox at import (so that a huge output
# is digested where it is made and never shipped). Prefix-free by construction, so distinct values
# have distinct forms: None "N"; numbers "i<int>;" (decimal, hex beyond 13,000 bits) or "f<repr>;"
# (non-integral floats, nan, inf, -inf); str "s<n>:" + n bytes of UTF-8; bytes "b<n>:" + n bytes; list
# "[...]", tuple "(...)"; set "{...}" and dict "<...>" with their items' forms sorted.
EQUALITY_DIGEST_SOURCE = '''
def acceptgate_equality_digest(value):
    """(sha256 hex digest, length in bytes) of value's equality form (acceptgate.suites.dialects)."""
    import hashlib
    h = hashlib.sha256()
    pending = []
    sizes = [0, 0]  # bytes in total, bytes pending

    def put(b):
        sizes[0] += len(b)
        if len(b) > 65536:
            h.update(b"".join(pending))
            pending.clear()
            sizes[1] = 0
            h.update(b)
            return
        pending.append(b)
        sizes[1] += len(b)
        if sizes[1] > 65536:
            h.update(b"".join(pending))
            pending.clear()
            sizes[1] = 0

    _acceptgate_equality_form(value, put, 0)
    h.update(b"".join(pending))
    return h.hexdigest(), sizes[0]


_ACCEPTGATE_SMALL_INT = 1 << 13000


def _acceptgate_number_form(x):
    if type(x) is float:
        if x != x:
            return b"fnan;"
        if x == float("inf") or x == -float("inf"):
            return b"finf;" if x > 0 else b"f-inf;"
        if not x.is_integer():
            return b"f" + repr(x).encode("ascii") + b";"
    x = int(x)
    if -_ACCEPTGATE_SMALL_INT < x < _ACCEPTGATE_SMALL_INT:
        return b"i" + str(x).encode("ascii") + b";"
    return b"i" + hex(x).encode("ascii") + b";"


_ACCEPTGATE_INT = {int}
_ACCEPTGATE_NUMBERS = {int, float}
_ACCEPTGATE_FLAT = {str, bytes, int, float, bool, type(None)}


class _AcceptgateForms(dict):
    """The forms of scalars (of the _ACCEPTGATE_FLAT types only), memoised: a table of millions of rows
    of the same few strings is spelled at C speed. Only str and bytes are kept: their hashes are
    seeded per process, while a number's hash is known to a hostile answer, which could make every
    key collide (k * (2**61 - 1) all hash to 0) and each insertion cost the whole table. Others are
    looked up (a probe among unpredictable hashes) and spelled each time. Small forms only, and
    never more than 65,536."""

    def __missing__(self, value):
        out = []
        _acceptgate_equality_form(value, out.append, 0)
        form = b"".join(out)
        if len(form) <= 256 and (type(value) is str or type(value) is bytes):
            if len(self) >= 65536:
                self.clear()
            self[value] = form
        return form


_ACCEPTGATE_FORMS = _AcceptgateForms()


def _acceptgate_equality_bytes(value):
    parts = []
    _acceptgate_equality_form(value, parts.append, 0)
    return b"".join(parts)


def _acceptgate_equality_form(value, put, depth):
    if depth > 100:
        raise ValueError("nesting too deep")
    t = type(value)
    if value is None:
        put(b"N")
    elif t is int or t is float or t is bool:
        put(_acceptgate_number_form(value))
    elif t is str:
        data = value.encode("utf-8", "surrogatepass")
        put(b"s" + str(len(data)).encode("ascii") + b":")
        put(data)
    elif t is bytes:
        put(b"b" + str(len(value)).encode("ascii") + b":")
        put(value)
    elif t is list or t is tuple:
        opener, closer = (b"[", b"]") if t is list else (b"(", b")")
        kinds = set(map(type, value))
        if kinds == _ACCEPTGATE_INT and -_ACCEPTGATE_SMALL_INT < min(value) and max(value) < _ACCEPTGATE_SMALL_INT:
            put(opener)
            for i in range(0, len(value), 4096):  # a long list of ints, a slice at a time
                put(("i" + ";i".join(map(str, value[i:i + 4096])) + ";").encode("ascii"))
            put(closer)
        elif kinds and kinds <= _ACCEPTGATE_NUMBERS and all(
                type(v) is float or -_ACCEPTGATE_SMALL_INT < v < _ACCEPTGATE_SMALL_INT for v in value):
            put(opener)
            for i in range(0, len(value), 4096):  # numbers: as _acceptgate_number_form, inlined
                put("".join(["i%d;" % v if type(v) is int or v.is_integer() else "f" + repr(v) + ";"
                             for v in value[i:i + 4096]]).encode("ascii"))
            put(closer)
        elif kinds <= _ACCEPTGATE_FLAT and len(value) <= 4096:
            # a short row of scalars (a table of millions of rows of a few strings): one put
            put(opener + b"".join(map(_ACCEPTGATE_FORMS.__getitem__, value)) + closer)
        elif kinds <= _ACCEPTGATE_FLAT:
            put(opener)
            for i in range(0, len(value), 4096):  # scalars, a slice at a time
                put(b"".join(map(_ACCEPTGATE_FORMS.__getitem__, value[i:i + 4096])))
            put(closer)
        else:
            put(opener)
            for v in value:
                _acceptgate_equality_form(v, put, depth + 1)
            put(closer)
    elif t is set:
        put(b"{")
        for item in sorted(_acceptgate_equality_bytes(v) for v in value):
            put(item)
        put(b"}")
    elif t is dict:
        put(b"<")
        # keys' forms are distinct and prefix-free, so sorting key + value sorts by key
        for item in sorted(_acceptgate_equality_bytes(k) + _acceptgate_equality_bytes(v)
                           for k, v in value.items()):
            put(item)
        put(b">")
    else:
        raise TypeError("not a literal: " + t.__name__)
'''

SET_EQ = "python-call+set-eq/1"

# ``set(got) == set(want)`` without hashing the candidate's values: a set of hostile elements that all
# hash alike (k * (2**61 - 1) are all 0) costs quadratic time to build. Each element is spelled in
# an equality form (as EQUALITY_DIGEST_SOURCE's, plus complex numbers; one byte string per class of
# values == makes equal, prefix-free), and the forms are sorted and deduplicated: a total order, so
# O(n log n) whatever the values. Same verdicts as the sets: an unhashable element (a list, dict or
# set inside) raises TypeError as set() does, and an element holding a NaN makes the sets unequal
# (a NaN equals only the very same object, and the candidate's values are never the harness's).
SET_FORMS_SOURCE = '''
def acceptgate_set_forms(value):
    # The sorted distinct forms of set(value)'s elements, or None when one holds a NaN.
    if not isinstance(value, (str, bytes, list, tuple, set, dict)):
        raise TypeError("not iterable: " + type(value).__name__)
    forms = []
    for item in value:
        out = []
        if not _acceptgate_set_form(item, out.append, 0):
            return None
        forms.append(b"".join(out))
    forms.sort()
    return [f for i, f in enumerate(forms) if i == 0 or f != forms[i - 1]]


_ACCEPTGATE_SET_BIG = 1 << 13000


def _acceptgate_set_form(value, put, depth):
    # False when value holds a NaN; TypeError for what set() cannot hold.
    if depth > 100:
        raise ValueError("nesting too deep")
    t = type(value)
    if value is None:
        put(b"N")
    elif t is int or t is bool:
        x = int(value)
        put(b"i" + (str(x) if -_ACCEPTGATE_SET_BIG < x < _ACCEPTGATE_SET_BIG else hex(x)).encode("ascii") + b";")
    elif t is float:
        if value != value:
            return False
        if value == float("inf") or value == -float("inf"):
            put(b"finf;" if value > 0 else b"f-inf;")
        elif value.is_integer():
            put(b"i" + str(int(value)).encode("ascii") + b";")
        else:
            put(b"f" + repr(value).encode("ascii") + b";")
    elif t is complex:
        if value.imag == 0:  # equal to its real part (hash too): 1+0j == 1.0 == 1
            return _acceptgate_set_form(value.real, put, depth + 1)
        put(b"c")
        return _acceptgate_set_form(value.real, put, depth + 1) and _acceptgate_set_form(value.imag, put, depth + 1)
    elif t is str:
        data = value.encode("utf-8", "surrogatepass")
        put(b"s" + str(len(data)).encode("ascii") + b":")
        put(data)
    elif t is bytes:
        put(b"b" + str(len(value)).encode("ascii") + b":")
        put(value)
    elif t is tuple:
        put(b"(")
        for v in value:
            if not _acceptgate_set_form(v, put, depth + 1):
                return False
        put(b")")
    else:
        raise TypeError("unhashable type: " + t.__name__)
    return True
'''


DIGEST = "python-call+digest/1"


def _digest_problem(want: Any) -> str | None:
    if type(want) is tuple and len(want) == 2 and want[0] == "value":
        return None
    if (type(want) is tuple and len(want) == 3 and want[0] == "sha256" and type(want[1]) is str
            and re.fullmatch(r"[0-9a-f]{64}", want[1]) and type(want[2]) is int and want[2] > 0):
        return None
    return "expected ('value', literal) or ('sha256', 64 lowercase hex digits, length > 0)"


def _digest_chars(want: Any) -> int:
    from acceptgate.suites.literals import canonical

    return want[2] if want[0] == "sha256" else len(canonical(want[1]))


_DIGEST = Dialect(
    name=DIGEST,
    compare_source=EQUALITY_DIGEST_SOURCE.strip("\n") + '''


def compare(got, want):
    if want[0] == "value":
        return strict_equal(got, want[1])
    try:
        digest, length = acceptgate_equality_digest(got)
    except Exception:  # a result with no equality form is not right
        return False
    return length == want[2] and digest == want[1]
''',
    expected_problem=_digest_problem,
    expected_chars=_digest_chars,
    example_expected=("value", None),
)


def equality_digest(value: Any) -> tuple[str, int]:
    """The digest a ``python-call+digest/1`` case holds for ``value`` (the rendered code, run here)."""
    return _digest_namespace()["acceptgate_equality_digest"](value)


def _digest_namespace() -> dict:
    namespace: dict = {}
    exec(compile(EQUALITY_DIGEST_SOURCE, "<acceptgate equality digest>", "exec"), namespace)
    return namespace


_FIXED: dict[str, Dialect] = {d.name: d for d in (
    _EXACT,
    _DIGEST,
    _check(SET_EQ, """
mine = acceptgate_set_forms(got)
ok = mine is not None and mine == acceptgate_set_forms(want)
""", imports=SET_FORMS_SOURCE.strip("\n")),
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
