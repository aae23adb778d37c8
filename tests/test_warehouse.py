"""The DuckDB warehouse: migrations, idempotent writes, locking and the analysts' snapshot."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from acceptgate._util import settings
from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput

AUDIT_TABLES = ["runs", "run_stages", "tasks", "candidates", "import_issues", "suites", "cases", "gauge_checks",
                "executions", "case_results"]
AUDIT_VIEWS = ["run_summary", "executions_by_verdict", "gauge_summary", "gauge_failure_reasons", "import_exclusions"]


def _names(path: Path, kind: str) -> set[str]:
    with warehouse.connect(path, read_only=True) as con:
        if kind == "table":
            return {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
        return {r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()}


def test_migrations_apply_once_and_are_recorded(tmp_path):
    path = tmp_path / "w.duckdb"
    files = warehouse.migrations()
    assert [m.name for m in files][:1] == ["001_core"]
    assert warehouse.migrate(path) == [m.name for m in files]
    assert warehouse.migrate(path) == []  # nothing pending the second time
    assert warehouse.applied_migrations(path) == [(m.version, m.name) for m in files]
    assert set(AUDIT_TABLES) <= _names(path, "table")
    assert set(AUDIT_VIEWS) <= _names(path, "view")


def test_an_old_warehouse_upgrades_in_place(tmp_path):
    sql = tmp_path / "sql"
    (sql / "views").mkdir(parents=True)
    shutil.copy(warehouse.SQL_DIR / "001_core.sql", sql)
    path = tmp_path / "old.duckdb"
    assert warehouse.migrate(path, sql_dir=sql) == ["001_core"]
    with warehouse.transaction(path) as con:
        con.execute("insert into cases values ('r1', ?, 0, '(1,)', '{}', '2')", ["a" * 64])

    # A later version of the code ships a new numbered migration (and a view over it).
    (sql / "002_notes.sql").write_text("alter table cases add column note varchar;\n"
                                       "create table notes (run_id varchar primary key, body varchar);\n")
    (sql / "views" / "noted_cases.sql").write_text(
        "create or replace view noted_cases as with c as (select * from cases where note is not null), "
        "final as (select * from c) select * from final")
    assert warehouse.migrate(path, sql_dir=sql) == ["002_notes"]
    assert warehouse.applied_migrations(path) == [(1, "001_core"), (2, "002_notes")]
    with warehouse.connect(path, read_only=True) as con:
        assert con.execute("select run_id, expected_text, note from cases").fetchall() == [("r1", "2", None)]
        assert con.execute("select count(*) from noted_cases").fetchone() == (0,)


def test_a_changed_migration_is_refused_but_a_comment_edit_is_not(tmp_path):
    sql = tmp_path / "sql"
    sql.mkdir()
    (sql / "001_a.sql").write_text("create table a (x integer); -- first\n")
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path, sql_dir=sql)
    (sql / "001_a.sql").write_text("-- reworded comment\ncreate table a (x integer);\n")
    assert warehouse.migrate(path, sql_dir=sql) == []
    (sql / "001_a.sql").write_text("create table a (x integer, y integer);\n")
    with pytest.raises(warehouse.MigrationError, match="001_a.sql changed after it was applied"):
        warehouse.migrate(path, sql_dir=sql)


def test_two_migrations_with_one_number_are_refused(tmp_path):
    (tmp_path / "001_a.sql").write_text("create table a (x integer);")
    (tmp_path / "001_b.sql").write_text("create table b (x integer);")
    with pytest.raises(warehouse.MigrationError, match="two migrations numbered 001"):
        warehouse.migrations(tmp_path)


def test_a_failing_migration_leaves_nothing_applied(tmp_path):
    sql = tmp_path / "sql"
    sql.mkdir()
    (sql / "001_a.sql").write_text("create table a (x integer);")
    (sql / "002_bad.sql").write_text("create table b (x integer); insert into nowhere values (1);")
    path = tmp_path / "w.duckdb"
    with pytest.raises(warehouse.MigrationError, match="002_bad.sql failed"):
        warehouse.migrate(path, sql_dir=sql)
    assert warehouse.applied_migrations(path) == [(1, "001_a")]
    assert "b" not in _names(path, "table")  # the failed migration's DDL rolled back with it


def _cases(run_id: str, n: int) -> pd.DataFrame:
    return pd.DataFrame({"run_id": run_id, "spec_hash": "b" * 64, "case_index": range(n),
                         "args_text": "(1,)", "kwargs_text": "{}", "expected_text": "1"})


def test_replacing_a_runs_rows_twice_leaves_the_same_rows(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    for _ in range(2):
        with warehouse.transaction(path) as con:
            warehouse.replace_run_rows(con, "r1", {"cases": _cases("r1", 3)})
    with warehouse.transaction(path) as con:
        warehouse.replace_run_rows(con, "r2", {"cases": _cases("r2", 2)})
    assert warehouse.row_counts(path, ["cases"], run_id="r1") == {"cases": 3}
    assert warehouse.row_counts(path, ["cases"]) == {"cases": 5}  # another run's rows are its own
    assert warehouse.duplicate_keys(path, "cases") == 0


def test_a_failed_transaction_writes_nothing(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    duplicated = pd.concat([_cases("r1", 2), _cases("r1", 1)])  # breaks the primary key
    with pytest.raises(duckdb.ConstraintException):
        with warehouse.transaction(path) as con:
            warehouse.replace_run_rows(con, "r1", {"cases": _cases("r1", 1)})
            warehouse.replace_run_rows(con, "r1", {"cases": duplicated})
    assert warehouse.row_counts(path, ["cases"]) == {"cases": 0}


HOLDER = textwrap.dedent("""
    import sys, duckdb
    con = duckdb.connect(sys.argv[1])  # read-write: holds the file's lock
    print("holding", flush=True)
    sys.stdin.read()                   # until the test closes our stdin
    con.close()
""")

READER = textwrap.dedent("""
    import sys, duckdb
    try:
        con = duckdb.connect(sys.argv[1], read_only=True)
    except duckdb.IOException as exc:
        print("refused:", str(exc).splitlines()[0])
    else:
        print("runs:", con.execute("select count(*) from runs").fetchone()[0])
""")


def _read_in_other_process(path: Path) -> str:
    out = subprocess.run([sys.executable, "-c", READER, str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_snapshot_is_readable_while_a_writer_holds_the_live_file(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    with warehouse.transaction(path) as con:
        con.execute("insert into runs (run_id, run_id_origin, pipeline, acceptgate_version, dataset, source, "
                    "source_sha256, backend, status, attempts, first_started_at, started_at) values "
                    "('r1', 'user', 'audit/1', '0', 'd', 's', ?, 'local', 'ok', 1, now(), now())", ["c" * 64])
    snapshot = warehouse.publish(path, "r1")
    assert snapshot == tmp_path / "w.snapshot.duckdb"
    assert not list(tmp_path.glob(".*.tmp*"))  # the temp file was renamed, not left behind

    with warehouse.connect(path) as writer:  # a run's write transaction holds the live file
        writer.execute("begin transaction")
        writer.execute("delete from runs")
        assert _read_in_other_process(snapshot) == "runs: 1"
        assert _read_in_other_process(path).startswith("refused: IO Error: Could not set lock")
        writer.execute("rollback")
    with duckdb.connect(str(snapshot), read_only=True) as con:
        assert con.execute("select count(*) from run_summary").fetchone() == (1,)  # views travel too
        assert con.execute("select source, run_id from snapshot_info").fetchone() == (str(path.resolve()), "r1")


def test_a_new_snapshot_replaces_the_old_while_a_reader_keeps_the_old(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    snapshot = warehouse.publish(path, "r0")
    reader = duckdb.connect(str(snapshot), read_only=True)
    try:
        with warehouse.transaction(path) as con:
            warehouse.replace_run_rows(con, "r1", {"cases": _cases("r1", 2)})
        warehouse.publish(path, "r1")
        assert reader.execute("select count(*) from cases").fetchone() == (0,)  # what it opened
    finally:
        reader.close()
    with duckdb.connect(str(snapshot), read_only=True) as con:
        assert con.execute("select count(*) from cases").fetchone() == (2,)


def _hold(path: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "holding"
    return proc


def test_a_writer_waits_for_the_lock_and_gives_up_with_a_clear_message(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    holder = _hold(path)
    try:
        with pytest.raises(warehouse.WarehouseLocked) as err:
            with warehouse.connect(path, timeout=0.5):
                pass
        message = str(err.value)
        assert "w.snapshot.duckdb" in message and "ACCEPTGATE_WAREHOUSE_LOCK_TIMEOUT" in message
        assert f"PID {holder.pid}" in message
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)

    holder = _hold(path)
    release = threading.Timer(1.0, holder.stdin.close)  # the holder lets go while connect() retries
    started = time.monotonic()
    release.start()
    try:
        with warehouse.connect(path, timeout=60) as con:
            assert con.execute("select count(*) from schema_migrations").fetchone()[0] >= 1
        assert time.monotonic() - started >= 0.9  # it did wait for the holder
    finally:
        release.join()
        holder.wait(timeout=30)


def test_paths_that_cannot_hold_a_warehouse_are_invalid_input(tmp_path, monkeypatch):
    with pytest.raises(InvalidInput, match="is a directory"):
        warehouse.check_path(tmp_path)
    text = tmp_path / "notes.txt"
    text.write_text("not a database, but long enough to have a header\n")
    with pytest.raises(InvalidInput, match="not a DuckDB database"):
        warehouse.check_path(text)
    (tmp_path / "empty.duckdb").touch()
    with pytest.raises(InvalidInput, match="not a DuckDB database"):
        warehouse.check_path(tmp_path / "empty.duckdb")
    with pytest.raises(InvalidInput, match="cannot create its directory"):
        warehouse.check_path(text / "sub" / "w.duckdb")
    fresh = tmp_path / "new" / "dir" / "w.duckdb"
    assert warehouse.check_path(fresh) == fresh and fresh.parent.is_dir() and not fresh.exists()

    monkeypatch.setenv(warehouse.ENV_PATH, str(tmp_path / "env.duckdb"))
    settings.reload()
    assert warehouse.resolve_path(None) == tmp_path / "env.duckdb"
    assert warehouse.resolve_path("x.duckdb") == Path("x.duckdb")
    monkeypatch.delenv(warehouse.ENV_PATH)
    settings.reload()
    assert warehouse.resolve_path(None) == Path("data/warehouse.duckdb")
    assert warehouse.snapshot_path("data/warehouse.duckdb") == Path("data/warehouse.snapshot.duckdb")


# -- publish: only complete runs, and what was published stays ----------------------------------

def _snapshot_cases(path: Path) -> dict[str, int]:
    with duckdb.connect(str(warehouse.snapshot_path(path)), read_only=True) as con:
        return dict(con.execute("select run_id, count(*) from cases group by run_id").fetchall())


def test_publish_adds_only_its_run_and_keeps_what_others_published(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    for run_id, n in (("a", 2), ("b", 3), ("c", 4)):
        warehouse.begin_attempt(path, run_id, flow="test")
        with warehouse.transaction(path) as con:
            warehouse.replace_run_rows(con, run_id, {"cases": _cases(run_id, n)})
    warehouse.publish(path, "a")
    assert _snapshot_cases(path) == {"a": 2}  # b and c are still writing: not visible
    warehouse.publish(path, "c")
    assert _snapshot_cases(path) == {"a": 2, "c": 4}

    # A new attempt of 'a' replaces its live rows, then fails: the published version of 'a' stays.
    warehouse.begin_attempt(path, "a", flow="test")
    with warehouse.transaction(path) as con:
        warehouse.replace_run_rows(con, "a", {"cases": _cases("a", 1)})
    with warehouse.transaction(path) as con:
        warehouse.end_attempt(con, "a", "failed", stage="suites", failure="RuntimeError: boom")
    warehouse.publish(path, "b")
    assert _snapshot_cases(path) == {"a": 2, "b": 3, "c": 4}
    with duckdb.connect(str(warehouse.snapshot_path(path)), read_only=True) as con:
        attempts = con.execute("select run_id, attempt, status, failed_stage, published_at is not null "
                               "from run_attempts order by all").fetchall()
        assert "quarantine" not in {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
    assert attempts == [("a", 1, "ok", None, True), ("a", 2, "failed", "suites", False),
                        ("b", 1, "ok", None, True), ("c", 1, "ok", None, True)]


def test_a_dead_process_attempt_is_marked_failed_by_the_next_attempt(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    with warehouse.transaction(path) as con:
        con.execute("insert into run_attempts (run_id, attempt, flow, status, last_stage, host, pid, started_at) "
                    "values ('r', 1, 'audit', 'running', 'gauge', ?, ?, now())",
                    [__import__("socket").gethostname(), int(dead.stdout)])
    assert warehouse.begin_attempt(path, "other", flow="test") == 1
    with warehouse.connect(path, read_only=True) as con:
        row = con.execute("select status, last_stage, failure from run_attempts where run_id = 'r'").fetchone()
    assert row[:2] == ("failed", "gauge") and f"process {int(dead.stdout)}" in row[2] and "killed" in row[2]


def test_the_snapshot_opens_in_the_duckdb_cli_from_pypi(tmp_path):
    """The snapshot's storage version is one the pinned duckdb-cli (1.5.x) reads."""
    cli = shutil.which("duckdb")
    if cli is None:
        pytest.fail("the duckdb CLI is not installed: pip install -e '.[analyst]' (pins duckdb-cli)")
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    with warehouse.transaction(path) as con:
        warehouse.replace_run_rows(con, "r1", {"cases": _cases("r1", 2)})
    warehouse.publish(path, "r1")
    out = subprocess.run([cli, "-readonly", "-csv", str(warehouse.snapshot_path(path)),
                          "select count(*) as n from cases"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["n", "2"]


def test_a_ledger_run_publishes_on_success_and_records_the_stage_on_failure(tmp_path):
    """The one-block API for new flows (a run with no run table), over this module's attempt log."""
    from acceptgate.store.expectations import ExpectationFailed
    from acceptgate.pipelines.families import LEAK_AUDIT

    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    with LEAK_AUDIT.run(path, "ok-run"):
        with warehouse.connect(path, read_only=True) as con:
            assert warehouse.current_attempt(con, "ok-run") == 1
        with warehouse.transaction(path) as con:
            warehouse.replace_run_rows(con, "ok-run", {"cases": _cases("ok-run", 2)})
            warehouse.record_stage(con, "ok-run", "scan", 2, 0)
    with pytest.raises(ExpectationFailed):
        with LEAK_AUDIT.run(path, "bad-run"):
            with warehouse.transaction(path) as con:
                warehouse.replace_run_rows(con, "bad-run", {"cases": _cases("bad-run", 1)})
                warehouse.record_stage(con, "bad-run", "scan", 1, 0)
            raise ExpectationFailed("verdicts", "verdicts.expect_x(column='y')", "1 of 1 rows unexpected")
    assert _snapshot_cases(path) == {"ok-run": 2}  # the failed run published nothing
    with warehouse.connect(path, read_only=True) as con:
        assert con.execute("select run_id, flow, status, last_stage, failed_stage from run_attempts order by run_id"
                           ).fetchall() == [("bad-run", "leak-audit", "failed", "scan", "verdicts"),
                                            ("ok-run", "leak-audit", "ok", "scan", None)]
    with duckdb.connect(str(warehouse.snapshot_path(path)), read_only=True) as con:
        assert con.execute("select flow, run_id from latest_runs").fetchall() == [("leak-audit", "ok-run")]


# -- acceptgate sql ------------------------------------------------------------------------------

def test_acceptgate_sql_prints_table_csv_json_from_the_snapshot_only(tmp_path, capsys):
    import json

    from acceptgate.cli import main

    path = tmp_path / "w.duckdb"
    assert main(["sql", "--warehouse", str(path), "select 1"]) == 2
    err = capsys.readouterr().err
    assert str(warehouse.snapshot_path(path)) in err and "no snapshot published yet" in err
    assert not path.exists()  # an analyst query creates nothing

    warehouse.migrate(path)
    with warehouse.transaction(path) as con:
        warehouse.replace_run_rows(con, "r1", {"cases": _cases("r1", 2)})
    warehouse.publish(path, "r1")
    with warehouse.transaction(path) as con:  # written after the publish: not visible to analysts
        warehouse.replace_run_rows(con, "r2", {"cases": _cases("r2", 5)})
    query = "select run_id, count(*) as n, list(case_index order by case_index) as idx from cases group by run_id"

    assert main(["sql", "--warehouse", str(path), "--format", "json", query]) == 0
    assert json.loads(capsys.readouterr().out) == [{"run_id": "r1", "n": 2, "idx": [0, 1]}]
    assert main(["sql", "--warehouse", str(path), "--format", "csv", query]) == 0
    assert capsys.readouterr().out.splitlines() == ["run_id,n,idx", "r1,2,\"[0, 1]\""]
    assert main(["sql", "--warehouse", str(path), "select range as i from range(2000)"]) == 0
    table = capsys.readouterr().out
    assert "│  1999 │" in table and "│  1000 │" in table and "│     0 │" in table  # every row, no elision

    for bad, fragment in (("selec 1", "syntax"), ("select * from no_such_table", "no_such_table"),
                          ("delete from cases", "read-only")):
        assert main(["sql", "--warehouse", str(path), bad]) == 2, bad
        err = capsys.readouterr().err
        assert "acceptgate sql: invalid input: field 'query': the query failed" in err and fragment in err, err
    assert _snapshot_cases(path) == {"r1": 2}


def _published(tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    with warehouse.transaction(path) as con:
        warehouse.replace_run_rows(con, "r1", {"cases": _cases("r1", 2)})
    warehouse.publish(path, "r1")
    return path


def test_acceptgate_sql_reaches_no_file_no_database_and_no_extension(tmp_path, capsys):
    """The analyst command reads the snapshot and nothing else: every statement that would write a file,
    read one, list a directory, attach another database, install or load an extension, or unlock the
    session exits 2 with what it is refused, and nothing is written or shown."""
    from acceptgate.cli import main

    path = _published(tmp_path)
    secret = tmp_path / "secret.csv"
    secret.write_text("name,token\nroot,s3cr3t-t0ken\n")
    other = tmp_path / "other.duckdb"
    with duckdb.connect(str(other)) as con:
        con.execute("create table keys as select 's3cr3t-t0ken' as token")
        con.execute(f"copy keys to '{tmp_path / 'keys.parquet'}' (format parquet)")
    out = tmp_path / "out"
    refused = {
        f"copy cases to '{out}.csv'": "outside the snapshot",
        f"copy (select * from cases) to '{out}.parquet' (format parquet)": "outside the snapshot",
        f"export database '{out}'": "outside the snapshot",
        f"attach '{other}' as o": "outside the snapshot",
        f"attach '{other}' as o; select * from o.keys": "outside the snapshot",
        "install httpfs": "outside the snapshot",
        "load httpfs": "outside the snapshot",
        f"select * from read_text('{secret}')": "outside the snapshot",
        f"select * from read_blob('{secret}')": "outside the snapshot",
        f"select * from read_csv('{secret}')": "outside the snapshot",
        f"select * from read_json('{secret}')": "outside the snapshot",
        f"select * from read_parquet('{tmp_path / 'keys.parquet'}')": "outside the snapshot",
        f"select * from '{secret}'": "outside the snapshot",
        f"select * from glob('{tmp_path}/*')": "outside the snapshot",
        "set enable_external_access = true": "settings are locked",
        f"set enable_external_access = true; select * from read_text('{secret}')": "settings are locked",
        "reset lock_configuration": "settings are locked",
        "set access_mode = 'read_write'": "settings are locked",
    }
    for query, why in refused.items():
        assert main(["sql", "--warehouse", str(path), "--format", "csv", query]) == 2, query
        captured = capsys.readouterr()
        assert "acceptgate sql: invalid input: field 'query': " in captured.err and why in captured.err, (query, captured.err)
        assert "s3cr3t" not in captured.out + captured.err, query
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keys.parquet", "other.duckdb", "secret.csv", "w.duckdb",
                                                         warehouse.snapshot_path(path).name]
    # ordinary analyst queries and views still answer
    assert main(["sql", "--warehouse", str(path), "--format", "csv",
                 "select flow, run_id from latest_runs union all select 'n', count(*)::varchar from cases"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["n,2"]


def test_a_writer_caps_duckdbs_memory_and_a_bad_cap_names_its_variable(tmp_path, monkeypatch):
    from acceptgate._util.errors import InvalidInput

    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    monkeypatch.delenv(warehouse.ENV_WRITER_MEMORY, raising=False)
    settings.reload()
    with warehouse.connect(path) as con:
        assert con.execute("select current_setting('memory_limit')").fetchone()[0] == "244.1 MiB"  # 256 MB
    monkeypatch.setenv(warehouse.ENV_WRITER_MEMORY, "1GB")
    settings.reload()
    with warehouse.connect(path) as con:
        assert con.execute("select current_setting('memory_limit')").fetchone()[0] == "953.6 MiB"
    monkeypatch.setenv(warehouse.ENV_WRITER_MEMORY, "lots")
    settings.reload()
    with pytest.raises(InvalidInput, match=warehouse.ENV_WRITER_MEMORY):
        with warehouse.connect(path):
            pass
    with warehouse.connect(path, read_only=True):  # and it left nothing open
        pass
