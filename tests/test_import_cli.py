"""acceptgate import: exit codes and what it writes and prints."""

from __future__ import annotations

import gzip
import os
import re
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acceptgate._util import settings
from acceptgate.datasets import suitefiles
from acceptgate.cli import main


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Never the user's import cache: each test starts cold with its own."""
    monkeypatch.setenv("ACCEPTGATE_CACHE_DIR", str(tmp_path / "import-cache"))
    settings.reload()
    return tmp_path / "import-cache" / "imports"


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


def _waits_for(pid: int, lock: Path) -> bool:
    """Whether process ``pid`` is blocked on the file lock of ``lock`` (a waiter: '->' in /proc/locks)."""
    inode = str(lock.stat().st_ino)
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) > 6 and fields[1] == "->" and fields[5] == str(pid) and fields[6].rsplit(":", 1)[-1] == inode:
            return True
    return False


def test_an_import_waits_for_the_same_import_in_another_process_then_copies_it(
        tmp_path, private_cache, humanevalplus_path, local_backend):
    """Two imports of one key at once (the documentation's examples run side by side): the one that
    misses while another fills the entry waits for it, then copies it instead of importing again."""
    from acceptgate.datasets import importcache
    from acceptgate.scoring import ingest

    data = _two_tasks(tmp_path, humanevalplus_path)
    warm = tmp_path / "warm-cache"
    ingest.import_dataset("humanevalplus", data, local_backend, cache_dir=warm)
    (entry,) = [p for p in warm.iterdir() if p.is_dir()]
    key = importcache.key("humanevalplus", data, limit=None, gauge=False)
    command = [str(Path(sys.executable).parent / "acceptgate"), "import", "humanevalplus", "--path", str(data),
               "--out", str(tmp_path / "out")]
    with importcache.filling(private_cache, key):  # this process is filling the entry
        proc = subprocess.Popen(command, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.monotonic() + 600  # a generous backstop: the command's start on a busy machine
        while not _waits_for(proc.pid, importcache.lock_path(private_cache, key)):
            assert proc.poll() is None, f"the second import did not wait: {proc.communicate()}"
            assert time.monotonic() < deadline, "the second import never reached the lock"
            time.sleep(0.05)
        shutil.copytree(entry, private_cache / entry.name)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "from the import cache" in out and "coverage: tasks 2/2" in out
    assert suitefiles.read_suites(tmp_path / "out").source_sha256 == suitefiles.read_suites(entry / "suites").source_sha256


# -- the flows' import (ingest.load_result): audit, gate --dataset/--humanevalplus, the leak audit ---------

def _two_tasks(tmp_path, humanevalplus_path, name="two.jsonl"):
    with gzip.open(humanevalplus_path, "rt", encoding="utf-8") as f:
        rows = [r for r, _ in zip(map(json.loads, f), range(2))]
    data = tmp_path / name
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


@pytest.fixture
def counted_loads(monkeypatch):
    """How many times a data set is really imported (its importer called)."""
    from acceptgate.datasets.importers import humanevalplus

    calls = []
    real = humanevalplus.load
    monkeypatch.setattr(humanevalplus, "load", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_the_flows_import_once_then_read_the_suites_from_the_cache(tmp_path, private_cache, humanevalplus_path,
                                                                   local_backend, counted_loads):
    from acceptgate.pipelines import audit
    from acceptgate.scoring import ingest
    from acceptgate.gates import run as gate_run

    data = _two_tasks(tmp_path, humanevalplus_path)
    cold, hit = ingest.load_result("humanevalplus", data, local_backend, cache_dir=private_cache)
    assert not hit and len(counted_loads) == 1
    warm, hit = ingest.load_result("humanevalplus", data, local_backend, cache_dir=private_cache)
    assert hit and len(counted_loads) == 1
    assert warm == cold  # tasks, references, wrong samples, contracts, suites, timings, issues
    assert all(t.wrong_samples and t.reference and t.reference_seconds for t in warm.tasks)
    assert warm.tasks[0].contract == json.loads(data.read_text().splitlines()[0])["contract"]
    # the cache entry is a suites directory (JSON), the same one 'acceptgate import' writes
    (entry,) = [p for p in private_cache.iterdir() if p.is_dir()]
    assert suitefiles.read_suites(entry / "suites").source_sha256 == cold.source_sha256
    assert not list(private_cache.rglob("*.pickle"))
    # another limit, another file content: misses
    assert not ingest.load_result("humanevalplus", data, local_backend, limit=1, cache_dir=private_cache)[1]
    data.write_text(data.read_text() + "\n")
    assert not ingest.load_result("humanevalplus", data, local_backend, cache_dir=private_cache)[1]
    assert len(counted_loads) == 3

    # the audit's import stage and the gates' data set go through it (a second run is a hit)
    other = _two_tasks(tmp_path, humanevalplus_path, "other.jsonl")
    other.write_text(other.read_text() + "\n\n")
    first = audit.load_tasks(local_backend, path=str(other), dataset="humanevalplus")
    entries = {p.name for p in private_cache.iterdir()}
    assert audit.load_tasks(local_backend, path=str(other), dataset="humanevalplus") == first
    assert gate_run.load_task_set(backend=local_backend, humanevalplus=str(other)).tasks == \
        gate_run.gradeable(first.tasks)
    assert gate_run.load_task_set(backend=local_backend, dataset="humanevalplus", path=str(other)).tasks == \
        gate_run.gradeable(first.tasks)
    assert {p.name for p in private_cache.iterdir()} == entries  # nothing new: all were hits


def _plant_call(spec):
    spec["cases"][0]["expected"] = "__import__('os').mkdir('PLANTED')"


def _plant_entry_point(spec):
    spec["entry_point"] = "f(); import os; os.mkdir('PLANTED')#"


def _plant_dialect(spec):
    spec["dialect"] = "python-call/1\nimport os"


def _plant_other_value(spec):  # a literal, but not what the import computed: the spec_hash says so
    spec["cases"][0]["expected"] = "'PLANTED'"


@pytest.mark.parametrize("plant", [_plant_call, _plant_entry_point, _plant_dialect, _plant_other_value],
                         ids=lambda f: f.__name__[len("_plant_"):])
def test_a_cache_entry_that_does_not_read_is_imported_again_never_run(
        plant, tmp_path, private_cache, humanevalplus_path, local_backend, counted_loads, monkeypatch):
    """An entry is read with the suites directory's one reader: a spec planted with code where the
    renderer pastes text (a case, an entry point, a dialect name), or with another value, is refused
    (the grammar, the registry, the manifest's hashes), and the data set is imported again."""
    from acceptgate.scoring import ingest
    from acceptgate.suites import render
    from acceptgate.datasets.task import HIDDEN

    monkeypatch.chdir(tmp_path)
    data = _two_tasks(tmp_path, humanevalplus_path)
    good, hit = ingest.load_result("humanevalplus", data, local_backend, cache_dir=private_cache)
    assert not hit
    (spec_file,) = private_cache.glob("*/suites/HumanEval_0/hidden.json")
    spec = json.loads(spec_file.read_text())
    plant(spec)
    spec_file.write_text(json.dumps(spec))
    result, hit = ingest.load_result("humanevalplus", data, local_backend, cache_dir=private_cache)
    assert not hit and len(counted_loads) == 2 and not (tmp_path / "PLANTED").exists()

    def hashes(r):
        return [(t.task_id, k, s.spec_hash) for t in r.tasks for k, s in sorted(t.suites.items())]

    assert hashes(result) == hashes(good)
    harness = render.render(result.tasks[0].suites[HIDDEN])
    assert "import os" not in harness and "PLANTED" not in harness
    again, hit = ingest.load_result("humanevalplus", data, local_backend, cache_dir=private_cache)
    assert hit and hashes(again) == hashes(good)  # the entry written again is a clean hit


def test_the_flows_import_without_a_usable_cache(tmp_path, monkeypatch, humanevalplus_path, local_backend):
    from acceptgate.datasets import importcache
    from acceptgate.scoring import ingest
    data = _two_tasks(tmp_path, humanevalplus_path)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    assert len(ingest.load_result("humanevalplus", data, local_backend, cache_dir=blocked)[0].tasks) == 2
    assert len(ingest.load_result("humanevalplus", data, local_backend, cache_dir=None)[0].tasks) == 2
    monkeypatch.setenv(settings.env_name("import_cache"), "off")
    settings.reload()
    assert importcache.flow_cache_dir() is None


def test_the_data_set_registry_names_the_valid_ones():
    from acceptgate.datasets import registry as datasets
    from acceptgate._util.errors import InvalidInput

    assert datasets.NAMES == ("humaneval", "humanevalplus", "mbppplus")
    with pytest.raises(InvalidInput, match=re.escape("unknown data set 'humaneval+'; valid: humaneval, humanevalplus")):
        datasets.get("humaneval+")
    with pytest.raises(InvalidInput, match="mbppplus needs --path FILE"):
        datasets.get("mbppplus").source(None)
    assert datasets.get("humaneval").source(None).name == "HumanEval.jsonl.gz"


def test_gate_takes_a_data_set_or_a_suites_directory(tmp_path, capsys, humanevalplus_path):
    """One entrance: --dataset NAME [--path FILE] or --suites DIR (--humanevalplus FILE is
    --dataset humanevalplus --path FILE); a wrong combination is exit 2 before anything runs."""
    from acceptgate._util.errors import InvalidInput
    from acceptgate.gates import run as gate_run

    assert gate_run.tasks_input(humanevalplus="F") == ("humanevalplus", "F", None)
    assert gate_run.tasks_input(dataset="mbppplus", path="F") == ("mbppplus", "F", None)
    assert gate_run.tasks_input(suites_dir="D") == (None, None, "D")
    for bad, said in (({"humanevalplus": "F", "dataset": "humanevalplus"}, "give one of them"),
                      ({"suites_dir": "D", "path": "F"}, "--path names the file of a --dataset"),
                      ({"dataset": "humaneval", "suites_dir": "D"}, "exactly one of"), ({}, "exactly one of")):
        with pytest.raises(InvalidInput, match=re.escape(said)):
            gate_run.tasks_input(**bad)
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "x"}) + "\n")
    base = ["gate", "--arm", "off", "--source", f"evalplus:{samples}", "--warehouse", str(tmp_path / "w.duckdb")]
    assert main(base + ["--dataset", "mbppplus"]) == 2
    assert "mbppplus needs --path FILE" in capsys.readouterr().err
    assert main(base + ["--suites", str(tmp_path), "--path", str(samples)]) == 2
    assert "--path names the file of a --dataset" in capsys.readouterr().err
    assert main(base + ["--dataset", "humanevalplus", "--path", str(tmp_path / "nope.jsonl")]) == 2
    assert "not found" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: one of --dataset, --suites, --humanevalplus
        main(base + ["--dataset", "humanevalplus", "--humanevalplus", str(humanevalplus_path)])
    assert not (tmp_path / "w.duckdb").exists()


def test_without_a_cache_the_flows_leave_no_directory_behind(tmp_path, monkeypatch, humanevalplus_path,
                                                             local_backend):
    import tempfile

    from acceptgate.scoring import ingest
    data = _two_tasks(tmp_path, humanevalplus_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    assert len(ingest.load_result("humanevalplus", data, local_backend, cache_dir=None)[0].tasks) == 2
    assert not list(scratch.iterdir())
