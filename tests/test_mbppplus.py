"""MBPP+: EvalPlus's input restoration, its special oracles as check dialects, and the importer."""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acceptgate.suites import literals, render
from acceptgate.datasets.importers import mbpp_inputs, mbppplus
from acceptgate.datasets.importers.report import summary
from acceptgate.sandbox.executor import execute
from acceptgate.datasets.task import HIDDEN, VISIBLE

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def mbppplus_path(shared_data: Path) -> Path:
    return shared_data / "mbppplus" / "MbppPlus-399.jsonl.gz"


@pytest.fixture(scope="session")
def mbpp_rows(mbppplus_path) -> dict[str, dict]:
    with gzip.open(mbppplus_path, "rt", encoding="utf-8") as f:
        return {r["task_id"]: r for r in map(json.loads, f)}


def _evalplus_python() -> str | None:
    """A Python that imports evalplus 0.3.1: this one (the ``evalplus`` extra), or the bench's venv."""
    for python in (sys.executable, os.environ.get("ACCEPTGATE_EVALPLUS_PYTHON", ""),
                   str(REPO / "bench" / ".venv-evalplus" / "bin" / "python")):
        if python and Path(python).exists() and subprocess.run(
                [python, "-c", "import evalplus.data.mbpp"], capture_output=True).returncode == 0:
            return python
    return None


# A spelling of values with types and without set order (sets print in hash order, per process).
_SPELL = (
    "def spell(v):\n"
    "    t = type(v)\n"
    "    if t in (list, tuple):\n"
    "        return t.__name__ + '(' + ','.join(spell(x) for x in v) + ')'\n"
    "    if t in (set, frozenset):\n"
    "        return t.__name__ + '(' + ','.join(sorted(spell(x) for x in v)) + ')'\n"
    "    if t is dict:\n"
    "        return 'dict(' + ','.join(spell(k) + ':' + spell(x) for k, x in v.items()) + ')'\n"
    "    return t.__name__ + ':' + repr(v)\n")


def test_restoration_table_matches_evalplus_on_every_input(mbppplus_path, mbpp_rows):
    python = _evalplus_python()
    if python is None:
        pytest.skip("evalplus 0.3.1 is not installed (pip install '.[evalplus]', or bench/.venv-evalplus)")
    script = (
        "import gzip, json, sys\n"
        "from evalplus.data.mbpp import mbpp_deserialize_inputs\n"
        + _SPELL +
        "out = {}\n"
        "for line in gzip.open(sys.argv[1], 'rt'):\n"
        "    r = json.loads(line)\n"
        "    plus = r['plus_input'] or []\n"
        "    out[r['task_id']] = spell([mbpp_deserialize_inputs(r['task_id'], r['base_input']),\n"
        "                               mbpp_deserialize_inputs(r['task_id'], plus)])\n"
        "print(json.dumps(out))\n")
    namespace: dict = {}
    exec(_SPELL, namespace)
    spell = namespace["spell"]
    theirs = json.loads(subprocess.run([python, "-c", script, str(mbppplus_path)], check=True,
                                       capture_output=True, text=True).stdout)
    assert len(theirs) == len(mbpp_rows) == 399
    for task_id, row in mbpp_rows.items():
        plus = row["plus_input"] or []
        ours = spell([mbpp_inputs.deserialize(task_id, row["base_input"]), mbpp_inputs.deserialize(task_id, plus)])
        assert ours == theirs[task_id], task_id


def test_restoration_rules():
    assert mbpp_inputs.deserialize("Mbpp/2", [[[3, 4], [5, 4]]]) == [[(3, 4), (5, 4)]]
    assert mbpp_inputs.deserialize("Mbpp/115", [[[[1, 2], []]]]) == [[[{1, 2}, {}]]]  # EvalPlus's {} is a dict
    assert mbpp_inputs.deserialize("Mbpp/580", [[[1, [2, 3]], 4]]) == [((1, (2, 3)), 4)]
    assert mbpp_inputs.deserialize("Mbpp/3", [[5]]) == [[5]] and mbpp_inputs.rule_for("Mbpp/3") is None


def test_unrestored_coercions_are_detected():
    # an assert called f((1, 2)) but the table leaves the JSON list: detected, kept as EvalPlus tests it
    found = mbpp_inputs.unrestored_coercions([[[1, 2]], [[3]]], [((1, 2),)])
    assert found == [(0, [[1, 2]], ((1, 2),))]
    assert mbpp_inputs.unrestored_coercions([[(1, 2)]], [((1, 2),)]) == []


def _harness(dialect: str, cases: list[tuple]):
    from acceptgate.suites import suitespec
    return render.harness_for(suitespec.build(dialect, "f", cases))


def test_oracle_dialects_judge_like_evalplus():
    set_eq = _harness("python-call+set-eq/1", [(((1, 2),), {}, (4, 5))])
    assert set_eq.judge((5, 4), (4, 5), (), {}) and not set_eq.judge((4,), (4, 5), (), {})
    assert not set_eq.judge(3, (4, 5), (), {})  # set(3) raises: a failed case, not a crash
    not_none = _harness("python-call+not-none/1", [(("ab",), {}, True)])
    assert not_none.judge("x", True, (), {}) and not not_none.judge(None, True, (), {})
    assert not not_none.judge(False, True, (), {})  # a bool must equal the expected value
    or_zero = _harness("python-call+or-zero/1", [((4,), {}, 3)])
    assert or_zero.judge(3, 3, (), {}) and or_zero.judge(0, 3, (), {}) and not or_zero.judge(1, 3, (), {})
    area = _harness("python-call+pyramid-area=0.0/1", [((3, 4), {}, 33)])
    assert area.judge(33, 33, (3, 4), {}) and area.judge(round(9 + 2 * 3 * (1.5 ** 2 + 16) ** 0.5), 0, (3, 4), {})
    assert not area.judge(34, 33, (3, 4), {})


# Values whose set semantics are subtle: equal across types (1, 1.0, True, 1+0j), NaN (equal only to the
# very same object), signed zeros, ints beyond a float, unhashable members, nesting.
_SET_VALUES = [None, True, False, 0, 1, -1, -2, 2, 1.0, 0.5, -0.0, math.inf, -math.inf, math.nan, 1 + 0j,
               2j, complex(0.5, 0), complex(math.nan, 0), "a", "b", "", b"a", b"", 2 ** 61 - 1,
               2 * (2 ** 61 - 1), 2 ** 70, float(2 ** 70), (1, "a"), (1.0, "a"), ((2j,),), (math.nan,), [1], {1: 2}]


def test_set_equality_decides_as_python_sets_do():
    """The sorted-forms rule against ``set(got) == set(want)`` itself, on pairs of containers of tricky
    values (the candidate's side parsed from its repr, as the harness receives it)."""
    from acceptgate.sandbox import answers

    set_eq = _harness("python-call+set-eq/1", [(((1, 2),), {}, (4, 5))])
    rng = random.Random(5)

    def python(got, want):
        try:
            return set(got) == set(want)
        except TypeError:
            return False

    def container():
        kind = rng.choice([list, tuple, set, dict, str])
        if kind is str:
            return rng.choice(["ab", "ba", "aab", ""])
        items = [rng.choice(_SET_VALUES) for _ in range(rng.randint(0, 4))]
        if kind in (set, dict):
            items = [v for v in items if type(v) not in (list, dict)]
            return set(items) if kind is set else dict.fromkeys(items, 0)
        return kind(items)

    agreed = {True: 0, False: 0}
    for _ in range(20_000):
        want = container()
        got = rng.choice([want, container(), list(want) if type(want) is not str else want])
        got = answers.parse(repr(got))  # as the runner spells it
        expected = python(got, want)
        assert set_eq.judge(got, want, (), {}) is expected, (got, want)
        agreed[expected] += 1
    assert min(agreed.values()) > 1000, agreed  # both verdicts well exercised


def test_set_equality_of_hash_colliding_elements_is_linear():
    """A 1 MiB answer of ints that all hash alike: set() takes tens of seconds of CPU on it (quadratic);
    the rule sorts forms instead. CPU time, not wall clock: the machine's load does not count."""
    from acceptgate.sandbox import answers

    colliding = [k * (2 ** 61 - 1) for k in range(1, 40_001)]
    assert len({hash(v) for v in colliding}) == 1
    text = repr(colliding)
    assert len(text) < render.RESULT_FLOOR  # within the answer bound of a small expected value
    set_eq = _harness("python-call+set-eq/1", [((1,), {}, [1])])
    got = answers.parse(text)
    started = time.process_time()
    assert not set_eq.judge(got, [1], (1,), {})
    assert set_eq.judge(got + got[::-1], got, (1,), {})  # duplicates and order do not matter
    assert time.process_time() - started < 5.0
    digits = _harness("python-call+digit-distance/1", [((1, 2), {}, 1)])
    assert digits.judge(1, 1, (1, 2), {}) and digits.judge(4, 9, (123, 321), {}) and not digits.judge(5, 9, (123, 321), {})
    assert _harness("python-call+any-result/1", [((1,), {}, True)]).judge("anything", True, (), {})


@pytest.fixture(scope="module")
def mbpp_small(tmp_path_factory, mbppplus_path, mbpp_rows, local_backend):
    ids = ["Mbpp/2", "Mbpp/115", "Mbpp/124", "Mbpp/581", "Mbpp/737"]
    path = tmp_path_factory.mktemp("mbpp") / "mbpp.jsonl"
    path.write_text("".join(json.dumps(mbpp_rows[i]) + "\n" for i in ids), encoding="utf-8")
    return mbppplus.load(path, local_backend)


def test_mbppplus_import(mbpp_small, mbpp_rows, local_backend):
    tasks = {t.task_id: t for t in mbpp_small.tasks}
    t2 = tasks["Mbpp/2"]
    row = mbpp_rows["Mbpp/2"]
    assert t2.suites[HIDDEN].dialect == "python-call+set-eq/1"
    assert len(t2.suites[HIDDEN].cases) == len(row["base_input"]) + len(row["plus_input"])
    assert t2.suites[HIDDEN].cases[0].args == ((3, 4, 5, 6), (5, 7, 4, 10))  # tuples restored
    assert [c.args for c in t2.suites[VISIBLE].cases] == [((3, 4, 5, 6), (5, 7, 4, 10)),
                                                         ((1, 2, 3, 4), (5, 4, 3, 7)),
                                                         ((11, 12, 14, 13), (17, 15, 14, 13))]
    # check_str returns a re.Match: the expected values are "not None", as EvalPlus's ground truth
    t737 = tasks["Mbpp/737"]
    assert t737.suites[HIDDEN].dialect == "python-call+not-none/1" and t737.entry_point == "check_str"
    assert {c.expected for c in t737.suites[HIDDEN].cases} <= {True, False}
    # ... and the reference, which returns re.Match objects, passes: the not-None rule judges them
    assert execute(render.harness_for(t737.suites[HIDDEN]), t737.reference, local_backend).verdict == "pass"
    assert execute(render.harness_for(t737.suites[HIDDEN]), "def check_str(s):\n    return None\n",
                   local_backend).verdict == "fail"
    assert tasks["Mbpp/581"].suites[HIDDEN].dialect.startswith("python-call+pyramid-area=")
    # complex inputs (Mbpp/124) are literals too (tests/test_complex_counter.py): every input is kept
    assert type(tasks["Mbpp/124"].suites[HIDDEN].cases[0].args[1]) is complex
    assert "non-literal-input" not in {i.reason for i in mbpp_small.issues}
    counts = summary(mbpp_small)
    assert counts["source_hidden_cases"] == sum(len(mbpp_rows[t]["base_input"]) + len(mbpp_rows[t]["plus_input"])
                                                for t in ("Mbpp/2", "Mbpp/115", "Mbpp/124", "Mbpp/581", "Mbpp/737"))
    assert counts["cases"][HIDDEN] == counts["source_hidden_cases"]
    # the suites tell right from wrong in the sandbox
    harness = render.harness_for(t2.suites[HIDDEN])
    assert execute(harness, t2.reference, local_backend).verdict == "pass"
    reordered = "def similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b), reverse=True))\n"
    assert execute(harness, reordered, local_backend).verdict == "pass"  # order is free
    assert execute(harness, "def similar_elements(a, b):\n    return a\n", local_backend).verdict == "fail"
    assert literals.canonical(t2.suites[HIDDEN].cases[0].args)
