"""Suites as files: an import written as a directory of SuiteSpec JSON files plus a manifest.

Layout::

    DIR/manifest.json
    DIR/<task id with / replaced by _>/visible.json
    DIR/<task id with / replaced by _>/hidden.json
    DIR/<task id with / replaced by _>/reference.py   (the reference program, for the gauge check)
    DIR/<task id with / replaced by _>/wrong/<label>.py  (the task's own known-wrong programs, if any)

The manifest records the dataset, the source file and its sha256, per task the entry point, the public
prompt (a completion is appended to it when scoring) and, per suite, the file, dialect, case count,
``spec_hash`` and ``render_hash`` (and its gauge verdict, with ``import --gauge``), the task's own wrong
samples (label, file, sha256: the gauge blocks them besides the generic ones); and every ImportIssue
(what was excluded, and why). Writing is
atomic: everything is built in a temporary directory next to DIR and renamed into place, so a failure
leaves DIR as it was. Reading validates every spec and checks both hashes against the manifest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Iterator

from acceptgate._util import boundedjson
from acceptgate.suites import suitespec
from acceptgate._util.errors import InvalidInput
from acceptgate._util.hashing import sha256_text
from acceptgate.datasets.importers.report import summary
from acceptgate.suites.suitespec import SuiteSpec
from acceptgate.datasets.task import SUITE_KINDS, ImportIssue, ImportResult, Task, WrongSample

FORMAT = "acceptgate-suites/1"
MANIFEST = "manifest.json"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def task_dir_name(task_id: str) -> str:
    """``HumanEval/95`` -> ``HumanEval_95``; refuses ids that would not be one plain directory name."""
    name = task_id.replace("/", "_")
    if not _SAFE_NAME.match(name) or len(name) > 200:
        raise InvalidInput(f"task id {task_id!r} cannot be a directory name", field="task_id")
    return name


def suite_file_name(kind: str) -> str:
    return f"{kind}.json"


REFERENCE_FILE = "reference.py"


def timing_file_name(kind: str) -> str:
    """The sidecar with the reference's time per case on the importing machine (not part of the spec)."""
    return f"{kind}.timing.json"


# ---------------------------------------------------------------------------------------------
# writing


def write_suites(result: ImportResult, out_dir: str | Path, *, gauge: list | None = None) -> Path:
    """Write the import's suites and manifest to out_dir, atomically. Returns out_dir.

    An existing out_dir is replaced only if it is a suite directory (has a manifest) or empty.
    ``gauge`` (GaugeResult list) adds each suite's gauge verdict and reasons to the manifest.
    """
    def fill(tmp: Path) -> None:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it 0700; the suites are ordinary files
        _write_tree(result, tmp, gauge)
    return _replace_atomically(out_dir, fill)


def _replace_atomically(out_dir: str | Path, fill) -> Path:
    """``fill(tmp)`` builds the directory beside ``out_dir``, which then takes its place in one rename;
    nothing is left half-written. Only a suite directory or an empty one is replaced."""
    out = Path(out_dir)
    if out.exists() and not _replaceable(out):
        raise InvalidInput("exists and is not a suite directory (no manifest.json); refusing to replace it",
                           source=str(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        fill(tmp)
        _swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def replaceable(out: str | Path) -> bool:
    """Whether write_suites may replace ``out``: a suite directory (it has a manifest) or empty."""
    return _replaceable(Path(out))


def copy_suites(src: str | Path, out_dir: str | Path) -> Path:
    """Put a copy of an existing suite directory (e.g. a cached import) at out_dir, atomically, with
    the same rule as write_suites for what may be replaced."""
    def fill(tmp: Path) -> None:
        os.rmdir(tmp)
        shutil.copytree(src, tmp)
    return _replace_atomically(out_dir, fill)


def _replaceable(out: Path) -> bool:
    return out.is_dir() and ((out / MANIFEST).is_file() or not any(out.iterdir()))


def _write_tree(result: ImportResult, root: Path, gauge: list | None) -> None:
    gauge_by_suite = {(s.task_id, s.suite): s for g in (gauge or []) for s in g.suites}
    entries = []
    for task in result.tasks:
        name = task_dir_name(task.task_id)
        (root / name).mkdir()
        suites = {}
        for kind in SUITE_KINDS:
            spec = task.suites.get(kind)
            if spec is None:
                continue
            (root / name / suite_file_name(kind)).write_text(spec.to_json(), encoding="utf-8")
            suites[kind] = _suite_entry(kind, spec, gauge_by_suite.get((task.task_id, kind)))
            seconds = task.reference_seconds.get(kind)
            if seconds is not None and len(seconds) == len(spec.cases):
                timing = {"spec_hash": spec.spec_hash, "reference_seconds": seconds}
                (root / name / timing_file_name(kind)).write_text(json.dumps(timing) + "\n", encoding="utf-8")
                suites[kind]["timing"] = timing_file_name(kind)
        entry = {"task_id": task.task_id, "dir": name, "entry_point": task.entry_point,
                 "prompt": task.prompt, "prompt_sha256": task.prompt_sha256,
                 "reference_sha256": task.reference_sha256, "suites": suites}
        if task.contract:  # the public input contract (HumanEval+, MBPP+), shown with the prompt
            entry["contract"] = task.contract
        if task.reference:  # what a later gauge check runs (gate, score, certify)
            (root / name / REFERENCE_FILE).write_text(task.reference, encoding="utf-8")
            entry["reference"] = REFERENCE_FILE
        own = _own_wrong_samples(task)
        if own:
            (root / name / WRONG_DIR).mkdir()
            entry["wrong_samples"] = []
            for w in own:
                (root / name / WRONG_DIR / f"{w.label}.py").write_text(w.source, encoding="utf-8")
                entry["wrong_samples"].append({"label": w.label, "file": f"{WRONG_DIR}/{w.label}.py",
                                               "sha256": sha256_text(w.source)})
        entries.append(entry)
    manifest = {
        "format": FORMAT,
        "dataset": result.dataset,
        "source": result.source,
        "source_sha256": result.source_sha256,
        "counts": summary(result),
        "notes": dict(result.notes),
        "tasks": entries,
        "issues": [dataclasses.asdict(i) for i in result.issues],
    }
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


WRONG_DIR = "wrong"
RECORD_FORMAT = "acceptgate-gauge-record/2"  # of a gauge verdict in the manifest (scoring.gauge)
_WRONG_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _own_wrong_samples(task: Task) -> list[WrongSample]:
    """The task's wrong samples that are not the generic ones (those are written from the signature)."""
    from acceptgate.datasets.wrongs import GENERIC_LABELS

    return [w for w in task.wrong_samples if w.label not in GENERIC_LABELS]


def _suite_entry(kind: str, spec: SuiteSpec, gauged: Any) -> dict[str, Any]:
    entry = {"file": suite_file_name(kind), "dialect": spec.dialect, "cases": len(spec.cases),
             "spec_hash": spec.spec_hash, "render_hash": spec.render_hash}
    if gauged is not None:
        entry["gauge"] = {"passed": gauged.passed, "reasons": list(gauged.reasons), "format": RECORD_FORMAT}
    return entry


def _swap_into_place(tmp: Path, out: Path) -> None:
    """Rename tmp to out; an existing out is moved aside first and removed only after the swap."""
    if not out.exists():
        os.rename(tmp, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    os.rmdir(old)
    os.rename(out, old)
    try:
        os.rename(tmp, out)
    except BaseException:
        os.rename(old, out)  # put the previous suites back
        raise
    shutil.rmtree(old, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# reading


@dataclass
class SuiteTask:
    task_id: str
    entry_point: str
    prompt: str
    suites: dict[str, SuiteSpec]
    gauge: dict[str, dict] = field(default_factory=dict)  # kind -> {"passed", "reasons"} when recorded
    reference_seconds: dict[str, list[float]] = field(default_factory=dict)  # kind -> per case, when recorded
    reference: str = ""  # the reference program, when the directory holds it
    contract: str = ""  # the public input contract, where the data set has one
    wrong_samples: list[WrongSample] = field(default_factory=list)  # the task's own (not the generic ones)

    def recorded_gauge(self) -> dict[tuple[str, str], dict]:
        """(task_id, kind) -> the import's gauge verdict, for ``gauge.require``."""
        return {(self.task_id, kind): g for kind, g in self.gauge.items()}


@dataclass
class SuiteDir:
    path: Path
    manifest: dict[str, Any]
    tasks: dict[str, SuiteTask]  # by task id, in manifest order
    issues: list[ImportIssue]

    @property
    def dataset(self) -> str:
        return self.manifest["dataset"]

    @property
    def source_sha256(self) -> str:
        return self.manifest["source_sha256"]

    def gauge_inputs(self, *, task_ids: set[str] | None = None,
                     references: dict[str, str] | None = None) -> tuple[list[Task], dict[tuple[str, str], dict]]:
        """What ``gauge.require`` needs of these tasks (``task_ids``: only these): each as a Task with its
        reference (``references`` overrides it, e.g. certify's gold), and the verdicts the import recorded."""
        tasks, recorded = [], {}
        for tid, t in self.tasks.items():
            if task_ids is not None and tid not in task_ids:
                continue
            reference = (references or {}).get(tid, t.reference)
            tasks.append(Task(task_id=tid, dataset=self.dataset, entry_point=t.entry_point, prompt=t.prompt,
                              reference=reference, suites=dict(t.suites), contract=t.contract,
                              wrong_samples=list(t.wrong_samples)))
            if reference == t.reference:  # the import's verdicts hold for the reference it ran
                recorded.update(t.recorded_gauge())
        return tasks, recorded


def read_suites(path: str | Path, task_ids: Collection[str] | None = None) -> SuiteDir:
    """Load and validate a suite directory; any inconsistency is InvalidInput naming the file.

    The one reader of a suites directory: every literal goes through the grammar (``suitespec``,
    ``literals.parse_many``), both hashes are checked against the manifest. ``task_ids``: only these
    tasks are read (and checked); the manifest's other entries are skipped, their files not opened."""
    root = Path(path)
    manifest_path = root / MANIFEST
    manifest = _read_manifest(manifest_path)
    tasks: dict[str, SuiteTask] = {}
    wanted = None if task_ids is None else set(task_ids)
    with _collector_paused():
        for i, entry in enumerate(manifest["tasks"]):
            if wanted is not None and not (isinstance(entry, dict) and entry.get("task_id") in wanted):
                continue
            task = _read_task(root, manifest_path, i, entry)
            if task.task_id in tasks:
                raise InvalidInput(f"duplicate task {task.task_id!r}", source=str(manifest_path),
                                   record=f"tasks[{i}]", field="task_id")
            tasks[task.task_id] = task
    issues = [_issue(manifest_path, i, d) for i, d in enumerate(manifest["issues"])]
    return SuiteDir(root, manifest, tasks, issues)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection while a directory's millions of values are built: they hold no cycles,
    and each collection would walk all built so far again (a third of HumanEval+'s read). Built, they
    go straight to the oldest generation (a freeze and unfreeze moves every tracked object there
    without walking any): they live as long as the command, and the next young collections would
    otherwise walk them all, twice, to find nothing (a tenth of MBPP+'s read). Not while something
    else keeps objects frozen (a batch of the executor): the unfreeze would hand those back too."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was:
            gc.enable()


def _read_manifest(path: Path) -> dict[str, Any]:
    if not path.parent.is_dir():
        raise InvalidInput("no such directory", source=str(path.parent))
    try:
        doc = boundedjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise InvalidInput("not a suite directory: no manifest.json", source=str(path.parent)) from None
    except OSError as exc:
        raise InvalidInput(f"cannot read: {exc.strerror}", source=str(path)) from None
    except boundedjson.JSONInputError as exc:
        raise InvalidInput(f"not a JSON manifest: {exc}", source=str(path)) from None
    if not isinstance(doc, dict):
        raise InvalidInput("the manifest must be a JSON object", source=str(path))
    if doc.get("format") != FORMAT:
        raise InvalidInput(f"unknown format {doc.get('format')!r}; expected {FORMAT!r}", source=str(path),
                           field="format")
    for key, kind in (("dataset", str), ("source_sha256", str), ("tasks", list), ("issues", list)):
        if not isinstance(doc.get(key), kind):
            raise InvalidInput(f"missing or not a {kind.__name__}", source=str(path), field=key)
    return doc


def _read_task(root: Path, manifest_path: Path, i: int, entry: Any) -> SuiteTask:
    record = f"tasks[{i}]"
    if not isinstance(entry, dict):
        raise InvalidInput("a task entry must be an object", source=str(manifest_path), record=record)
    for key in ("task_id", "dir", "entry_point", "prompt"):
        if not isinstance(entry.get(key), str):
            raise InvalidInput("missing or not a string", source=str(manifest_path), record=record, field=key)
    if entry["dir"] != task_dir_name(entry["task_id"]):  # never follow a path the manifest makes up
        raise InvalidInput(f"dir {entry['dir']!r} is not the task's directory name", source=str(manifest_path),
                           record=record, field="dir")
    suites_doc = entry.get("suites")
    if not isinstance(suites_doc, dict) or not suites_doc or not set(suites_doc) <= set(SUITE_KINDS):
        raise InvalidInput(f"suites must map some of {list(SUITE_KINDS)} to files", source=str(manifest_path),
                           record=record, field="suites")
    suites, gauge, timing = {}, {}, {}
    task_dir = root / entry["dir"]
    for kind, meta in suites_doc.items():
        suites[kind] = _read_spec(task_dir / suite_file_name(kind), meta, entry["entry_point"],
                                  manifest_path, f"{record}.suites.{kind}")
        if isinstance(meta.get("gauge"), dict):
            gauge[kind] = meta["gauge"]
        if meta.get("timing") == timing_file_name(kind):
            timing[kind] = _read_timing(task_dir / timing_file_name(kind), suites[kind])
    reference = ""
    if entry.get("reference") == REFERENCE_FILE:
        reference = _read_reference(task_dir / REFERENCE_FILE, entry.get("reference_sha256"))
    contract = entry.get("contract", "")
    if not isinstance(contract, str):
        raise InvalidInput("not a string", source=str(manifest_path), record=record, field="contract")
    wrong = _read_wrong_samples(task_dir, entry.get("wrong_samples", []), manifest_path, record)
    return SuiteTask(entry["task_id"], entry["entry_point"], entry["prompt"], suites, gauge, timing, reference,
                     contract, wrong)


def _read_wrong_samples(task_dir: Path, listed: Any, manifest_path: Path, record: str) -> list[WrongSample]:
    if not isinstance(listed, list):
        raise InvalidInput("must be a list", source=str(manifest_path), record=record, field="wrong_samples")
    out = []
    for j, w in enumerate(listed):
        where = f"{record}.wrong_samples[{j}]"
        if not (isinstance(w, dict) and isinstance(w.get("label"), str) and _WRONG_LABEL.match(w["label"])
                and w.get("file") == f"{WRONG_DIR}/{w['label']}.py"):  # never follow a path the manifest makes up
            raise InvalidInput("needs a label (letters, digits, . _ -) and file wrong/<label>.py",
                               source=str(manifest_path), record=where, field="wrong_samples")
        path = task_dir / w["file"]
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"unreadable wrong sample: {exc}", source=str(path)) from None
        if sha256_text(text) != w.get("sha256"):
            raise InvalidInput("the wrong sample does not match the manifest's sha256", source=str(path),
                               field="sha256")
        out.append(WrongSample(w["label"], text))
    return out


def add_wrong_samples(result: ImportResult, path: str | Path) -> ImportResult:
    """The task's own known-wrong programs from a jsonl file (``task_id``, ``label``, ``program``: a
    complete program) added to an import, for the gauge to block besides the generic ones. A record for
    an unknown task, a bad label or a label used twice is InvalidInput naming the line and field."""
    from acceptgate.datasets.importers.common import read_jsonl

    rows, _ = read_jsonl(str(path), {"task_id": str, "label": str, "program": str})
    by_id = {t.task_id: t for t in result.tasks}
    for line, row in enumerate(rows, 1):
        task = by_id.get(row["task_id"])
        if task is None:
            raise InvalidInput(f"unknown task id {row['task_id']!r}", source=str(path), record=f"line {line}",
                               field="task_id")
        from acceptgate.datasets.wrongs import GENERIC_LABELS

        if not _WRONG_LABEL.match(row["label"]) or row["label"] in GENERIC_LABELS \
                or row["label"] in {w.label for w in task.wrong_samples}:
            raise InvalidInput("a label is letters, digits, . _ -, unique per task and not a generic sample's",
                               source=str(path), record=f"line {line}", field="label")
        task.wrong_samples = [*task.wrong_samples, WrongSample(row["label"], row["program"])]
    return result


def _read_reference(path: Path, want: Any) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"unreadable reference: {exc}", source=str(path)) from None
    if sha256_text(text) != want:
        raise InvalidInput("the reference does not match the manifest's reference_sha256", source=str(path),
                           field="reference_sha256")
    return text


def read_timing(path: str | Path, kind: str) -> dict[str, list[float]]:
    """task_id -> the reference's time per case of one suite kind, from the timing sidecars (checked
    against the manifest's spec_hash and case count; the specs themselves are not re-read)."""
    root = Path(path)
    manifest = _read_manifest(root / MANIFEST)
    out = {}
    for entry in manifest["tasks"]:
        meta = (entry.get("suites") or {}).get(kind)
        if not isinstance(meta, dict) or meta.get("timing") != timing_file_name(kind):
            continue
        out[entry["task_id"]] = _timing(root / task_dir_name(entry["task_id"]) / timing_file_name(kind),
                                        meta.get("spec_hash"), meta.get("cases"))
    return out


def _read_timing(path: Path, spec: SuiteSpec) -> list[float]:
    return _timing(path, spec.spec_hash, len(spec.cases))


def _timing(path: Path, spec_hash: str | None, cases: int | None) -> list[float]:
    try:
        doc = boundedjson.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"unreadable timing sidecar: {exc}", source=str(path)) from None
    seconds = doc.get("reference_seconds") if isinstance(doc, dict) else None
    if doc.get("spec_hash") != spec_hash or not isinstance(seconds, list) or len(seconds) != cases \
            or not set(map(type, seconds)) <= {int, float} or (seconds and min(seconds) < 0):
        raise InvalidInput("the timing sidecar does not match its suite (spec_hash, or one time per case)",
                           source=str(path), field="reference_seconds")
    return list(map(float, seconds))


def _read_spec(path: Path, meta: Any, entry_point: str, manifest_path: Path, record: str) -> SuiteSpec:
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), str) for k in ("spec_hash", "render_hash")):
        raise InvalidInput("needs spec_hash and render_hash", source=str(manifest_path), record=record)
    spec = suitespec.load(path)  # SpecError (an InvalidInput) names the file, case and field
    if spec.spec_hash != meta["spec_hash"]:
        raise InvalidInput(f"spec_hash {spec.spec_hash} does not match the manifest's {meta['spec_hash']}",
                           source=str(path), field="spec_hash")
    rendered = spec.render_hash
    if rendered != meta["render_hash"]:
        raise InvalidInput(f"render_hash {rendered} does not match the manifest's {meta['render_hash']}",
                           source=str(path), field="render_hash")
    if spec.entry_point != entry_point:
        raise InvalidInput(f"entry_point {spec.entry_point!r} is not the manifest's {entry_point!r}",
                           source=str(path), field="entry_point")
    return spec


def _issue(manifest_path: Path, i: int, doc: Any) -> ImportIssue:
    names = {f.name for f in dataclasses.fields(ImportIssue)}
    if not isinstance(doc, dict) or not {"task_id", "reason"} <= set(doc) or not set(doc) <= names:
        raise InvalidInput("not an import issue", source=str(manifest_path), record=f"issues[{i}]")
    return ImportIssue(**doc)


def recorded_gauge(suites_dir: str | Path, references: dict[str, str]) -> dict[tuple[str, str], dict]:
    """(task_id, kind) -> the gauge verdict the import recorded, from the manifest alone, for the tasks
    whose reference is ``references[task_id]`` (a verdict holds for the reference it ran)."""
    manifest = _read_manifest(Path(suites_dir) / MANIFEST)
    out = {}
    for entry in manifest["tasks"]:
        tid = entry.get("task_id")
        if tid not in references or entry.get("reference_sha256") != sha256_text(references[tid]):
            continue
        for kind, meta in (entry.get("suites") or {}).items():
            if isinstance(meta, dict) and isinstance(meta.get("gauge"), dict):
                out[(tid, kind)] = meta["gauge"]
    return out


def manifest_suites(suites_dir: str | Path) -> dict[str, list[str]]:
    """task id -> its suite kinds, from the validated manifest alone (no spec is read): which tasks to
    read before reading them (``read_suites(..., task_ids=...)``)."""
    manifest = _read_manifest(Path(suites_dir) / MANIFEST)
    return {e["task_id"]: list(e["suites"]) for e in manifest["tasks"]
            if isinstance(e, dict) and isinstance(e.get("task_id"), str) and isinstance(e.get("suites"), dict)}


def manifest_task_ids(suites_dir: str | Path) -> list[str]:
    """The task ids a suites directory holds, from its manifest alone (fast: no spec is read)."""
    path = Path(suites_dir) / MANIFEST
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return [t["task_id"] for t in doc["tasks"]]
    except OSError as exc:
        raise InvalidInput(f"cannot read the manifest: {exc.strerror}", source=str(path), field="--suites") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"not a suites manifest ({type(exc).__name__}: {exc})", source=str(path),
                           field="--suites") from None
