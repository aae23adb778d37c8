"""Hidden cases from a HumanEval ``check(candidate)`` function, read with ``ast`` (never executed).

Recognised assert shapes (``candidate(...)`` with literal or constant-arithmetic arguments):

- ``candidate(x) == y`` (either side; also wrapped as ``tuple(candidate(x)) == tuple(y)``);
- ``candidate(x) is True`` / ``is False`` / ``is None``;
- ``abs(candidate(x) - y) < tol`` (or ``<=``): a float comparison with a tolerance;
- ``candidate(x)`` and ``not candidate(x)``: truthiness.

Statements the shapes do not cover are returned as ``Skipped`` with a reason: loops over random
inputs (``random-input``), other loops (``loop-assert``), asserts on a property of the output rather than
the output itself (``property-check``, e.g. ``find_zero``), non-literal arguments (``non-literal-input``).
``assert True`` statements (HumanEval's "this prints if this assert fails" markers) test nothing and are
not cases. The stated right-hand side only cross-checks the reference; expected values come from it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from acceptgate._util import pyast
from acceptgate.datasets.importers.pyexpr import NotAValue, call_arguments, is_call_to, value_of

CANDIDATE = "candidate"
_RANDOM_NAMES = {"random", "rng", "randint", "choice", "uniform", "shuffle", "sample"}


@dataclass(frozen=True)
class AssertCase:
    index: int  # position of the statement in check()
    args: tuple
    kwargs: dict = field(default_factory=dict)
    relation: str = "eq"  # eq | is | truthy | falsy | close
    stated: Any = None  # the right-hand side, when it is a value
    has_stated: bool = False
    tolerance: float | None = None  # for relation "close"
    text: str = ""


@dataclass(frozen=True)
class Skipped:
    reason: str
    detail: str
    index: int | None = None


def check_function(test_source: str) -> ast.FunctionDef | None:
    try:
        tree = pyast.parse(test_source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            return node
    return None


def extract(test_source: str) -> tuple[list[AssertCase], list[Skipped]]:
    fn = check_function(test_source)
    if fn is None:
        return [], [Skipped("unparsed-test", "no def check(candidate) in the test code")]
    param = fn.args.args[0].arg if fn.args.args else CANDIDATE
    uses_random = any(isinstance(n, ast.Name) and n.id in _RANDOM_NAMES for n in ast.walk(fn)) or \
        any(isinstance(n, (ast.Import, ast.ImportFrom)) and "random" in ast.unparse(n) for n in ast.walk(fn))
    cases: list[AssertCase] = []
    skipped: list[Skipped] = []
    for index, stmt in enumerate(fn.body):
        if isinstance(stmt, ast.Assert):
            item = _assert(stmt, index, param)
            if isinstance(item, AssertCase):
                cases.append(item)
            elif item is not None:
                skipped.append(item)
        elif _calls_candidate(stmt, param) and _has_assert(stmt):
            skipped.append(_compound(stmt, index, param, uses_random))
    return cases, skipped


def _assert(stmt: ast.Assert, index: int, param: str) -> AssertCase | Skipped | None:
    test = stmt.test
    text = ast.unparse(test)
    if not _calls_candidate(test, param):
        if isinstance(test, ast.Constant) and test.value is True:
            return None  # "assert True, 'This prints if this assert fails'": not a test
        return Skipped("unsupported-assert", f"assert without a candidate call: {text[:200]}", index)
    shape = _shape(test, param)
    if shape is None:
        return Skipped("property-check", f"asserts a property of the output: {text[:200]}", index)
    call, relation, rhs, tolerance = shape
    try:
        args, kwargs = call_arguments(call)
    except NotAValue as exc:
        return Skipped("non-literal-input", f"{exc.construct} in {text[:200]}", index)
    stated, has = _value(rhs)
    if relation == "close" and not has:
        return Skipped("non-literal-expected", f"tolerance assert without a value: {text[:200]}", index)
    return AssertCase(index, args, kwargs, relation, stated, has, tolerance, text)


def _shape(test: ast.expr, param: str):
    """(call, relation, rhs node or constant, tolerance) for a recognised assert, else None."""
    if is_call_to(test, param):
        return test, "truthy", ast.Constant(True), None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and is_call_to(test.operand, param):
        return test.operand, "falsy", ast.Constant(False), None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, ast.Eq):
        for a, b in ((left, right), (right, left)):
            call = _unwrap(a, param)
            if call is not None and not _calls_candidate(b, param):
                return call, "eq", b, None
        return None
    if isinstance(op, ast.Is):
        if is_call_to(left, param) and isinstance(right, ast.Constant) and right.value in (True, False, None):
            return left, "is", right, None
        return None
    if isinstance(op, (ast.Lt, ast.LtE)):
        return _close(left, right, param)
    return None


def _unwrap(node: ast.expr, param: str) -> ast.Call | None:
    """candidate(...), or tuple(candidate(...)) / list(candidate(...)) as the tests write it."""
    if is_call_to(node, param):
        return node  # type: ignore[return-value]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("tuple", "list")
            and len(node.args) == 1 and not node.keywords and is_call_to(node.args[0], param)):
        return node.args[0]  # type: ignore[return-value]
    return None


def _close(left: ast.expr, right: ast.expr, param: str):
    """abs(candidate(x) - y) < tol  or  abs(y - candidate(x)) < tol."""
    if not (is_call_to(left, "abs") and len(left.args) == 1 and isinstance(left.args[0], ast.BinOp)
            and isinstance(left.args[0].op, ast.Sub)):
        return None
    diff = left.args[0]
    tolerance, ok = _value(right)
    if not ok or type(tolerance) not in (int, float) or tolerance <= 0:
        return None
    for a, b in ((diff.left, diff.right), (diff.right, diff.left)):
        if is_call_to(a, param) and not _calls_candidate(b, param):
            return a, "close", b, float(tolerance)
    return None


def _compound(stmt: ast.stmt, index: int, param: str, uses_random: bool) -> Skipped:
    kind = type(stmt).__name__.lower()
    text = ast.unparse(stmt).replace("\n", " | ")[:200]
    asserts = [n for n in ast.walk(stmt) if isinstance(n, ast.Assert)]
    if asserts and not any(_calls_candidate(a.test, param) for a in asserts):
        return Skipped("property-check", f"{kind} asserts a property of the output: {text}", index)
    if uses_random:
        return Skipped("random-input", f"{kind} over random inputs: {text}", index)
    return Skipped("loop-assert", f"asserts inside a {kind}: {text}", index)


def _calls_candidate(node: ast.AST, param: str) -> bool:
    return any(is_call_to(n, param) for n in ast.walk(node))


def _has_assert(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Assert) for n in ast.walk(node))


def _value(node: ast.AST) -> tuple[Any, bool]:
    try:
        return value_of(node), True
    except NotAValue:
        return None, False
