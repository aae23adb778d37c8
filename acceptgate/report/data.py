"""What the report shows, read from the published snapshot (never the live file a run may be writing).

Sections are declared once (``SECTIONS``). The gate and audit sections read this project's tables;
the V4V, leak and statistics sections show every table or view whose name starts with their prefix,
so they fill in as those stages' tables land, and say "not run yet" while none exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from acceptgate import warehouse
from acceptgate.errors import InvalidInput

MAX_ROWS = 50  # per generic table: the page is a summary, the warehouse has the rest
CONFIDENCE = 0.95


@dataclass(frozen=True)
class SectionSpec:
    key: str
    title: str
    prefixes: tuple[str, ...] = ()  # generic sections: tables/views whose names start with these
    contains: tuple[str, ...] = ()  # ... or contain these


SECTIONS = (
    SectionSpec("runs", "Runs"),
    SectionSpec("false-delivery", "False delivery by arm"),
    SectionSpec("audit", "Audit executions by verdict"),
    SectionSpec("v4v", "V4V certification", prefixes=("v4v_",)),
    SectionSpec("leak", "Leak verdicts", prefixes=("leak_",)),
    SectionSpec("agreement", "Agreement with reference evaluators and statistics", prefixes=("stats_",),
                contains=("agreement",)),
)


@dataclass
class Section:
    key: str
    title: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # caption -> frame
    note: str = ""

    @property
    def ran(self) -> bool:
        return any(len(f) for f in self.tables.values())


@dataclass
class ReportData:
    snapshot: Path
    published_at: str
    sections: list[Section]

    def section(self, key: str) -> Section:
        return next(s for s in self.sections if s.key == key)


def _relations(con) -> set[str]:
    return {r[0] for r in con.execute(
        "select table_name from information_schema.tables where table_schema = 'main'").fetchall()}


def _frame(con, sql: str, params=None) -> pd.DataFrame:
    return con.execute(sql, params or []).df()


def wilson(successes: int, n: int) -> tuple[float | None, float | None]:
    if not n:
        return None, None
    from statsmodels.stats.proportion import proportion_confint  # heavy import: only when there are rates

    low, high = proportion_confint(successes, n, alpha=1 - CONFIDENCE, method="wilson")
    return float(low), float(high)


def false_delivery(con) -> pd.DataFrame:
    """Per gate run and arm: rates over all tasks and over delivered tasks, each with its Wilson 95% CI."""
    rates = _frame(con, "select r.started_at, g.* from gate_rates g join gate_runs r using (run_id) "
                        "order by r.started_at desc, g.run_id, g.arm")
    rows = []
    for rec in rates.to_dict("records"):
        lo_all, hi_all = wilson(rec["false_deliveries"], rec["tasks"])
        lo_del, hi_del = wilson(rec["false_deliveries"], rec["delivered"])
        rows.append({"run_id": rec["run_id"], "arm": rec["arm"], "tasks": rec["tasks"],
                     "delivered": rec["delivered"], "refused": rec["refused"],
                     "false_deliveries": rec["false_deliveries"],
                     "false_over_all": rec["false_rate_over_all_tasks"], "all_ci_low": lo_all, "all_ci_high": hi_all,
                     "false_over_delivered": rec["false_rate_over_delivered"],
                     "delivered_ci_low": lo_del, "delivered_ci_high": hi_del})
    return pd.DataFrame(rows)


def _pct(rate, low, high) -> str:
    if rate is None or pd.isna(rate):
        return "n/a (no tasks)"
    return f"{rate:.1%} [{low:.1%}, {high:.1%}]"


def false_delivery_display(frame: pd.DataFrame) -> pd.DataFrame:
    """The same rows for reading: each rate with its interval in one cell, the denominator named."""
    if frame.empty:
        return frame
    out = frame[["run_id", "arm", "tasks", "delivered", "refused", "false_deliveries"]].copy()
    out["false / all tasks [95% CI]"] = [_pct(r, lo, hi) for r, lo, hi in
                                         zip(frame.false_over_all, frame.all_ci_low, frame.all_ci_high)]
    out["false / delivered [95% CI]"] = [_pct(r, lo, hi) for r, lo, hi in
                                         zip(frame.false_over_delivered, frame.delivered_ci_low, frame.delivered_ci_high)]
    return out


def _runs(con, rels: set[str]) -> dict[str, pd.DataFrame]:
    out = {}
    if "runs" in rels:
        out["audit runs"] = _frame(con, "select run_id, dataset, backend, status, attempts, started_at, "
                                        "round(wall_seconds, 1) as wall_seconds from runs order by started_at desc "
                                        f"limit {MAX_ROWS}")
    if "gate_runs" in rels:
        out["gate runs"] = _frame(con, "select run_id, source, arms, task_count, backend, status, started_at, "
                                       "round(wall_seconds, 1) as wall_seconds from gate_runs "
                                       f"order by started_at desc limit {MAX_ROWS}")
    return out


def _audit(con, rels: set[str]) -> dict[str, pd.DataFrame]:
    if "executions_by_verdict" not in rels or "runs" not in rels:
        return {}
    latest = con.execute("select run_id from runs where status = 'ok' order by finished_at desc limit 1").fetchone()
    if not latest:
        return {}
    frame = _frame(con, "select suite, role, verdict, executions, share from executions_by_verdict "
                        "where run_id = ? order by suite, role, executions desc", [latest[0]])
    return {f"latest audit run {latest[0]}": frame}


def _generic(con, rels: set[str], spec: SectionSpec) -> dict[str, pd.DataFrame]:
    names = sorted(n for n in rels if n.startswith(spec.prefixes or ("\0",)) or any(c in n for c in spec.contains))
    return {name: _frame(con, f'select * from "{name}" limit {MAX_ROWS}') for name in names}


def collect(snapshot: str | Path) -> ReportData:
    """Read every section from a published snapshot (``<warehouse>.snapshot.duckdb``)."""
    snapshot = Path(snapshot)
    if not snapshot.is_file():
        raise InvalidInput("no published snapshot here: run a flow (acceptgate audit, gate, serve) first",
                           source=str(snapshot))
    with warehouse.connect(snapshot, read_only=True) as con:
        rels = _relations(con)
        published = (con.execute("select max(published_at) from snapshot_info").fetchone()[0]
                     if "snapshot_info" in rels else None)
        sections = []
        for spec in SECTIONS:
            section = Section(spec.key, spec.title)
            if spec.key == "runs":
                section.tables = _runs(con, rels)
            elif spec.key == "false-delivery":
                if {"gate_rates", "gate_runs"} <= rels:
                    section.tables = {"per gate run and arm (Wilson 95% CIs)": false_delivery(con)}
            elif spec.key == "audit":
                section.tables = _audit(con, rels)
            else:
                section.tables = _generic(con, rels, spec)
            if not section.ran:
                section.note = "not run yet"
            sections.append(section)
        from acceptgate.report import seed004  # seed 004's tables, one section each (issue 22)

        sections += seed004.sections(con, rels)
    return ReportData(snapshot, str(published) if published else "unknown", sections)
