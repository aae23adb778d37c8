"""``ast.parse`` behind one lock: the only way acceptgate turns text into a syntax tree.

CPython 3.11 keeps the converter's recursion counter (C tree -> Python objects) per interpreter, not per
thread (python/cpython#106905). When a garbage collection inside one parse runs a finaliser that lets
another thread parse, the counter is shared and the first parse fails with ``SystemError: AST
constructor recursion depth mismatch``. The importers and V4V build trees in worker threads
(``_util.parallel``), so every parse goes through here; the lock costs nothing, since a parse holds the
GIL from start to end anyway. Re-entrant: a finaliser on the same thread may parse too.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.RLock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)
