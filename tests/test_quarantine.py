"""A stage batch that fails its expectations goes to the quarantine table, whole, with every failed
expectation; nothing of it reaches the stage's tables or the snapshot; the run fails naming stage and
expectation (the CLI's exit 1)."""

from __future__ import annotations

import json
import shutil

import duckdb
import pandas as pd
import pytest

from acceptgate._util import settings
from acceptgate.pipelines import audit
from acceptgate.pipelines.requests import AuditRequest
from acceptgate.pipelines.families import AUDIT
from acceptgate.store import expectations, warehouse
from acceptgate.cli import main
from acceptgate.store.expectations import EXPECTATIONS_DIR, ExpectationFailed


def _quarantine(path) -> list[tuple]:
    with warehouse.connect(path, read_only=True) as con:
        return con.execute("select run_id, attempt, stage, table_name, failed_expectations, row_count, rows_json "
                           "from quarantine order by table_name").fetchall()


def test_a_corrupted_batch_is_quarantined_and_never_published(tmp_path, local_backend):
    path = audit.prepare_warehouse(tmp_path / "w.duckdb")
    imported = audit.load_tasks(local_backend, limit=2)
    run = audit.make_run(imported, AuditRequest(limit=2, run_id="corrupt-run"))
    assert warehouse.begin_attempt(path, run.run_id, flow="audit") == 1
    imp_frames = audit.import_frames(run, imported)
    recorded = AUDIT.attach(path, run.run_id)
    recorded.write_stage("import", imp_frames)

    frames = audit.suite_frames(run, audit.prepare_suites(imported.tasks))
    corrupt = {"suites": frames["suites"].assign(spec_hash=["corrupted"] + list(frames["suites"]["spec_hash"][1:])),
               "cases": frames["cases"].iloc[1:]}  # a case lost: case_count no longer matches
    with pytest.raises(ExpectationFailed) as err:
        recorded.write_stage("suites", corrupt, related=imp_frames)
    failed = err.value
    assert failed.stage == "suites"
    assert failed.expectation == "suites.expect_column_values_to_match_regex(column='spec_hash')"
    assert "suites.expect_column_to_equal_row_count_in(column='case_count', table='cases')" in \
        [e for _, e, _ in failed.failures]
    assert failed.quarantined == len(corrupt["suites"]) + len(corrupt["cases"])
    assert failed.message().startswith("stopped at stage 'suites': expectation suites.expect_column_values_to")
    assert "quarantine table" in failed.message()

    rows = _quarantine(path)
    assert [(r[0], r[1], r[2], r[3], r[5]) for r in rows] == [
        ("corrupt-run", 1, "suites", "cases", len(corrupt["cases"])),
        ("corrupt-run", 1, "suites", "suites", len(corrupt["suites"]))]
    listed = {row[3]: [e["expectation"] for e in json.loads(row[4])] for row in rows}
    assert listed["suites"][0] == failed.expectation
    assert "cases.expect_keys_to_exist_in(columns=['run_id', 'spec_hash'], table='suites')" in listed["cases"]
    assert sorted(listed["suites"] + listed["cases"]) == sorted(e for _, e, _ in failed.failures)
    kept = pd.DataFrame(json.loads(rows[1][6]))
    assert kept["spec_hash"].tolist() == corrupt["suites"]["spec_hash"].tolist()  # the batch, as it was
    assert warehouse.row_counts(path, ["suites", "cases"], run_id=run.run_id) == {"suites": 0, "cases": 0}

    # Another run publishes: nothing of the quarantined run or batch is in the snapshot.
    warehouse.begin_attempt(path, "other", flow="test")
    snapshot = warehouse.publish(path, "other")
    with duckdb.connect(str(snapshot), read_only=True) as con:
        tables = [r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()]
        assert "quarantine" not in tables
        assert all(con.execute(f'select count(*) from "{t}" where run_id = ?', [run.run_id]).fetchone()[0] == 0
                   for t in tables if "run_id" in [c[0] for c in con.execute(f'describe "{t}"').fetchall()]
                   and t != "run_attempts")


def _strict(tmp_path, table: str, column: str, allowed: list) -> str:
    where = tmp_path / "expectations"
    shutil.copytree(EXPECTATIONS_DIR, where)
    doc = json.loads((where / f"{table}.json").read_text())
    doc["expectations"].append({"type": "expect_column_values_to_be_in_set",
                                "kwargs": {"column": column, "value_set": allowed}})
    (where / f"{table}.json").write_text(json.dumps(doc))
    return str(where)


@pytest.mark.prefect
def test_the_audit_command_fails_with_exit_1_naming_stage_and_expectation(prefect_harness, tmp_path, monkeypatch,
                                                                         capsys):
    monkeypatch.setenv("ACCEPTGATE_EXPECTATIONS", _strict(tmp_path, "suites", "dialect", ["no-such-dialect"]))
    settings.reload()
    path = tmp_path / "w.duckdb"
    assert main(["audit", "--limit", "1", "--warehouse", str(path), "--run-id", "strict"]) == 1
    err = capsys.readouterr().err
    assert ("acceptgate audit: stopped at stage 'suites': expectation "
            "suites.expect_column_values_to_be_in_set(column='dialect') failed: ") in err
    assert "is in the live warehouse's quarantine table" in err
    assert [(r[2], r[3]) for r in _quarantine(path)] == [("suites", "cases"), ("suites", "suites")]
    with warehouse.connect(path, read_only=True) as con:
        attempt = con.execute("select status, failed_stage, failure, last_stage from run_attempts").fetchall()
    assert attempt[0][:2] == ("failed", "suites") and attempt[0][3] == "import"
    assert "suites.expect_column_values_to_be_in_set(column='dialect')" in attempt[0][2]
    assert not warehouse.snapshot_path(path).exists()  # nothing published
    # The suites for the two new tables describe what the warehouse holds.
    with warehouse.connect(path, read_only=True) as con:
        for table in ("run_attempts", "quarantine"):
            assert expectations.validate(table, con.execute(f"select * from {table}").df()) > 0


@pytest.mark.prefect
def test_the_gate_command_fails_the_same_way(prefect_harness, tmp_path, monkeypatch, capsys, humanevalplus_path,
                                             codet_samples_path):
    monkeypatch.setenv("ACCEPTGATE_EXPECTATIONS", _strict(tmp_path, "deliveries", "gt_verdict", ["no-such-verdict"]))
    settings.reload()
    path = tmp_path / "w.duckdb"
    assert main(["gate", "--no-certify", "--arm", "off", "--source", f"codet:{codet_samples_path}", "--humanevalplus",
                 str(humanevalplus_path), "--limit", "2", "--warehouse", str(path), "--run-id", "strict-gate"]) == 1
    err = capsys.readouterr().err
    assert ("acceptgate gate: stopped at stage 'deliveries': expectation "
            "deliveries.expect_column_values_to_be_in_set(column='gt_verdict') failed: ") in err
    assert [(r[2], r[3], r[5]) for r in _quarantine(path)] == [("deliveries", "deliveries", 2)]
    with warehouse.connect(path, read_only=True) as con:
        assert con.execute("select status from gate_runs").fetchall() == [("failed",)]
        assert con.execute("select count(*) from deliveries").fetchone() == (0,)
        attempt = con.execute("select status, failed_stage, last_stage, failure from run_attempts").fetchall()
    assert attempt[0][:3] == ("failed", "deliveries", "gate") and "ExpectationFailed" in attempt[0][3]
    assert not warehouse.snapshot_path(path).exists()  # nothing published
