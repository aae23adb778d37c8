"""The runner's literal check (runner.py): its fast path for flat containers answers exactly as the
element-by-element walk does, at the depth limit and for element types that pose as scalars."""

from __future__ import annotations

import pytest

from acceptgate.sandbox.backend import Limits
from acceptgate.sandbox.executor import run_calls

PROGRAM = '''
def nest(inner, depth):
    value = inner
    for _ in range(depth):
        value = [value]
    return value

class PosingMeta(type):  # a class whose type hashes and compares like int
    def __hash__(cls):
        return hash(int)
    def __eq__(cls, other):
        return True

class Posing(metaclass=PosingMeta):
    def __repr__(self):
        return "1"

class Sub(int):
    pass

def f(shape):
    return {
        "flat": [1, "a", b"b", 2.5, None, True, 3j],
        "flat_dict": {1: "a", "b": None},
        "set": {1, 2, "x"},
        "tuple": (1, (2, 3), [4, {5: 6}]),
        "depth99": nest([1, 2], 99),    # scalars at depth 100: still literal
        "depth100": nest([1, 2], 100),  # scalars at depth 101: too deep
        "depth100_empty": nest([], 100),  # an empty list at depth 100: literal
        "posing": [1, Posing()],
        "posing_key": {Posing(): 1},
        "posing_value": {1: Posing()},
        "subclass": [Sub(1)],
        "nested_sub": [[1], [Sub(2)]],
    }[shape]
'''

SHAPES = {
    "flat": "ok", "flat_dict": "ok", "set": "ok", "tuple": "ok", "depth99": "ok", "depth100": "protocol",
        # deeper than the harness's answer grammar allows (its own bound, after the runner's check)
    "depth100_empty": "protocol",
    # a class posing as int passes the runner's check (as it did before the fast path: its type's __eq__
    # answers the walk's `in`), and the harness reads only its text, "1", under the literal grammar
    "posing": "ok", "posing_key": "ok", "posing_value": "ok",
    "subclass": "protocol", "nested_sub": "protocol",
}


@pytest.fixture(scope="module")
def backend(open_backend):
    return open_backend("local-rlimits")


def test_fast_path_answers_as_the_walk(backend):
    calls = [((shape,), {}) for shape in SHAPES]
    outcomes, detail = run_calls("f", calls, PROGRAM, backend, limits=Limits(wall_seconds=20))
    assert detail == ""
    got = {shape: o.status for shape, o in zip(SHAPES, outcomes)}
    assert got == SHAPES
    by_shape = dict(zip(SHAPES, outcomes))
    assert by_shape["flat"].value == [1, "a", b"b", 2.5, None, True, 3j]
    assert "too deep" in by_shape["depth100"].message
    assert by_shape["posing"].value == [1, 1] and by_shape["posing_value"].value == {1: 1}
    assert "Sub" in by_shape["subclass"].message and "Sub" in by_shape["nested_sub"].message
