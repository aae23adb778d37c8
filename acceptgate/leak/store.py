"""Leak-audit rows for the warehouse: the frames and their declared types (the writes are
``acceptgate.pipelines.leak``'s), validated against expectations/ and written per batch.

A batch holds whole scans (the records of one run in one batch read, scanned together). It is
validated (Great Expectations + the suites' rules) before anything is written, then, in one
transaction (the run ledger's stage write, ``acceptgate.pipelines.ledger``), each record's old
verdict, hit summaries and hits are replaced. So an interrupted backfill
leaves complete scans only, and the next one skips what is already there with the same inputs hash.
Each frame is written cast to its table's declared column types (``typed_select``): DuckDB never
guesses a column's type from a sample of rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd

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


# The column types are the DDL's (sql/030_leak.sql, 091_leak_hit_rules.sql), read from the table itself
# at write time: each frame column is cast to its table column's type, and nested values (lists, lists of
# structs) arrive as JSON text cast to that type. DuckDB never infers a type from a sample of rows (a batch
# whose first rows all have empty ``reasons`` lists would otherwise be typed NULL[]).
KEY_COLUMNS = ["run_id", "arm", "block", "task_id"]


def is_nested(sql_type: str) -> bool:
    return sql_type.endswith("]") or sql_type.startswith(("STRUCT", "MAP"))


def encoded(frame: pd.DataFrame, columns: list[tuple[str, str]]) -> pd.DataFrame:
    """The frame's columns in the table's order, nested ones as JSON text (``typed_select`` casts them)."""
    out = frame[[name for name, _ in columns]].copy()
    for name, sql_type in columns:
        if is_nested(sql_type):
            out[name] = pd.Series([None if v is None else json.dumps(v if isinstance(v, dict) else list(v))
                                   for v in out[name]], index=out.index, dtype=object)
    return out


def typed_select(columns: list[tuple[str, str]], source: str) -> str:
    """``select`` of ``source``'s columns, each cast to its declared type (a wrong value is an error)."""
    casts = [f'cast("{name}"{"::json" if is_nested(t) else ""} as {t}) as "{name}"' for name, t in columns]
    return f"select {', '.join(casts)} from {source}"


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
