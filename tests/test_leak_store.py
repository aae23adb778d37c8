"""Leak-audit rows in the warehouse: typed frames (never a column type guessed from a sample of rows),
the real error when a write fails, and batches of mostly clean records."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import duckdb
import pandas as pd
import pytest

from acceptgate.store import warehouse
from acceptgate.leak import store
from acceptgate.leak.controls import run_controls
from acceptgate.leak.scanners import TaskScanner
from acceptgate.leak.verdicts import judge
from acceptgate.pipelines import leak as leak_io
from acceptgate.pipelines.families import LEAK_AUDIT
from test_leak_scanners import MATERIAL, record


def leak_run(path):
    """The leak audit's run in the ledger: its batches are stage writes."""
    return LEAK_AUDIT.start(path, "leak-test")


def scan_of(records, scan_id: str) -> store.Scan:
    scanner = TaskScanner(MATERIAL)
    control = run_controls(records, lambda task_id: scanner)
    verdicts = [judge(r, MATERIAL, scanner, control, "aho") for r in records]
    return store.Scan(scan_id, records[0].run_id, "history:h.jsonl", "v", "aho", control, verdicts, 0.1,
                      datetime.now(timezone.utc))


def test_a_batch_of_clean_records_with_one_unverifiable_at_the_end_is_written(tmp_path):
    # DuckDB samples a pandas object column to type it: 1,999 empty `reasons` lists typed it NULL[] and
    # the one non-empty list failed to cast (exit 1 on mostly clean history).
    clean = [dataclasses.replace(record(), block=f"b{i}") for i in range(1999)]
    cut = dataclasses.replace(record(stop=False), block="last")
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    leak_io.write(leak_run(path), [scan_of(clean + [cut], "a" * 64)])
    with warehouse.connect(path, read_only=True) as con:
        rows = dict(con.execute("select verdict, count(*) from leak_verdicts group by all").fetchall())
        (reasons,) = con.execute("select reasons from leak_verdicts where block = 'last'").fetchone()
    assert rows == {"clean": 1999, "unverifiable": 1}
    assert reasons and reasons[0].startswith("record truncated")


def test_an_all_clean_batch_then_a_batch_with_a_leak_write_alike(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    clean = [dataclasses.replace(record(), block=f"b{i}") for i in range(50)]
    run = leak_run(path)
    written = leak_io.write(run, [scan_of(clean, "b" * 64)])
    # v1 finds the statement's own literals in every record: one summary row each, no hit rows
    assert written == {"leak_scans": 1, "leak_verdicts": 50, "leak_hit_rules": 50, "leak_hits": 0}
    leak = record("AssertionError: args=('kiwi lime mango', 2) got='kiwi' want='kiwi lime'")
    leak_io.write(run, [scan_of([dataclasses.replace(leak, run_id="R2")], "c" * 64)])
    with warehouse.connect(path, read_only=True) as con:
        verdicts = dict(con.execute("select run_id, list(distinct verdict) from leak_verdicts group by all").fetchall())
        types = dict(con.execute("select column_name, data_type from duckdb_columns() "
                                 "where table_name = 'leak_verdicts'").fetchall())
    assert verdicts == {"R1": ["clean"], "R2": ["violation"]}
    assert types["reasons"] == "VARCHAR[]"


def test_every_frame_is_typed_as_the_ddl_declares(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    frames = store.frames([scan_of([record("want='kiwi lime'")], "d" * 64)])
    with warehouse.connect(path, read_only=True) as con:
        for table, frame in frames.items():
            want = con.execute(f"select column_name, column_type from (describe {table})").fetchall()
            con.register("_t", store.encoded(frame, want))
            got = con.execute(f"select column_name, column_type from (describe {store.typed_select(want, '_t')})").fetchall()
            typed = con.execute(store.typed_select(want, "_t")).fetchall()
            con.unregister("_t")
            assert got == want, table
            assert len(typed) == len(frame), table


def test_nested_values_arrive_exactly_as_written():
    """Lists and lists of structs go in as JSON text cast to their declared type: any character survives."""
    texts = ["a\x00b", 'quote " and \\ backslash', "é\u2028😀", ""]
    columns = [("reasons", "VARCHAR[]"),
               ("first_offsets", "STRUCT(seq INTEGER, start_char INTEGER, end_char INTEGER)[]")]
    frame = pd.DataFrame({"reasons": [texts, []], "first_offsets": [[{"seq": 1, "start_char": 2, "end_char": 3}], []]})
    with duckdb.connect() as con:
        con.register("_t", store.encoded(frame, columns))
        rows = con.execute(store.typed_select(columns, "_t")).fetchall()
    assert rows == [(texts, [{"seq": 1, "start_char": 2, "end_char": 3}]), ([], [])]


def test_a_failed_insert_reports_its_own_error_not_the_aborted_transaction(tmp_path):
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    frame = pd.DataFrame({"x": [1]})
    with pytest.raises(duckdb.CatalogException, match="no_such_table"):
        with warehouse.transaction(path) as con:
            leak_io._insert(con, "no_such_table", frame)


def test_migration_091_summarises_stored_v1_hits_and_keeps_v2_hits(tmp_path):
    """A warehouse written before 091 (one v1 row per match per hidden case) is summarised in place."""
    import shutil

    sql = tmp_path / "sql"
    shutil.copytree(warehouse.SQL_DIR, sql)
    (sql / "091_leak_hit_rules.sql").unlink()
    path = tmp_path / "w.duckdb"
    warehouse.migrate(path, sql_dir=sql)
    key = "'R1', 'hmix', '', 'T/1'"
    rows = [f"({key}, 'v1', {i}, 3, 'harness', 'revision_feedback', {s}, {s + 4}, 'True', 'expected', {c}, "
            f"'keyword', true, '')" for i, (s, c) in enumerate([(10, 0), (10, 1), (10, 2), (30, 0), (50, 5)])]
    rows += [f"({key}, 'v2', 0, 4, 'harness', 'revision_feedback', 0, 12, 'f(\"secret\")', 'call', 7, "
             "'call-expression', true, '')"]
    with warehouse.transaction(path) as con:
        con.execute("insert into leak_hits values " + ", ".join(rows))
    warehouse.migrate(path)
    with warehouse.connect(path, read_only=True) as con:
        hits = con.execute("select scanner, count(*) from leak_hits group by all").fetchall()
        v1 = con.execute("select hits, violations, messages, cases, first_offsets, needles, distinct_needles "
                         "from leak_hit_rules where scanner = 'v1'").fetchone()
        v2 = con.execute("select rule, hits, violations, cases from leak_hit_rules where scanner = 'v2'").fetchone()
    assert hits == [("v2", 1)]
    # three places (10-14 shared by three cases is one place), four distinct cases
    assert v1 == (3, 0, 1, 4, [{"seq": 3, "start_char": s, "end_char": s + 4} for s in (10, 30, 50)], ["True"], 1)
    assert v2 == ("call-expression", 1, 1, 1)


def test_v1_counts_must_match_their_summaries(tmp_path):
    from acceptgate.store import expectations

    frames = store.frames([scan_of([record("want='kiwi lime'")], "e" * 64)])
    assert frames["leak_verdicts"]["v1_hits"].iloc[0] == frames["leak_hit_rules"].query("scanner == 'v1'")["hits"].sum()
    expectations.validate_stage("leak", frames)
    frames["leak_verdicts"].loc[0, "v1_hits"] += 1
    with pytest.raises(expectations.ExpectationFailed, match="expect_column_to_equal_sum_in"):
        expectations.validate_stage("leak", frames)
