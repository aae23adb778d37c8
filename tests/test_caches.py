"""acceptgate cache info / clear: the cache directory's parts, their sizes, and removing only those parts."""

from __future__ import annotations

import pytest

from acceptgate._util import settings
from acceptgate.cli import main


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    (root / "imports" / "entry").mkdir(parents=True)
    (root / "imports" / "entry" / "result.pickle").write_bytes(b"x" * 3000)
    (root / "prefect").mkdir()
    (root / "prefect" / "prefect.db").write_bytes(b"y" * 100)
    (root / "notes.txt").write_text("not acceptgate's")
    monkeypatch.setenv("ACCEPTGATE_CACHE_DIR", str(root))
    monkeypatch.delenv("PREFECT_HOME", raising=False)
    settings.reload()
    return root


def test_info_lists_each_part_with_its_size(cache, capsys):
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"cache directory: {cache}" in out
    assert "imports  2.9 KB in 1 files" in out and "prefect  100 B in 1 files" in out
    assert "acceptgate cache clear" in out


def test_clear_removes_the_import_cache_only_and_all_adds_prefects_home(cache, capsys):
    assert main(["cache", "clear"]) == 0
    assert "removed imports" in capsys.readouterr().out
    assert not (cache / "imports").exists() and (cache / "prefect" / "prefect.db").exists()
    assert main(["cache", "clear"]) == 0 and "nothing to remove" in capsys.readouterr().out
    assert main(["cache", "clear", "--all"]) == 0
    assert "removed prefect" in capsys.readouterr().out and not (cache / "prefect").exists()
    assert (cache / "notes.txt").read_text() == "not acceptgate's"  # nothing else in the directory


def test_a_prefect_home_set_elsewhere_is_not_cleared(cache, tmp_path, monkeypatch, capsys):
    elsewhere = tmp_path / "my-prefect"
    elsewhere.mkdir()
    (elsewhere / "prefect.db").write_text("mine")
    monkeypatch.setenv("PREFECT_HOME", str(elsewhere))
    settings.reload()
    assert main(["cache", "clear", "--all"]) == 0
    assert (elsewhere / "prefect.db").exists() and (cache / "prefect").exists()
    assert main(["cache", "info"]) == 0 and "prefect " not in capsys.readouterr().out
