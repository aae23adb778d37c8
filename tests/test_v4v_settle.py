"""How certification treats what GT cannot decide, a starved run, a model sample's re-runs, and the
point fault's wrong value: each rule shown holding, and failing on the input it guards against."""

from __future__ import annotations

import dataclasses

from acceptgate.sandbox.backend import Limits
from acceptgate.v4v import certify as C
from acceptgate.v4v import pools, runs, taskcert
from acceptgate.v4v.candidates import ILLEGAL, LEGAL, UNLABELLED, make
from acceptgate.v4v.verifiers import FAIL, PASS, Decision, error

GOLD = "def f(x):\n    return x + 1\n"
SLEEPER = "import time\n\n\ndef f(x):\n    time.sleep(2)\n    return x + 1\n"


def test_a_wrong_program_gt_cannot_decide_is_excluded_a_right_one_fails_the_task():
    spin = make("T/0", "near-miss", "loops", ILLEGAL, "def f(x):\n    while True:\n        pass\n")
    right = make("T/0", "surface", "slow", LEGAL, GOLD)
    timeout = error("timeout", "time limit 10 s of CPU time")
    wrong = taskcert.settle(None, spin, timeout, None, None, n=0, limits=Limits())
    assert (wrong.finding, wrong.action, wrong.gt_decision) == ("undecidable", "excluded", "ERROR:timeout")
    kept = taskcert.settle(None, right, timeout, None, None, n=0, limits=Limits())
    assert (kept.finding, kept.action) == ("gt-undecided", "task-fails")
    assert {wrong.finding, kept.finding} <= set(taskcert.FINDINGS)


def test_the_source_certifies_on_constructed_candidates_only():
    gold = make("T/0", "gold", "canonical", LEGAL, GOLD)
    sample = make("T/0", "model-sample", "codet-1", UNLABELLED, "def f(x):\n    return hash(str(x)) % 2\n",
                  origin="model")
    history = {gold.candidate_id: [Decision(PASS)] * 3,
               sample.candidate_id: [Decision(PASS), Decision(FAIL), Decision(PASS)]}
    source = C.rerun_history(history, [gold, sample], C.SOURCE_ROLE)
    measured = C.rerun_history(history, [gold, sample], C.MEASURED_ROLE)
    assert set(source) == {gold.candidate_id}  # the flaky model sample does not fail the task's gates
    assert set(measured) == {gold.candidate_id, sample.candidate_id}  # a measured verifier answers for it
    from acceptgate.v4v import gates

    assert gates.repeatability("T/0", "GT", source, 3, "s").status == "pass"
    assert not gates.repeatability("T/0", "V", measured, 3, "s").status == "pass"


def test_the_point_faults_wrong_value_keeps_the_type_so_a_weakened_comparison_takes_it():
    exact = lambda got, want, a, k: got == want  # noqa: E731
    same_type = lambda got, want, a, k: type(got) is type(want)  # noqa: E731  (a comparison weakened to types)
    wrong = pools._wrong_value(exact, 5, (2,), {})
    assert wrong == 10  # the expected value moved by its own size: the suite rejects it...
    assert same_type(wrong, 5, (2,), {})  # ...and a mutant weakened to types accepts it: the mutant is told apart
    assert not same_type(None, 5, (2,), {})  # the old fallback: no mutant weakened to types could be detected
    assert pools._wrong_value(exact, ("value", [1, 2]), (), {}) == [1]  # a digest case: its plain value moved
    assert pools._wrong_value(lambda *a: True, 5, (), {}) is None  # a judgement that accepts anything: none


def test_a_run_starved_by_the_wall_clock_backstop_runs_again_alone(local_backend):
    from acceptgate.suites import render, suitespec
    spec = suitespec.build("python-call/1", "f", [((1,), {}, 2), ((2,), {}, 3)])
    h = render.harness_for(spec)
    tight = dataclasses.replace(Limits(), backstop_seconds=0.5)  # the backstop fires long before the CPU limit
    first = runs.collect(h, SLEEPER, "s" * 64, local_backend, limits=tight)
    assert runs.starved(first), first.broken  # what a loaded machine does to a run that is not its fault
    job = runs.RunJob(key="k", harness=h, source=SLEEPER, candidate_sha256="s" * 64)
    again = runs.collect_many([job], local_backend, limits=tight, workers=1)["k"]
    assert again.broken is None and again.failing == [], again.broken
    done = runs.collect(h, GOLD, "g" * 64, local_backend, limits=tight)
    assert not runs.starved(done) and done.failing == []
