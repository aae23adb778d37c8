"""The audit pipeline's stages without Prefect: real sandbox executions, a real DuckDB file.

Stand-in tasks (built with ``suitespec.build``) exercise what HumanEval's first tasks do not: a suite
whose reference fails, a wrong sample that passes, a duplicated wrong program, an excluded task.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from acceptgate._util import settings
from acceptgate.pipelines import audit
from acceptgate.pipelines.families import AUDIT
from acceptgate.pipelines.requests import AuditRequest
from acceptgate._util import runids
from acceptgate.suites import suitespec
from acceptgate.store import warehouse
from acceptgate.cli import main
from acceptgate._util.errors import InvalidInput
from acceptgate.store.expectations import EXPECTATIONS_DIR, ExpectationFailed
from acceptgate.datasets.task import HIDDEN, VISIBLE, ImportIssue, ImportResult, Task, WrongSample

STAGE_TABLES = list(AUDIT.tables)


def _task(task_id: str, entry: str, params: str, reference_body: str, visible, hidden,
          wrong: list[tuple[str, str]]) -> Task:
    def program(body: str) -> str:
        return f"def {entry}({params}):\n    {body}\n"

    return Task(task_id=task_id, dataset="standin", entry_point=entry,
                prompt=f'def {entry}({params}):\n    """A stand-in task."""\n', reference=program(reference_body),
                suites={VISIBLE: suitespec.build("python-call/1", entry, visible),
                        HIDDEN: suitespec.build("python-call/1", entry, hidden)},
                wrong_samples=[WrongSample(label, program(body)) for label, body in wrong])


def standin_import() -> ImportResult:
    tasks = [
        # constant-0 passes the one-case hidden suite: that suite fails its gauge check.
        _task("standin/add", "add", "a, b", "return a + b", [((1, 2), {}, 3)], [((0, 0), {}, 0)],
              [("return-none", "return None"), ("constant-0", "return 0"), ("raise", "raise ValueError('no')")]),
        # return-none stops at the first hidden case in the gauge (fail-fast) and is re-run in full;
        # "none-again" is the same program under another label: stored and executed once.
        _task("standin/up", "up", "s", "return s.upper()", [(("a",), {}, "A")],
              [(("ab",), {}, "AB"), (("",), {}, ""), (("x y",), {}, "X Y")],
              [("return-none", "return None"), ("none-again", "return None"), ("echo-first-arg", "return s")]),
        # The reference does not pass its own hidden suite.
        _task("standin/inc", "inc", "x", "return x + 1", [((1,), {}, 2)], [((1,), {}, 3), ((5,), {}, 6)],
              [("return-none", "return None")]),
    ]
    issues = [ImportIssue("standin/gone", "property-check", "check() asserts a property", suite=HIDDEN,
                          excluded="task"),
              ImportIssue("standin/add", "non-literal-input", "a lambda argument", suite=HIDDEN, case_index=3),
              ImportIssue("standin/up", "wrong-sample-skipped", "noted only", excluded="none")]
    return ImportResult("standin", "tests/test_audit.py", "d" * 64, tasks, issues)


@pytest.fixture(scope="module")
def audited(tmp_path_factory, local_backend):
    """Every stage of one run on the stand-in tasks, into a fresh warehouse."""
    path = audit.prepare_warehouse(tmp_path_factory.mktemp("wh") / "w.duckdb")
    imported = standin_import()
    run = audit.make_run(imported, AuditRequest())
    imp = audit.ImportStage(run, imported, audit.import_frames(run, imported), None)
    imp.write = AUDIT.attach(path, run.run_id).write_stage("import", imp.frames)
    suites = audit.stage_suites(path, imp)
    gauge = audit.stage_gauge(path, imp, suites, local_backend)
    executed = audit.stage_execute(path, imp, suites, gauge, local_backend)
    return path, imp, suites, gauge, executed


def _query(path, sql: str, *params):
    with warehouse.connect(path, read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def test_run_ids_are_derived_from_the_inputs_unless_given():
    imported = standin_import()
    a = audit.make_run(imported, AuditRequest(limit=3))
    assert a.run_id == audit.make_run(imported, AuditRequest(limit=3)).run_id and a.origin == "derived"
    assert a.run_id.startswith("audit-") and len(a.run_id) == len("audit-") + 16
    others = {audit.make_run(imported, AuditRequest()).run_id,
              audit.make_run(imported, AuditRequest(limit=3, backend="docker")).run_id,
              AuditRequest(limit=3).derive_run_id("e" * 64)}
    assert a.run_id not in others and len(others) == 3
    assert audit.make_run(imported, AuditRequest(limit=3, run_id="nightly-2024.06_01")).origin == "user"
    for bad in ("", "-x", "has space", "a/b", "x" * 65):
        with pytest.raises(InvalidInput, match="run id"):
            runids.check_run_id(bad)


def test_every_stage_writes_its_tables(audited):
    path, imp, suites, gauge, executed = audited
    counts = warehouse.row_counts(path, STAGE_TABLES, run_id=imp.run.run_id)
    assert counts == {"tasks": 3, "candidates": 4 + 3 + 2,  # references + distinct wrong programs
                      "import_issues": 3, "suites": 6, "cases": 1 + 1 + 1 + 3 + 1 + 2,
                      "gauge_checks": 6, "executions": 2 * 4 + 2 * 3 + 2 * 2,
                      "case_results": counts["case_results"]}
    # every execution ran every case of its suite (no fail-fast), so case_results are complete
    assert _query(path, "select count(*) from executions where cases_recorded <> cases_total") == [(0,)]
    assert counts["case_results"] == sum(n for (n,) in _query(
        path, "select cases_total from executions where run_id = ?", imp.run.run_id))
    stages = _query(path, "select stage, rows_written from run_stages where run_id = ? order by written_at",
                    imp.run.run_id)
    assert [s for s, _ in stages] == ["import", "suites", "gauge", "execute"]


def test_the_gauge_check_is_stored_with_its_reasons(audited):
    path, imp, *_ = audited
    rows = {(t, s): (passed, reasons, ref) for t, s, passed, reasons, ref in _query(
        path, "select task_id, suite, passed, reasons, reference_verdict from gauge_checks")}
    assert rows[("standin/add", "visible")] == (True, [], "pass")
    # constant-0 passes the hidden suite, whose one case expects 0: right on every hidden input, so not
    # wrong for this task (the gauge judges a generic sample by the reference on the hidden inputs)
    passed, reasons, _ = rows[("standin/add", "hidden")]
    assert passed and reasons == []
    passed, reasons, ref = rows[("standin/inc", "hidden")]
    assert not passed and ref == "fail" and reasons[0].startswith("reference does not pass the hidden suite")
    assert _query(path, "select suite, suites_usable, suites_failed from gauge_summary order by suite") == [
        ("hidden", 2, 1), ("visible", 3, 0)]


def test_executions_carry_hashes_and_reuse_complete_gauge_results(audited):
    path, imp, suites, gauge, executed = audited
    by_key = {(r.task_id, r.suite, r.label): r for r in executed.records}
    # the gauge runs every case of every suite (no fail-fast on a hidden suite): each of its executions
    # is complete and reused here, none is run again
    assert by_key[("standin/up", "hidden", "return-none")].executed_in == "gauge"
    assert by_key[("standin/up", "hidden", "reference")].executed_in == "gauge"
    assert executed.ran == sum(1 for r in executed.records if r.executed_in == "execute")
    assert ("standin/up", "hidden", "none-again") not in by_key  # same program as return-none
    bad = _query(path, """select count(*) from executions e join suites s using (run_id, task_id, suite)
                          where e.spec_hash <> s.spec_hash or e.render_hash <> s.render_hash""")
    assert bad == [(0,)]
    assert _query(path, "select verdict, cases_passed, cases_total from executions "
                        "where task_id = 'standin/up' and suite = 'hidden' and label = 'echo-first-arg'") == [
        ("fail", 1, 3)]
    failing = _query(path, """select c.args_text, c.got_text, c.want_text, k.expected_text
                              from case_results c join cases k using (run_id, spec_hash, case_index)
                              join executions e using (run_id, task_id, suite, candidate_sha256)
                              where e.label = 'reference' and e.task_id = 'standin/inc' and c.status = 'fail'""")
    assert failing == [("(1,)", "2", "3", "3")]


def test_writing_the_same_stages_again_adds_no_rows(audited, local_backend):
    path, imp, suites, gauge, executed = audited
    before = warehouse.row_counts(path, STAGE_TABLES + ["runs", "run_stages"])
    recorded = AUDIT.attach(path, imp.run.run_id)
    recorded.write_stage("import", imp.frames)
    audit.stage_suites(path, imp)
    recorded.write_stage("gauge", gauge.frames, related={**imp.frames, **suites.frames})
    recorded.write_stage("execute", executed.frames, related={**imp.frames, **suites.frames})
    assert warehouse.row_counts(path, STAGE_TABLES + ["runs", "run_stages"]) == before
    assert all(warehouse.duplicate_keys(path, t) == 0 for t in STAGE_TABLES + ["runs", "run_stages"])
    assert _query(path, "select attempts, status from runs where run_id = ?", imp.run.run_id) == [(2, "running")]
    recorded.finish(publish=False, wall_seconds=1.5)
    assert _query(path, "select status, wall_seconds from runs") == [("ok", 1.5)]


def _strict_expectations(tmp_path, table: str, column: str, allowed: list) -> str:
    """A copy of expectations/ whose suite for ``table`` allows only ``allowed`` in ``column``."""
    where = tmp_path / "expectations"
    shutil.copytree(EXPECTATIONS_DIR, where)
    doc = json.loads((where / f"{table}.json").read_text())
    doc["expectations"].append({"type": "expect_column_values_to_be_in_set",
                                "kwargs": {"column": column, "value_set": allowed}})
    (where / f"{table}.json").write_text(json.dumps(doc))
    return str(where)


def test_a_failing_expectation_stops_the_stage_and_writes_none_of_it(tmp_path, local_backend, monkeypatch):
    path = audit.prepare_warehouse(tmp_path / "w.duckdb")
    imported = standin_import()
    imported.tasks = imported.tasks[:1]
    imported.issues = []
    run = audit.make_run(imported, AuditRequest(run_id="strict-run"))
    imp = audit.ImportStage(run, imported, audit.import_frames(run, imported), None)
    AUDIT.start(path, run.run_id)
    AUDIT.attach(path, run.run_id).write_stage("import", imp.frames)
    suites = audit.stage_suites(path, imp)
    gauge = audit.stage_gauge(path, imp, suites, local_backend)

    monkeypatch.setenv("ACCEPTGATE_EXPECTATIONS", _strict_expectations(tmp_path, "executions", "verdict", ["pass"]))

    settings.reload()
    with pytest.raises(ExpectationFailed) as err:
        audit.stage_execute(path, imp, suites, gauge, local_backend)
    assert err.value.stage == "execute"
    assert err.value.expectation == "executions.expect_column_values_to_be_in_set(column='verdict')"
    assert "rows unexpected" in err.value.details
    counts = warehouse.row_counts(path, STAGE_TABLES, run_id="strict-run")
    assert counts["executions"] == 0 and counts["case_results"] == 0  # nothing of the failed stage
    assert counts["suites"] == 2 and counts["gauge_checks"] == 2  # earlier stages stay
    assert _query(path, "select status, failed_stage from runs") == [("failed", "execute")]
    assert "expect_column_values_to_be_in_set" in _query(path, "select failure from runs")[0][0]

    # The next attempt of the same run id starts clean: no rows of the failed attempt's later stages.
    monkeypatch.delenv("ACCEPTGATE_EXPECTATIONS")
    AUDIT.start(path, run.run_id)
    AUDIT.attach(path, run.run_id).write_stage("import", imp.frames)
    assert warehouse.row_counts(path, ["suites", "gauge_checks", "run_stages"], run_id="strict-run") == {
        "suites": 0, "gauge_checks": 0, "run_stages": 1}
    assert _query(path, "select status, failed_stage, attempts from runs") == [("running", None, 2)]


def test_the_summary_names_exclusions_gauge_results_and_verdicts(audited):
    path, imp, suites, gauge, executed = audited
    summary = audit.summarize(path, imp, suites, gauge, executed, wall_seconds=2.0, snapshot=None)
    text = "\n".join(summary.lines())
    assert "4 read: 3 imported, 1 excluded; property-check 1" in text
    assert "visible 3 (3 cases), hidden 3 (6 cases)" in text
    assert "cases      1 excluded; non-literal-input 1" in text
    assert "hidden 2 usable / 1 failed; reference does not pass 1" in text
    assert summary.verdicts["reference"] == {"pass": 5, "fail": 1}
    assert summary.rows["executions"] == 18 and summary.executions == 18
    assert f"warehouse  {path}" in text


@pytest.mark.parametrize("argv, message", [
    (["--limit", "0"], "--limit"),
    (["--run-id", "no spaces"], "--run-id"),
    (["--backend", "nope"], "unknown backend 'nope'"),
])
def test_the_cli_rejects_invalid_input_with_exit_2(tmp_path, capsys, argv, message):
    assert main(["audit", "--warehouse", str(tmp_path / "w.duckdb"), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "w.duckdb").exists()  # nothing written


def test_the_cli_rejects_an_unusable_warehouse_path_with_exit_2(tmp_path, capsys):
    assert main(["audit", "--warehouse", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    notdb = tmp_path / "notes.txt"
    notdb.write_text("plain text, certainly not a DuckDB database file\n")
    assert main(["audit", "--warehouse", str(notdb / "w.duckdb")]) == 2
    assert "cannot create its directory" in capsys.readouterr().err


def test_the_core_never_imports_prefect():
    code = ("import sys, acceptgate.pipelines.audit, acceptgate.store.warehouse, acceptgate.store.expectations, "
            "acceptgate.cli.audit_cmd; from acceptgate.cli import build_parser; build_parser(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('prefect', 'great_expectations')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"  # and GE is loaded only when a stage validates
