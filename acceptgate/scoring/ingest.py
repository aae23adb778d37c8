"""The one way data comes in: a data set (``acceptgate.datasets.registry``) loaded, gauged if asked, and written as
a suites directory (``acceptgate.datasets.suitefiles``), through one content-keyed cache of such directories.

    import_into(name, path, out, backend="local")               # acceptgate import
    import_dataset(name, path, backend, out=DIR, cache_dir=C)   # the nightly chain
    load_result(name, path, backend, cache_dir=C)               # the flows: audit, gate, leak audit

A cache entry is the suites directory an import writes (JSON: specs, timing sidecars, references,
manifest), under a key of the source file's sha256, the options, the code and the packages an import
reads (``importcache.key``). ``load_result`` reads an entry back with ``suitefiles.read_suites`` -- the
one reader, every literal through the grammar, both hashes against the manifest -- whether it was just
written or found: an entry that does not read (damaged, or planted with code in a spec) is imported
again, never run. ``cache_dir=None``: no cache.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from acceptgate.datasets import registry as datasets, importcache, suitefiles
from acceptgate._util import outputs
from acceptgate._util.errors import InvalidInput
from acceptgate.sandbox import backend as backends
from acceptgate.sandbox.backend import Backend
from acceptgate.datasets.task import ImportResult, Task

Progress = Callable[[int, int], None] | None


@dataclass(frozen=True)
class Imported:
    suites_dir: Path  # the suites directory (``out``, or the cache's entry)
    from_cache: bool
    manifest: dict[str, Any]
    temporary: bool = False  # written to a temporary directory (no ``out``, no cache): the caller removes it
    seconds: float = 0.0  # how long the import took (import_into: once its backend had started)

    @property
    def counts(self) -> dict[str, Any]:
        return self.manifest["counts"]

    @property
    def gauged(self) -> list[dict]:
        """The import's gauge verdicts (``gauge=True``), one per suite."""
        return [m["gauge"] for t in self.manifest["tasks"] for m in t["suites"].values() if "gauge" in m]


def import_dataset(name: str, path: str | Path | None, backend: Backend, *, out: str | Path | None = None,
                   limit: int | None = None, gauge: bool = False, cache_dir: Path | None = None,
                   progress: Progress = None, gauge_progress: Progress = None,
                   wrong_samples: str | Path | None = None) -> Imported:
    """load -> the tasks' own wrong samples (``wrong_samples``, a jsonl; the cache is not used with it)
    -> gauge (``gauge``) -> the suites directory at ``out`` (replaced atomically), or the cache's entry
    when no ``out``. A cached entry for the same key is copied instead (no sandbox run)."""
    source = datasets.get(name).source(path)
    cached = cache_dir and source.is_file() and wrong_samples is None
    key = importcache.key(name, source, limit=limit, gauge=gauge) if cached else None
    found = importcache.lookup(cache_dir, key) if key else None
    if found is None and key is not None:
        # one import of a key at a time: a process that waited here finds what another one wrote
        with importcache.filling(cache_dir, key):
            found = importcache.lookup(cache_dir, key)
            if found is None:
                return _import_now(name, source, backend, out=out, limit=limit, gauge=gauge, key=key,
                                   cache_dir=cache_dir, progress=progress, gauge_progress=gauge_progress)
    if found is not None:
        dest = suitefiles.copy_suites(found, out) if out is not None else found
        return Imported(Path(dest), True, _manifest(dest))
    return _import_now(name, source, backend, out=out, limit=limit, gauge=gauge, key=None, cache_dir=None,
                       progress=progress, gauge_progress=gauge_progress, wrong_samples=wrong_samples)


def _import_now(name: str, source: Path, backend: Backend, *, out: str | Path | None, limit: int | None,
                gauge: bool, key: dict | None, cache_dir: Path | None, progress: Progress,
                gauge_progress: Progress, wrong_samples: str | Path | None = None) -> Imported:
    """load -> wrong samples -> gauge -> the cache's entry for ``key`` (copied to ``out``), else ``out``."""
    result = datasets.load(name, source, backend, limit=limit, progress=progress)
    if wrong_samples is not None:
        result = suitefiles.add_wrong_samples(result, wrong_samples)
    gauged = None
    if gauge:
        from acceptgate.scoring import gauge as gauges
        gauged = gauges.check_many(result.tasks, backend, progress=gauge_progress)
    if key is not None:
        entry = importcache.store_written(cache_dir, key, lambda tmp: suitefiles.write_suites(result, tmp, gauge=gauged))
        if entry is not None:
            dest = suitefiles.copy_suites(entry, out) if out is not None else entry
            return Imported(Path(dest), False, _manifest(dest))
    temporary = out is None
    if temporary:  # no cache (or one that cannot be written): a directory of this process's own
        out = Path(tempfile.mkdtemp(prefix="acceptgate-import-")) / "suites"
    dest = suitefiles.write_suites(result, out, gauge=gauged)
    return Imported(Path(dest), False, _manifest(dest), temporary)


def import_into(name: str, path: str | Path | None, out: str | Path, *, backend: str = "local",
                limit: int | None = None, gauge: bool = False, cache_dir: Path | None = None,
                wrong_samples: str | Path | None = None, progress: Progress = None,
                gauge_progress: Progress = None) -> Imported:
    """``acceptgate import``: the inputs checked (each error names its file and option; nothing written),
    a sandbox backend of that name started, then import_dataset into the suites directory ``out``."""
    datasets.get(name).source(path)  # humanevalplus and mbppplus need --path
    if path is not None and not os.path.isfile(path):
        raise InvalidInput("no such file" if not os.path.exists(path) else "not a regular file",
                           source=str(path), field="--path")
    outputs.check_dir(out, "--out")  # before the import runs: a path that cannot be written is exit 2
    if os.path.exists(out) and not suitefiles.replaceable(out):
        raise InvalidInput("exists and is not a suite directory (no manifest.json); refusing to replace it",
                           source=str(out), field="--out")
    try:
        sandbox = backends.create(backend)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="--backend") from None
    with sandbox:
        started = time.monotonic()
        if wrong_samples is not None and not os.path.isfile(wrong_samples):
            raise InvalidInput("no such file", source=str(wrong_samples), field="--wrong-samples")
        imported = import_dataset(name, path, sandbox, out=out, limit=limit, gauge=gauge, cache_dir=cache_dir,
                                  progress=progress, gauge_progress=gauge_progress, wrong_samples=wrong_samples)
    return replace(imported, seconds=time.monotonic() - started)


def _manifest(path: str | Path) -> dict[str, Any]:
    import json

    return json.loads((Path(path) / suitefiles.MANIFEST).read_text(encoding="utf-8"))


def load_result(name: str, path: str | Path | None, backend: Backend, *, limit: int | None = None,
                cache_dir: Path | None = None, progress: Progress = None) -> tuple[ImportResult, bool]:
    """The data set as an ImportResult (tasks with references, wrong samples, suites, reference times,
    issues), read back from its suites directory; (result, whether it came from the cache). A cached
    entry that does not read is dropped and the data set imported again."""
    imported = import_dataset(name, path, backend, limit=limit, cache_dir=cache_dir, progress=progress)
    try:
        sd = _read(imported)
    except InvalidInput:
        if not imported.from_cache:
            raise
        shutil.rmtree(imported.suites_dir.parent, ignore_errors=True)  # the damaged entry
        imported = import_dataset(name, path, backend, limit=limit, cache_dir=cache_dir, progress=progress)
        sd = _read(imported)
    if imported.from_cache and progress:
        rows = len(sd.tasks) + len({i.task_id for i in sd.issues if i.excluded == "task"})
        progress(rows, rows)
    return result_of(sd), imported.from_cache


def _read(imported: Imported) -> suitefiles.SuiteDir:
    try:
        return suitefiles.read_suites(imported.suites_dir)
    finally:
        if imported.temporary:
            shutil.rmtree(imported.suites_dir.parent, ignore_errors=True)


def result_of(sd: suitefiles.SuiteDir) -> ImportResult:
    """A read suites directory as the ImportResult its import made: each task with its suites, reference,
    contract and reference times, and its generic wrong samples (derived from the task, as the importers
    derive them)."""
    from acceptgate.datasets.wrongs import generic_wrong_samples

    tasks = []
    for t in sd.tasks.values():
        task = Task(task_id=t.task_id, dataset=sd.dataset, entry_point=t.entry_point, prompt=t.prompt,
                    reference=t.reference, suites=dict(t.suites), contract=t.contract,
                    reference_seconds=dict(t.reference_seconds))
        task.wrong_samples = generic_wrong_samples(task)
        tasks.append(task)
    counts = sd.manifest.get("counts") or {}
    return ImportResult(dataset=sd.dataset, source=sd.manifest.get("source", ""), source_sha256=sd.source_sha256,
                        tasks=tasks, issues=list(sd.issues), source_hidden_cases=counts.get("source_hidden_cases"),
                        notes=dict(sd.manifest.get("notes") or {}))
