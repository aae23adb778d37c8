"""A cache of finished imports, keyed by content: the source file's sha256, the options, and the code.

EvalPlus caches its ground truth by the dataset's hash; here the cached thing is the whole suite
directory an import writes (specs, timing sidecars, manifest), so a warm import is a copy -- no
sandbox run, no parsing. The key covers everything the directory depends on: dataset name, the source
file's sha256, ``--limit``, ``--gauge``, and the sha256 of the code that computes suites (importers,
dialects, renderer, literal grammar, suite files, gauge, sandbox runner). Any change to one of them
is a miss. Entries are written to a temporary directory and renamed into place (never half-written).

Default location: ``$ACCEPTGATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/acceptgate/imports``, else
``~/.cache/acceptgate/imports`` (``import --cache-dir DIR`` overrides, ``--no-cache`` turns it off).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from acceptgate.importers.common import sha256_file

FORMAT = "acceptgate-import-cache/1"
KEY_FILE = "cache-key.json"

# The code whose output an import is: a change to any of these files invalidates every entry.
_CODE = ("dialects.py", "harness_prelude.py", "render.py", "suitespec.py", "literals.py", "suitefiles.py",
         "gauge.py", "task.py", "sandbox/runner.py", "sandbox/executor.py", "sandbox/answers.py")


def default_dir() -> Path:
    explicit = os.environ.get("ACCEPTGATE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "acceptgate" / "imports"


@functools.cache
def code_sha256() -> str:
    root = resources.files("acceptgate")
    h = hashlib.sha256()
    names = sorted(_CODE) + sorted(f"importers/{p.name}" for p in root.joinpath("importers").iterdir()
                                   if p.name.endswith(".py"))
    for name in names:
        h.update(name.encode() + b"\0" + root.joinpath(name).read_bytes() + b"\0")
    return h.hexdigest()


def key(dataset: str, source: str | Path, *, limit: int | None, gauge: bool) -> dict:
    return {"format": FORMAT, "dataset": dataset, "source_sha256": sha256_file(Path(source)),
            "limit": limit, "gauge": gauge, "code_sha256": code_sha256()}


def _entry_name(k: dict) -> str:
    return hashlib.sha256(json.dumps(k, sort_keys=True).encode()).hexdigest()[:32]


def lookup(cache_dir: Path, k: dict) -> Path | None:
    """The cached suite directory for this key, if a complete entry exists."""
    entry = cache_dir / _entry_name(k)
    try:
        stored = json.loads((entry / KEY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if stored != k or not (entry / "suites" / "manifest.json").is_file():
        return None
    return entry / "suites"


def store(cache_dir: Path, k: dict, suites: Path) -> Path | None:
    """Copy a written suite directory into the cache (atomically). None if the cache is not writable:
    a cache is an optimisation, never a reason for an import to fail."""
    entry = cache_dir / _entry_name(k)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=cache_dir))
        shutil.copytree(suites, tmp / "suites")
        (tmp / KEY_FILE).write_text(json.dumps(k, sort_keys=True) + "\n", encoding="utf-8")
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        os.rename(tmp, entry)
    except OSError:
        shutil.rmtree(locals().get("tmp", entry.with_suffix(".none")), ignore_errors=True)
        return None
    return entry
