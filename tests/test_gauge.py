"""The gauge check with real sandbox processes: usable suites pass the reference and block wrong samples."""

from __future__ import annotations

import ast
import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from acceptgate.datasets import wrongs
from acceptgate.scoring import gauge

from acceptgate.suites import suitespec
from acceptgate.datasets.importers import humaneval
from acceptgate.datasets.task import HIDDEN, VISIBLE, Task, WrongSample


def subset(numbers: list[int], dst: Path) -> Path:
    with gzip.open(humaneval.default_path(), "rt", encoding="utf-8") as f:
        rows = {r["task_id"]: r for r in map(json.loads, f)}
    dst.write_text("".join(json.dumps(rows[f"HumanEval/{n}"]) + "\n" for n in numbers), encoding="utf-8")
    return dst


@pytest.fixture(scope="module")
def he_tasks(tmp_path_factory, local_backend) -> list[Task]:
    path = subset([0, 2, 95], tmp_path_factory.mktemp("gauge") / "he.jsonl")
    return humaneval.load(local_backend, path=str(path)).tasks


def is_even_task(visible: list[tuple], hidden: list[tuple], wrong: list[WrongSample] | None = None) -> Task:
    prompt = 'def is_even(n: int) -> bool:\n    """True when n is even."""\n'
    task = Task(task_id="demo/is_even", dataset="demo", entry_point="is_even", prompt=prompt,
                reference=prompt + "    return n % 2 == 0\n",
                suites={VISIBLE: suitespec.build("python-call/1", "is_even", visible),
                        HIDDEN: suitespec.build("python-call/1", "is_even", hidden)})
    task.wrong_samples = wrong if wrong is not None else gauge.generic_wrong_samples(task)
    return task


def test_generic_wrong_samples_define_the_entry_point_with_its_signature(he_tasks):
    task = he_tasks[0]  # has_close_elements(numbers: List[float], threshold: float)
    samples = gauge.generic_wrong_samples(task)
    labels = [s.label for s in samples]
    assert labels == ["return-none", "constant-0", "constant-empty-str", "constant-empty-list", "constant-false",
                      "constant-true", "raise", "echo-first-arg"]
    for sample in samples:
        fn = ast.parse(sample.source).body[0]
        assert isinstance(fn, ast.FunctionDef) and fn.name == "has_close_elements"
        assert [a.arg for a in fn.args.args] == ["numbers", "threshold"]
    echo = next(s for s in samples if s.label == "echo-first-arg")
    assert "return numbers" in echo.source


def test_a_constant_equal_to_every_hidden_expected_value_is_skipped_with_a_reason():
    """What makes a sample wrong is the reference on the hidden inputs: a constant that is every hidden
    expected value is right there, so it is not wrong for the task (and says so)."""
    task = is_even_task(visible=[((1,), {}, False), ((2,), {}, True)],
                        hidden=[((1,), {}, False), ((3,), {}, False)])
    samples, skipped = gauge.gauge_plan(task)
    # False, and 0 (0 == False under the dialect's equality), return every hidden expected value
    assert {i.detail.split(" ")[0] for i in skipped} == {"constant-false", "constant-0"}
    assert all(i.reason == wrongs.WRONG_SAMPLE_SKIPPED and i.suite == HIDDEN for i in skipped)
    assert {"constant-false", "constant-0"}.isdisjoint(s.label for s in samples)
    assert "raise" in [s.label for s in samples]


def test_a_constant_matching_only_the_visible_suite_is_kept_and_fails_its_gauge(local_backend):
    """A generic sample that passes V while failing the reference on the hidden inputs is wrong: it is
    not left out (as it once was, whenever it matched every case of the suite being gauged), and it
    makes V's gauge fail, named."""
    task = is_even_task(visible=[((1,), {}, False), ((3,), {}, False)],
                        hidden=[((1,), {}, False), ((2,), {}, True)])
    samples, skipped = gauge.gauge_plan(task)
    assert skipped == [] and "constant-false" in [s.label for s in samples]
    [result] = gauge.check_many([task], local_backend)
    by_kind = {s.suite: s for s in result.suites}
    assert not by_kind[VISIBLE].passed and by_kind[HIDDEN].passed
    assert any(r.startswith("wrong sample constant-false passes the visible suite but fails the reference on the "
                            "hidden inputs (fail") for r in by_kind[VISIBLE].reasons), by_kind[VISIBLE].reasons
    check = gauge.assess([task], local_backend, store=None)
    assert list(check.failed_tasks()) == ["demo/is_even"] and "constant-false" in check.failed_tasks()["demo/is_even"]


def test_a_generic_sample_right_on_every_hidden_input_is_noted_a_known_wrong_one_fails(local_backend):
    """A generic sample that passes the hidden suite is right there: noted, not a failure. A task's own
    known-wrong program is wrong by its provenance: passing any suite, the hidden one too, fails it."""
    right = WrongSample("constant-true", "def is_even(n):\n    return not n % 2\n")  # a generic label
    task = is_even_task(visible=[((2,), {}, True)], hidden=[((4,), {}, True), ((7,), {}, False)], wrong=[right])
    [result] = gauge.check_many([task], local_backend)
    assert all(s.passed for s in result.suites)
    assert all(s.notes == ["constant-true passes the hidden suite too: right on every hidden input, not wrong"]
               for s in result.suites)
    known = dataclasses.replace(task, wrong_samples=[WrongSample("alt", right.source)])
    [result] = gauge.check_many([known], local_backend)
    assert [s.reasons for s in result.suites] == [["wrong sample alt passes the visible suite"],
                                                  ["wrong sample alt passes the hidden suite"]]


def test_humaneval_4_return_true_fails_the_visible_gauge(tmp_path, humanevalplus_path, local_backend):
    """HumanEval/4's docstring example expects 1.0, and True == 1.0: ``return True`` passes V and fails
    the reference on the hidden inputs, so V's gauge fails naming it (the gate then excludes the task)."""
    from acceptgate.datasets.importers import humanevalplus

    rows = [r for r in map(json.loads, gzip.open(humanevalplus_path, "rt")) if r["task_id"] == "HumanEval/4"]
    path = tmp_path / "he4.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n")
    [task] = humanevalplus.load(str(path), local_backend).tasks
    check = gauge.assess([task], local_backend, store=None)
    why = check.failed_tasks()["HumanEval/4"]
    assert why.startswith("its visible suite failed the gauge check: wrong sample constant-true passes the visible "
                          "suite but fails the reference on the hidden inputs"), why
    assert {(r.suite, r.passed) for r in check.records} == {(VISIBLE, False), (HIDDEN, True)}


def test_good_suites_pass_the_gauge(he_tasks, local_backend):
    seen = []
    results = gauge.check_many(he_tasks, local_backend, progress=lambda done, total: seen.append((done, total)))
    assert [r.task_id for r in results] == [t.task_id for t in he_tasks]
    for task, result in zip(he_tasks, results):
        assert result.usable_suites == [VISIBLE, HIDDEN], [s.reasons for s in result.suites]
        for sg in result.suites:
            assert sg.passed and sg.reasons == [] and sg.reference.verdict == "pass"
            assert sg.spec_hash == task.suites[sg.suite].spec_hash == sg.reference.spec_hash
            assert sg.render_hash == sg.reference.render_hash
            assert len(sg.wrong) == len(task.wrong_samples)
            assert all(r.verdict != "pass" for _, r in sg.wrong)
            assert {r.verdict for w, r in sg.wrong if w.label == "raise"} == {"error"}
    jobs = sum(len(t.suites) * (1 + len(t.wrong_samples)) for t in he_tasks)
    assert seen[-1] == (jobs, jobs)


def test_a_wrong_reference_makes_the_suite_unusable(he_tasks, local_backend):
    task = he_tasks[0]
    broken = dataclasses.replace(task, reference=task.prompt + "    return True\n")
    [result] = gauge.check_many([broken], local_backend)
    assert result.usable_suites == []
    for sg in result.suites:
        assert not sg.passed and sg.reference.verdict == "fail"
        assert any(r.startswith(f"reference does not pass the {sg.suite} suite: fail") for r in sg.reasons)
        assert "want=False" in sg.reasons[0]


def test_a_wrong_sample_that_passes_makes_the_suite_unusable(local_backend):
    always_false = WrongSample("constant-false", "def is_even(n):\n    return False\n")
    task = is_even_task(visible=[((1,), {}, False), ((3,), {}, False)],
                        hidden=[((1,), {}, False), ((2,), {}, True)], wrong=[always_false])
    [result] = gauge.check_many([task], local_backend)
    by_kind = {s.suite: s for s in result.suites}
    assert not by_kind[VISIBLE].passed
    assert by_kind[VISIBLE].reasons == ["wrong sample constant-false passes the visible suite but fails the reference "
                                        "on the hidden inputs (fail; 1 failing case(s) of 2 run, first: case 1 fail args=(2,) "
                                        "got=False want=True)"]
    assert by_kind[HIDDEN].passed and result.usable_suites == [HIDDEN]


# --- the precondition: a suite is used only with a passing gauge record ---------------------------------

def test_require_computes_stores_then_reuses_records_by_spec_hash(local_backend, tmp_path):
    task = is_even_task(visible=[((2,), {}, True), ((3,), {}, False)], hidden=[((10,), {}, True), ((7,), {}, False)])
    first = gauge.require([task], local_backend, store=tmp_path)
    assert first.computed == 2 and {(r.suite, r.origin, r.passed) for r in first.records} == {
        (VISIBLE, "computed", True), (HIDDEN, "computed", True)}
    assert len(list(tmp_path.glob("*.json"))) == 2
    again = gauge.require([task], local_backend, store=tmp_path)
    assert again.computed == 0 and {r.origin for r in again.records} == {"stored"}
    # another visible suite is another spec_hash: only that suite is checked now
    other = dataclasses.replace(task, suites={**task.suites, VISIBLE: suitespec.build(
        "python-call/1", "is_even", [((4,), {}, True), ((9,), {}, False)])})
    third = gauge.require([other], local_backend, store=tmp_path)
    assert third.computed == 1 and {(r.suite, r.origin) for r in third.records} == {(VISIBLE, "computed"), (HIDDEN, "stored")}
    # another hidden suite changes what "wrong" means for every suite of the task: both are checked again
    other = dataclasses.replace(task, suites={**task.suites, HIDDEN: suitespec.build(
        "python-call/1", "is_even", [((4,), {}, True), ((9,), {}, False)])})
    fourth = gauge.require([other], local_backend, store=tmp_path)
    assert fourth.computed == 2 and {r.origin for r in fourth.records} == {"computed"}
    # the import's recorded verdict is used as it is, without running anything -- if it was judged by
    # this record format (an older one judged wrong samples by the suite itself: checked again)
    fmt = gauge.RECORD_FORMAT
    marked = gauge.require([task], local_backend, store=None, recorded={
        (task.task_id, k): {"passed": True, "reasons": [], "format": fmt} for k in (VISIBLE, HIDDEN)})
    assert marked.computed == 0 and {r.origin for r in marked.records} == {"manifest"}
    old = gauge.require([task], local_backend, store=None,
                        recorded={(task.task_id, k): {"passed": True, "reasons": []} for k in (VISIBLE, HIDDEN)})
    assert old.computed == 2 and {r.origin for r in old.records} == {"computed"}


def test_require_refuses_a_failing_suite_or_one_it_cannot_check_naming_the_task(local_backend, tmp_path):
    from acceptgate._util.errors import InvalidInput

    # "return n > 0" is wrong, yet every case of this visible suite agrees with it: the suite cannot tell
    lax = is_even_task(visible=[((2,), {}, True)], hidden=[((2,), {}, True), ((3,), {}, False)],
                       wrong=[WrongSample("positive", "def is_even(n):\n    return n > 0\n")])
    with pytest.raises(InvalidInput, match=r"task demo/is_even: its visible suite failed the gauge check: "
                                           r"wrong sample positive passes the visible suite"):
        gauge.require([lax], local_backend, store=tmp_path)
    # a failure is not stored (it could be a timeout under load), only the hidden suite's pass: the
    # visible suite is checked, and refused, again
    assert [json.loads(p.read_text())["suite"] for p in tmp_path.glob("*.json")] == [HIDDEN]
    with pytest.raises(InvalidInput, match="wrong sample positive passes"):
        gauge.require([lax], local_backend, store=tmp_path)
    bare = dataclasses.replace(lax, reference="")
    with pytest.raises(InvalidInput, match="task demo/is_even: its visible suite .* no gauge record and no reference"):
        gauge.require([bare], local_backend, store=tmp_path)
    # --no-gauge's suites are never asked about; a suite kind not asked for is not checked
    assert gauge.require([lax], local_backend, kinds=(HIDDEN,), store=tmp_path).records[0].passed


def _broken_suites(humanevalplus_path: Path, out: Path) -> Path:
    """HumanEval/0 with its canonical solution as reference and a hidden suite whose second expected
    value is wrong: the reference fails it, so the gauge must refuse the suite."""
    from acceptgate.datasets import suitefiles
    from acceptgate.datasets.task import ImportResult

    with gzip.open(humanevalplus_path, "rt", encoding="utf-8") as f:
        row = next(r for r in map(json.loads, f) if r["task_id"] == "HumanEval/0")
    entry = "has_close_elements"
    visible = suitespec.build("python-call/1", entry, [(([1.0, 2.0, 3.0], 0.5), {}, False),
                                                       (([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3), {}, True)])
    hidden = suitespec.build("python-call/1", entry, [(([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3), {}, True),
                                                      (([1.0, 2.0, 5.9, 4.0, 5.0], 0.95), {}, False)])  # truly True
    task = Task(task_id="HumanEval/0", dataset="humanevalplus", entry_point=entry, prompt=row["prompt"],
                reference=row["prompt"] + row["canonical_solution"], suites={VISIBLE: visible, HIDDEN: hidden})
    return suitefiles.write_suites(ImportResult("humanevalplus", str(humanevalplus_path), "0" * 64, [task], []), out)


@pytest.mark.prefect
def test_gate_score_and_certify_refuse_a_suite_whose_reference_fails(prefect_harness, humanevalplus_path, tmp_path,
                                                                     capsys):
    """score --strict refuses the file (without it the task is unusable); gate excludes the task (here the only one: nothing left, exit 2); certify
    records the task as not certified, naming the gauge."""
    from acceptgate.cli import main

    suites = _broken_suites(humanevalplus_path, tmp_path / "suites")
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "def has_close_elements(n, t):\n"
                                   "    return False\n"}) + "\n")
    warehouse = tmp_path / "w.duckdb"
    runs = {
        "gate": ["gate", "--no-certify", "--arm", "off", "--source", f"evalplus:{samples}", "--suites", str(suites),
                 "--warehouse", str(warehouse)],
        # score excludes the task ('unusable', tests/test_score.py); --strict refuses the file
        "score": ["score", "--suites", str(suites), "--samples", str(samples), "--suite", "hidden",
                  "--out", str(tmp_path / "scores.jsonl"), "--warehouse", str(warehouse), "--strict"],
    }
    for name, argv in runs.items():
        capsys.readouterr()
        assert main(argv) == 2, name
        err = capsys.readouterr().err
        assert "task HumanEval/0: its hidden suite failed the gauge check: reference does not pass the hidden " \
               "suite" in err, (name, err)
        assert not warehouse.exists() and not (tmp_path / "scores.jsonl").exists(), name
    # --no-gauge: the user takes the suite as it is, and the gate run says so
    assert main(runs["score"][:-1] + ["--no-gauge"]) == 0
    assert main(runs["gate"] + ["--no-gauge"]) == 0
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select gauge, certify from gate_runs").fetchall() == [("skipped", "skipped")]
    certified = tmp_path / "c.duckdb"
    assert main(["certify", "--suites", str(suites), "--dataset", str(humanevalplus_path), "--k", "3",
                 "--warehouse", str(certified), "--quiet"]) == 0
    with duckdb.connect(str(certified), read_only=True) as con:
        ok, failed, reason = con.execute("select certified, failed_gates, reason from v4v_task_certificates").fetchone()
    assert not ok and "gauge" in failed and "the hidden suite fails the gauge: reference does not pass" in reason


def test_a_reference_out_of_time_is_run_again_with_the_slow_reference_limits(local_backend):
    """A large suite on a loaded machine: the reference's timeout is no verdict on the suite."""
    from acceptgate.sandbox.backend import Limits

    task = is_even_task(visible=[((2,), {}, True), ((3,), {}, False)], hidden=[((4,), {}, True)])
    slow = dataclasses.replace(task, reference=task.reference.replace(
        "    return n % 2 == 0\n", "    import time\n    t = time.process_time()\n"
        "    while time.process_time() - t < 0.6: pass\n    return n % 2 == 0\n"),  # CPU time: the limit's clock
        suites={VISIBLE: task.suites[VISIBLE]})
    check = gauge.require([slow], local_backend, store=None, limits=Limits(wall_seconds=1.0, cpu_seconds=2))
    assert [(r.suite, r.passed, r.origin) for r in check.records] == [(VISIBLE, True, "computed")]
    first = gauge.check_many([slow], local_backend, limits=Limits(wall_seconds=1.0, cpu_seconds=2))[0].suites[0]
    assert first.reference.verdict == "timeout" and not first.passed  # what the retry turned around
