"""The bounded parser of the runner's answers: Python ``repr`` of literals, and nothing else.

Everything the candidate's process sends is hostile input to the trusted side. ``ast.parse`` is not
fit for it: a 1 MiB answer of ``[0,0,...]`` costs it hundreds of MiB and seconds, with no way to stop
it at a deadline. This parser reads one token at a time (one regular expression, linear, possessive
so it never backtracks), builds the value directly with an explicit stack (no recursion), checks the
deadline every few thousand tokens, and refuses a set or dict whose elements share one hash value
more than ``MAX_SAME_HASH`` times (building it would be quadratic: ``k * (2**61 - 1)`` all hash to 0).

The grammar is what ``repr`` writes for the literal types (``literals.LITERAL_TYPES``): None, True,
False, ints (decimal up to CPython's 4,300-digit limit, or ``0x`` hex of any length: the runner's
spelling of a longer int, converted in linear time), floats (``inf``, ``-inf``, ``nan``), complex
numbers as repr writes them (``2j``, ``-0j``, ``(1+2j)``, ``(-0-1j)``, ``(nan+infj)``: one token, read
by ``complex()``, which keeps each part's sign exactly, where ``literal_eval``'s arithmetic would turn
the zero of ``-0j``'s real part negative -- equal under ``==`` either way), quoted strings and bytes
with the escapes repr uses, and [ ], ( ), { } with ``set()`` for the empty set.
Anything else -- names, calls, operators, a parenthesised value that is not a tuple -- is a
``LiteralError``. Values parsed here equal ``ast.literal_eval`` of the same text whenever both accept it.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any, Callable

from acceptgate.suites.literals import LiteralError, hash_guard

MAX_DEPTH = 100  # as the runner's own check
MAX_DECIMAL_DIGITS = sys.int_info.default_max_str_digits  # 4300: the longest decimal repr writes
DEADLINE_EVERY = 4096  # tokens between two looks at the clock...
DEADLINE_CHARS = 64 * 1024  # ...or characters (a token can be a 4,000-digit int, slow to convert)

_STR_ESC = r"""\\(?:[\\'"abfnrtv]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})"""
_BYTES_ESC = r"""\\(?:[\\'"abfnrtv]|x[0-9a-fA-F]{2})"""
_PART = r"(?:[0-9]++(?:\.[0-9]++)?(?:e[-+]?[0-9]++)?|inf|nan)"  # a part of a complex's repr
_TOKEN = re.compile(
    r"""[ \t\r\n]*+(?:
      (?P<complex>-?""" + _PART + r"""j(?![\w.])|\(-?""" + _PART + "[-+]" + _PART + r"""j\))
    | (?P<open>[\[({])
    | (?P<close>[\])}])
    | (?P<comma>,)
    | (?P<colon>:)
    | (?P<str>'(?:[^'\\\r\n]++|""" + _STR_ESC + r""")*+'|"(?:[^"\\\r\n]++|""" + _STR_ESC + r""")*+")
    | (?P<bytes>b'(?:[\x20-\x26\x28-\x5b\x5d-\x7e]++|""" + _BYTES_ESC + r""")*+'
               |b"(?:[\x20\x21\x23-\x5b\x5d-\x7e]++|""" + _BYTES_ESC + r""")*+")
    | (?P<float>-?(?:[0-9]++\.[0-9]*+(?:e[-+]?[0-9]++)?|[0-9]++e[-+]?[0-9]++|inf)(?![\w.])|nan(?!\w))
    | (?P<hexint>-?0x[0-9a-f]++)(?![\w.])
    | (?P<int>-?[0-9]++)(?![\w.])
    | (?P<name>None|True|False|set\(\))(?!\w)
    )""",
    re.VERBOSE,
)
_NAMES = {"None": None, "True": True, "False": False}
_CLOSES = {"]": "[", ")": "(", "}": "{"}


class _Frame:
    __slots__ = ("opener", "items", "mode", "commas")

    def __init__(self, opener: str) -> None:
        self.opener = opener
        self.items: list[Any] = []
        self.mode = ""  # for "{": "" until the first separator, then "set" or "dict"
        self.commas = 0


def _text(token: str) -> str:
    body = token[1:-1]
    if "\\" not in body:
        return body
    # Every backslash starts one of the escapes above (ASCII after it), so this is exact: characters
    # beyond Latin-1 become \uXXXX, which unicode_escape turns back; Latin-1 ones pass as bytes.
    return body.encode("raw_unicode_escape").decode("unicode_escape")


def _bytes(token: str) -> bytes:
    body = token[2:-1]
    if "\\" not in body:
        return body.encode("ascii")
    return body.encode("ascii").decode("unicode_escape").encode("latin-1")


def _int(token: str) -> int:
    if len(token.lstrip("-")) > MAX_DECIMAL_DIGITS:
        raise LiteralError("integer too large", f"more than {MAX_DECIMAL_DIGITS} decimal digits")
    return int(token)


def _hexint(token: str) -> int:
    return int(token, 16)  # linear for a power-of-two base, whatever the length


def _close(frame: _Frame) -> Any:
    items = frame.items
    if frame.opener == "[":
        return items
    if frame.opener == "(":
        if len(items) == 1 and not frame.commas:
            raise LiteralError("parenthesised value", "not a tuple (repr writes (x,))")
        return tuple(items)
    if frame.mode == "dict":
        keys = items[0::2]
        hash_guard(keys, "dict")
        return dict(zip(keys, items[1::2]))
    if not items:
        return {}
    hash_guard(items, "set")
    return set(items)


# A flat list of numbers as repr writes it ("[1, 2.5, -3]"): HumanEval+ has answers of a million of
# them (12 MB), which the token loop below reads in seconds; this reads them in C-level splits, with the
# same values (the general parser decides anything it does not match exactly). Short ones too: an
# import parses 10^5 answers, most of them small.
_FLAT_ITEM = r"(?:-?[0-9]++(?:\.[0-9]*+)?+(?:e[-+]?[0-9]++)?+|-?inf|nan)"
_FLAT_NUMBERS = re.compile(r"\[(?:" + _FLAT_ITEM + r", )*+" + _FLAT_ITEM + r"\]")
FLAT_MIN_CHARS = 3
_FLAT_CHUNK = 1 << 20


def _flat_numbers(text: str, deadline: float | None, clock: Callable[[], float] = time.monotonic) -> list | None:
    if len(text) < FLAT_MIN_CHARS or not text.startswith("[") or _FLAT_NUMBERS.fullmatch(text) is None:
        return None
    out: list = []
    pos, end = 1, len(text) - 1
    while pos < end:
        cut = text.find(", ", min(pos + _FLAT_CHUNK, end))
        cut = end if cut < 0 else cut
        for token in text[pos:cut].split(", "):
            if token.lstrip("-").isdigit():
                if len(token) > MAX_DECIMAL_DIGITS + 1:
                    return None  # the general parser says why
                out.append(int(token))
            else:
                out.append(float(token))
        pos = cut + 2
        if deadline is not None and clock() > deadline:
            raise TimeoutError("deadline passed while parsing an answer")
    return out


_SCALAR_CHARS = 64
_NO_SCALAR = object()
_PLAIN_STR = re.compile(r"'[^'\\\r\n]*+'" + r'|"[^"\\\r\n]*+"')


def _scalar(text: str) -> Any:
    """A short answer that is one name, decimal int or plain string, read without the token loop (the
    same value the loop gives); _NO_SCALAR for anything else."""
    if text in _NAMES:
        return _NAMES[text]
    if text.isascii():
        if text.isdigit() or (text[:1] == "-" and text[1:].isdigit()):
            return int(text)
        if _PLAIN_STR.fullmatch(text):
            return text[1:-1]
    return _NO_SCALAR


def parse(text: str, *, deadline: float | None = None, max_depth: int = MAX_DEPTH,
          clock: Callable[[], float] = time.monotonic) -> Any:
    """The value ``text`` spells in repr's literal grammar.

    Raises LiteralError for anything else, TimeoutError once ``clock()`` has passed ``deadline``
    (``time.monotonic`` by default; the executor passes ``time.thread_time``, a CPU-time budget that
    the machine's load does not use up). Cost: linear in ``len(text)`` in time and memory, whatever
    the text.
    """
    if len(text) <= _SCALAR_CHARS and (scalar := _scalar(text)) is not _NO_SCALAR:
        return scalar
    flat = _flat_numbers(text, deadline, clock)
    if flat is not None:
        return flat
    return parse_tokens(text, deadline=deadline, max_depth=max_depth, clock=clock)


def _checked_text(token: str) -> str:
    try:
        return _text(token)
    except UnicodeDecodeError as exc:
        raise LiteralError("invalid string escape", str(exc)[:100]) from None


# A scalar token's kind -> its value (the grammar's regex has already checked its spelling).
_ATOMS: dict[str, Callable[[str], Any]] = {
    "str": _checked_text, "bytes": _bytes, "float": float, "complex": complex, "int": _int, "hexint": _hexint,
    "name": lambda t: set() if t == "set()" else _NAMES[t],
}


def parse_tokens(text: str, *, deadline: float | None = None, max_depth: int = MAX_DEPTH,
                 clock: Callable[[], float] = time.monotonic) -> Any:
    """``parse`` without its fast paths: the token loop, which decides every text alone."""
    stack: list[_Frame] = []
    pos = 0
    result: Any = None  # the top-level value, set when want becomes "done"
    want = "value"  # "value": a value is required; "open": a value or the close; "sep": , : or close
    tokens = 0
    checked = 0  # position of the last look at the clock
    match = _TOKEN.match
    while True:
        m = match(text, pos)
        if m is None:
            if want == "done" and not text[pos:].strip():
                return result
            raise LiteralError("syntax error", f"unexpected text at offset {pos}: {text[pos:pos + 20]!r}")
        if want == "done":
            raise LiteralError("syntax error", f"text after the value at offset {pos}")
        pos = m.end()
        tokens += 1
        if deadline is not None and (tokens % DEADLINE_EVERY == 0 or pos - checked > DEADLINE_CHARS):
            checked = pos
            if clock() > deadline:
                raise TimeoutError("deadline passed while parsing an answer")
        kind = m.lastgroup
        token = m.group(kind)
        top = stack[-1] if stack else None
        if want == "sep":
            if kind == "comma":
                if top.opener == "{":
                    if top.mode == "dict" and len(top.items) % 2:
                        raise LiteralError("syntax error", "a dict key without a value")
                    top.mode = top.mode or "set"
                top.commas += 1
                want = "open"
                continue
            if kind == "colon":
                if top.opener != "{" or top.mode == "set" or len(top.items) % 2 == 0:
                    raise LiteralError("syntax error", f"unexpected ':' at offset {pos - 1}")
                top.mode = "dict"
                want = "value"
                continue
            if kind != "close":
                raise LiteralError("syntax error", f"expected , or a closing bracket at offset {m.start(kind)}")
        if kind == "close":
            if top is None or _CLOSES[token] != top.opener or want == "value":
                raise LiteralError("syntax error", f"unexpected {token!r} at offset {pos - 1}")
            if top.opener == "{" and top.mode == "dict" and len(top.items) % 2:
                raise LiteralError("syntax error", "a dict key without a value")
            stack.pop()
            value = _close(top)
        elif kind == "open":
            if len(stack) >= max_depth:
                raise LiteralError("nesting too deep", f"more than {max_depth} levels")
            stack.append(_Frame(token))
            want = "open"
            continue
        elif (atom := _ATOMS.get(kind)) is not None:
            value = atom(token)
        else:
            raise LiteralError("syntax error", f"unexpected {token!r} at offset {m.start(kind)}")
        if stack:
            stack[-1].items.append(value)
            want = "sep"
        else:
            result = value
            want = "done"
            if not text[pos:].strip():
                return result
