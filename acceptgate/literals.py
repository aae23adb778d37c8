"""Literal-only values: the one grammar suites, RPC results and importers share.

A literal is None, bool, int (spelled ``0x...`` beyond ``DECIMAL_INT_BITS``), float (``inf``/``nan``
spelled as bare names), str, bytes, and tuple, list, dict, set of literals. Anything else -- a name,
call, attribute, lambda, comprehension, f-string, operator other than a unary minus on a number -- is
rejected with the construct that broke the rule.

``canonical(value)`` is the one spelling of a value that never depends on hash seed, locale, platform or
Unicode database version: sets are sorted by the canonical text of their elements, strings are escaped
by code point. Dict order is kept: it is data the author wrote (and a candidate can observe), and it is
not randomised by hashing.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any

MAX_TEXT_CHARS = 32 * 1024 * 1024
MAX_DEPTH = 100
MAX_INT_DIGITS = 4000  # below CPython's int<->str conversion limit (4300)
# Ints longer than this are spelled in hex (``0x...``, ``-0x...``): CPython will not spell them in
# decimal (and would take quadratic time to), while hex conversion is linear in both directions.
DECIMAL_INT_BITS = int(MAX_INT_DIGITS * 3.33)

LITERAL_TYPES = (type(None), bool, int, float, str, bytes, tuple, list, dict, set)


class LiteralError(ValueError):
    """A text that is not a literal, or a value that cannot be spelled as one."""

    def __init__(self, construct: str, detail: str = "") -> None:
        self.construct = construct
        self.detail = detail
        super().__init__(f"{construct}: {detail}" if detail else construct)


@dataclass(frozen=True)
class _Limits:
    max_chars: int = MAX_TEXT_CHARS
    max_depth: int = MAX_DEPTH


def _describe(node: ast.AST) -> str:
    """Name an offending node the way a user would recognise it in their JSON."""
    try:
        src = ast.unparse(node)
    except Exception:  # unparse can fail on odd trees; the node type is still useful
        src = ""
    if len(src) > 60:
        src = src[:57] + "..."
    kind = {
        ast.Call: "call",
        ast.Name: "name",
        ast.Attribute: "attribute access",
        ast.Lambda: "lambda",
        ast.ListComp: "comprehension",
        ast.SetComp: "comprehension",
        ast.DictComp: "comprehension",
        ast.GeneratorExp: "generator expression",
        ast.JoinedStr: "f-string",
        ast.BinOp: "operator",
        ast.BoolOp: "operator",
        ast.Compare: "comparison",
        ast.Subscript: "subscript",
        ast.Starred: "starred expression",
        ast.IfExp: "conditional expression",
        ast.NamedExpr: "assignment expression",
        ast.Await: "await",
        ast.Yield: "yield",
        ast.YieldFrom: "yield",
        ast.Slice: "slice",
    }.get(type(node), type(node).__name__)
    return f"{kind} `{src}`" if src else kind


_NAMED_FLOATS = {"inf": math.inf, "nan": math.nan}


def _convert(node: ast.AST, depth: int, limits: _Limits) -> Any:
    if depth > limits.max_depth:
        raise LiteralError("nesting too deep", f"more than {limits.max_depth} levels")
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, (bool, str, bytes)):
            return value
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return value
        raise LiteralError(f"constant of type {type(value).__name__}", repr(value)[:60])
    if (  # ``set()`` is the canonical empty set: the only call the grammar admits
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "set"
        and not node.args
        and not node.keywords
    ):
        return set()
    if isinstance(node, ast.Name) and node.id in _NAMED_FLOATS:
        return _NAMED_FLOATS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = node.operand
        if isinstance(operand, ast.Constant) and type(operand.value) in (int, float):
            return -operand.value
        if isinstance(operand, ast.Name) and operand.id == "inf":
            return -math.inf
        raise LiteralError("unary minus on a non-number", _describe(node))
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_convert(e, depth + 1, limits) for e in node.elts]
        if isinstance(node, ast.Tuple):
            return tuple(items)
        if isinstance(node, ast.List):
            return items
        try:
            return set(items)
        except TypeError as exc:
            raise LiteralError("unhashable set element", str(exc)) from None
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                raise LiteralError("dict unpacking", _describe(v))
            key = _convert(k, depth + 1, limits)
            try:
                out[key] = _convert(v, depth + 1, limits)
            except TypeError as exc:
                raise LiteralError("unhashable dict key", str(exc)) from None
        return out
    raise LiteralError(_describe(node))


def parse(text: str, *, max_chars: int = MAX_TEXT_CHARS, max_depth: int = MAX_DEPTH) -> Any:
    """Parse one literal expression. Raises LiteralError naming the offending construct."""
    if not isinstance(text, str):
        raise LiteralError("not a string", f"got {type(text).__name__}")
    if len(text) > max_chars:
        raise LiteralError("text too long", f"{len(text)} characters, limit {max_chars}")
    # CPython's parser refuses more than 200 nested brackets with a SyntaxError, so parsing
    # itself cannot blow the stack; _convert then enforces max_depth.
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise LiteralError("syntax error", exc.msg) from None
    except (RecursionError, MemoryError):
        raise LiteralError("nesting too deep", "parser recursion limit") from None
    except ValueError as exc:  # e.g. null bytes, or int too large for CPython's conversion limit
        raise LiteralError("invalid text", str(exc)) from None
    # Ints: a decimal spelling beyond CPython's limit is refused by ast.parse above ("invalid text");
    # longer ints are written in hex, bounded by the text's length.
    return _convert(tree.body, 0, _Limits(max_chars, max_depth))


# ---------------------------------------------------------------------------------------------
# Canonical spelling


def _escape_str(s: str) -> str:
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("\\'")
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o <= 0xFF:
            out.append(f"\\x{o:02x}")
        elif o <= 0xFFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    return "'" + "".join(out) + "'"


def _escape_bytes(b: bytes) -> str:
    out = []
    for o in b:
        if o == 0x5C:
            out.append("\\\\")
        elif o == 0x27:
            out.append("\\'")
        elif 0x20 <= o < 0x7F:
            out.append(chr(o))
        else:
            out.append(f"\\x{o:02x}")
    return "b'" + "".join(out) + "'"


def _hex_int(value: int) -> str:
    """The spelling of an int beyond the decimal limit: ``0x`` + lowercase hex digits (linear time)."""
    return hex(value)


def _float_text(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)  # shortest round-trip repr: identical on every IEEE-754 platform


def canonical(value: Any, _depth: int = 0) -> str:
    """The one spelling of a literal value. Raises LiteralError for anything not a literal.

    Types are checked exactly (``type(x) is int``): a subclass could carry its own ``__eq__``.
    """
    if _depth > MAX_DEPTH:
        raise LiteralError("nesting too deep", f"more than {MAX_DEPTH} levels (or a cycle)")
    t = type(value)
    if value is None:
        return "None"
    if t is bool:
        return "True" if value else "False"
    if t is int:
        return str(value) if value.bit_length() <= DECIMAL_INT_BITS else _hex_int(value)
    if t is float:
        return _float_text(value)
    if t is str:
        return _escape_str(value)
    if t is bytes:
        return _escape_bytes(value)
    if t is tuple:
        inner = [canonical(v, _depth + 1) for v in value]
        return "(" + inner[0] + ",)" if len(inner) == 1 else "(" + ", ".join(inner) + ")"
    if t is list:
        return "[" + ", ".join(canonical(v, _depth + 1) for v in value) + "]"
    if t is set:
        if not value:
            return "set()"
        return "{" + ", ".join(sorted(canonical(v, _depth + 1) for v in value)) + "}"
    if t is dict:
        return "{" + ", ".join(
            f"{canonical(k, _depth + 1)}: {canonical(v, _depth + 1)}" for k, v in value.items()
        ) + "}"
    raise LiteralError(f"non-literal value of type {t.__module__}.{t.__qualname__}")


def parse_canonical(text: str) -> str:
    """Parse then re-spell: the canonical text of a literal expression."""
    return canonical(parse(text))
