"""acceptgate import: exit codes and what it writes and prints."""

from __future__ import annotations

import gzip
import json

import pytest

from acceptgate import suitefiles
from acceptgate.cli import main


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Never the user's import cache: each test starts cold with its own."""
    monkeypatch.setenv("ACCEPTGATE_CACHE_DIR", str(tmp_path / "import-cache"))
    return tmp_path / "import-cache"


def test_import_humaneval_writes_suites_and_prints_counts(tmp_path, capsys):
    out = tmp_path / "suites"
    assert main(["import", "humaneval", "--out", str(out), "--limit", "3", "--gauge"]) == 0
    printed = capsys.readouterr().out
    assert "humaneval: 3 tasks imported, 0 excluded" in printed
    assert "hidden suites: 3" in printed and "JSON coercions detected: 0" in printed
    assert "gauge: 6/6 suites usable" in printed
    assert "coverage: tasks 3/3, hidden cases 14/14 (100.00%)" in printed
    loaded = suitefiles.read_suites(out)
    assert list(loaded.tasks) == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert all(g["passed"] for t in loaded.tasks.values() for g in t.gauge.values())


def test_import_humanevalplus_reports_the_coercion(tmp_path, capsys, humanevalplus_path):
    with gzip.open(humanevalplus_path, "rt", encoding="utf-8") as f:
        row = next(r for r in map(json.loads, f) if r["task_id"] == "HumanEval/95")
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(row) + "\n")
    assert main(["import", "humanevalplus", "--path", str(data), "--out", str(tmp_path / "s")]) == 0
    printed = capsys.readouterr().out
    assert "humanevalplus: 1 tasks imported" in printed
    assert "JSON coercions detected: 2" in printed  # base_input holds the coerced dict twice
    manifest = suitefiles.read_suites(tmp_path / "s").manifest
    assert [i["reason"] for i in manifest["issues"]].count("json-coercion") == 2


def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    # humanevalplus without --path
    assert main(["import", "humanevalplus", "--out", str(out)]) == 2
    assert "needs --path" in capsys.readouterr().err
    # a missing file
    assert main(["import", "humanevalplus", "--path", str(tmp_path / "nope.jsonl"), "--out", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err
    # not JSON lines
    text = tmp_path / "notes.jsonl"
    text.write_text("these are notes\n")
    assert main(["import", "humaneval", "--path", str(text), "--out", str(out)]) == 2
    assert "line 1: not JSON" in capsys.readouterr().err
    # JSON, but not HumanEval records
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(json.dumps({"task_id": "x/1", "prompt": "def f(): pass"}) + "\n")
    assert main(["import", "humaneval", "--path", str(wrong), "--out", str(out)]) == 2
    assert "line 1, field 'entry_point': missing field" in capsys.readouterr().err
    # an unknown backend
    assert main(["import", "humaneval", "--limit", "1", "--backend", "nosuch", "--out", str(out)]) == 2
    assert "unknown backend" in capsys.readouterr().err
    assert not out.exists()


def test_import_has_help(capsys):
    try:
        main(["import", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    assert "humanevalplus" in capsys.readouterr().out


def test_a_warm_import_is_a_copy_of_the_cached_one(tmp_path, capsys, private_cache, humanevalplus_path):
    with gzip.open(humanevalplus_path, "rt", encoding="utf-8") as f:
        rows = [r for r, _ in zip(map(json.loads, f), range(2))]
    data = tmp_path / "two.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    assert main(["import", "humanevalplus", "--path", str(data), "--out", str(cold)]) == 0
    assert "from the import cache" not in capsys.readouterr().out
    assert main(["import", "humanevalplus", "--path", str(data), "--out", str(warm)]) == 0
    printed = capsys.readouterr().out
    assert "from the import cache" in printed and "coverage: tasks 2/2" in printed
    a, b = suitefiles.read_suites(cold), suitefiles.read_suites(warm)
    assert [t.suites["hidden"].spec_hash for t in a.tasks.values()] == \
        [t.suites["hidden"].spec_hash for t in b.tasks.values()]
    assert b.tasks["HumanEval/0"].reference_seconds["hidden"]  # the timing sidecars come along
    # another source file (one byte more) is a miss; --no-cache neither reads nor writes
    data.write_text(data.read_text() + "\n")
    assert main(["import", "humanevalplus", "--path", str(data), "--out", str(warm)]) == 0
    assert "from the import cache" not in capsys.readouterr().out
    entries = len(list(private_cache.iterdir()))
    assert main(["import", "humanevalplus", "--path", str(data), "--out", str(warm), "--no-cache"]) == 0
    assert "from the import cache" not in capsys.readouterr().out and len(list(private_cache.iterdir())) == entries
