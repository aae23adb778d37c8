"""CONFORM and OFF on replayed samples, the static precheck, feedback and signatures, the records."""

from __future__ import annotations

import inspect

import pytest

from acceptgate.suites import suitespec
from acceptgate.gates import ARMS, public_tasks, run_arm, run_gate
from acceptgate.gates import conform, hmix, off
from acceptgate.gates.feedback import from_execution, from_precheck, truncate
from acceptgate.gates.precheck import precheck
from acceptgate.gates.visible import run_visible
from acceptgate.sandbox.backend import Limits
from acceptgate.sources.base import PublicTask
from acceptgate.sources.codet import CodetSource
from acceptgate.sources.replay import ReplaySource
from acceptgate.datasets.samples import Sample, SampleFile
from acceptgate.datasets.task import HIDDEN, VISIBLE, Task

PROMPT = 'def add(a, b):\n    """Add.\n    >>> add(1, 2)\n    3\n    """\n'
VIS = suitespec.build("python-call/1", "add", [((1, 2), {}, 3), ((5, 5), {}, 10)])
TASK = PublicTask("T/add", "add", PROMPT, VIS)


def replay(*bodies: str, task_id: str = "T/add") -> ReplaySource:
    return ReplaySource(SampleFile("mem.jsonl", [Sample(task_id, i + 1, i, b, "completion")
                                                 for i, b in enumerate(bodies)], []))


def test_conform_delivers_first_visible_pass(local_backend):
    src = replay("    return a - b\n", "    return a +\n", "    return a + b\n", "    return 3\n")
    out = run_gate("conform", TASK, src, local_backend)
    assert (out.decision, out.attempts_used, out.delivered_attempt) == ("delivered", 3, 3)
    assert [a.v_verdict for a in out.attempts] == ["fail", "error", "pass"]
    assert [a.outcome for a in out.attempts] == ["rejected", "rejected", "delivered"]
    assert out.delivered.program == PROMPT + "    return a + b\n"
    assert [(m.attempt, m.author, m.purpose) for m in out.messages][-2:] == [
        (3, "harness", "selection"), (3, "harness", "stop_decision")]


def test_conform_refuses_after_five_failing_draws(local_backend):
    src = replay(*[f"    return {i}\n" for i in range(7)])
    out = run_gate("conform", TASK, src, local_backend)
    assert (out.decision, out.attempts_used, out.delivered) == ("refused", 5, None)
    assert out.stop_reason == "no candidate passed the visible suite in 5 draws"


def test_conform_refuses_when_source_runs_out(local_backend):
    out = run_gate("conform", TASK, replay("    return 0\n", "    return 1\n"), local_backend)
    assert (out.decision, out.attempts_used) == ("refused", 2)
    assert out.stop_reason == "source exhausted after 2 draws"


def test_off_delivers_first_without_running(local_backend):
    out = run_gate("off", TASK, replay("    return a - b\n", "    return a + b\n"), local_backend)
    assert (out.decision, out.attempts_used, out.delivered_attempt) == ("delivered", 1, 1)
    assert out.attempts[0].v_verdict == "not-run"
    empty = run_gate("off", TASK, replay(task_id="other"), local_backend)
    assert (empty.decision, empty.attempts_used) == ("refused", 0)


def test_gates_never_take_the_hidden_suite(local_backend):
    full = Task("T/add", "test", "add", PROMPT, "", suites={VISIBLE: VIS, HIDDEN: VIS})
    with pytest.raises(TypeError, match="PublicTask"):
        run_gate("conform", full, replay("    return a + b\n"), local_backend)
    (pub,) = public_tasks([full])
    assert not any("hidden" in f for f in PublicTask.__dataclass_fields__)
    assert pub.visible is VIS
    for fn in (conform.run_conform, hmix.run_hmix, off.run_off, run_visible):
        params = inspect.signature(fn).parameters
        assert params["task"].annotation == "PublicTask"
        assert not any("hidden" in p for p in params)
    with pytest.raises(ValueError, match="valid arms: conform, hmix, off"):
        run_gate("strict", TASK, replay(), local_backend)
    assert ARMS == ("conform", "hmix", "off", "hmix-leaky-gt")


def test_run_arm_keeps_task_order(local_backend):
    tasks = [PublicTask(f"T/{i}", "add", PROMPT, VIS) for i in range(4)]
    src = ReplaySource(SampleFile("m", [Sample(f"T/{i}", i, 0, "    return a + b\n" if i % 2 else "    return 0\n",
                                               "completion") for i in range(4)], []))
    outs = run_arm("conform", tasks, src, local_backend, workers=2)
    assert [o.task_id for o in outs] == ["T/0", "T/1", "T/2", "T/3"]
    assert [o.decision for o in outs] == ["refused", "delivered", "refused", "delivered"]


# --- real samples: known outcomes of CodeT's first five samples -----------------------------------

def test_conform_and_off_on_codet_humaneval_13_and_53(codet_samples_path, local_backend):
    # V = the docstring examples of the two tasks.
    gcd = PublicTask("HumanEval/13", "greatest_common_divisor", "(unused by the CodeT replay)",
                     suitespec.build("python-call/1", "greatest_common_divisor", [((3, 5), {}, 1), ((25, 15), {}, 5)]))
    add = PublicTask("HumanEval/53", "add", "(unused)",
                     suitespec.build("python-call/1", "add", [((2, 3), {}, 5), ((5, 7), {}, 12)]))
    src = CodetSource(codet_samples_path)
    out = run_gate("conform", gcd, src, local_backend)
    # sample 0 is `return gcd(a, b)` (NameError at call time), sample 1 a correct Euclid loop.
    assert (out.decision, out.attempts_used, out.delivered_attempt) == ("delivered", 2, 2)
    assert out.attempts[0].v_verdict == "error" and "NameError" in _first_message(out)
    assert run_gate("off", gcd, src, local_backend).delivered.raw == "    return gcd(a, b)\n"
    out = run_gate("conform", add, src, local_backend)
    assert (out.decision, out.attempts_used) == ("delivered", 1)


def _first_message(out) -> str:
    return out.attempts[0].v_detail


# --- precheck ------------------------------------------------------------------------------------

@pytest.mark.parametrize("program, kind, fragment", [
    ("def add(a, b):\n    return a + b\n", "ok", ""),
    ("def add(a, b)\n    return a + b\n", "syntax", "line 1"),
    ("import os\ndef add(a, b):\n    return a + b\n", "forbidden-import", "'os'"),
    ("from subprocess import run\ndef add(a, b):\n    return 1\n", "forbidden-import", "'subprocess'"),
    ("from . import x\ndef add(a, b):\n    return 1\n", "forbidden-import", "relative"),
    ("def add(a, b):\n    return eval('a+b')\n", "forbidden-name", "'eval'"),
    ("def add(a, b):\n    return add.__globals__\n", "forbidden-attribute", "'__globals__'"),
    ("def plus(a, b):\n    return a + b\n", "no-entry-point", "'add'"),
    ("import math, collections.abc\nfrom typing import List\ndef add(a, b):\n    return math.fsum([a, b])\n", "ok", ""),
])
def test_precheck(program, kind, fragment):
    got = precheck(program, "add")
    assert got.kind == kind and got.ok == (kind == "ok")
    assert fragment in got.message
    if not got.ok:
        assert from_precheck(got).text.startswith(f"{got.exc_type}: The code cannot load:")


# --- feedback and signatures -----------------------------------------------------------------------

def test_feedback_from_visible_failures(local_backend):
    wrong = from_execution(run_visible(TASK, "def add(a, b):\n    return a * b\n", local_backend, Limits()))
    assert wrong.text == "AssertionError: args=(1, 2) got=2 want=3"
    assert wrong.signature.startswith("fail|AssertionError|")
    again = from_execution(run_visible(TASK, "def add(a, b):\n    return a * b  # same bug\n", local_backend, Limits()))
    assert again.signature == wrong.signature  # a cosmetic change is no progress
    boom = from_execution(run_visible(TASK, "def add(a, b):\n    return a / 0\n", local_backend, Limits()))
    assert boom.text.startswith("ZeroDivisionError: division by zero args=(1, 2) want=3")
    noload = from_execution(run_visible(TASK, "raise ValueError('bad module')\n", local_backend, Limits()))
    assert (noload.kind, noload.exc_type, noload.text) == ("load", "ValueError", "ValueError: bad module")
    big = from_execution(run_visible(TASK, "def add(a, b):\n    return 'x' * 5000\n", local_backend, Limits()))
    assert "more characters" in big.text and len(big.text) < 400


def test_truncate():
    assert truncate("abc", 5) == "abc"
    assert truncate("a" * 10, 4) == "aaaa… (6 more characters)"
    assert truncate(None) == ""


def test_hmix_first_message_asks_for_a_check_against_the_examples_in_the_task():
    """Seed 001, H-MIX step 1, word for word."""
    from acceptgate.gates.hmix import first_message
    from acceptgate.sources.base import PublicTask

    task = PublicTask("T/0", "absval", 'def absval(x):\n    """>>> absval(-2)\n    2\n    """\n', None)
    parts = first_message(task)
    assert [a for a, _ in parts] == ["task", "harness", "harness"]
    assert parts[-1] == ("harness", "First check your function by hand against the examples in the task.")


def test_hmix_on_a_replay_records_its_feedback_as_never_sent(local_backend):
    """A replayed samples file reads no message: H-MIX's feedback reached no model, so every part is
    recorded with role none and no request (it is resampling, not revision); the leak audit still sees
    every harness text by its author."""
    out = run_gate("hmix", TASK, replay("    return a - b\n", "    return a + b\n"), local_backend)
    assert (out.decision, out.attempts_used) == ("delivered", 2)
    feedback = [m for m in out.messages if m.purpose == "revision_feedback"]
    assert feedback and all(m.author == "harness" for m in feedback)
    assert {(m.role, m.request) for m in out.messages} == {("none", None)}


def test_a_policy_refusal_is_recorded_by_the_gated_arms_only(local_backend):
    """``refusals``: a task whose V is too weak is refused by the arms that decide with V, with its reason
    and a stop decision; OFF, which uses no V, delivers as ever."""
    why = {"T/add": "V too weak to gate: it accepts 66.7% of the attacks"}
    for arm in ("conform", "hmix"):
        (out,) = run_arm(arm, [TASK], replay("    return a + b\n"), local_backend, refusals=why)
        assert (out.decision, out.attempts_used, out.stop_reason) == ("refused", 0, why["T/add"])
        assert [(m.author, m.purpose) for m in out.messages] == [("harness", "stop_decision")]
    (off_out,) = run_arm("off", [TASK], replay("    return a + b\n"), local_backend, refusals=why)
    assert off_out.decision == "delivered"
