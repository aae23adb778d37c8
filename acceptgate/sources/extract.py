"""Take a program out of a model's reply, and complete it with what the task's prompt defines.

Replies come fenced (```python ... ```), bare (just code), or bare with prose around it. A reply may
hold the whole function, or only its body (as completion models write). ``assemble`` turns what was
extracted into a program that defines the entry point: a body is appended to the prompt; a full
function gets the prompt's imports and helper definitions put in front of it, since a model that
rewrites ``def f(xs: List[int])`` usually leaves out ``from typing import List``.
"""

from __future__ import annotations

import ast
from acceptgate._util import pyast
import re
from dataclasses import dataclass

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
_PY_TAGS = {"", "python", "py", "python3", "py3"}
_CODE_START = re.compile(r"^(def |async def |class |import |from |@|if __name__)")


@dataclass(frozen=True)
class Extraction:
    code: str
    method: str  # "fenced", "bare", "bare-trimmed", "none"


def _parses(code: str) -> bool:
    try:
        pyast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _defines(code: str, name: str) -> bool:
    return re.search(rf"^\s*(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.M) is not None


def extract_code(reply: str, entry_point: str) -> Extraction:
    """The code in a reply: the fenced block that defines the entry point, else the reply itself."""
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(reply)]
    blocks = [(t, b) for t, b in blocks if t in _PY_TAGS] or blocks
    if blocks:
        defining = [b for _, b in blocks if _defines(b, entry_point)]
        if defining:
            return Extraction(defining[-1].rstrip() + "\n", "fenced")  # the last one is the revision
        return Extraction(max((b for _, b in blocks), key=len).rstrip() + "\n", "fenced")
    text = reply.strip("\n")
    if not text.strip():
        return Extraction("", "none")
    if _parses(text):
        return Extraction(text + "\n", "bare")
    # Prose before or after the code: keep from the first line that starts code to the last that parses.
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if _CODE_START.match(line):
            for end in range(len(lines), start, -1):
                chunk = "\n".join(lines[start:end])
                if _parses(chunk):
                    return Extraction(chunk + "\n", "bare-trimmed")
            break
    return Extraction(text + "\n", "bare")  # unparseable; the precheck will say why


def _prompt_preamble(prompt: str, entry_point: str) -> str:
    """The prompt's top-level statements except the entry point's own definition."""
    try:
        tree = pyast.parse(prompt)
    except SyntaxError:
        return ""
    lines = prompt.splitlines()
    parts = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
            continue
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        parts.append("\n".join(lines[start - 1: node.end_lineno]))
    return "\n\n".join(parts)


def is_body(code: str) -> bool:
    """A function body (indented statements) rather than a module."""
    first = next((ln for ln in code.splitlines() if ln.strip()), "")
    return first[:1] in (" ", "\t")


def assemble(prompt: str, entry_point: str, code: str) -> tuple[str, str]:
    """(program, how): the program to execute for code extracted from a reply."""
    if is_body(code):
        return prompt + code, "prompt+body"
    if not _defines(code, entry_point):
        return code, "as-is"
    preamble = _prompt_preamble(prompt, entry_point)
    if not preamble:
        return code, "as-is"
    return preamble + "\n\n\n" + code, "prompt-preamble+code"
