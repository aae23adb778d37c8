"""H-MIX's static precheck: can this code load, without running it? (No sandbox involved.)

Checks, in order: syntax; imports outside the allowed standard-library modules; names and attributes
that reach into the interpreter (eval, __globals__, frames, ...); the entry point defined at top
level. A failure comes with the text replied to the model: why the code cannot load.
"""

from __future__ import annotations

import ast
from acceptgate._util import pyast
from dataclasses import dataclass

# Stated in H-MIX's first prompt; anything else is refused before execution.
ALLOWED_IMPORTS = (
    "bisect", "collections", "copy", "datetime", "decimal", "fractions", "functools", "hashlib",
    "heapq", "itertools", "math", "operator", "re", "statistics", "string", "typing",
)
FORBIDDEN_NAMES = frozenset({
    "__import__", "breakpoint", "compile", "eval", "exec", "exit", "globals", "input", "locals",
    "open", "quit", "vars",
})
FORBIDDEN_ATTRIBUTES = frozenset({
    "__bases__", "__builtins__", "__class__", "__closure__", "__code__", "__dict__", "__getattribute__",
    "__globals__", "__import__", "__loader__", "__mro__", "__reduce__", "__reduce_ex__", "__spec__",
    "__subclasses__", "cr_frame", "f_back", "f_builtins", "f_globals", "f_locals", "gi_code",
    "gi_frame", "tb_frame",
})


@dataclass(frozen=True)
class PrecheckResult:
    ok: bool
    kind: str = "ok"  # ok | syntax | forbidden-import | forbidden-name | forbidden-attribute | no-entry-point
    exc_type: str = ""  # the exception loading would raise (or the closest one)
    message: str = ""  # why the code cannot load, as replied to the model

    @property
    def reply(self) -> str:
        return f"The code cannot load: {self.exc_type}: {self.message}"


def _module_root(name: str) -> str:
    return name.split(".", 1)[0]


def _check_imports(tree: ast.AST, allowed: frozenset[str]) -> PrecheckResult | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                return PrecheckResult(False, "forbidden-import", "ImportError",
                                      f"line {node.lineno}: relative imports are not allowed")
            names = [node.module or ""]
        else:
            continue
        for name in names:
            if _module_root(name) not in allowed:
                return PrecheckResult(False, "forbidden-import", "ImportError",
                                      f"line {node.lineno}: import of {name!r} is not allowed "
                                      f"(allowed: {', '.join(sorted(allowed))})")
    return None


def _check_names(tree: ast.AST) -> PrecheckResult | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            return PrecheckResult(False, "forbidden-name", "NameError",
                                  f"line {node.lineno}: {node.id!r} is not allowed")
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            return PrecheckResult(False, "forbidden-attribute", "AttributeError",
                                  f"line {node.lineno}: attribute {node.attr!r} is not allowed")
    return None


def _defines_entry(tree: ast.Module, entry_point: str) -> bool:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return True
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == entry_point for t in node.targets):
            return True
    return False


def precheck(program: str, entry_point: str, *,
             allowed_imports: tuple[str, ...] = ALLOWED_IMPORTS) -> PrecheckResult:
    try:
        tree = pyast.parse(program)
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno else ""
        return PrecheckResult(False, "syntax", type(exc).__name__, f"{where}{exc.msg}")
    except ValueError as exc:  # e.g. NUL bytes
        return PrecheckResult(False, "syntax", "SyntaxError", str(exc))
    bad = _check_imports(tree, frozenset(allowed_imports)) or _check_names(tree)
    if bad:
        return bad
    if not _defines_entry(tree, entry_point):
        return PrecheckResult(False, "no-entry-point", "NameError",
                              f"no top-level function {entry_point!r} is defined")
    return PrecheckResult(True)
