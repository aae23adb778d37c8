"""Visible examples from a task's docstring: the public inputs a generator is told about.

HumanEval prompts spell examples several ways; this module reads the ones that can be read without
guessing, all through ``ast`` (never ``eval``):

- doctests: ``>>> f(1, 2)`` with the output on the following line(s);
- a call and a stated result: ``f(x) ==> y``, ``f(x) => y``, ``f(x) -> y``, ``f(x) ➞ y``, ``f(x) == y``,
  ``f(x) = y``, ``f(x) should return y``, ``f(x) returns y``, ``f(x) is y``;
- ``For x = 1, y = 2 the output should be z`` (also "the result should be");
- ``Input: x = 1, y = 2`` (or a bare value for a one-parameter function) followed by ``Output: z``.

Anything else that mentions the entry point -- a call nested in another expression
(``round(find_zero(xs), 2)``), a non-literal argument -- is returned as ``Skipped`` with a reason, so the
importer can record it. The stated output is only a cross-check: expected values come from the reference.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass, field
from typing import Any

from acceptgate._util import pyast
from acceptgate.suites import literals
from acceptgate.datasets.importers.pyexpr import NotAValue, call_arguments, is_call_to, value_of
from acceptgate.datasets.importers.signature import binding_error


@dataclass(frozen=True)
class Example:
    index: int  # order in the docstring
    args: tuple
    kwargs: dict = field(default_factory=dict)
    stated: Any = None  # the output the docstring states (meaningful only if has_stated)
    has_stated: bool = False
    text: str = ""  # the docstring line it came from
    note: str = ""  # why a stated output could not be read, when the input could


@dataclass(frozen=True)
class Skipped:
    reason: str  # docstring-wrapped-call | docstring-non-literal-input | docstring-unparsed | ...
    detail: str
    index: int | None = None


def function_def(prompt: str, entry_point: str) -> ast.FunctionDef | None:
    """The entry point's def in the prompt (the prompt is a stub whose body is the docstring)."""
    try:
        tree = pyast.parse(prompt)
    except SyntaxError:
        try:  # a prompt that ends without a body
            tree = pyast.parse(prompt.rstrip() + "\n    pass\n")
        except SyntaxError:
            return None
    found = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
            found = node  # the last definition wins, as when the module runs
    return found


def parameter_names(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    return [p.arg for p in (*a.posonlyargs, *a.args)]


def docstring_source(fn: ast.FunctionDef, prompt: str) -> str | None:
    """The docstring as the author typed it (escapes like ``\\n`` kept), dedented.

    HumanEval puts a statement before the docstring in a few prompts (``import math``), so the first
    string statement of the body counts. The raw text is read rather than the evaluated string: an
    example such as ``f("a\\nb")`` means the two-character escape, which evaluation would turn into a
    line break inside the call.
    """
    for stmt in fn.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                and isinstance(stmt.value.value, str):
            raw = ast.get_source_segment(prompt, stmt.value)
            if raw is None:
                return inspect.cleandoc(stmt.value.value)
            m = re.match(r"(?is)^[rub]*(\"\"\"|\'\'\'|\"|\')(.*)\1$", raw)
            return inspect.cleandoc(m.group(2) if m else stmt.value.value)
        if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            break
    return None


def extract(prompt: str, entry_point: str) -> tuple[list[Example], list[Skipped]]:
    fn = function_def(prompt, entry_point)
    if fn is None:
        return [], [Skipped("no-entry-point", f"no def {entry_point} in the prompt")]
    doc = docstring_source(fn, prompt)
    if not doc:
        return [], []
    params = parameter_names(fn)
    line_starts = _line_starts(doc)
    found: list[tuple[int, Example | Skipped]] = []
    lines_used: set[int] = set()
    lines_skipped: set[int] = set()
    for pos, item in _calls(doc, entry_point):
        line = _line_of(line_starts, pos)
        if isinstance(item, Skipped):
            if line in lines_skipped or line in lines_used:
                continue  # one report per line: f(n) -> f(n-1) + f(n-2) is one definition, not five
            lines_skipped.add(line)
        else:
            lines_used.add(line)
        found.append((pos, item))
    for pos, item in [*_for_should_be(doc, params), *_input_output(doc, params)]:
        if _line_of(line_starts, pos) not in lines_used | lines_skipped:
            found.append((pos, item))
    found.sort(key=lambda t: t[0])
    return _number([(pos, _fits(fn, item)) for pos, item in found])


def _fits(fn: ast.FunctionDef, item: Example | Skipped) -> Example | Skipped:
    if isinstance(item, Example):
        why = binding_error(fn, item.args, item.kwargs)
        if why:
            return Skipped("docstring-arity", f"{why}: {item.text!r}")
    return item


def _number(found: list[tuple[int, Example | Skipped]]) -> tuple[list[Example], list[Skipped]]:
    """Index items in docstring order; a repeated input keeps its first spelling (and any stated output)."""
    examples: list[Example] = []
    skipped: list[Skipped] = []
    seen: dict[str, int] = {}
    for index, (_, item) in enumerate(found):
        if isinstance(item, Skipped):
            skipped.append(Skipped(item.reason, item.detail, index))
            continue
        key = _input_key(item)
        if key is not None and key in seen:
            first = examples[seen[key]]
            if not first.has_stated and item.has_stated:
                examples[seen[key]] = Example(first.index, first.args, first.kwargs, item.stated, True,
                                              item.text)
            elif item.has_stated and not _same(item.stated, first.stated):
                # the same input stated twice with different outputs: both are cross-checked
                examples.append(Example(index, item.args, item.kwargs, item.stated, True, item.text,
                                        item.note))
            continue
        if key is not None:
            seen[key] = len(examples)
        examples.append(Example(index, item.args, item.kwargs, item.stated, item.has_stated, item.text,
                                item.note))
    return examples, skipped


def _input_key(example: Example) -> str | None:
    try:
        return literals.canonical(example.args) + literals.canonical(example.kwargs)
    except literals.LiteralError:
        return None


def _same(a: Any, b: Any) -> bool:
    try:
        return literals.canonical(a) == literals.canonical(b)
    except literals.LiteralError:
        return False


# ---------------------------------------------------------------------------------------------
# spelling 1 and 2: calls of the entry point

_SEPARATOR = re.compile(
    r"^\s*(?:\#\s*)?(?:==>|=>|->|➞|→|==(?!=)|=(?!=)|:|(?:should\s+return|should\s+be|returns?|is)\b)\s*")
_WRAPPING_CHARS = "([{,+*/%<>=-"
_BULLET = re.compile(r"^(?:[*+\-\u2022]|\(?\d+[.)])$")  # "* f(x) -> y", "1. f(x) -> y"


def _calls(doc: str, entry_point: str):
    for m in re.finditer(rf"(?<![\w.]){re.escape(entry_point)}\s*\(", doc):
        pos = m.start()
        line_start = doc.rfind("\n", 0, pos) + 1
        line_end = _line_end(doc, pos)
        line = doc[line_start:line_end].strip()
        prefix = doc[line_start:pos].strip()
        doctest = prefix.startswith(">>>")
        before = prefix[3:].strip() if doctest else prefix
        if (doctest and before) or (before and before[-1] in _WRAPPING_CHARS
                                    and not _BULLET.match(before)):
            yield pos, Skipped("docstring-wrapped-call",
                               f"the call is part of a larger expression: {line!r}")
            continue
        call, end = _call_at(doc, pos, entry_point)
        if call is None:
            yield pos, Skipped("docstring-unparsed", f"cannot parse the call: {line!r}")
            continue
        try:
            args, kwargs = call_arguments(call)
        except NotAValue as exc:
            yield pos, Skipped("docstring-non-literal-input", f"{exc.construct} in {line!r}")
            continue
        rest_end = _line_end(doc, end)
        rest = doc[end:rest_end]
        note = ""
        if doctest and (not rest.strip() or rest.strip().startswith("#")):
            stated, has = _doctest_output(doc, rest_end)
        else:  # also ">>> f(x) == y", a doctest spelled as an equation
            stated, has = _stated_after(rest)
        if not has and rest.strip():
            note = f"stated output not readable: {rest.strip()[:80]!r}"
        yield pos, Example(0, args, kwargs, stated, has, line, note)


def _call_at(doc: str, pos: int, entry_point: str) -> tuple[ast.Call | None, int]:
    """The shortest text from pos that parses as a call of the entry point, and its end."""
    end = pos
    limit = min(len(doc), pos + 20_000)
    while True:
        end = doc.find(")", end, limit)
        if end < 0:
            return None, pos
        end += 1
        try:
            node = pyast.parse(doc[pos:end], mode="eval").body
        except SyntaxError:
            continue
        if is_call_to(node, entry_point):
            return node, end  # type: ignore[return-value]
        return None, pos


def _doctest_output(doc: str, after: int) -> tuple[Any, bool]:
    lines = []
    for line in doc[after:].split("\n")[1:]:
        s = line.strip()
        if not s or s.startswith(">>>"):
            break
        lines.append(s)
    if not lines:
        return None, True  # doctest: no output line means the call returned None
    return _literal("\n".join(lines))


def _stated_after(rest: str) -> tuple[Any, bool]:
    m = _SEPARATOR.match(rest)
    if not m:
        return None, False
    return _longest_literal(rest[m.end():])


# ---------------------------------------------------------------------------------------------
# spelling 3 and 4: bindings

_FOR = re.compile(r"(?im)^[ \t]*for\s+(?P<bind>.+?)\s*,?\s+the\s+(?:output|result)\s+should\s+be\s+"
                  r"(?P<out>.+)$")
_INPUT = re.compile(r"(?im)^[ \t]*input[ \t]*:[ \t]*(?P<inp>.+)$")
_OUTPUT = re.compile(r"(?i)^[ \t]*output[ \t]*:[ \t]*(?P<out>.+)$")


def _for_should_be(doc: str, params: list[str]):
    for m in _FOR.finditer(doc):
        bound = _bind(m.group("bind"), params, allow_bare=False)
        yield from _bound_example(m, bound, m.group("out"))


def _input_output(doc: str, params: list[str]):
    for m in _INPUT.finditer(doc):
        following = [ln for ln in doc[m.end():].split("\n")[1:4] if ln.strip()]
        out = _OUTPUT.match(following[0]) if following else None
        bound = _bind(m.group("inp"), params, allow_bare=True)
        yield from _bound_example(m, bound, out.group("out") if out else None)


def _bound_example(m: re.Match, bound, out_text: str | None):
    line = m.group(0).strip()
    if isinstance(bound, str):
        yield m.start(), Skipped("docstring-unparsed", f"{bound}: {line!r}")
        return
    stated, has = _longest_literal(out_text) if out_text is not None else (None, False)
    yield m.start(), Example(0, bound[0], bound[1], stated, has, line)


def _bind(text: str, params: list[str], *, allow_bare: bool) -> tuple[tuple, dict] | str:
    """``a = 1, b = [2]`` -> positional args in signature order; a bare value for one parameter."""
    names: list[str] = []
    values: list[Any] = []
    pos = 0
    while True:
        m = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)\s*").match(text, pos)
        if not m:
            break
        value, end = _value_before_comma(text, m.end())
        if end < 0:
            return "binding value is not a literal"
        names.append(m.group(1))
        values.append(value)
        pos = end
        comma = re.compile(r"\s*,").match(text, pos)
        if not comma:
            break
        pos = comma.end()
    if not names:
        if not allow_bare or len(params) != 1:
            return "no name = value bindings"
        value, has = _longest_literal(text)
        return ((value,), {}) if has else "input is not a literal"
    if sorted(names) == sorted(params):
        by_name = dict(zip(names, values))
        return tuple(by_name[p] for p in params), {}
    if len(names) == len(params):  # a renamed parameter in prose (N for n): keep the written order
        return tuple(values), {}
    return f"bindings {names} do not match the parameters {params}"


def _value_before_comma(text: str, start: int) -> tuple[Any, int]:
    """The shortest text from start, ending at a top-level comma or the end, that is a value."""
    for end in [*_top_level_commas(text, start), len(text)]:
        chunk = text[start:end].strip()
        if not chunk:
            continue
        value, has = _literal(chunk)
        if has:
            return value, end
        value, has = _longest_literal(chunk)
        if has and end == len(text):  # trailing prose after the last value
            return value, start + text[start:].find(chunk) + _prefix_len(chunk)
    return None, -1


def _prefix_len(chunk: str) -> int:
    for end in range(len(chunk), 0, -1):
        if _literal(chunk[:end])[1]:
            return end
    return 0


def _top_level_commas(text: str, start: int) -> list[int]:
    out, depth, quote, i = [], 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(i)
        i += 1
    return out


# ---------------------------------------------------------------------------------------------
# literals in prose


_PROSE_BOOLS = {"true": True, "false": False}
_MAX_PROSE_VALUE = 2000


def _literal(text: str) -> tuple[Any, bool]:
    if text.strip() in _PROSE_BOOLS:  # "f(x) => true": prose spelling of a bool
        return _PROSE_BOOLS[text.strip()], True
    try:
        return value_of(pyast.parse(text.strip(), mode="eval").body), True
    except (SyntaxError, NotAValue, ValueError, RecursionError):
        return None, False


def _longest_literal(text: str) -> tuple[Any, bool]:
    """The value of the longest prefix of text that is a literal (prose may follow it)."""
    text = text.strip()[:_MAX_PROSE_VALUE]  # bounds the quadratic search on a pathological line
    for end in range(len(text), 0, -1):
        chunk = text[:end].rstrip()
        if not chunk or chunk.endswith((",", ".")):  # "the output should be 6." means 6, not 6.0
            continue
        value, ok = _literal(chunk)
        if ok:
            return value, True
    return None, False


def _line_starts(doc: str) -> list[int]:
    return [0] + [i + 1 for i, ch in enumerate(doc) if ch == "\n"]


def _line_of(starts: list[int], pos: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= pos:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _line_end(doc: str, pos: int) -> int:
    end = doc.find("\n", pos)
    return len(doc) if end < 0 else end
