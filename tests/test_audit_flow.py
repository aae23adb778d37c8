"""The Prefect ``audit`` flow, end to end on three HumanEval tasks, twice: no duplicate rows.

One session-scoped Prefect test server (``prefect_harness``); two flow calls.
"""

from __future__ import annotations

import duckdb
import pytest

from acceptgate.pipelines.families import AUDIT
from acceptgate.store import warehouse
from acceptgate.cli import main
from acceptgate.pipelines.requests import AuditRequest

pytestmark = pytest.mark.prefect

TABLES = [AUDIT.table, "run_stages", *AUDIT.tables]
POPULATED = ["runs", "run_stages", "tasks", "candidates", "suites", "cases", "gauge_checks", "executions",
             "case_results"]


def test_the_audit_flow_twice_writes_every_stage_once(prefect_harness, tmp_path, capsys):
    from acceptgate.flows.audit import audit as audit_flow

    path = tmp_path / "w.duckdb"
    first = audit_flow(AuditRequest(limit=3, warehouse=str(path), backend="local"))
    assert first.imported["tasks_imported"] + first.imported["tasks_excluded"] == 3
    counts = warehouse.row_counts(path, TABLES)
    assert all(counts[t] > 0 for t in POPULATED), counts
    assert counts["runs"] == 1 and counts["run_stages"] == 4
    assert counts["executions"] == first.executions == sum(first.rows[t] for t in ["executions"])

    # The same audit again, through the command line: same run id, same rows, no duplicates.
    assert main(["audit", "--limit", "3", "--warehouse", str(path), "--verbose"]) == 0
    printed = capsys.readouterr()
    timing = next(line for line in printed.err.splitlines() if line.startswith("audit: time: "))  # --verbose
    assert all(f"{stage} " in timing for stage in ("load (import)", "suites", "gauge", "execute", "write")), timing
    assert f"run        {first.run_id} (derived; attempt 2)" in printed.out
    assert "executions " in printed.out and "wall time " in printed.out
    assert "import: 3/3 tasks" in printed.err and "gauge: " in printed.err  # progress on stderr
    assert warehouse.row_counts(path, TABLES) == counts
    assert {t: warehouse.duplicate_keys(path, t) for t in TABLES} == {t: 0 for t in TABLES}
    with warehouse.connect(path, read_only=True) as con:
        assert con.execute("select run_id, status, attempts from runs").fetchall() == [(first.run_id, "ok", 2)]

    snapshot = warehouse.snapshot_path(path)
    with duckdb.connect(str(snapshot), read_only=True) as con:
        assert con.execute("select executions, suites_usable + suites_failed_gauge, status from run_summary"
                           ).fetchall() == [(counts["executions"], counts["suites"], "ok")]
