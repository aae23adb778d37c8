"""History files: the documented jsonl format, validated; a bad record names file, line and field and the
command writes nothing (exit 2)."""

from __future__ import annotations

import json

import pytest

from acceptgate.cli import main
from acceptgate.errors import InvalidInput
from acceptgate.leak.records import FORMAT, read_jsonl, write_jsonl

GOOD = {"format": FORMAT, "run_id": "R530", "arm": "hmix", "block": "b07", "task_id": "HumanEval/3",
        "started_at": "2026-09-18T10:00:00Z", "finished": False, "decision": "refused", "attempts_used": 1,
        "messages": [{"seq": 0, "attempt": 1, "author": "task", "purpose": "generation", "role": "user",
                      "text": "def f(x):"},
                     {"seq": 1, "attempt": 1, "author": None, "purpose": "revision_feedback", "role": "user",
                      "text": None}]}


def write(path, docs):
    path.write_text("".join((d if isinstance(d, str) else json.dumps(d)) + "\n" for d in docs))
    return path


def test_round_trip_keeps_lost_authors_and_texts(tmp_path):
    (rec,) = read_jsonl(write(tmp_path / "h.jsonl", [GOOD]))
    assert rec.key == ("R530", "hmix", "b07", "HumanEval/3") and not rec.finished
    assert rec.messages[1].author is None and rec.messages[1].text is None
    write_jsonl([rec], tmp_path / "again.jsonl.gz")
    (again,) = read_jsonl(tmp_path / "again.jsonl.gz")
    assert again.content_sha256 == rec.content_sha256


@pytest.mark.parametrize("bad, field", [
    ({**GOOD, "finished": "yes"}, "finished"),
    ({**GOOD, "messages": [{**GOOD["messages"][0], "author": "reviewer"}]}, "messages[0].author"),
    ({k: v for k, v in GOOD.items() if k != "task_id"}, "task_id"),
    ({**GOOD, "colour": "red"}, "colour"),
    ({**GOOD, "started_at": "yesterday"}, "started_at"),
])
def test_a_bad_record_names_file_line_and_field(tmp_path, bad, field):
    path = write(tmp_path / "h.jsonl", [GOOD | {"task_id": "other"}, bad])
    with pytest.raises(InvalidInput) as err:
        read_jsonl(path)
    assert err.value.source == str(path) and err.value.record == "line 2" and err.value.field == field


def test_truncated_json_line_is_invalid(tmp_path):
    path = write(tmp_path / "h.jsonl", [json.dumps(GOOD)[:-20]])
    with pytest.raises(InvalidInput, match="line 1: not JSON"):
        read_jsonl(path)


def test_cli_exit_2_and_nothing_written(tmp_path, capsys):
    path = write(tmp_path / "h.jsonl", [GOOD, {**GOOD, "messages": [{"seq": -1}]}])
    store = tmp_path / "w.duckdb"
    code = main(["backfill", "--suites", str(tmp_path), "--history", str(path), "--no-warehouse-runs",
                 "--warehouse", str(store)])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{path}, line 2, field 'messages[0].seq'" in err
    assert not store.exists()


def test_leak_tables_suites_match_the_ddl_and_the_frames(tmp_path):
    from acceptgate import expectations, warehouse
    from acceptgate.leak import store

    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    with warehouse.connect(path, read_only=True) as con:
        for table, columns in (("leak_scans", store.SCAN_COLUMNS), ("leak_verdicts", store.VERDICT_COLUMNS),
                               ("leak_hits", store.HIT_COLUMNS)):
            suite = expectations.load_suite(table)
            declared = next(c.kwargs["column_set"] for c in suite.checks
                            if c.type == "expect_table_columns_to_match_set")
            ddl = [r[0] for r in con.execute(f"describe {table}").fetchall()]
            assert sorted(declared) == sorted(ddl) == sorted(columns), table
        views = {r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()}
    assert {"leak_run_summary", "leak_arm_summary", "leak_violations"} <= views
