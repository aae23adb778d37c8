"""Literal-only values: the one grammar suites, RPC results and importers share.

A literal is None, bool, int (spelled ``0x...`` beyond ``DECIMAL_INT_BITS``), float (``inf``/``nan``
spelled as bare names), complex, str, bytes, and tuple, list, dict, set of literals. Anything else -- a
name, call (but ``set()`` and ``complex(R, I)``), attribute, lambda, comprehension, f-string, operator
other than a unary minus on a number or the ``+``/``-`` of a complex -- is rejected with the construct
that broke the rule.

``canonical(value)`` is the one spelling of a value that never depends on hash seed, locale, platform or
Unicode database version: sets are sorted by the canonical text of their elements, strings are escaped
by code point. Dict order is kept: it is data the author wrote (and a candidate can observe), and it is
not randomised by hashing.

Complex numbers are read as ``ast.literal_eval`` reads them (``2j``, ``-2j``, ``(1+2j)``, ``(-0.5-3j)``:
a signed real number plus or minus an imaginary constant, evaluated with Python's arithmetic), plus
``complex(R, I)`` with two signed real numbers (``inf``/``nan`` allowed) for the values that arithmetic
cannot reach: a non-finite part, or a signed zero it loses (``-0.0+1j`` is ``(0.0+1j)``). Canonical
spelling (``_complex_text``): the arithmetic form whenever Python evaluates it to exactly the same
parts, sign of zero included, else ``complex(R, I)`` -- so a rendered harness, which Python evaluates,
holds exactly the value the spec's parser read.
"""

from __future__ import annotations

import ast
from acceptgate._util import pyast
import itertools
import json
import math
import re
from dataclasses import dataclass
from typing import Any

MAX_TEXT_CHARS = 32 * 1024 * 1024
MAX_DEPTH = 100
MAX_INT_DIGITS = 4000  # below CPython's int<->str conversion limit (4300)
# Ints longer than this are spelled in hex (``0x...``, ``-0x...``): CPython will not spell them in
# decimal (and would take quadratic time to), while hex conversion is linear in both directions.
DECIMAL_INT_BITS = int(MAX_INT_DIGITS * 3.33)

LITERAL_TYPES = (type(None), bool, int, float, complex, str, bytes, tuple, list, dict, set)


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


def _real(node: ast.AST) -> float | int | None:
    """A signed real number (``1``, ``-2.5``, ``inf``, ``-inf``, ``nan``), or None."""
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    operand = node.operand if negative else node
    if isinstance(operand, ast.Constant) and type(operand.value) in (int, float):
        value = operand.value
    elif isinstance(operand, ast.Name) and operand.id in _NAMED_FLOATS and not (negative and operand.id == "nan"):
        value = _NAMED_FLOATS[operand.id]
    else:
        return None
    return -value if negative else value


def _complex_node(node: ast.AST) -> complex | None:
    """The complex value of ``R+Ij``, ``R-Ij`` or ``complex(R, I)`` as Python evaluates it, or None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = _real(node.left), node.right
        if left is None or not (isinstance(right, ast.Constant) and type(right.value) is complex):
            return None
        return left + right.value if isinstance(node.op, ast.Add) else left - right.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "complex"
            and len(node.args) == 2 and not node.keywords):
        real, imag = _real(node.args[0]), _real(node.args[1])
        if real is None or imag is None:
            raise LiteralError("complex() of a non-number", _describe(node))
        return complex(float(real), float(imag))
    return None


MAX_SAME_HASH = 16  # elements of one set/dict with one hash value


def hash_guard(keys: list[Any], what: str) -> None:
    """Refuse elements that would make a set or dict quadratic to build (or are unhashable): ints
    ``k * (2**61 - 1)`` all hash to 0, and each insertion would compare with every earlier one."""
    counts: dict[int, int] = {}
    for key in keys:
        try:
            h = hash(key)
        except TypeError as exc:
            raise LiteralError(f"unhashable {what} element", str(exc)[:100]) from None
        seen = counts.get(h, 0) + 1
        if seen > MAX_SAME_HASH:
            raise LiteralError(f"{what} with colliding hashes",
                               f"more than {MAX_SAME_HASH} elements with one hash value")
        counts[h] = seen


def _convert(node: ast.AST, depth: int, limits: _Limits) -> Any:
    if depth > limits.max_depth:
        raise LiteralError("nesting too deep", f"more than {limits.max_depth} levels")
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, (bool, str, bytes)):
            return value
        if isinstance(value, int):
            return value
        if isinstance(value, (float, complex)):
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
    if (number := _complex_node(node)) is not None:
        return number
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = node.operand
        if isinstance(operand, ast.Constant) and type(operand.value) in (int, float, complex):
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
        hash_guard(items, "set")  # before building it: colliding elements make that quadratic
        return set(items)
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        if any(k is None for k in node.keys):
            raise LiteralError("dict unpacking", _describe(node.values[node.keys.index(None)]))
        keys = [_convert(k, depth + 1, limits) for k in node.keys]
        hash_guard(keys, "dict key")
        for key, v in zip(keys, node.values):
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
        tree = pyast.parse(text.strip(), mode="eval")
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
# Many literals at once


def parse_many(texts: list[str]) -> list[tuple[Any, str] | LiteralError]:
    """``(parse(t), canonical(parse(t)))`` for each text, or the LiteralError ``parse(t)`` raises.

    A suite file holds up to ~10^5 literals, and Python's parser costs ~30 µs a call. Here a batch
    of texts is first read by the C JSON decoder (``_propose``: Python spellings rewritten as JSON),
    which only proposes values; a proposal is accepted only when ``canonical`` -- this grammar's own
    spelling -- gives back exactly the text. ``parse(canonical(v)) == v`` for every literal, so an
    accepted value is what ``parse`` would have read, whatever the rewrite did; every other text (not
    canonical, or no literal) goes through ``parse`` itself. ``ascii()`` (C) stands in for
    ``canonical`` where the two provably spell alike (``_ascii_is_canonical``).
    """
    values, plain, joined = _propose(texts)
    if not plain:
        return [_one(text, value, False) for text, value in zip(texts, values)]
    spelled = list(map(ascii, values))
    if "\x00".join(spelled) == joined:  # (no text holds a NUL: printable)
        return list(zip(values, texts))
    out: list[tuple[Any, str] | LiteralError] = list(zip(values, texts))
    for i in itertools.compress(itertools.count(), map(str.__ne__, spelled, texts)):  # only those
        out[i] = _one(texts[i], values[i], True)
    return out


def _one(text: str, value: Any, plain: bool) -> tuple[Any, str] | LiteralError:
    """``parse_many``'s answer for one text and its proposed value."""
    if value is not _NO_VALUE:
        if (plain or _ascii_is_canonical(text)) and ascii(value) == text:
            return value, text
        try:
            if canonical(value) == text:
                return value, text
        except LiteralError:  # e.g. nested too deep: parse says how
            pass
    try:
        value = parse(text)
        return value, canonical(value)
    except LiteralError as exc:
        return exc


_NO_VALUE = object()
# A single-quoted string's body (Python's tokenizer: any character but the quote, a backslash or a
# line break, or a backslash and the character it escapes); control characters end the batch path.
_STRING = re.compile(r"'([^'\\\x00-\x1f]*(?:\\[^\x00-\x1f][^'\\\x00-\x1f]*)*)'")
_TUPLE_KEY = "\x03"  # a tuple is proposed as the JSON object {"\u0003": [items]}
# Keeps only brackets, as one kind (for depth one kind does; str.translate is C-speed on ASCII)
_SHAPE = {o: None for o in range(0x80) if chr(o) not in "[](){}"} | str.maketrans("[{]}", "(())")
_DIGITS = str.maketrans("123456789", "000000000")
_LONG_RUN = "0" * 4000  # no int this long is spelled in decimal (DECIMAL_INT_BITS)


def _object(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and type(items := obj.get(_TUPLE_KEY)) is list:
        return tuple(items)
    if len(obj) > MAX_SAME_HASH:  # with fewer keys no hash value can be shared by too many
        hash_guard(list(obj), "dict key")
    return obj


_DECODER = json.JSONDecoder(object_hook=_object)


def _propose(texts: list[str]) -> tuple[list[Any], bool, str | None]:
    """A proposed value per text (``_NO_VALUE`` where none), the texts rewritten as JSON and decoded in
    one call: single-quoted strings as JSON strings, None/True/False/inf/nan as JSON's names, tuples
    as tagged objects. Only proposals: ``parse_many`` checks each against its text. Also whether
    ``_ascii_is_canonical`` holds for every text (``plain``), judged on all their code at once, and
    the texts joined by NULs."""
    if not texts or set(map(type, texts)) != {str} or max(map(len, texts)) > MAX_TEXT_CHARS:
        return [_NO_VALUE] * len(texts), False, None
    joined = "\x00".join(texts)
    if not (joined.isascii() and all(map(str.isprintable, texts))):
        return [_NO_VALUE] * len(texts), False, None  # (canonical spellings are printable ASCII)
    parts = _STRING.split(joined)
    code = "\x01".join(parts[0::2])
    plain = _plain_code(code)
    code_parts = (code.replace("None", "null").replace("True", "true").replace("False", "false")
                  .replace("inf", "Infinity").replace("nan", "NaN")
                  .replace(",)", ")").replace("(", '{"\\u0003":[').replace(")", "]}")).split("\x01")
    bodies = ("\x00".join(parts[1::2]).replace("\\\\", "\x01").replace("\\'", "'").replace('"', '\\"')
              .replace("\\x", "\\u00").replace("\x01", "\\\\"))
    quoted = ('"' + bodies.replace("\x00", '"\x00"') + '"').split("\x00") if len(parts) > 1 else []
    pieces = "".join([*itertools.chain.from_iterable(zip(code_parts, quoted)), code_parts[-1]]).split("\x00")
    try:
        values = _DECODER.decode("[" + ",".join(pieces) + "]")
        if len(values) == len(texts):
            return values, plain, joined
    except (ValueError, RecursionError):  # LiteralError (hash_guard) is a ValueError
        pass
    return [_decode_one(piece) for piece in pieces], plain, joined


def _decode_one(piece: str) -> Any:
    try:
        value, end = _DECODER.scan_once(piece, 0)
    except (StopIteration, ValueError, RecursionError):
        return _NO_VALUE
    return value if end == len(piece) else _NO_VALUE


def _ascii_is_canonical(text: str) -> bool:
    """Whether ``ascii(v) == text`` implies ``canonical(v) == text`` for a value the JSON path builds."""
    return text.isascii() and _plain_code("\x01".join(_STRING.split(text)[0::2]))


def _plain_code(code: str) -> bool:
    """For values the JSON path builds (None, bools, ints, floats, str, and lists, tuples and str-keyed
    dicts of them), ``ascii()`` and ``canonical`` spell alike but for: a str with a quote and no double
    quote (``ascii``: ``"it's"``), an int beyond the decimal limit (``ascii``: decimal) and nesting
    beyond ``MAX_DEPTH`` (``ascii`` spells it, ``parse`` refuses it). ``code``, a text's characters
    outside single-quoted strings, without a double quote, a 4,000-digit run or brackets nested more
    than ``MAX_DEPTH`` deep rules all three out in a text that is ``ascii(v)``: such a str's opening
    double quote would be outside the single-quoted strings before it."""
    if '"' in code:
        return False
    if len(code) >= len(_LONG_RUN) and _LONG_RUN in code.translate(_DIGITS):
        return False
    shape = code.translate(_SHAPE)
    for _ in range(MAX_DEPTH):  # a level of innermost pairs a pass (a text that is ascii(v) balances)
        if not shape:
            return True
        shape = shape.replace("()", "")
    return not shape


# ---------------------------------------------------------------------------------------------
# Canonical spelling


def _ascii_escape(o: int) -> str:
    if o == 0x5C:
        return "\\\\"
    if o == 0x27:
        return "\\'"
    if 0x20 <= o < 0x7F:
        return chr(o)
    return {0x0A: "\\n", 0x09: "\\t", 0x0D: "\\r"}.get(o, f"\\x{o:02x}")


# Every ASCII code point's spelling (a str.translate table); the non-ASCII ones are spelled by the
# codec's backslashreplace: \xNN, \uNNNN, \UNNNNNNNN in lowercase hex (imports spell ~10^7).
_ASCII_TABLE = {o: _ascii_escape(o) for o in range(0x80)}


def _escape_str(s: str) -> str:
    """Quote and escape by code point: printable ASCII as is (but \\ and '), \\n \\t \\r, then
    \\xNN, \\uNNNN, \\UNNNNNNNN -- never the Unicode database's idea of printable."""
    if s.isascii():
        if s.isprintable() and "\\" not in s and "'" not in s:
            return "'" + s + "'"
        return "'" + s.translate(_ASCII_TABLE) + "'"
    return "'" + s.translate(_ASCII_TABLE).encode("ascii", "backslashreplace").decode("ascii") + "'"


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


def _complex_text(z: complex) -> str:
    """The arithmetic spelling when Python evaluates it to exactly these parts, else ``complex(R, I)``."""
    r, i = z.real, z.imag
    if math.isfinite(r) and math.isfinite(i):
        real_neg, imag_neg = math.copysign(1.0, r) < 0, math.copysign(1.0, i) < 0
        imag = repr(abs(i))
        if r == 0 and real_neg == imag_neg:  # Ij is complex(0.0, I); -Ij is complex(-0.0, -I)
            return f"-{imag}j" if imag_neg else f"{imag}j"
        if not imag_neg and not (r == 0 and real_neg):  # R + Ij: R + 0.0 loses only a -0.0
            return f"({repr(r)}+{imag}j)"
        if imag_neg and i != 0:  # R - Ij: 0.0 - I loses only a -0.0
            return f"({repr(r)}-{imag}j)"
    return f"complex({_float_text(r)}, {_float_text(i)})"


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
    if t is complex:
        return _complex_text(value)
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
