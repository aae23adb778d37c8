"""Suites as files: round trip, hashes checked against the manifest, atomic writes."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from acceptgate.scoring import gauge

from acceptgate.suites import render

from acceptgate.datasets import suitefiles
from acceptgate._util.errors import InvalidInput
from acceptgate.datasets.importers import humaneval
from acceptgate.datasets.task import HIDDEN, VISIBLE, ImportResult


def subset(numbers: list[int], dst: Path) -> Path:
    with gzip.open(humaneval.default_path(), "rt", encoding="utf-8") as f:
        rows = {r["task_id"]: r for r in map(json.loads, f)}
    dst.write_text("".join(json.dumps(rows[f"HumanEval/{n}"]) + "\n" for n in numbers), encoding="utf-8")
    return dst


@pytest.fixture(scope="module")
def result(tmp_path_factory, local_backend) -> ImportResult:
    # /32 is judged by a check dialect, /41 has no docstring example (hidden suite only)
    path = subset([0, 32, 41, 95], tmp_path_factory.mktemp("sf") / "he.jsonl")
    return humaneval.load(local_backend, path=str(path))


def test_round_trip(result, tmp_path):
    out = suitefiles.write_suites(result, tmp_path / "suites")
    names = sorted(p.name for p in out.iterdir())
    assert names == ["HumanEval_0", "HumanEval_32", "HumanEval_41", "HumanEval_95", "manifest.json"]
    assert sorted(p.name for p in (out / "HumanEval_0").iterdir()) == [
        "hidden.json", "hidden.timing.json", "reference.py", "visible.json", "visible.timing.json"]
    assert sorted(p.name for p in (out / "HumanEval_41").iterdir()) == ["hidden.json", "hidden.timing.json",
                                                                         "reference.py"]
    loaded = suitefiles.read_suites(out)
    assert list(loaded.tasks) == [t.task_id for t in result.tasks]
    for task in result.tasks:
        got = loaded.tasks[task.task_id]
        assert got.entry_point == task.entry_point and got.prompt == task.prompt
        assert {k: s.spec_hash for k, s in got.suites.items()} == {k: s.spec_hash for k, s in task.suites.items()}
        assert got.suites[HIDDEN].cases == task.suites[HIDDEN].cases
        # the reference travels too, for the gauge check of the commands that use the suites
        assert got.reference == task.reference and got.reference
        # the reference's time per case travels beside the spec (a sidecar), never in it
        assert got.reference_seconds[HIDDEN] == task.reference_seconds[HIDDEN]
        assert len(got.reference_seconds[HIDDEN]) == len(task.suites[HIDDEN].cases)
        assert suitefiles.read_timing(out, HIDDEN)[task.task_id] == task.reference_seconds[HIDDEN]
    manifest = loaded.manifest
    assert manifest["dataset"] == "humaneval" and manifest["source_sha256"] == result.source_sha256
    entry = manifest["tasks"][0]
    spec = result.tasks[0].suites[VISIBLE]
    assert entry["suites"][VISIBLE]["spec_hash"] == spec.spec_hash
    assert entry["suites"][VISIBLE]["render_hash"] == render.render_hash(render.render(spec))
    assert loaded.issues == result.issues  # exclusions with reasons survive the trip
    assert any(i.task_id == "HumanEval/32" and i.reason == "check-dialect" for i in loaded.issues)
    assert manifest["counts"]["tasks_excluded_by_reason"] == {}
    assert manifest["notes"]["random_input_seed"] == result.notes["random_input_seed"]
    assert loaded.tasks["HumanEval/32"].suites[HIDDEN].dialect.startswith("python-call+poly-root=")


def test_gauge_verdicts_go_into_the_manifest(result, tmp_path, local_backend):
    gauged = gauge.check_many(result.tasks[:1], local_backend)
    loaded = suitefiles.read_suites(suitefiles.write_suites(result, tmp_path / "g", gauge=gauged))
    fmt = gauge.RECORD_FORMAT  # the rule the verdict was judged by: another format is checked again
    assert loaded.tasks["HumanEval/0"].gauge == {VISIBLE: {"passed": True, "reasons": [], "format": fmt},
                                                 HIDDEN: {"passed": True, "reasons": [], "format": fmt}}
    assert loaded.tasks["HumanEval/95"].gauge == {}


def test_a_changed_suite_file_is_invalid_input_naming_the_file(result, tmp_path):
    out = suitefiles.write_suites(result, tmp_path / "suites")
    target = out / "HumanEval_95" / "hidden.json"
    doc = json.loads(target.read_text())
    doc["cases"][0]["expected"] = "False" if doc["cases"][0]["expected"] == "True" else "True"
    target.write_text(json.dumps(doc))
    with pytest.raises(InvalidInput) as exc:
        suitefiles.read_suites(out)
    assert exc.value.source == str(target) and exc.value.field == "spec_hash"
    assert "does not match the manifest" in str(exc.value)


def test_a_read_of_some_tasks_reads_and_checks_theirs_only(result, tmp_path):
    """``task_ids``: the tasks named are read and checked as in a whole read; another task's files are
    never opened (a changed one goes unnoticed), and a changed file of a named task is still refused."""
    out = suitefiles.write_suites(result, tmp_path / "suites")
    whole = suitefiles.read_suites(out)
    assert suitefiles.manifest_suites(out) == {"HumanEval/0": [VISIBLE, HIDDEN], "HumanEval/32": [HIDDEN],
                                               "HumanEval/41": [HIDDEN], "HumanEval/95": [VISIBLE, HIDDEN]}
    (out / "HumanEval_95" / "hidden.json").write_text("not read")
    some = suitefiles.read_suites(out, task_ids=["HumanEval/41", "HumanEval/0"])
    assert list(some.tasks) == ["HumanEval/0", "HumanEval/41"]  # manifest order
    assert some.tasks == {tid: whole.tasks[tid] for tid in some.tasks} and some.issues == whole.issues
    with pytest.raises(InvalidInput) as exc:
        suitefiles.read_suites(out, task_ids=["HumanEval/95"])
    assert exc.value.source == str(out / "HumanEval_95" / "hidden.json")


def test_a_manifest_cannot_point_outside_its_directory(result, tmp_path):
    out = suitefiles.write_suites(result, tmp_path / "suites")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["tasks"][0]["dir"] = "../elsewhere"
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InvalidInput, match="is not the task's directory name"):
        suitefiles.read_suites(out)


def test_not_a_suite_directory(tmp_path):
    with pytest.raises(InvalidInput, match="no manifest.json"):
        suitefiles.read_suites(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(InvalidInput, match="not a JSON manifest"):
        suitefiles.read_suites(tmp_path)


def test_a_failed_write_leaves_nothing_half_written(result, tmp_path):
    # The second task's id cannot be a directory name: the write fails after the first task's files.
    evil = dataclasses.replace(result.tasks[1], task_id="../evil")
    bad = dataclasses.replace(result, tasks=[result.tasks[0], evil])
    with pytest.raises(InvalidInput, match="cannot be a directory name"):
        suitefiles.write_suites(bad, tmp_path / "suites")
    assert list(tmp_path.iterdir()) == []  # no DIR, no temporary directory left behind
    # an existing suite directory survives a failed rewrite unchanged
    out = suitefiles.write_suites(result, tmp_path / "suites")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(InvalidInput):
        suitefiles.write_suites(bad, out)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["suites"]


def test_refuses_to_replace_a_directory_that_is_not_a_suite_directory(result, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(InvalidInput, match="not a suite directory"):
        suitefiles.write_suites(result, tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_rewrite_replaces_a_previous_import(result, tmp_path):
    out = suitefiles.write_suites(result, tmp_path / "suites")
    smaller = dataclasses.replace(result, tasks=result.tasks[:1])
    suitefiles.write_suites(smaller, out)
    assert list(suitefiles.read_suites(out).tasks) == ["HumanEval/0"]
    assert not (out / "HumanEval_95").exists()


def test_a_reference_that_does_not_match_the_manifest_is_refused(result, tmp_path):
    out = suitefiles.write_suites(result, tmp_path / "suites")
    ref = out / "HumanEval_0" / suitefiles.REFERENCE_FILE
    ref.write_text(ref.read_text() + "\nCHEAT = 1\n")
    with pytest.raises(InvalidInput, match="reference does not match the manifest's reference_sha256"):
        suitefiles.read_suites(out)


def test_a_tasks_own_wrong_samples_travel_in_the_directory_and_the_gauge_blocks_them(result, tmp_path, local_backend):
    """``import --wrong-samples FILE``: a task's known wrong programs are written beside its suites, read back
    (their sha256 checked) and gauged besides the generic ones; a suite that lets one pass fails."""
    samples = tmp_path / "wrong.jsonl"
    lax = ("from typing import List\n\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
           "    return len(numbers) > 5\n")  # right on both docstring examples, wrong on hidden inputs
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "label": "too-long", "program": lax}) + "\n")
    with_wrong = suitefiles.add_wrong_samples(dataclasses.replace(result, tasks=[dataclasses.replace(t) for t in
                                                                                  result.tasks]), samples)
    out = suitefiles.write_suites(with_wrong, tmp_path / "suites")
    assert (out / "HumanEval_0" / "wrong" / "too-long.py").read_text() == lax
    sd = suitefiles.read_suites(out)
    assert [w.label for w in sd.tasks["HumanEval/0"].wrong_samples] == ["too-long"]
    check = gauge.assess_dir(sd, local_backend, task_ids={"HumanEval/0"}, store=tmp_path / "records")
    assert check.failed_tasks() == {"HumanEval/0": "its visible suite failed the gauge check: wrong sample too-long "
                                                   "passes the visible suite"}
    (out / "HumanEval_0" / "wrong" / "too-long.py").write_text(lax + "# changed\n")
    with pytest.raises(InvalidInput, match="does not match the manifest's sha256"):
        suitefiles.read_suites(out)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"task_id": "HumanEval/0", "label": "raise", "program": lax}) + "\n")
    with pytest.raises(InvalidInput, match="line 1.*label"):
        suitefiles.add_wrong_samples(result, bad)


class _Node:
    pass


def test_read_values_go_to_the_oldest_generation_and_garbage_stays_collectable(result, tmp_path):
    import gc
    import weakref

    out = suitefiles.write_suites(result, tmp_path / "suites")
    cycle = _Node()
    cycle.me = cycle  # garbage only the cycle collector frees
    gone = weakref.ref(cycle)
    del cycle
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            case = suitefiles.read_suites(out).tasks["HumanEval/0"].suites[HIDDEN].cases[0]
            assert gc.isenabled() is enabled  # the caller's setting is kept
            assert gc.is_tracked(case)
            young = {id(o) for g in (0, 1) for o in gc.get_objects(generation=g)}
            assert id(case) not in young and any(o is case for o in gc.get_objects(generation=2))
    finally:
        (gc.enable if was else gc.disable)()
    gc.collect()
    assert gone() is None  # moved to the oldest generation, not frozen: a full collection frees it
    marker = _Node()  # tracked, and frozen with the rest below
    gc.freeze()  # something else keeps objects frozen: left as it is
    try:
        suitefiles.read_suites(out)
        # still frozen: in no generation (an unfreeze would have put it in the oldest). The freeze count is
        # no witness: another thread of this process may free frozen objects meanwhile.
        assert gc.get_freeze_count() > 0
        assert not any(o is marker for g in (0, 1, 2) for o in gc.get_objects(generation=g))
    finally:
        gc.unfreeze()
    assert any(o is marker for o in gc.get_objects(generation=2))  # the check above can see an unfreeze
