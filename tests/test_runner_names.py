"""The runner (acceptgate/sandbox/runner.py) holds its private references from before the candidate
exists: no code of it that runs once the candidate is loaded looks up a global name, which the candidate
could rebind (a builtin, or a name of the runner's module, reached through its caller's frame).

Checked twice: on the runner's bytecode (every closure, and what the functions that start the candidate
do after that), and by a candidate that rebinds every builtin and every name of the runner's module and
then gets the same outcome for every call, and the same exit, as the same program without the rebinding,
on every backend.
"""

from __future__ import annotations

import collections
import dis
import inspect
import types
from pathlib import Path

import pytest

from acceptgate.sandbox.backend import Limits
from acceptgate.sandbox.executor import execute, run_calls
from acceptgate.suites import render, suitespec

HERE = Path(__file__).resolve().parent
RUNNER = HERE.parent / "acceptgate" / "sandbox" / "runner.py"
PROGRAM = (HERE / "attacks" / "rebind_runner_names.py").read_text()
GLOBAL_OPS = frozenset(("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "STORE_NAME", "DELETE_GLOBAL", "DELETE_NAME"))
# The runner's functions that call into the candidate's existence, and the name of what they call: after
# that load, nothing of theirs may look up a global.
STARTS = {"_main": "serve", "_as_script": "_main"}


def _nested(code: types.CodeType):
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield const
            yield from _nested(const)


def late_global_lookups(source: str) -> list[str]:
    """'<function>: <name>' for every global name the runner's code looks up where the candidate may
    exist: in any nested function (each closure is made before the candidate exists and may run after),
    and in a function of STARTS after its call that starts the candidate."""
    module = compile(source, "runner.py", "exec")
    tops = {c.co_name: c for c in module.co_consts if isinstance(c, types.CodeType)}
    assert set(STARTS) <= set(tops), f"the runner no longer defines {set(STARTS) - set(tops)}"
    found = []
    for name, top in tops.items():
        if name in STARTS:
            ops = list(dis.get_instructions(top))
            start = max(i for i, op in enumerate(ops) if op.argval == STARTS[name] and op.opname.startswith("LOAD"))
            found += [f"{name}: {op.argval}" for op in ops[start + 1:] if op.opname in GLOBAL_OPS]
        for code in _nested(top):
            if code.co_flags & inspect.CO_OPTIMIZED:  # a function; a class body runs where it is defined
                found += [f"{code.co_qualname}: {op.argval}" for op in dis.get_instructions(code)
                          if op.opname in GLOBAL_OPS]
    return found


def test_no_runner_code_looks_up_a_global_once_the_candidate_exists():
    assert late_global_lookups(RUNNER.read_text()) == []


@pytest.mark.parametrize("original, sabotaged, reported", [
    ("items = value.items() if t is _dict else", "items = value.items() if t is dict else",
     "_literal_check.<locals>.literal: dict"),
    ("            message = _str(exc)[:max_message]", "            message = _str(exc)[:MAX_MESSAGE]",
     "_describer.<locals>.describe: MAX_MESSAGE"),
    ("        pass\n    _exit(0)", "        pass\n    sys.exit(0)", "_as_script: sys"),
    ("    serve(load, digest)", "    serve(load, digest)\n    os.close(0)", "_main: os"),
])
def test_the_bytecode_check_finds_a_late_global(original, sabotaged, reported):
    source = RUNNER.read_text()
    assert source.count(original) == 1, original
    assert late_global_lookups(source.replace(original, sabotaged)) == [reported]


# -- the same outcomes with every name rebound --------------------------------------------------------

SHAPES = ("int", "posing_dict", "posing_list", "huge_int", "huge_in_containers", "counter", "raise", "enomem")
BACKENDS = ("local", "local-bwrap", "local-rlimits", pytest.param("docker", marks=pytest.mark.docker))


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request, open_backend):
    return open_backend(request.param)


def _outcomes(backend, first: str) -> list:
    calls = [((shape,), {}) for shape in (first, *SHAPES)]
    outcomes, detail = run_calls("f", calls, PROGRAM, backend, limits=Limits(wall_seconds=20))
    assert detail == ""
    return outcomes


def test_rebinding_every_name_changes_no_answer(backend):
    poisoned, clean = _outcomes(backend, "poison"), _outcomes(backend, "int")
    assert poisoned[1:] == clean[1:]
    got = dict(zip(SHAPES, poisoned[1:]))
    assert poisoned[0].value == 2 and got["int"].value == 3
    assert got["posing_dict"].status == got["posing_list"].status == "protocol"
    assert "Equal" in got["posing_dict"].message
    assert got["huge_int"].value == 10 ** 5000
    assert got["huge_in_containers"].value == [10 ** 5000, (1,), {2}, {3: (4, 5)}]
    assert got["counter"].value == collections.Counter("abca")
    assert (got["raise"].status, got["raise"].error_type, got["raise"].message) == ("error", "ValueError", "m" * 50)
    assert (got["enomem"].status, got["enomem"].error_type) == ("memory", "MemoryError")


def test_rebinding_every_name_changes_neither_verdict_nor_exit(backend):
    def run(first):
        cases = [((first,), {}, 2 if first == "poison" else 3), (("int",), {}, 3)]
        harness = render.harness_for(suitespec.build("python-call/1", "f", cases))
        return execute(harness, PROGRAM, backend, limits=Limits(wall_seconds=20))

    poisoned, clean = run("poison"), run("int")
    assert poisoned.verdict == clean.verdict == "pass"
    assert poisoned.exit == clean.exit
    assert [c.status for c in poisoned.cases] == ["pass", "pass"]
