"""History files: the documented jsonl format, validated; a bad record names file, line and field and the
command writes nothing (exit 2)."""

from __future__ import annotations

import json

import pytest

from acceptgate.cli import main
from acceptgate._util.errors import InvalidInput
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
    from acceptgate.store import expectations, warehouse
    from acceptgate.leak import store

    path = tmp_path / "w.duckdb"
    warehouse.migrate(path)
    with warehouse.connect(path, read_only=True) as con:
        for table, columns in (("leak_scans", store.SCAN_COLUMNS), ("leak_verdicts", store.VERDICT_COLUMNS),
                               ("leak_hit_rules", store.RULE_COLUMNS), ("leak_hits", store.HIT_COLUMNS)):
            suite = expectations.load_suite(table)
            declared = next(c.kwargs["column_set"] for c in suite.checks
                            if c.type == "expect_table_columns_to_match_set")
            ddl = [r[0] for r in con.execute(f"describe {table}").fetchall()]
            assert sorted(declared) == sorted(ddl) == sorted(columns), table
        views = {r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()}
    assert {"leak_run_summary", "leak_arm_summary", "leak_violations"} <= views


# -- bounds: no history file takes the reader beyond them, and each bad line is exit 2, never a traceback

def test_a_record_nested_100000_deep_is_invalid_input_naming_the_line(tmp_path):
    deep = '{"format": "acceptgate-leak-record/1", "run_id": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path = write(tmp_path / "h.jsonl", [GOOD, deep])
    with pytest.raises(InvalidInput, match="line 2: not JSON: nested deeper than 200 levels"):
        read_jsonl(path)


@pytest.mark.parametrize("where, message", [("block", "not JSON: a number too large"),
                                            ("seq", r"field 'messages\[0\]\.seq'")])
def test_a_5000_digit_number_is_invalid_input(tmp_path, where, message):
    line = json.dumps(GOOD).replace('"block": "b07"' if where == "block" else '"seq": 0',
                                    f'"{where}": ' + "9" * (5000 if where == "block" else 4000), 1)
    path = write(tmp_path / "h.jsonl", [line])
    with pytest.raises(InvalidInput, match=message):
        read_jsonl(path)


def test_a_huge_seq_is_refused_not_expanded(tmp_path):
    doc = {**GOOD, "messages": [{**GOOD["messages"][0], "seq": 10**12}]}
    with pytest.raises(InvalidInput, match="field 'messages\\[0\\].seq'"):
        read_jsonl(write(tmp_path / "h.jsonl", [doc]))


def test_a_gzip_bomb_is_refused_within_the_line_bound(tmp_path, monkeypatch):
    """One line that inflates far beyond the bound: read in chunks, refused at the bound (memory
    traced: never the whole line), exit 2 naming the line."""
    import gzip
    import tracemalloc

    from acceptgate.leak import records

    monkeypatch.setattr(records, "MAX_LINE_BYTES", 2**20)
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        fh.write(json.dumps(GOOD).encode()[:-3])
        for _ in range(64):
            fh.write(b" " * 2**20)  # 64 MiB of nothing in one line
    assert bomb.stat().st_size < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(InvalidInput, match=f"{bomb}, line 1: a record longer than 1,048,576 bytes"):
            read_jsonl(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20


def test_a_gzip_history_inflating_beyond_its_total_bound_is_refused(tmp_path, monkeypatch):
    import gzip

    from acceptgate.leak import records

    monkeypatch.setattr(records, "MIN_TOTAL_BYTES", 2**20)
    path = tmp_path / "many.jsonl.gz"
    with gzip.open(path, "wb") as fh:
        for _ in range(2**16):
            fh.write(b" " * 63 + b"\n")  # 4 MiB of blank lines from a few KB
    with pytest.raises(InvalidInput, match="decompresses to more than"):
        read_jsonl(path)


def test_cli_refuses_a_bomb_with_exit_2_and_writes_nothing(tmp_path, capsys):
    deep = '{"format": "acceptgate-leak-record/1", "messages": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path = write(tmp_path / "h.jsonl", [GOOD, deep])
    store = tmp_path / "w.duckdb"
    code = main(["leak-audit", "--suites", str(tmp_path), "--history", str(path), "--warehouse", str(store)])
    err = capsys.readouterr().err
    assert code == 2 and f"{path}, line 2: not JSON: nested deeper than 200 levels" in err
    assert "Traceback" not in err and not store.exists()


def test_history_spool_reads_back_every_record_in_batches(tmp_path):
    from acceptgate.leak.records import read_history

    docs = [{**GOOD, "task_id": f"T/{i}"} for i in range(7)]
    history = read_history([write(tmp_path / "a.jsonl", docs[:4]), write(tmp_path / "b.jsonl", docs[4:])])
    try:
        batches = list(history.batches(3))
        assert [len(b) for b in batches] == [3, 3, 1] and history.records == 7
        assert [r.task_id for b in batches for r in b] == [d["task_id"] for d in docs]
        assert batches[1][1].origin == f"{tmp_path / 'b.jsonl'}:1"
    finally:
        history.close()
    assert not history.spool.exists()


def test_the_same_record_in_two_files_is_invalid(tmp_path):
    from acceptgate.leak.records import read_history

    a, b = write(tmp_path / "a.jsonl", [GOOD]), write(tmp_path / "b.jsonl", [GOOD])
    with pytest.raises(InvalidInput) as err:
        read_history([a, b])
    assert err.value.source == str(b) and err.value.record == "line 1" and f"{a}, line 1" in err.value.message
