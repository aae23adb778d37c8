"""acceptgate import: exit codes and what it writes and prints."""

from __future__ import annotations

import gzip
import json

import pytest

from acceptgate._util import settings
from acceptgate import suitefiles
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


# -- the flows' import cache (importcache.load_import): audit, gate --humanevalplus, the leak audit --------

def _two_tasks(tmp_path, humanevalplus_path, name="two.jsonl"):
    with gzip.open(humanevalplus_path, "rt", encoding="utf-8") as f:
        rows = [r for r, _ in zip(map(json.loads, f), range(2))]
    data = tmp_path / name
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def test_the_flows_import_once_then_read_the_result_from_the_cache(tmp_path, private_cache, humanevalplus_path,
                                                                   local_backend):
    from acceptgate import audit, importcache
    from acceptgate.gates import run as gate_run
    from acceptgate.importers import humanevalplus

    data = _two_tasks(tmp_path, humanevalplus_path)
    calls = []

    def load():
        calls.append(1)
        return humanevalplus.load(data, local_backend)

    cold, hit = importcache.load_import("humanevalplus", data, load)
    assert not hit and len(calls) == 1
    warm, hit = importcache.load_import("humanevalplus", data, load)
    assert hit and len(calls) == 1
    assert warm == cold  # tasks, references, wrong samples, suites, timings, issues
    assert [s.spec_hash for t in warm.tasks for s in t.suites.values()] == \
        [s.spec_hash for t in cold.tasks for s in t.suites.values()]
    # another limit, another file content: misses
    assert not importcache.load_import("humanevalplus", data, load, limit=1)[1]
    data.write_text(data.read_text() + "\n")
    assert not importcache.load_import("humanevalplus", data, load)[1] and len(calls) == 3

    # the audit's import stage and the gates' --humanevalplus go through it (a second run is a hit)
    other = _two_tasks(tmp_path, humanevalplus_path, "other.jsonl")
    other.write_text(other.read_text() + "\n\n")
    first = audit.load_tasks(local_backend, path=str(other), dataset="humanevalplus")
    entries = {p.name for p in private_cache.iterdir()}
    assert audit.load_tasks(local_backend, path=str(other), dataset="humanevalplus") == first
    assert gate_run.load_task_set(backend=local_backend, humanevalplus=str(other)).tasks == \
        gate_run.gradeable(first.tasks)
    assert {p.name for p in private_cache.iterdir()} == entries  # nothing new: both were hits


def test_a_cache_entry_that_names_other_code_is_refused_never_run(tmp_path, private_cache, humanevalplus_path,
                                                                    local_backend):
    import os
    import pickle

    from acceptgate import importcache
    from acceptgate.importers import humanevalplus

    data = _two_tasks(tmp_path, humanevalplus_path)
    marker = tmp_path / "ran"

    class Planted:  # unpickling it would call os.mkdir(marker)
        def __reduce__(self):
            return os.mkdir, (str(marker),)

    k = importcache.result_key("humanevalplus", data, limit=None)
    entry = private_cache / importcache._entry_name(k)
    entry.mkdir(parents=True)
    (entry / importcache.KEY_FILE).write_text(json.dumps(k, sort_keys=True))
    (entry / importcache.RESULT_FILE).write_bytes(pickle.dumps(Planted()))
    result, hit = importcache.load_import("humanevalplus", data, lambda: humanevalplus.load(data, local_backend))
    assert not hit and not marker.exists() and len(result.tasks) == 2
    # the fresh import replaced the entry; a truncated one is a miss too
    assert importcache.load_import("humanevalplus", data, lambda: pytest.fail("not a hit"))[1]
    blob = (entry / importcache.RESULT_FILE).read_bytes()
    (entry / importcache.RESULT_FILE).write_bytes(blob[: len(blob) // 2])
    assert not importcache.load_import("humanevalplus", data, lambda: result)[1]


def _planted(result, plant):
    """A pickled copy of ``result`` with one planted change (made of the allowed classes only)."""
    import copy
    import pickle

    bad = copy.deepcopy(result)
    plant(bad)
    return pickle.dumps(bad)


def _replace_case(spec, **texts):
    from dataclasses import replace

    from acceptgate.suitespec import SuiteSpec

    return SuiteSpec(spec.dialect, spec.entry_point, (replace(spec.cases[0], **texts), *spec.cases[1:]))


def _plant_entry_point(r):
    from acceptgate.suitespec import SuiteSpec
    from acceptgate.task import HIDDEN

    spec = r.tasks[0].suites[HIDDEN]
    object.__setattr__(spec, "entry_point", "f(); import os; os.system('touch x')#")
    r.tasks[0].suites[HIDDEN] = SuiteSpec(spec.dialect, spec.entry_point, spec.cases)


def _plant_expected_text(r):
    from acceptgate.task import HIDDEN

    r.tasks[0].suites[HIDDEN] = _replace_case(r.tasks[0].suites[HIDDEN], expected_text="__import__('os').getpid()")


def _plant_spec_hash(r):
    from acceptgate.task import HIDDEN

    spec = r.tasks[0].suites[HIDDEN]
    spec.__dict__["spec_hash"] = "x\nimport os; os.system('touch x')"  # a cached_property's slot, pre-filled


def _plant_value(r):
    from acceptgate.task import HIDDEN

    spec = r.tasks[0].suites[HIDDEN]
    r.tasks[0].suites[HIDDEN] = _replace_case(spec, expected=frozenset({1}))  # no literal: canonical refuses it


def _plant_dialect(r):
    from dataclasses import replace

    from acceptgate.task import HIDDEN

    spec = r.tasks[0].suites[HIDDEN]
    r.tasks[0].suites[HIDDEN] = replace(spec, dialect="python-call/1\nimport os")


@pytest.mark.parametrize("plant", [_plant_entry_point, _plant_expected_text, _plant_spec_hash, _plant_value,
                                   _plant_dialect], ids=lambda f: f.__name__[len("_plant_"):])
def test_a_cache_entry_carrying_code_in_a_spec_field_is_refused_and_the_import_reruns(
        plant, tmp_path, private_cache, humanevalplus_path, local_backend):
    """Built only from the classes the unpickler allows, a planted entry puts code where the renderer
    pastes text (an entry point, a case text, a pre-filled spec_hash, a dialect name) or a value that is
    no literal: it is refused (a miss) and the import runs again; the fresh result renders cleanly."""
    from acceptgate import importcache, render
    from acceptgate.importers import humanevalplus
    from acceptgate.task import HIDDEN

    data = _two_tasks(tmp_path, humanevalplus_path)
    good, hit = importcache.load_import("humanevalplus", data, lambda: humanevalplus.load(data, local_backend))
    assert not hit
    entry = private_cache / importcache._entry_name(importcache.result_key("humanevalplus", data, limit=None))
    (entry / importcache.RESULT_FILE).write_bytes(_planted(good, plant))
    calls = []

    def load():
        calls.append(1)
        return humanevalplus.load(data, local_backend)

    result, hit = importcache.load_import("humanevalplus", data, load)
    assert not hit and calls == [1]

    def hashes(r):
        return [(t.task_id, k, s.spec_hash) for t in r.tasks for k, s in sorted(t.suites.items())]

    assert hashes(result) == hashes(good)  # the same suites (timings are measured again)
    harness = render.render(result.tasks[0].suites[HIDDEN])
    assert "import os" not in harness and "getpid" not in harness
    # the entry written again is a clean hit
    again, hit = importcache.load_import("humanevalplus", data, lambda: pytest.fail("not a hit"))
    assert hit and again == result


def test_the_flows_import_without_a_usable_cache(tmp_path, monkeypatch, humanevalplus_path, local_backend):
    from acceptgate import importcache
    from acceptgate.importers import humanevalplus

    data = _two_tasks(tmp_path, humanevalplus_path)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    load = lambda: humanevalplus.load(data, local_backend)  # noqa: E731
    assert len(importcache.load_import("humanevalplus", data, load, cache_dir=blocked)[0].tasks) == 2
    monkeypatch.setenv(importcache.ENV_SWITCH, "off")
    settings.reload()
    cache = tmp_path / "cache"
    assert not importcache.load_import("humanevalplus", data, load, cache_dir=cache)[1]
    assert not importcache.load_import("humanevalplus", data, load, cache_dir=cache)[1] and not cache.exists()
