"""A leak audit over a selection of runs: the selection, the scans per run, the run id and the summary.
The warehouse side (load the gate runs' records, skip what is unchanged, write, publish) is
``acceptgate.pipelines.leak``.

``flows/leak_audit.py`` and ``flows/backfill.py`` sequence these functions; the CLI commands call the
flows. History files are validated whole first (``records.read_history``: read once, bounded, spooled;
a bad record is InvalidInput before anything is written), then every record -- the warehouse's gate
records, then the spooled history -- goes through in batches of about ``BATCH_RECORDS``, so memory
stays flat in the number of records. In a batch, each run's records are scanned together, with one
positive and one negative control (a failed control makes every record of that scan unverifiable). A
record whose inputs hash (its content, its task's hidden material, scanner and matcher versions)
matches its stored verdict is skipped, so a re-run is a no-op and an interrupted backfill resumes where
it stopped. Each batch is validated, then committed in one transaction.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import groupby
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from acceptgate._util.hashing import sha256_text
from acceptgate._util.errors import InvalidInput
from acceptgate.leak import records as records_mod
from acceptgate.leak.controls import run_controls
from acceptgate.leak.material import TaskMaterial, materials_for_tasks
from acceptgate.leak.records import LeakRecord
from acceptgate.leak.scanners import SCANNER_VERSION, TaskScanner
from acceptgate.leak.verdicts import judge

if TYPE_CHECKING:  # pandas and pyarrow: imported when a scan runs, not by every CLI start
    from acceptgate.leak import store

Progress = Callable[[str, int, int, str], None]  # (run_id, records done, records total, what happened)
BATCH_RECORDS = 2000  # records read, scanned and written per transaction


@dataclass(frozen=True)
class Selection:
    """Which records: gate runs in the warehouse and/or history files, filtered by run, date, arm."""

    run_ids: tuple[str, ...] | None = None
    since: datetime | None = None  # started_at >= since
    until: datetime | None = None  # started_at < until
    arms: tuple[str, ...] | None = None
    history: tuple[str, ...] = ()  # jsonl(.gz) files in the documented format
    warehouse_runs: bool = True  # also the gate runs stored in the warehouse

    @property
    def filters(self) -> bool:
        """Whether any record can be left out (else ``keeps`` keeps every record)."""
        return any(v is not None for v in (self.run_ids, self.since, self.until, self.arms))

    def keeps(self, r: LeakRecord) -> bool:
        if self.run_ids is not None and r.run_id not in self.run_ids:
            return False
        if self.arms is not None and r.arm not in self.arms:
            return False
        if (self.since or self.until) and r.started_at is None:
            return False  # a date range cannot place an undated record
        started = r.started_at.astimezone(timezone.utc) if r.started_at and r.started_at.tzinfo else r.started_at
        if self.since and started < _aware(self.since):
            return False
        if self.until and started >= _aware(self.until):
            return False
        return True


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def read_history(selection: Selection) -> records_mod.History | None:
    """The selection's history files, validated whole and spooled (None when there are none)."""
    return records_mod.read_history(selection.history) if selection.history else None


def _check_distinct(gate: list[LeakRecord], history: records_mod.History | None) -> None:
    """A record both in the warehouse and in a history file is ambiguous: invalid input."""
    if history is None:
        return
    for r in gate:
        where = history.keys.get(records_mod.key_digest(r.key))
        if where is not None:
            file, _, line = where.rpartition(", line ")
            raise InvalidInput(f"record {r.key} is also in the warehouse", source=file, record=f"line {line}",
                               field="run_id")


def _gate_batches(records: list[LeakRecord], size: int) -> Iterator[list[LeakRecord]]:
    """The warehouse's records in batches of whole runs of about ``size`` records."""
    batch: list[LeakRecord] = []
    for _, run in groupby(sorted(records, key=lambda r: r.key), key=lambda r: r.run_id):
        batch += run
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def load_materials(tasks: Iterable, task_ids: Iterable[str] | None = None) -> dict[str, TaskMaterial]:
    """The hidden material of the tasks (only of ``task_ids`` when given: building it is most of an
    audit's fixed cost, about 0.1 s of CPU per HumanEval+ task)."""
    if task_ids is not None:
        wanted = set(task_ids)
        tasks = [t for t in tasks if t.task_id in wanted]
    return materials_for_tasks(tasks)


def task_ids(selection: Selection, gate: list[LeakRecord], history: records_mod.History | None) -> frozenset[str]:
    """The tasks the selected records name: the only hidden material a scan of them reads (a verdict
    and its inputs hash read their own task's; a scan's controls plant material of its records' tasks)."""
    found = {r.task_id for r in gate if selection.keeps(r)}
    if history is not None and not selection.filters:
        found |= history.task_ids
    elif history is not None:
        for batch in history.batches(BATCH_RECORDS):
            found.update(r.task_id for r in batch if selection.keeps(r))
    return frozenset(found)


class ScannerCache:
    """One TaskScanner per task per audit: the needle automata are built once."""

    def __init__(self, materials: dict[str, TaskMaterial], matcher_name: str) -> None:
        self.materials = materials
        self.matcher_name = matcher_name
        self._built: dict[str, TaskScanner] = {}

    def __call__(self, task_id: str) -> TaskScanner | None:
        material = self.materials.get(task_id)
        if material is None:
            return None
        if task_id not in self._built:
            self._built[task_id] = TaskScanner(material, self.matcher_name)
        return self._built[task_id]

    def forget(self) -> None:
        """Drop the texts matched so far (the scanners' caches hold one batch at most)."""
        for scanner in self._built.values():
            scanner.forget()


def scan_run(run_id: str, records: list[LeakRecord], scanners: ScannerCache) -> store.Scan:
    """The records of one run with their controls: every verdict of the scan shares them."""
    from acceptgate.leak import store

    started = time.monotonic()
    control = run_controls(records, scanners)
    verdicts = [judge(r, scanners.materials.get(r.task_id), scanners(r.task_id), control, scanners.matcher_name)
                for r in records]
    origins = sorted({"warehouse" if r.origin == "warehouse" else "history:" + r.origin.rpartition(":")[0]
                      for r in records})
    key = "\n".join([run_id, scanners.matcher_name, SCANNER_VERSION] + sorted(v.inputs_sha256 for v in verdicts))
    return store.Scan(sha256_text(key), run_id, ",".join(origins), SCANNER_VERSION,
                      scanners.matcher_name, control, verdicts, time.monotonic() - started,
                      datetime.now(timezone.utc))


@dataclass
class AuditResult:
    matcher: str
    records: int
    scanned: int
    skipped: int
    scans: list[dict[str, Any]] = field(default_factory=list)  # per scan of this invocation: run, control
    per_run: list[dict[str, Any]] = field(default_factory=list)  # leak_run_summary rows of the selection
    per_arm: list[dict[str, Any]] = field(default_factory=list)  # leak_arm_summary rows (all runs)
    seconds: dict[str, float] = field(default_factory=dict)
    warehouse: str = ""
    snapshot: str | None = None
    run_id: str = ""  # the leak audit's own run id in run_attempts (its rows carry the scanned runs' ids)
    kind: str = "leak-audit"
    run_ids: list[str] = field(default_factory=list)  # the gate runs whose records were selected

    def lines(self) -> list[str]:
        out = [f"leak audit ({self.matcher} matcher): {self.records} records selected, {self.scanned} scanned now, "
               f"{self.skipped} unchanged since their last scan (skipped)"]
        out += _table("run", "run_id", self.per_run)
        out += _table("arm (all runs)", "arm", self.per_arm)
        failed = [s for s in self.scans if not s["valid"]]
        out.append(f"controls: {len(self.scans) - len(failed)} of {len(self.scans)} scans valid"
                   + "".join(f"\n  run {s['run_id']}: {s['reason']}" for s in failed[:10]))
        if self.seconds:
            out.append("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in self.seconds.items()))
        if self.warehouse:
            out.append(f"warehouse: {self.warehouse}" + (f" (snapshot {self.snapshot})" if self.snapshot else "")
                       + "; views leak_run_summary, leak_arm_summary, leak_violations")
        return out


def _table(title: str, key: str, rows: list[dict[str, Any]]) -> list[str]:
    width = max([len(title)] + [len(str(r[key])) for r in rows])
    head = (f"{title:<{width}} {'records':>8} {'clean':>6} {'unverif.':>8} {'violation':>9} {'v1 flag':>8} "
            f"{'items v1':>13} {'items v2':>13}")
    out = [head]
    for r in rows:
        out.append(f"{str(r[key]):<{width}} {r['records']:>8} {r['clean']:>6} {r['unverifiable']:>8} "
                   f"{r['violation']:>9} {r['v1_flagged']:>8} {int(r['items_v1']):>13,} {int(r['items_v2']):>13,}")
    if rows:
        tot = {c: sum(int(r[c]) for r in rows) for c in ("records", "clean", "unverifiable", "violation",
                                                          "v1_flagged", "items_v1", "items_v2")}
        out.append(f"{'total':<{width}} {tot['records']:>8} {tot['clean']:>6} {tot['unverifiable']:>8} "
                   f"{tot['violation']:>9} {tot['v1_flagged']:>8} {tot['items_v1']:>13,} {tot['items_v2']:>13,}")
    return out


def material_sha256(materials: dict[str, TaskMaterial]) -> str:
    """One hash over the hidden material scanned for (each task's material hash)."""
    return sha256_text("\n".join(sorted(m.sha256 for m in materials.values())))


def records_sha256(gate: list[LeakRecord]) -> str:
    """One hash over the warehouse records scanned (each record's key and content hash)."""
    h = hashlib.sha256()
    for r in sorted(gate, key=lambda r: r.key):
        h.update(f"{r.key}\t{r.content_sha256}\n".encode())
    return h.hexdigest()


def load_tasks(*, suites_dir: str | None = None, humanevalplus: str | None = None, backend: str = "local",
               limit: int | None = None, task_ids: Iterable[str] | None = None) -> list:
    """The tasks whose hidden suites are the material: a suites directory (only ``task_ids`` read, when
    given), or HumanEval+ imported now."""
    from acceptgate.gates import run as gate_run

    if humanevalplus is None:
        tasks, _ = gate_run.load_tasks(backend=None, suites_dir=suites_dir, limit=limit,
                                       task_ids=None if task_ids is None else set(task_ids))
        return tasks
    from acceptgate.sandbox import backend as backends

    with backends.create(backend) as sandbox:
        tasks, _ = gate_run.load_tasks(backend=sandbox, humanevalplus=humanevalplus, limit=limit)
    return tasks


def parse_time(value: str | datetime | None, field: str) -> datetime | None:
    """A date (YYYY-MM-DD, midnight UTC) or an ISO 8601 time; InvalidInput naming the field."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput("not a date (YYYY-MM-DD) or ISO 8601 time", record=repr(value), field=f"--{field}") from None
    return _aware(parsed)
