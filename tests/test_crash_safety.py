"""SIGKILL an audit run at named points of its stages, re-run: no duplicate rows, nothing published lost,
every killed attempt in run_attempts as failed.

The killed writer is a real ``acceptgate audit`` process. ACCEPTGATE_TEST_PAUSE_AT makes the core stop
the process (SIGSTOP) at a named point -- inside a stage's write transaction (``<stage>:written``), after
its commit (``<stage>:committed``), or with the new snapshot written but not yet renamed
(``publish:copied``) -- and the test SIGKILLs it there: the kill point does not depend on timing.

The first run and the re-run after the kills are the same command called in this process
(``cli.main``): a process of its own costs a Prefect and Great Expectations start (about
15 s of CPU) and adds nothing here. One task is enough: every stage still writes rows.
"""

from __future__ import annotations

import duckdb
import pytest

from acceptgate.pipelines.families import AUDIT
from acceptgate.store import warehouse
from acceptgate.cli import main
from writer_process import cli_env, kill_group, start, wait_stopped

pytestmark = pytest.mark.prefect

RUN_ID = "crash-test"
# kill point -> the last stage the killed attempt committed
KILL_POINTS = {"import:written": None, "gauge:committed": "gauge", "execute:written": "gauge",
               "publish:copied": "execute"}
RESULT_TABLES = list(AUDIT.tables)
KEYS = {"tasks": "task_id", "candidates": "task_id, candidate_sha256", "suites": "task_id, suite, spec_hash",
        "cases": "spec_hash, case_index, expected_text", "gauge_checks": "task_id, suite, passed",
        "executions": "task_id, suite, candidate_sha256, verdict, cases_passed",
        "case_results": "task_id, suite, candidate_sha256, case_index, status", "import_issues": "issue_index, reason"}


def _content(db) -> dict[str, list[tuple]]:
    """The run's rows that do not depend on timing (verdicts, hashes, keys), table by table."""
    with duckdb.connect(str(db), read_only=True) as con:
        return {t: con.execute(f"select {KEYS[t]} from {t} where run_id = ? order by all", [RUN_ID]).fetchall()
                for t in RESULT_TABLES}


def test_sigkill_at_each_stage_point_then_rerun(prefect_harness, tmp_path):
    path = tmp_path / "w.duckdb"
    snapshot = warehouse.snapshot_path(path)
    args = ["audit", "--limit", "1", "--warehouse", str(path), "--run-id", RUN_ID]
    assert main(args) == 0
    published = _content(snapshot)
    assert all(published[t] for t in RESULT_TABLES if t != "import_issues"), published

    for point in KILL_POINTS:
        log = tmp_path / f"kill-{point.replace(':', '-')}.log"
        proc = start(args, cli_env(ACCEPTGATE_TEST_PAUSE_AT=point), log)
        wait_stopped(proc, log)
        if point == "publish:copied":  # the new snapshot exists only as a temp file
            assert list(tmp_path.glob(".w.snapshot.duckdb.*.tmp"))
        kill_group(proc)
        # Nothing published was lost or changed; the live file opens (WAL replayed) without duplicates.
        assert _content(snapshot) == published, point
        assert {t: warehouse.duplicate_keys(path, t) for t in RESULT_TABLES} == {t: 0 for t in RESULT_TABLES}
        with duckdb.connect(str(snapshot), read_only=True) as con:
            assert con.execute("select status from runs where run_id = ?", [RUN_ID]).fetchall() == [("ok",)]

    assert main(args) == 0
    assert not list(tmp_path.glob(".w.snapshot.duckdb.*"))  # the killed publish's temp file was cleaned
    assert _content(path) == published and _content(snapshot) == published  # same rows, once each
    assert {t: warehouse.duplicate_keys(path, t) for t in RESULT_TABLES} == {t: 0 for t in RESULT_TABLES}

    with duckdb.connect(str(snapshot), read_only=True) as con:
        attempts = con.execute("select attempt, flow, status, last_stage, failure from run_attempts "
                               "where run_id = ? order by attempt", [RUN_ID]).fetchall()
        runs = con.execute("select status, attempts from runs where run_id = ?", [RUN_ID]).fetchall()
    assert [a[:4] for a in attempts] == (
        [(1, "audit", "ok", "execute")]
        + [(i + 2, "audit", "failed", last) for i, last in enumerate(KILL_POINTS.values())]
        + [(len(KILL_POINTS) + 2, "audit", "ok", "execute")])
    assert all("ended without finishing the run (killed or crashed)" in a[4] for a in attempts[1:-1])
    assert runs == [("ok", len(KILL_POINTS) + 2)]
