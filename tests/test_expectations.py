"""Expectation suites (expectations/<table>.json) on the real frames of a small HumanEval audit.

Each mutation breaks one declared expectation; validation must name the stage and that expectation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from acceptgate.pipelines import audit
from acceptgate.pipelines.requests import AuditRequest
from acceptgate.store import expectations, warehouse
from acceptgate._util.errors import InvalidInput
from acceptgate.store.expectations import ExpectationFailed
from acceptgate.sandbox.executor import CASE_STATUSES, VERDICTS
from acceptgate.datasets.task import SUITE_KINDS

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def frames(local_backend) -> dict[str, dict[str, pd.DataFrame]]:
    """Per stage, the frames the audit would write for the first two HumanEval tasks."""
    imported = audit.load_tasks(local_backend, limit=2)
    run = audit.make_run(imported, AuditRequest(limit=2))
    gauges = audit.check_gauges(imported.tasks, local_backend)
    records, _ = audit.run_executions(imported.tasks, gauges, local_backend)
    return {"import": audit.import_frames(run, imported),
            "suites": audit.suite_frames(run, audit.prepare_suites(imported.tasks)),
            "gauge": audit.gauge_frames(run, gauges),
            "execute": audit.execution_frames(run, records)}


def _related(frames) -> dict[str, pd.DataFrame]:
    return {t: f for stage in frames.values() for t, f in stage.items()}


def test_allowed_values_are_declared_once_and_match_the_code():
    params = expectations.load_parameters()
    assert params["verdicts"] == list(VERDICTS)
    assert params["case_statuses"] == list(CASE_STATUSES)
    assert params["suite_kinds"] == list(SUITE_KINDS)


def test_each_table_has_a_suite_whose_columns_match_the_ddl(tmp_path):
    from acceptgate.pipelines.families import FAMILIES

    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    with warehouse.connect(path, read_only=True) as con:
        for family in FAMILIES:
            for table in (family.table, *family.tables) if family.table else family.tables:
                suite = expectations.load_suite(table)
                declared = next(c.kwargs["column_set"] for c in suite.checks
                                if c.type == "expect_table_columns_to_match_set")
                ddl = [r[0] for r in con.execute(f"describe {table}").fetchall()]
                if table == family.table:  # status, attempts and times are set by the upsert
                    assert set(declared) <= set(ddl), table
                else:
                    assert sorted(declared) == sorted(ddl), table


def test_the_real_frames_pass_every_stage(frames, capfd):
    related = _related(frames)
    for stage, stage_frames in frames.items():
        assert expectations.validate_stage(stage, stage_frames, related=related) > 5
    assert "Calculating Metrics" not in capfd.readouterr().err  # GE's progress bars are off


def _set(table: str, column: str, value, rows=slice(0, 1)):
    def mutate(f: pd.DataFrame) -> pd.DataFrame:
        f = f.copy()
        f[column] = f[column].astype(object)
        f.iloc[rows, f.columns.get_loc(column)] = value
        return f
    return table, mutate


def _wrong_sample_passes(f: pd.DataFrame) -> pd.DataFrame:
    f = f.copy()
    f.loc[(f["role"] == "wrong").idxmax(), "verdict"] = "pass"
    return f


def _more_passed_than_recorded(f: pd.DataFrame) -> pd.DataFrame:
    f = f.copy()
    f.loc[0, "cases_passed"] = f.loc[0, "cases_recorded"] + 1
    return f


MUTATIONS = [
    ("suites", *_set("suites", "spec_hash", "not-a-hash"),
     "suites.expect_column_values_to_match_regex(column='spec_hash')"),
    ("execute", *_set("executions", "verdict", "passed"),
     "executions.expect_column_values_to_be_in_set(column='verdict')"),
    ("suites", *_set("cases", "expected_text", None),
     "cases.expect_column_values_to_not_be_null(column='expected_text')"),
    ("execute", "executions", _more_passed_than_recorded,
     "executions.expect_column_pair_values_a_to_be_greater_than_b(column_A='cases_recorded', column_B='cases_passed')"),
    ("execute", "executions", _wrong_sample_passes,
     "executions.expect_column_pair_values_to_be_equal(column_A='cases_passed', column_B='cases_total', "
     "where verdict == 'pass')"),
    ("execute", "case_results", lambda f: f.iloc[1:],
     "executions.expect_column_to_equal_row_count_in(column='cases_recorded', table='case_results')"),
    ("execute", *_set("case_results", "spec_hash", "e" * 64),
     "case_results.expect_keys_to_exist_in(columns=['run_id', 'task_id', 'suite', 'candidate_sha256', "
     "'spec_hash'], table='executions')"),
    ("gauge", *_set("gauge_checks", "passed", False),
     "gauge_checks.expect_rows_to_satisfy(expression='reasons.str.len() > 0')"),
    ("import", "candidates", lambda f: pd.concat([f, f.iloc[:1]], ignore_index=True),
     "candidates.expect_compound_columns_to_be_unique(column_list=['run_id', 'task_id', 'candidate_sha256'])"),
    ("suites", "suites", lambda f: f.assign(case_count=f["case_count"] + 1),
     "suites.expect_column_to_equal_row_count_in(column='case_count', table='cases')"),
    ("import", "tasks", lambda f: f.assign(extra=1),
     "tasks.expect_table_columns_to_match_set()"),
]


@pytest.mark.parametrize("stage, table, mutate, expectation", MUTATIONS,
                         ids=[m[-1].split("(")[0] + f"-{i}" for i, m in enumerate(MUTATIONS)])
def test_a_broken_frame_names_the_stage_and_the_expectation(frames, stage, table, mutate, expectation):
    stage_frames = dict(frames[stage])
    stage_frames[table] = mutate(stage_frames[table])
    related = {**_related(frames), **stage_frames}
    with pytest.raises(ExpectationFailed) as err:
        expectations.validate_stage(stage, stage_frames, related=related)
    assert err.value.stage == stage
    assert err.value.expectation == expectation
    assert f"stage {stage!r}: expectation {expectation} failed" in str(err.value)


def test_a_rule_needing_another_table_says_so(frames):
    with pytest.raises(ValueError, match="needs the frame of table 'executions'"):
        expectations.validate("case_results", frames["execute"]["case_results"], related={})


@pytest.mark.parametrize("content, message", [
    ("{not json", "not JSON"),
    (json.dumps({"name": "other", "expectations": []}), "the suite's name must be the table's name"),
    (json.dumps({"name": "t", "rules": [{"type": "expect_magic", "kwargs": {}}]}), "unknown rule 'expect_magic'"),
    (json.dumps({"name": "t", "expectations": [{"kwargs": {}}]}), "each entry needs a 'type'"),
    (json.dumps({"name": "t", "expectations": [], "extra": 1}), "unknown keys ['extra']"),
])
def test_a_malformed_suite_file_is_invalid_input(tmp_path, content, message):
    (tmp_path / "t.json").write_text(content)
    with pytest.raises(InvalidInput, match=message.replace("[", r"\[").replace("(", r"\(")) as err:
        expectations.load_suite("t", tmp_path)
    assert str(tmp_path / "t.json") in str(err.value)


def test_an_unknown_ge_expectation_is_invalid_input(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps(
        {"name": "t", "expectations": [{"type": "expect_the_moon", "kwargs": {"column": "a"}}]}))
    with pytest.raises(InvalidInput, match="invalid Great Expectations expectation"):
        expectations.validate("t", pd.DataFrame({"a": [1]}), where=tmp_path)


def test_a_failed_ge_check_is_described_with_counts_and_examples(frames):
    """Validation asks GE for verdicts only; a failure is validated again for what describes it."""
    stage_frames = dict(frames["execute"])
    bad = stage_frames["executions"].copy()
    bad.loc[bad.index[0], "verdict"] = "bogus"
    stage_frames["executions"] = bad
    with pytest.raises(ExpectationFailed) as err:
        expectations.validate_stage("execute", stage_frames, related={**_related(frames), **stage_frames})
    assert err.value.expectation.startswith("executions.expect_column_values_to_be_in_set(column='verdict'")
    assert f"1 of {len(bad)} rows unexpected, e.g. ['bogus']" in err.value.details


def test_ge_starts_without_the_modules_no_suite_uses_and_imports_them_on_first_use():
    """altair and scipy.stats (GE's renderer and distribution tests) wait until something reads them;
    GE's SQL and AWS back ends are not imported at all, and sqlalchemy imports as usual afterwards."""
    code = textwrap.dedent("""
        import sys
        import pandas as pd
        from acceptgate.store import expectations
        frame = pd.DataFrame({"call_id": [1], "client": ["a"], "route": ["/v1/health"], "method": ["GET"],
                              "status": [200], "latency_seconds": [0.01],
                              "called_at": [pd.Timestamp(0, unit="s", tz="UTC")]})
        expectations.validate("api_calls", frame)
        print(sorted(type(sys.modules[n]).__name__ for n in expectations.DEFERRED_IMPORTS))
        print([n for n in expectations.ABSENT_FOR_GE if n in sys.modules])
        import sqlalchemy
        print(sqlalchemy.__name__)
        from scipy.stats import norm
        import altair
        print(norm.cdf(0.0), altair.Chart.__name__, type(sys.modules["scipy.stats"]).__name__,
              type(sys.modules["altair"]).__name__)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == ["['_DeferredModule', '_DeferredModule']", "[]", "sqlalchemy",
                                       "0.5 Chart module module"]
