"""Complex numbers in the literal grammar and Counter results (MBPP+ Mbpp/124, /252, /88, /590).

The four tasks come from the real MbppPlus file (../shared/data), selected in the test: no copy of the
data is committed.
"""

from __future__ import annotations

import ast
import gzip
import itertools
import json
import math
import random
import struct
from collections import Counter
from pathlib import Path

import pytest

from acceptgate.suites import dialects, literals, render, suitespec

from acceptgate.scoring import gauge
from acceptgate.datasets.importers import mbpp_inputs, mbppplus
from acceptgate.datasets.importers.report import summary
from acceptgate.sandbox import answers
from acceptgate.sandbox.executor import execute, run_calls
from acceptgate.datasets.task import HIDDEN, VISIBLE

NAMES = {"inf": math.inf, "nan": math.nan}
PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5e-300, 1e300, 5e-324, 1e16, 123.456, math.inf, -math.inf, math.nan]


def _bits(z: complex) -> bytes:
    """A complex's exact parts (the sign of a zero included); every NaN spelled alike."""
    return b"".join(b"nan" if math.isnan(x) else struct.pack("<d", x) for x in (z.real, z.imag))


def _complexes():
    return [complex(r, i) for r, i in itertools.product(PARTS, PARTS)]


# ---------------------------------------------------------------------------------------------
# the literal grammar


@pytest.mark.parametrize("text", ["1j", "-2j", "0j", "-0j", "(1+2j)", "(-0.5-3j)", "1.5e-3j", "(1e16+1e-5j)",
                                  "(-0-1j)", "(0-0j)", "[(1+2j), {3: -4j}]"])
def test_complex_is_read_as_literal_eval_reads_it(text):
    ours, theirs = literals.parse(text), ast.literal_eval(text)
    assert ours == theirs
    for a, b in zip(ours if isinstance(ours, list) else [ours], theirs if isinstance(theirs, list) else [theirs]):
        if type(a) is complex:
            assert _bits(a) == _bits(b), text  # the same arithmetic: signed zeros too


def test_canonical_complex_is_exact_and_deterministic():
    for z in _complexes():
        text = literals.canonical(z)
        for back in (literals.parse(text), eval(text, dict(NAMES))):  # the spec's parser; the harness's Python
            assert type(back) is complex and _bits(back) == _bits(z), (z, text)
        assert literals.canonical(literals.parse(text)) == text
        if math.isfinite(z.real) and math.isfinite(z.imag) and not text.startswith("complex("):
            assert _bits(ast.literal_eval(text)) == _bits(z)
    assert literals.canonical(complex(0, 1)) == "1.0j"
    assert literals.canonical(-2j) == "-2.0j"  # -(2j): real part -0.0, as Python spells it
    assert literals.canonical(complex(-2, 2.4492935982947064e-16)) == "(-2.0+2.4492935982947064e-16j)"
    assert literals.canonical(complex(1, -3)) == "(1.0-3.0j)"
    # what arithmetic cannot reach: a -0.0 it loses, a non-finite part
    assert literals.canonical(complex(-0.0, 1)) == "complex(-0.0, 1.0)"
    assert literals.canonical(complex(1, -0.0)) == "complex(1.0, -0.0)"
    assert literals.canonical(complex(math.inf, math.nan)) == "complex(inf, nan)"
    assert literals.canonical((1.5, 1j)) == "(1.5, 1.0j)"


@pytest.mark.parametrize("text,construct", [
    ("1j + 1", "operator"), ("(1+2j) + 3", "operator"), ("-(1+2j)", "unary minus on a non-number"),
    ("complex(1j, 2)", "complex() of a non-number"), ("complex(-nan, 1)", "complex() of a non-number"),
    ("complex('1j', 0)", "complex() of a non-number"), ("complex(1)", "call"), ("complex(1, 2, 3)", "call"),
    ("complex(real=1, imag=2)", "call"), ("(1+2)", "operator"),
])
def test_complex_forms_beyond_the_grammar_are_refused(text, construct):
    with pytest.raises(literals.LiteralError, match=construct.replace("(", r"\(").replace(")", r"\)")):
        literals.parse(text)


def test_a_suite_with_complex_values_renders_and_hashes_stably():
    spec = suitespec.build("python-call/1", "f", [((complex(-0.0, 1), -1j), {}, complex(math.inf, 0))])
    again = suitespec.loads(spec.to_json())
    assert again.spec_hash == spec.spec_hash
    harness = render.harness_for(again)
    args, _, want = harness.cases[0]
    assert [_bits(a) for a in args] == [_bits(complex(-0.0, 1)), _bits(-1j)]
    assert _bits(want) == _bits(complex(math.inf, 0))


# ---------------------------------------------------------------------------------------------
# the answer parser (what the runner sends: repr)


def test_answers_read_every_complex_repr_exactly():
    rng = random.Random(11)
    values = _complexes() + [complex(rng.uniform(-1e9, 1e9), rng.uniform(-1e-9, 1e9)) for _ in range(300)]
    for z in values:
        for text in (repr(z), repr([z, (z,), {z: z}])):
            got = answers.parse(text)
            got = got if type(got) is complex else got[0]
            assert _bits(got) == _bits(z), text  # exact: complex() keeps every part's sign
            if not (math.isnan(z.real) or math.isnan(z.imag) or math.isinf(z.real) or math.isinf(z.imag)):
                assert answers.parse(text) == ast.literal_eval(text)  # and equal to literal_eval's value


@pytest.mark.parametrize("text", ["(1+2j", "1j1", "(1 +2j)", "2jj", "j", "(j)", "1.j", "(+1+2j)", "(1+-2j)",
                                  "(1j+2)", "--1j", "(1+2j)(3+4j)", "1J", "(" * 50 + "1+2j"])
def test_answers_refuse_complex_text_repr_never_writes(text):
    with pytest.raises(literals.LiteralError):
        answers.parse(text)


def test_answers_complex_tokens_stay_linear():
    text = "[" + ",".join(["(" + "1" * 2000 + "+" + "2" * 2000 + "j)"] * 200) + "]"
    assert len(answers.parse(text)) == 200
    with pytest.raises(literals.LiteralError):
        answers.parse("(" + "1" * 200_000 + "+1j")  # an unclosed one fails without backtracking


# ---------------------------------------------------------------------------------------------
# Counter results


def _counter_harness(want: dict):
    return render.harness_for(suitespec.build(dialects.COUNTER_EQ, "f", [(([1],), {}, want)]))


def test_counter_dialect_compares_as_python_does_against_a_counter():
    harness = _counter_harness({1: 2, 2: 1})
    judge = harness.judge
    want = {1: 2, 2: 1}
    assert judge(Counter({1: 2, 2: 1}), want, (), {})
    assert judge(Counter({2: 1, 1: 2, 3: 0}), want, (), {})  # Counter == Counter: a zero count is a missing key
    assert judge({2: 1, 1: 2}, want, (), {})  # a dict against a Counter compares as dicts (order is free)
    assert not judge({1: 2, 2: 1, 3: 0}, want, (), {})  # ... so a zero count is a difference
    assert not judge(Counter({1: 2, 2: 2}), want, (), {}) and not judge([(1, 2), (2, 1)], want, (), {})
    for got in (Counter({1: 2, 2: 1, 3: 0}), {1: 2, 2: 1, 3: 0}, Counter({1: 3})):  # Python's own answer
        assert judge(got, want, (), {}) == (got == Counter(want))
    # the dialect's code is rendered: it is in render_hash, and the spec holds only its name
    assert "got == Counter(want)" in render.render(suitespec.build(dialects.COUNTER_EQ, "f", [((1,), {}, {})]))
    assert _counter_harness({1: 1}).render_hash != render.harness_for(
        suitespec.build("python-call/1", "f", [(([1],), {}, {1: 1})])).render_hash


CANDIDATES = {
    "counter": "from collections import Counter\ndef f(xs):\n    return Counter(xs)\n",
    "counter-with-zero": "from collections import Counter\ndef f(xs):\n    c = Counter(xs)\n    c['zero'] = 0\n"
                         "    return c\n",
    "dict": "def f(xs):\n    d = {}\n    for x in reversed(xs):\n        d[x] = d.get(x, 0) + 1\n    return d\n",
    "dict-with-zero": "def f(xs):\n    d = {'zero': 0}\n    for x in xs:\n        d[x] = d.get(x, 0) + 1\n"
                      "    return d\n",
    "wrong-counter": "from collections import Counter\ndef f(xs):\n    return Counter(xs[1:])\n",
    "counter-subclass": "from collections import Counter\nclass C(Counter):\n    def __eq__(self, o):\n"
                        "        return True\ndef f(xs):\n    return C()\n",
    # a wrong Counter whose class says the right thing: the runner copies it with dict's own methods
    "patched-counter": "import collections\nright = {1: 2, 2: 1}\n"
                       "collections.Counter.items = lambda self: right.items()\n"
                       "collections.Counter.keys = lambda self: right.keys()\n"
                       "collections.Counter.__iter__ = lambda self: iter(right)\n"
                       "collections.Counter.__getitem__ = lambda self, k: right[k]\n"
                       "collections.Counter.__repr__ = lambda self: repr(right)\n"
                       "def f(xs):\n    return collections.Counter(xs[1:])\n",
}


def test_counter_results_cross_the_sandbox(local_backend):
    harness = render.harness_for(suitespec.build(dialects.COUNTER_EQ, "f", [(([1, 1, 2],), {}, {1: 2, 2: 1})]))
    verdicts = {name: execute(harness, src, local_backend).verdict for name, src in CANDIDATES.items()}
    assert verdicts == {"counter": "pass", "counter-with-zero": "pass", "dict": "pass", "dict-with-zero": "fail",
                        "wrong-counter": "fail", "counter-subclass": "protocol", "patched-counter": "fail"}
    # outside the counter dialect a Counter result is compared as Python compares it with a dict
    plain = render.harness_for(suitespec.build("python-call/1", "f", [(([1, 1, 2],), {}, {1: 2, 2: 1})]))
    assert execute(plain, CANDIDATES["counter"], local_backend).verdict == "pass"
    assert execute(plain, CANDIDATES["counter-with-zero"], local_backend).verdict == "fail"
    # the reference side (expected values) receives a trusted Counter
    outcomes, _ = run_calls("f", [(([1, 1, 2],), {})], CANDIDATES["counter"], local_backend)
    assert type(outcomes[0].value) is Counter and outcomes[0].value == Counter({1: 2, 2: 1})


def test_complex_results_cross_the_sandbox(local_backend):
    source = "def f(z):\n    return [z, -z, complex(-0.0, z.imag), (z * 2,)]\n"
    z = complex(1.5, -0.0)
    outcomes, _ = run_calls("f", [((z,), {})], source, local_backend)
    got = outcomes[0].value
    want = [z, -z, complex(-0.0, z.imag), (z * 2,)]
    assert [_bits(x) for x in got[:3]] == [_bits(x) for x in want[:3]] and _bits(got[3][0]) == _bits(want[3][0])


# ---------------------------------------------------------------------------------------------
# the four MBPP+ tasks, imported from the real data

FOUR = ("Mbpp/88", "Mbpp/124", "Mbpp/252", "Mbpp/590")


@pytest.fixture(scope="module")
def four_rows(shared_data: Path) -> dict[str, dict]:
    with gzip.open(shared_data / "mbppplus" / "MbppPlus-399.jsonl.gz", "rt", encoding="utf-8") as f:
        return {r["task_id"]: r for r in map(json.loads, f) if r["task_id"] in FOUR}


@pytest.fixture(scope="module")
def four(tmp_path_factory, four_rows, local_backend):
    path = tmp_path_factory.mktemp("mbpp4") / "four.jsonl"
    path.write_text("".join(json.dumps(four_rows[i]) + "\n" for i in FOUR), encoding="utf-8")
    result = mbppplus.load(path, local_backend)
    return result, {t.task_id: t for t in result.tasks}


def test_the_four_tasks_import_with_every_input(four, four_rows):
    result, tasks = four
    assert sorted(tasks) == sorted(FOUR)
    assert not [i for i in result.issues if i.excluded not in ("none",)]
    counts = summary(result)
    assert counts["cases"][HIDDEN] == counts["source_hidden_cases"] == sum(
        len(r["base_input"]) + len(r["plus_input"]) for r in four_rows.values())
    assert {t: (tasks[t].suites[VISIBLE].dialect, tasks[t].suites[HIDDEN].dialect) for t in FOUR} == {
        "Mbpp/88": (dialects.COUNTER_EQ, dialects.COUNTER_EQ),
        "Mbpp/124": ("python-call+atol=0.0001/1",) * 2,  # the task's atol
        "Mbpp/252": ("python-call+atol=1e-06/1",) * 2,  # outputs are tuples of floats: EvalPlus's 1e-6
        "Mbpp/590": ("python-call/1",) * 2,  # ((float, float), complex): not is_floats, so exact
    }
    assert all(len(tasks[t].suites[VISIBLE].cases) == 3 for t in FOUR)
    assert tasks["Mbpp/88"].suites[VISIBLE].cases[1].expected == {1: 3, 2: 2, 3: 3, 4: 3}


def test_complex_inputs_are_evalplus_s_exactly(four, four_rows):
    _, tasks = four
    for task_id in ("Mbpp/124", "Mbpp/252"):
        row = four_rows[task_id]
        restored = mbpp_inputs.deserialize(task_id, row["base_input"] + row["plus_input"])
        spec = tasks[task_id].suites[HIDDEN]
        harness = render.harness_for(suitespec.loads(spec.to_json()))
        assert len(harness.cases) == len(restored)
        for (args, _, _), source in zip(harness.cases, restored):
            assert [type(a) for a in args] == [type(s) for s in source]
            assert [_bits(complex(a)) for a in args] == [_bits(complex(s)) for s in source]
    assert complex(-0.0, -1.0) in [c.args[1] for c in tasks["Mbpp/124"].suites[HIDDEN].cases]  # '(-0-1j)'


WRONG = {
    "Mbpp/88": "def freq_count(list1):\n    return {x: list1.count(x) + (x == list1[-1]) for x in list1}\n",
    "Mbpp/124": "import cmath\ndef angle_complex(a, b):\n    return cmath.phase(a - b)\n",
    "Mbpp/252": "import cmath\ndef convert(numbers):\n    r, phi = cmath.polar(numbers)\n"
                "    return (r, abs(phi))\n",
    "Mbpp/590": "import cmath\ndef polar_rect(x, y):\n"
                "    return (cmath.polar(complex(x, y)), cmath.rect(2, -cmath.pi))\n",
}
RIGHT = {  # different code, same answers under EvalPlus's comparison
    "Mbpp/88": "def freq_count(list1):\n    d = {}\n    for x in list1:\n        d[x] = d.get(x, 0) + 1\n"
               "    return d\n",
    "Mbpp/124": "import math\ndef angle_complex(a, b):\n    z = a + b\n    return math.atan2(z.imag, z.real)"
                " + 1e-9\n",
    "Mbpp/252": "import math\ndef convert(numbers):\n    z = complex(numbers)\n"
                "    return (abs(z), math.atan2(z.imag, z.real))\n",
    "Mbpp/590": "import cmath, math\ndef polar_rect(x, y):\n    return ((math.hypot(x, y), math.atan2(y, x)),"
                " cmath.rect(2, cmath.pi))\n",
}


def test_the_four_suites_score_right_and_wrong_on_the_local_backend(four, local_backend):
    _, tasks = four
    for task_id in FOUR:
        task = tasks[task_id]
        for kind in (VISIBLE, HIDDEN):
            harness = render.harness_for(task.suites[kind])
            assert execute(harness, task.reference, local_backend).verdict == "pass", (task_id, kind)
            assert execute(harness, RIGHT[task_id], local_backend).verdict == "pass", (task_id, kind)
        hidden = render.harness_for(task.suites[HIDDEN])
        assert execute(hidden, WRONG[task_id], local_backend).verdict == "fail", task_id
    # the gauge: the reference passes each suite and every generic wrong sample is blocked
    for result in gauge.check_many([tasks[t] for t in FOUR], local_backend):
        assert sorted(result.usable_suites) == sorted([VISIBLE, HIDDEN]), [s.reasons for s in result.suites]
