"""Leak-audit rows for the warehouse: the frames and their declared types (the writes are
``acceptgate.pipelines.leak``'s), validated against expectations/ and written per batch.

A batch holds whole scans (the records of one run in one batch read, scanned together). It is
validated (Great Expectations + the suites' rules) before anything is written, then, in one
transaction (the run ledger's stage write, ``acceptgate.pipelines.ledger``), each record's old
verdict, hit summaries and hits are replaced. So an interrupted backfill
leaves complete scans only, and the next one skips what is already there with the same inputs hash.
Frames are written as Arrow tables of declared types (``SCHEMAS``, mirroring the DDL): DuckDB never
guesses a column's type from a sample of rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd
import pyarrow as pa

from acceptgate.leak.controls import ControlResult
from acceptgate.leak.scanners import NEEDLES_KEPT
from acceptgate.leak.verdicts import RecordVerdict

STAGE = "leak"
SCAN_COLUMNS = ["scan_id", "run_id", "origin", "scanner_version", "matcher", "records", "control_passed",
                "control_detail", "negative_passed", "negative_detail", "control_record", "items_v1", "items_v2",
                "wall_seconds", "scanned_at"]
VERDICT_COLUMNS = ["run_id", "arm", "block", "task_id", "scan_id", "origin", "started_at", "finished", "verdict",
                   "reasons", "texts", "v1_hits", "v1_flagged", "v2_hits", "v2_violations", "gt_as_visible", "items_v1",
                   "items_v2", "inputs_sha256"]
RULE_COLUMNS = ["run_id", "arm", "block", "task_id", "scanner", "rule", "hits", "violations", "messages", "cases",
                "first_offsets", "needles", "distinct_needles"]
HIT_COLUMNS = ["run_id", "arm", "block", "task_id", "scanner", "hit_index", "seq", "author", "purpose", "start_char",
               "end_char", "needle", "kind", "case_index", "rule", "violation", "why_not"]


# The column types, declared (they mirror sql/030_leak.sql): DuckDB never infers a type from a sample of
# rows (a batch whose first rows all have empty ``reasons`` lists would otherwise be typed NULL[]).
_TS = pa.timestamp("us", tz="UTC")
SCHEMAS: dict[str, pa.Schema] = {
    "leak_scans": pa.schema([
        ("scan_id", pa.string()), ("run_id", pa.string()), ("origin", pa.string()),
        ("scanner_version", pa.string()), ("matcher", pa.string()), ("records", pa.int32()),
        ("control_passed", pa.bool_()), ("control_detail", pa.string()), ("negative_passed", pa.bool_()),
        ("negative_detail", pa.string()), ("control_record", pa.string()), ("items_v1", pa.int64()),
        ("items_v2", pa.int64()), ("wall_seconds", pa.float64()), ("scanned_at", _TS)]),
    "leak_verdicts": pa.schema([
        ("run_id", pa.string()), ("arm", pa.string()), ("block", pa.string()), ("task_id", pa.string()),
        ("scan_id", pa.string()), ("origin", pa.string()), ("started_at", _TS), ("finished", pa.bool_()),
        ("verdict", pa.string()), ("reasons", pa.list_(pa.string())), ("texts", pa.int32()),
        ("v1_hits", pa.int32()), ("v1_flagged", pa.bool_()), ("v2_hits", pa.int32()),
        ("v2_violations", pa.int32()), ("gt_as_visible", pa.bool_()), ("items_v1", pa.int64()),
        ("items_v2", pa.int64()), ("inputs_sha256", pa.string())]),
    "leak_hit_rules": pa.schema([
        ("run_id", pa.string()), ("arm", pa.string()), ("block", pa.string()), ("task_id", pa.string()),
        ("scanner", pa.string()), ("rule", pa.string()), ("hits", pa.int64()), ("violations", pa.int64()),
        ("messages", pa.int32()), ("cases", pa.int32()),
        ("first_offsets", pa.list_(pa.struct([("seq", pa.int32()), ("start_char", pa.int32()),
                                               ("end_char", pa.int32())]))),
        ("needles", pa.list_(pa.string())), ("distinct_needles", pa.int32())]),
    "leak_hits": pa.schema([
        ("run_id", pa.string()), ("arm", pa.string()), ("block", pa.string()), ("task_id", pa.string()),
        ("scanner", pa.string()), ("hit_index", pa.int32()), ("seq", pa.int32()), ("author", pa.string()),
        ("purpose", pa.string()), ("start_char", pa.int32()), ("end_char", pa.int32()), ("needle", pa.string()),
        ("kind", pa.string()), ("case_index", pa.int32()), ("rule", pa.string()), ("violation", pa.bool_()),
        ("why_not", pa.string())]),
}
_KEYS_SCHEMA = pa.schema([(c, pa.string()) for c in ("run_id", "arm", "block", "task_id")])


def typed(table: str, frame: pd.DataFrame) -> pa.Table:
    """The frame as an Arrow table of the declared column types (a wrong type is an error, not a guess)."""
    return pa.Table.from_pandas(frame[SCHEMAS[table].names], schema=SCHEMAS[table], preserve_index=False)


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
    scan_rows, verdict_rows, rule_rows = [], [], []
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
                                 "reasons": list(v.reasons), "texts": v.v2.texts, "v1_hits": v.v1.count,
                                 "v1_flagged": v.v1.count > 0, "v2_hits": len(v.v2.hits),
                                 "v2_violations": len(v.v2.violations), "gt_as_visible": v.gt_as_visible,
                                 "items_v1": v.v1.items,
                                 "items_v2": v.v2.items, "inputs_sha256": v.inputs_sha256})
            for scanner, result in (("v1", v.v1), ("v2", v.v2)):
                for rule, summary in result.rules.items():
                    needles = list(summary.needles)
                    rule_rows.append({**key, "scanner": scanner, "rule": rule, "hits": summary.hits,
                                      "violations": summary.violations, "messages": len(summary.messages),
                                      "cases": len(summary.cases),
                                      "first_offsets": [{"seq": a, "start_char": b, "end_char": c}
                                                        for a, b, c in summary.first],
                                      "needles": needles[:NEEDLES_KEPT], "distinct_needles": len(needles)})
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
            "leak_hit_rules": ("hits", "violations", "messages", "cases", "distinct_needles"),
            "leak_hits": ("hit_index", "seq", "start_char", "end_char", "case_index")}
    out = {"leak_scans": pd.DataFrame(scan_rows, columns=SCAN_COLUMNS),
           "leak_verdicts": pd.DataFrame(verdict_rows, columns=VERDICT_COLUMNS),
           "leak_hit_rules": pd.DataFrame(rule_rows, columns=RULE_COLUMNS),
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
