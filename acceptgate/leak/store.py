"""Leak-audit rows for the warehouse: frames validated against expectations/, written per batch of runs.

A batch holds whole scans (every record of a run scanned together). It is validated (Great
Expectations + the suites' rules) before anything is written, then, in one transaction, each record's
old verdict and hits are replaced (the run ledger's stage write, ``acceptgate.pipelines.ledger``). So an interrupted backfill leaves complete scans only, and the
next one skips what is already there with the same inputs hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from acceptgate.leak.controls import ControlResult
from acceptgate.leak.verdicts import RecordVerdict

STAGE = "leak"
TABLES = ("leak_scans", "leak_verdicts", "leak_hits")
SCAN_COLUMNS = ["scan_id", "run_id", "origin", "scanner_version", "matcher", "records", "control_passed",
                "control_detail", "negative_passed", "negative_detail", "control_record", "items_v1", "items_v2",
                "wall_seconds", "scanned_at"]
VERDICT_COLUMNS = ["run_id", "arm", "block", "task_id", "scan_id", "origin", "started_at", "finished", "verdict",
                   "reasons", "texts", "v1_hits", "v1_flagged", "v2_hits", "v2_violations", "gt_as_visible", "items_v1",
                   "items_v2", "inputs_sha256"]
HIT_COLUMNS = ["run_id", "arm", "block", "task_id", "scanner", "hit_index", "seq", "author", "purpose", "start_char",
               "end_char", "needle", "kind", "case_index", "rule", "violation", "why_not"]


_HIT_ATTRS = [("seq", "seq"), ("author", "author"), ("purpose", "purpose"), ("start_char", "start"),
              ("end_char", "end"), ("needle", "needle"), ("kind", "kind"), ("case_index", "case_index"),
              ("rule", "rule"), ("violation", "violation"), ("why_not", "why_not")]


@dataclass
class Scan:
    """The records of one run scanned together, with the scan's controls."""

    scan_id: str
    run_id: str
    origin: str
    scanner_version: str
    matcher: str
    control: ControlResult
    verdicts: list[RecordVerdict]
    wall_seconds: float
    scanned_at: datetime

    @property
    def items_v1(self) -> int:
        return sum(v.v1.items for v in self.verdicts)

    @property
    def items_v2(self) -> int:
        return sum(v.v2.items for v in self.verdicts)


def frames(scans: list[Scan]) -> dict[str, pd.DataFrame]:
    scan_rows, verdict_rows = [], []
    hit_cols: dict[str, list] = {c: [] for c in HIT_COLUMNS}
    for s in scans:
        c = s.control
        scan_rows.append({"scan_id": s.scan_id, "run_id": s.run_id, "origin": s.origin,
                          "scanner_version": s.scanner_version, "matcher": s.matcher, "records": len(s.verdicts),
                          "control_passed": c.passed, "control_detail": c.detail, "negative_passed": c.negative_passed,
                          "negative_detail": c.negative_detail, "control_record": c.record,
                          "items_v1": s.items_v1, "items_v2": s.items_v2, "wall_seconds": round(s.wall_seconds, 4),
                          "scanned_at": s.scanned_at})
        for v in s.verdicts:
            r = v.record
            key = {"run_id": r.run_id, "arm": r.arm, "block": r.block, "task_id": r.task_id}
            verdict_rows.append({**key, "scan_id": s.scan_id, "origin": r.origin,
                                 "started_at": _utc(r.started_at), "finished": r.finished, "verdict": v.verdict,
                                 "reasons": list(v.reasons), "texts": v.v2.texts, "v1_hits": len(v.v1.hits),
                                 "v1_flagged": bool(v.v1.hits), "v2_hits": len(v.v2.hits),
                                 "v2_violations": len(v.v2.violations), "gt_as_visible": v.gt_as_visible,
                                 "items_v1": v.v1.items,
                                 "items_v2": v.v2.items, "inputs_sha256": v.inputs_sha256})
            for scanner, result in (("v1", v.v1), ("v2", v.v2)):
                n = len(result.hits)
                if not n:
                    continue
                for column, value in key.items():  # columns, not row dicts: a backfill stores millions
                    hit_cols[column] += [value] * n
                hit_cols["scanner"] += [scanner] * n
                hit_cols["hit_index"] += range(n)
                for column, attr in _HIT_ATTRS:
                    hit_cols[column] += [getattr(h, attr) for h in result.hits]
    ints = {"leak_scans": ("records", "items_v1", "items_v2"),
            "leak_verdicts": ("texts", "v1_hits", "v2_hits", "v2_violations", "items_v1", "items_v2"),
            "leak_hits": ("hit_index", "seq", "start_char", "end_char", "case_index")}
    out = {"leak_scans": pd.DataFrame(scan_rows, columns=SCAN_COLUMNS),
           "leak_verdicts": pd.DataFrame(verdict_rows, columns=VERDICT_COLUMNS),
           "leak_hits": pd.DataFrame(hit_cols, columns=HIT_COLUMNS)}
    for table, cols in ints.items():
        out[table] = out[table].astype({c: "Int64" for c in cols})
    out["leak_verdicts"]["started_at"] = pd.to_datetime(out["leak_verdicts"]["started_at"], utc=True)
    out["leak_scans"]["scanned_at"] = pd.to_datetime(out["leak_scans"]["scanned_at"], utc=True)
    return out


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


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
    """Within the stage's transaction: replace each record's old verdict and hits with the batch's."""
    keys = batch["leak_verdicts"][["run_id", "arm", "block", "task_id"]]
    con.register("_leak_keys", keys)
    try:
        for table in ("leak_hits", "leak_verdicts"):
            con.execute(_DELETE_RECORDS.format(table=table))
        # a scan none of whose verdicts is current any more is history nobody can join to: drop it
        con.execute("delete from leak_scans where scan_id not in (select distinct scan_id from leak_verdicts)")
        for table in ("leak_scans", "leak_verdicts", "leak_hits"):
            _insert(con, table, batch[table])
    finally:
        con.unregister("_leak_keys")
    return sum(len(f) for f in batch.values())


def _insert(con, table: str, frame: pd.DataFrame) -> None:
    if len(frame) == 0:
        return
    con.register("_leak_frame", frame)
    try:
        con.execute(f"insert or replace into {table} by name select * from _leak_frame")
    finally:
        con.unregister("_leak_frame")


def stored_inputs(con, keys: list[tuple[str, str, str, str]]) -> dict[tuple[str, str, str, str], str]:
    """inputs_sha256 of the stored verdicts of these records (absent: never scanned)."""
    if not keys:
        return {}
    frame = pd.DataFrame(keys, columns=["run_id", "arm", "block", "task_id"])
    con.register("_leak_want", frame)
    try:
        rows = con.execute("select v.run_id, v.arm, v.block, v.task_id, v.inputs_sha256 from leak_verdicts v "
                           "join _leak_want w using (run_id, arm, block, task_id)").fetchall()
    finally:
        con.unregister("_leak_want")
    return {tuple(r[:4]): r[4] for r in rows}


def summary_rows(con, run_ids: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """The views' rows: per run (the runs given, or all) and per arm (over all runs)."""
    where, params = ("where list_contains(?, run_id)", [run_ids]) if run_ids is not None else ("", [])
    runs = con.execute(f"select * from leak_run_summary {where} order by run_id", params).fetchdf()
    arms = con.execute("select * from leak_arm_summary order by arm").fetchdf()
    return {"runs": runs.to_dict("records"), "arms": arms.to_dict("records")}
