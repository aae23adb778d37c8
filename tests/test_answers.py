"""The bounded parser of the runner's answers (sandbox/answers.py): exact, linear, and interruptible."""

from __future__ import annotations

import ast
import math
import random
import time

import pytest

from acceptgate.suites.literals import LiteralError
from acceptgate.sandbox import answers


def _value(rng: random.Random, depth: int = 0):
    k = rng.randrange(11 if depth < 4 else 6)
    if k == 0:
        return rng.choice([None, True, False, 0, -1])
    if k == 1:
        return rng.randrange(-10 ** 30, 10 ** 30)
    if k == 2:
        return rng.choice([0.1, -2.5e-300, 1e300, 5e-324, math.inf, -math.inf, rng.random() * 10 ** rng.randrange(-20, 20),
                           complex(rng.choice([0.0, -0.0, 1.5, -1e300, math.inf]),  # NaN parts: test_complex_counter
                                   rng.choice([0.0, -0.0, -2.5, 5e-324, -math.inf]))])
    if k == 3:
        return "".join(chr(rng.choice([rng.randrange(128), rng.randrange(128, 0x3000), rng.randrange(0x10000, 0x10FFFF),
                                       0xDC80, 39, 34, 92, 10])) for _ in range(rng.randrange(6)))
    if k == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
    if k == 5:
        return ""
    if k == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if k == 7:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randrange(4)))
    if k == 8:
        return {_value(rng, 9) for _ in range(rng.randrange(4))}
    if k == 9:
        return {_value(rng, 9): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return []


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return a == b or (a != a and b != b)
    if type(a) is complex:  # Python's arithmetic (eval of -2j) may turn a zero negative: == ignores that
        return _same(a.real, b.real) and _same(a.imag, b.imag)
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


# repr's spellings of non-finite values, as names (repr writes ``infj`` for complex(0, inf))
NAMES = {"inf": math.inf, "nan": math.nan, "infj": complex(0, math.inf)}


def test_parses_every_repr_as_python_does():
    rng = random.Random(7)
    for _ in range(3000):
        value = _value(rng)
        text = repr(value)
        expected = eval(text, NAMES) if ("inf" in text or "nan" in text) \
            else ast.literal_eval(text)
        assert _same(answers.parse(text), expected), text


@pytest.mark.parametrize("text", ["(1)", "[1,,2]", "{1:2,3}", "{1,2:3}", "x", "[1]]", "1 2", "[", "'a",
                                  "set(1)", "{1:}", "f()", "1+2", "[1]x", "-", "1.2.3", "b'\u00e9'",
                                  "[" * 101 + "]" * 101, "1" * 4301, "0x1F", "0x", "-0x"])
def test_refuses_what_repr_never_writes(text):
    with pytest.raises(LiteralError):
        answers.parse(text)


def test_colliding_hashes_are_refused_at_once():
    same = [str(k * (2 ** 61 - 1)) for k in range(40_000)]  # all hash to 0: quadratic to build
    started = time.process_time()  # CPU time: the machine's load does not count (5.3 s of wall at load 20)
    for text in ("{" + ", ".join(same) + "}", "{" + ", ".join(f"{s}: 0" for s in same) + "}"):
        with pytest.raises(LiteralError, match="colliding hashes"):
            answers.parse(text)
    assert time.process_time() - started < 5
    assert answers.parse("{" + ", ".join(same[:16]) + "}") == {int(s) for s in same[:16]}


def test_the_deadline_is_honoured_while_parsing():
    text = "[" + ",".join(["0"] * 300_000) + "]"
    with pytest.raises(TimeoutError):
        answers.parse(text, deadline=time.monotonic() + 0.01)
    assert len(answers.parse(text)) == 300_000


def test_the_deadline_is_honoured_between_slow_tokens():
    text = "[" + ",".join(["7" * 4000] * 1000) + "]"  # few tokens, each slow to convert
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        answers.parse(text, deadline=time.monotonic() + 0.01)
    assert time.monotonic() - started < 1.0


def test_the_deadline_can_be_a_cpu_time_budget():
    """The executor's budget is the judging thread's CPU time: a sleep (or a loaded machine) spends
    none of it, a long parse does."""
    text = "[" + ",".join(["[]"] * 300_000) + "]"
    budget = time.thread_time() + 0.05
    time.sleep(0.2)  # wall time passes, CPU time does not
    assert answers.parse("[" + "[]," * 100 + "[]]", deadline=budget, clock=time.thread_time) == [[]] * 101
    with pytest.raises(TimeoutError):
        answers.parse(text, deadline=time.thread_time() + 0.01, clock=time.thread_time)
