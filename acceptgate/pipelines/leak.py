"""The leak audit's warehouse side: the gate runs' records read back, the stored verdicts' inputs
hashes (a record unchanged since its last scan is skipped), each batch of scans written as a stage of
the leak audit's run in the run ledger (its records' old verdicts and hits replaced), the summary
views read, and the run published with the runs it scanned. ``acceptgate.leak`` computes."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Iterable

import duckdb
import pandas as pd

from acceptgate.store import warehouse
from acceptgate.leak import matcher as matchers
from acceptgate.leak import records as records_mod
from acceptgate.leak.audit import (AuditResult, Progress, ScannerCache, Selection, BATCH_RECORDS, _check_distinct,
                                   _gate_batches, material_sha256, read_history, records_sha256, scan_run,
                                   task_ids)
from acceptgate.leak.material import TaskMaterial
from acceptgate.leak.records import LeakRecord, RecordMessage
from acceptgate.leak.store import KEY_COLUMNS, STAGE, Scan, encoded, frames, typed_select
from acceptgate.leak.verdicts import VERDICTS, inputs_sha256
from acceptgate.pipelines import families, ledger, requests


# -- the gate runs' records ------------------------------------------------------------------------------

_SELECT = """
with runs as (
    select run_id, status, started_at from gate_runs
    where ($run_ids is null or list_contains($run_ids, run_id))
      and ($since is null or started_at >= $since) and ($until is null or started_at < $until)
),
decisions as (
    select d.run_id, d.arm, d.task_id, d.decision, d.attempts_used, d.visible_spec_hash,
           r.status, r.started_at
    from gate_decisions d join runs r using (run_id)
    where $arms is null or list_contains($arms, d.arm)
),
messages as (
    select run_id, arm, task_id,
           list({'seq': seq, 'attempt': attempt, 'author': author, 'purpose': purpose, 'role': role,
                 'text': text} order by seq) as messages
    from gate_messages where run_id in (select run_id from runs)
    group by all
),
final as (
    select d.*, m.messages, dl.hidden_spec_hash
    from decisions d
    left join messages m using (run_id, arm, task_id)
    left join deliveries dl using (run_id, arm, task_id)
)
select * from final order by run_id, arm, task_id
"""


def from_warehouse(con, *, run_ids: list[str] | None = None, since: datetime | None = None,
                   until: datetime | None = None, arms: list[str] | None = None) -> list[LeakRecord]:
    """Records of the gate runs selected (all by default), from an open DuckDB connection."""
    rows = con.execute(_SELECT, {"run_ids": run_ids, "since": since, "until": until, "arms": arms}).fetchall()
    out = []
    for (run_id, arm, task_id, decision, attempts_used, visible, status, started, messages, hidden) in rows:
        msgs = tuple(RecordMessage(m["seq"], m["attempt"], m["author"], m["purpose"], m["role"], m["text"])
                     for m in (messages or []))
        out.append(LeakRecord(run_id, arm, "", task_id, started, status == "ok", decision, attempts_used, msgs,
                              visible, hidden, origin="warehouse", run_status=status))
    return out


def warehouse_records(path: str | Path | None, selection: Selection) -> list[LeakRecord]:
    """The selected records of the gate runs stored in the warehouse (none if it does not exist yet)."""
    if not selection.warehouse_runs or path is None or not Path(path).exists():
        return []
    with warehouse.connect(path, read_only=True) as con:
        return from_warehouse(con, run_ids=list(selection.run_ids) if selection.run_ids else None,
                              since=selection.since, until=selection.until,
                              arms=list(selection.arms) if selection.arms else None)


def load_records(path: str | Path | None, selection: Selection,
                 history: records_mod.History | None) -> list[LeakRecord]:
    """The selection's gate records from the warehouse, none of them also in a history file."""
    gate = warehouse_records(path, selection)
    _check_distinct(gate, history)
    return gate


# -- skipping what is unchanged, writing the scans ---------------------------------------------

@dataclass
class Plan:
    runs: dict[str, list[LeakRecord]]  # run id -> records to scan
    skipped: dict[str, int]  # run id -> records unchanged since their last scan
    inputs: dict[tuple, str]

    @property
    def to_scan(self) -> int:
        return sum(len(v) for v in self.runs.values())


def plan(path: str | Path, records: list[LeakRecord], materials: dict[str, TaskMaterial], matcher_name: str,
         *, rescan: bool = False) -> Plan:
    inputs = {r.key: inputs_sha256(r, materials.get(r.task_id), matcher_name) for r in records}
    stored = {}
    if not rescan and Path(path).exists():
        with warehouse.connect(path, read_only=True) as con:
            stored = stored_inputs(con, list(inputs))
    runs: dict[str, list[LeakRecord]] = defaultdict(list)
    skipped: dict[str, int] = defaultdict(int)
    for r in records:
        if stored.get(r.key) == inputs[r.key]:
            skipped[r.run_id] += 1
        else:
            runs[r.run_id].append(r)
    return Plan(dict(runs), dict(skipped), inputs)


_DELETE_RECORDS = """
delete from {table} t using _leak_keys k
where t.run_id = k.run_id and t.arm = k.arm and t.block = k.block and t.task_id = k.task_id
"""


def write(run, scans: list[Scan], *, expectations_dir: str | Path | None = None) -> dict[str, int]:
    """Write a batch of scans through the run ledger (``run``, an ``acceptgate.pipelines.ledger.Run``):
    validated whole (quarantined on failure), then its records' verdicts and hits replaced in one
    transaction."""
    return run.write_stage(STAGE, frames(scans), write=replace_records, expectations_dir=expectations_dir).rows


def replace_records(con, batch: dict[str, pd.DataFrame]) -> int:
    """Within the stage's transaction: replace each record's old verdict, hit summaries and hits with
    the batch's, each column cast to its table's declared type."""
    con.register("_leak_keys", _keys(batch["leak_verdicts"][KEY_COLUMNS]))
    try:
        order = families.LEAK_AUDIT.tables  # scans, then the verdicts and hits that name them
        for table in reversed(order[1:]):  # the records' rows, hits first
            con.execute(_DELETE_RECORDS.format(table=table))
        # a scan none of whose verdicts is current any more is history nobody can join to: drop it
        con.execute("delete from leak_scans where scan_id not in (select distinct scan_id from leak_verdicts)")
        for table in order:
            _insert(con, table, batch[table])
    finally:
        _unregister(con, "_leak_keys")
    return sum(len(f) for f in batch.values())


def _keys(frame: pd.DataFrame) -> pd.DataFrame:
    # object columns of str: an empty frame's columns would otherwise have no type to join on
    return frame.astype(object) if len(frame) else pd.DataFrame({c: pd.Series([], dtype=object) for c in KEY_COLUMNS})


def _insert(con, table: str, frame: pd.DataFrame) -> None:
    if frame.empty:
        return
    columns = [(name, sql_type) for name, sql_type, *_ in con.execute(f"describe {table}").fetchall()]
    con.register("_leak_frame", encoded(frame, columns))
    try:
        con.execute(f"insert or replace into {table} by name {typed_select(columns, '_leak_frame')}")
    finally:
        _unregister(con, "_leak_frame")


def _unregister(con, name: str) -> None:
    # after a failed statement the transaction is aborted and unregister fails too: the first error matters
    try:
        con.unregister(name)
    except duckdb.Error:
        pass


def stored_inputs(con, keys: list[tuple[str, str, str, str]]) -> dict[tuple[str, str, str, str], str]:
    """inputs_sha256 of the stored verdicts of these records (absent: never scanned)."""
    if not keys:
        return {}
    con.register("_leak_want", _keys(pd.DataFrame(keys, columns=KEY_COLUMNS)))
    try:
        rows = con.execute("select v.run_id, v.arm, v.block, v.task_id, v.inputs_sha256 from leak_verdicts v "
                           "join _leak_want w using (run_id, arm, block, task_id)").fetchall()
    finally:
        _unregister(con, "_leak_want")
    return {tuple(r[:4]): r[4] for r in rows}


def summary_rows(con, run_ids: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """The views' rows: per run (the runs given, or all) and per arm (over all runs)."""
    where, params = ("where list_contains(?, run_id)", [run_ids]) if run_ids is not None else ("", [])
    runs = con.execute(f"select * from leak_run_summary {where} order by run_id", params).fetchdf()
    arms = con.execute("select * from leak_arm_summary order by arm").fetchdf()
    return {"runs": runs.to_dict("records"), "arms": arms.to_dict("records")}


# -- the audit as a run of the ledger -------------------------------------------------------------

def run_audit(path: str | Path, materials: dict[str, TaskMaterial], selection: Selection, *,
              matcher: str = matchers.DEFAULT, rescan: bool = False, progress: Progress | None = None,
              batch_records: int = BATCH_RECORDS, publish: bool = True,
              expectations_dir: str | Path | None = None, kind: str = "leak-audit",
              history: records_mod.History | None = None, gate: list[LeakRecord] | None = None,
              scan_many: Callable[[list[tuple[str, list[LeakRecord]]]], list[Scan]] | None = None) -> AuditResult:
    """Scan the selection into the warehouse (already migrated) and return the summary.

    The scan is a run of the run ledger (``kind``: leak-audit or leak-backfill; run id from the inputs'
    hashes): its attempt is recorded before the first write, each batch is a stage write, and
    ``publish`` (else ``publish_result`` later) publishes it with the scanned runs.
    ``history``: the selection's history files already read (``read_history``, e.g. by the command's
    input check), so they are read once; without it they are read here. Either way it is closed here.
    ``gate``: the selection's warehouse records already loaded (``load_records``), else loaded here.
    ``materials``: at least the hidden material of the tasks the selected records name (``task_ids``);
    only theirs is read, and only theirs goes into the run id.
    ``scan_many``: scans a batch's runs elsewhere (record shards on a cluster, ``acceptgate.pipelines.shards``),
    the scans in the order given; the writes stay here.
    """
    matchers.check_name(matcher)
    seconds: dict[str, float] = {}
    t0 = time.monotonic()
    try:
        if history is None:
            history = read_history(selection)
        if gate is None:
            gate = load_records(path, selection, history)
        seconds["load"] = time.monotonic() - t0
        needed = task_ids(selection, gate, history)
        materials = {t: m for t, m in materials.items() if t in needed}
        result = AuditResult(matcher, 0, 0, 0, warehouse=str(path), kind=kind,
                             run_id=requests.leak_run_id(kind, matcher, selection, material_sha256(materials),
                                                         records_sha256(gate),
                                                         history.sha256 if history is not None else None))
        recorded = families.of_kind(kind).start(path, result.run_id)
        with recorded.guard(STAGE):
            _scan_all(recorded, materials, selection, gate, history, result, matcher=matcher, rescan=rescan,
                      progress=progress, batch_records=batch_records, expectations_dir=expectations_dir,
                      seconds=seconds, scan_many=scan_many)
            with warehouse.connect(path, read_only=True) as con:
                rows = summary_rows(con, result.run_ids)
            result.per_run, result.per_arm = rows["runs"], rows["arms"]
    finally:
        if history is not None:
            history.close()
    if publish:
        p0 = time.monotonic()
        publish_result(path, result)  # the leak audit's run and the scanned runs' leak rows
        seconds["publish"] = time.monotonic() - p0
    seconds["total"] = time.monotonic() - t0
    result.seconds = seconds
    return result


def with_flow_times(result: AuditResult, *, started: float, material: float, publish: float,
                    load: float = 0.0) -> AuditResult:
    """The flow's own parts around the scan (the records' ``load`` before the hidden material's, the
    publish) and a total that is the flow's whole wall time, from ``started`` (time.monotonic())."""
    parts = {k: v for k, v in (result.seconds or {}).items() if k != "total"}
    parts["load"] = parts.get("load", 0.0) + load
    result.seconds = {"hidden material": material, **parts, "publish": publish, "total": time.monotonic() - started}
    return result


def _scan_all(recorded: ledger.Run, materials, selection, gate, history, result: AuditResult, *, matcher,
              rescan, progress, batch_records, expectations_dir, seconds, scan_many=None) -> None:
    path = recorded.path
    scanners = ScannerCache(materials, matcher)
    total = len(gate) + (history.records if history is not None else 0)  # before the selection's filter
    batches = _gate_batches(gate, batch_records)
    if history is not None:
        batches = chain(batches, history.batches(batch_records))
    run_ids: set[str] = set()
    read = 0
    plan_seconds = scan_seconds = write_seconds = 0.0
    for batch in batches:
        read += len(batch)
        batch = [r for r in batch if selection.keeps(r)]
        if not batch:
            continue
        result.records += len(batch)
        run_ids.update(r.run_id for r in batch)
        p0 = time.monotonic()
        todo = plan(path, batch, materials, matcher, rescan=rescan)
        plan_seconds += time.monotonic() - p0
        result.scanned += todo.to_scan
        result.skipped += sum(todo.skipped.values())
        scans = []
        s0 = time.monotonic()
        ordered = sorted(set(todo.runs) | set(todo.skipped))
        pending = [(run_id, todo.runs[run_id]) for run_id in ordered if todo.runs.get(run_id)]
        ready = dict(zip([r for r, _ in pending], scan_many(pending))) if scan_many and pending else {}
        for run_id in ordered:
            run_records = todo.runs.get(run_id, [])
            skipped = todo.skipped.get(run_id, 0)
            if not run_records:
                if progress:
                    progress(run_id, read, total, f"{skipped} records unchanged, skipped")
                continue
            scan = ready[run_id] if run_id in ready else scan_run(run_id, run_records, scanners)
            scans.append(scan)
            result.scans.append({"run_id": run_id, "valid": scan.control.valid, "reason": scan.control.reason,
                                 "detail": scan.control.detail})
            if progress:
                counts = Counter(v.verdict for v in scan.verdicts)
                progress(run_id, read, total, ", ".join(f"{k} {counts[k]}" for k in VERDICTS)
                         + (f"; {skipped} unchanged" if skipped else ""))
        scanners.forget()
        scan_seconds += time.monotonic() - s0
        if scans:
            w0 = time.monotonic()
            write(recorded, scans, expectations_dir=expectations_dir)
            write_seconds += time.monotonic() - w0
    seconds["plan"], seconds["scan"], seconds["write"] = plan_seconds, scan_seconds, write_seconds
    result.run_ids = sorted(run_ids)


def publish_result(path: str | Path, result: AuditResult, run_ids: Iterable[str] | None = None) -> AuditResult:
    """End the leak audit's run and publish it with the runs whose leak rows it holds (default: every
    run selected now)."""
    if run_ids is None:
        run_ids = result.run_ids
    recorded = families.of_kind(result.kind).attach(path, result.run_id)
    result.snapshot = str(recorded.finish(also_publish=list(run_ids)))
    return result
