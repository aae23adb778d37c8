"""Every syntax tree acceptgate builds comes from ``_util.pyast.parse``, and parses in threads never trip
CPython 3.11's shared AST recursion counter (python/cpython#106905)."""

from __future__ import annotations

import ast
import gc
import threading
import time
from pathlib import Path

import acceptgate
from acceptgate._util import pyast

CORE = Path(acceptgate.__file__).parent
# a module deep enough that converting its tree takes a while, so collections happen in the middle
SOURCE = "x = " + "(" * 40 + "1" + ")" * 40 + "\n" + "def f(a):\n    return [[[[a, {a: (a,)}]]]]\n" * 200


def direct_parses(root: Path) -> list[str]:
    """``file:line`` of each call of ``ast.parse``/``ast.literal_eval`` outside ``pyast`` (calls in string
    literals, which run in the sandbox's own single-threaded process, are not calls here)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "pyast.py":
            continue
        for node in ast.walk(pyast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("parse", "literal_eval")
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in ("ast", "_ast")):
                out.append(f"{path.relative_to(root)}:{node.lineno}")
    return out


def test_no_module_parses_around_the_lock():
    assert direct_parses(CORE) == []


def test_the_check_finds_a_direct_parse(tmp_path):
    (tmp_path / "ok.py").write_text("from acceptgate._util import pyast\npyast.parse('1')\ns = 'ast.parse(x)'\n")
    (tmp_path / "bad.py").write_text("import ast\n\ndef f(text):\n    return ast.literal_eval(text)\n")
    assert direct_parses(tmp_path) == ["bad.py:4"]


class _Finaliser:
    """Collected in the middle of a parse, it lets another thread run (what a subprocess or a file object
    being closed does in the importers' worker threads)."""

    def __del__(self):
        time.sleep(0)


def test_parses_in_threads_with_finalisers_running_in_between():
    errors: list[BaseException] = []
    stop = time.monotonic() + 3
    trees = []

    def work():
        while time.monotonic() < stop:
            junk = [_Finaliser() for _ in range(20)]
            for j in junk:
                j.cycle = j  # only the cycle collector frees it: at an allocation inside the parse
            del junk
            try:
                trees.append(ast.dump(pyast.parse(SOURCE)) == EXPECTED)
            except SystemError as e:
                errors.append(e)

    EXPECTED = ast.dump(ast.parse(SOURCE))
    before = gc.get_threshold()
    gc.set_threshold(50, 5, 5)
    try:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.set_threshold(*before)
    assert errors == [] and trees and all(trees)
