"""Reading values out of Python source that a dataset author wrote: literals, and constant arithmetic.

Test code and docstrings spell some inputs as arithmetic on constants (``3 * 19``, ``'ab' + 'cd'``,
``2.0 / 3.0``, ``0 ** 0``). ``value_of`` folds exactly those -- numbers and strings combined with
``+ - * / // % **`` -- and nothing else: no names, no calls (except ``tuple``/``list`` of a folded value,
which the tests use to wrap results). What comes out is re-checked by the literal grammar.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from acceptgate.suites import literals
_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_MAX_POW = 256  # folding never builds huge numbers or strings
_MAX_LEN = 100_000


class NotAValue(ValueError):
    """The expression is not a literal or constant arithmetic; ``construct`` says what broke it."""

    def __init__(self, construct: str) -> None:
        self.construct = construct
        super().__init__(construct)


def value_of(node: ast.AST) -> Any:
    """The value of a literal or constant-arithmetic expression, or NotAValue."""
    value = _fold(node, 0)
    try:
        literals.canonical(value)
    except literals.LiteralError as exc:
        raise NotAValue(str(exc)) from None
    return value


def _fold(node: ast.AST, depth: int) -> Any:
    if depth > literals.MAX_DEPTH:
        raise NotAValue("nesting too deep")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _fold(node.left, depth + 1), _fold(node.right, depth + 1)
        return _apply(node, left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _fold(node.operand, depth + 1)
        if type(operand) not in (int, float):
            raise NotAValue(f"unary operator on {type(operand).__name__}")
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_fold(e, depth + 1) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("tuple", "list") and len(node.args) == 1 and not node.keywords):
        inner = _fold(node.args[0], depth + 1)
        if type(inner) not in (tuple, list, str):
            raise NotAValue(f"{node.func.id}() of {type(inner).__name__}")
        return tuple(inner) if node.func.id == "tuple" else list(inner)
    try:  # everything else must already be a literal (sets, dicts, constants, set())
        return literals.parse(ast.unparse(node))
    except literals.LiteralError as exc:
        raise NotAValue(exc.construct) from None


def _apply(node: ast.BinOp, left: Any, right: Any) -> Any:
    numbers = (int, float)
    if type(left) in numbers and type(right) in numbers:
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_POW:
            raise NotAValue("exponent too large to fold")
    elif isinstance(node.op, ast.Add) and type(left) is type(right) and type(left) in (str, list, tuple):
        if len(left) + len(right) > _MAX_LEN:
            raise NotAValue("folded value too long")
    elif isinstance(node.op, ast.Mult) and {type(left), type(right)} & {str, list, tuple} and \
            {type(left), type(right)} & {int}:
        count = right if type(right) is int else left
        seq = left if type(right) is int else right
        if len(seq) * max(count, 0) > _MAX_LEN:
            raise NotAValue("folded value too long")
    else:
        raise NotAValue(f"operator on {type(left).__name__} and {type(right).__name__}")
    try:
        return _BINOPS[type(node.op)](left, right)
    except (ArithmeticError, ValueError, TypeError) as exc:
        raise NotAValue(f"arithmetic error: {exc}") from None


def is_call_to(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def call_arguments(call: ast.Call) -> tuple[tuple, dict]:
    """Positional and keyword argument values of a call whose arguments are all values."""
    args = []
    for a in call.args:
        if isinstance(a, ast.Starred):
            raise NotAValue("starred argument")
        args.append(value_of(a))
    kwargs = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise NotAValue("** argument")
        kwargs[kw.arg] = value_of(kw.value)
    return tuple(args), kwargs
