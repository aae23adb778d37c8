"""What the report shows, read from the published snapshot (never the live file a run may be writing).

Every section puts its summary first (the table a reader needs), then a chart where one helps, then
the ``acceptgate sql`` queries that give the detail (the page never dumps a raw table), and says when
it shows only part of its rows. A section is a ``SectionSpec`` with a collector; other modules add
theirs with ``register()`` (e.g. ``acceptgate.report.seed004``), and the HTML and markdown renderers
draw every section the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd
from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput
from acceptgate.gates.leaky import ARM as DEMO_ARM, DEMO_NOTE, label_arm
from acceptgate.pipelines.families import AUDIT, CERTIFY, GATE, STATS

MAX_ROWS = 20  # rows per summary table; the rest is one `acceptgate sql` away (and the page says so)
CONFIDENCE = 0.95


@dataclass
class Chart:
    """Horizontal intervals: one row per label, a value and its [low, high] (percent), on [lo, hi]."""
    frame: pd.DataFrame  # columns label, value, low, high
    xlabel: str
    caption: str
    xlim: tuple[float, float] = (0.0, 100.0)
    zero_line: bool = False


@dataclass
class Section:
    key: str
    title: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # caption -> frame, summary first
    note: str = ""  # why the section is empty
    notes: list[str] = field(default_factory=list)  # caveats and truncations, shown under the tables
    charts: list[Chart] = field(default_factory=list)
    queries: list[tuple[str, str]] = field(default_factory=list)  # (what it gives, SQL for `acceptgate sql`)
    more: dict[str, pd.DataFrame] = field(default_factory=dict)  # caption -> frame, shown folded, one to open

    @property
    def ran(self) -> bool:
        return any(len(f) for f in self.tables.values())


Collector = Callable[["Reader", Section], None]


@dataclass(frozen=True)
class SectionSpec:
    key: str
    title: str
    collect: Collector
    empty: str = "not run yet"  # the note when the collector found nothing


@dataclass
class ReportData:
    snapshot: Path
    published_at: str
    sections: list[Section]

    def section(self, key: str) -> Section:
        return next(s for s in self.sections if s.key == key)


class Reader:
    """The snapshot's connection and the relations it has."""

    def __init__(self, con) -> None:
        self.con = con
        self.rels = {r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'main'").fetchall()}

    def has(self, *names: str) -> bool:
        return set(names) <= self.rels

    def frame(self, sql: str, params=None) -> pd.DataFrame:
        return self.con.execute(sql, params or []).df()

    def scalar(self, sql: str, params=None):
        row = self.con.execute(sql, params or []).fetchone()
        return row[0] if row else None


def limited(section: Section, frame: pd.DataFrame, total: int, what: str, query: str) -> pd.DataFrame:
    """The first MAX_ROWS rows; when there are more, say so and give the query for all of them."""
    if total > len(frame):
        section.notes.append(f"{what}: showing {len(frame)} of {total} rows; all of them: "
                             f"acceptgate sql \"{query}\"")
    return frame


def wilson(successes: int, n: int) -> tuple[float | None, float | None]:
    """Wilson 95% interval, clipped to [0, 1] and around the rate (at 0 % and 100 % a bound comes out a
    rounding error off, e.g. 1.4e-17 above a rate of 0, which a chart's error bar refuses)."""
    if not n:
        return None, None
    from statsmodels.stats.proportion import proportion_confint  # heavy import: only when there are rates

    low, high = proportion_confint(successes, n, alpha=1 - CONFIDENCE, method="wilson")
    rate = successes / n
    return min(max(float(low), 0.0), rate), max(min(float(high), 1.0), rate)


def _demo(section: Section, arms) -> None:
    if DEMO_ARM in set(arms):
        section.notes.append(DEMO_NOTE)


# -- sections -------------------------------------------------------------------------------------

def _runs(r: Reader, s: Section) -> None:
    kinds = [(AUDIT, "run_id, dataset, backend, status, attempts, started_at, round(wall_seconds, 1) as wall_seconds"),
             (GATE, "run_id, source, arms, task_count, backend, status, started_at, round(wall_seconds, 1) as wall_seconds"),
             (CERTIFY, "*"),
             (STATS, "run_id, kind, source_run_id, measures, seed, resamples, written_at")]
    for family, cols in kinds:
        kind, table = family.kind, family.table
        if not r.has(table):
            continue
        order = "written_at" if family is STATS else "started_at"
        total = r.scalar(f"select count(*) from {table}")
        if not total:
            continue
        if family is CERTIFY:
            cols = ", ".join(c for c in ("run_id", "task_count", "verifiers", "k", "backend", "status", "started_at")
                             if c in r.frame("select * from v4v_runs limit 0").columns)
        query = f"select {cols} from {table} order by {order} desc"
        s.tables[f"{kind} runs (newest first)"] = limited(s, r.frame(query + f" limit {MAX_ROWS}"), total,
                                                          f"{kind} runs", query)
    if r.has("run_attempts"):
        s.queries.append(("every attempt of every run, with its status (ok, failed, interrupted) and failure",
                          "select flow, run_id, attempt, status, last_stage, failure from run_attempts "
                          "order by started_at desc"))


def false_delivery(con) -> pd.DataFrame:
    """Per gate run and arm: rates over all tasks and over delivered tasks, each with its Wilson 95% CI."""
    rates = con.execute("select r.started_at, g.* from gate_rates g join gate_runs r using (run_id) "
                        "order by r.started_at desc, g.run_id, g.arm").df()
    rows = []
    for rec in rates.to_dict("records"):
        lo_all, hi_all = wilson(rec["false_deliveries"], rec["tasks"])
        lo_del, hi_del = wilson(rec["false_deliveries"], rec["delivered"])
        rows.append({"run_id": rec["run_id"], "arm": rec["arm"], "tasks": rec["tasks"],
                     "delivered": rec["delivered"], "refused": rec["refused"],
                     "false_deliveries": rec["false_deliveries"],
                     "false_over_all": rec["false_rate_over_all_tasks"], "all_ci_low": lo_all, "all_ci_high": hi_all,
                     "false_over_delivered": rec["false_rate_over_delivered"],
                     "delivered_ci_low": lo_del, "delivered_ci_high": hi_del,
                     # beside every rate, the measured FPR_h of the V that gated it (a snapshot from before
                     # the view had it: not measured)
                     "v_fpr_h": rec.get("v_fpr_h"), "v_fpr_h_tasks": rec.get("v_fpr_h_tasks"),
                     "rate_kind": rec.get("rate_kind") or ("no gate" if rec["arm"] == "off" else "gate")})
    return pd.DataFrame(rows)


def _fpr_h(value, tasks, arm: str) -> str:
    if arm == "off":
        return "- (no V: ungated)"
    if value is None or pd.isna(value):
        return "not measured (--no-certify)"
    return f"{value:.1f}% ({int(tasks)} tasks)"


def _pct(rate, low, high) -> str:
    if rate is None or pd.isna(rate):
        return "n/a (no tasks)"
    return f"{rate:.1%} [{low:.1%}, {high:.1%}]"


def false_delivery_display(frame: pd.DataFrame) -> pd.DataFrame:
    """The same rows for reading: each rate with its interval in one cell, the denominator named, the
    demonstration arm labelled."""
    if frame.empty or "false_over_all" not in frame.columns:
        return frame
    # the reader's columns first (a phone shows the left of a wide table), the run id last
    out = pd.DataFrame({"arm": [label_arm(a) for a in frame["arm"]]})
    out["false / all tasks [95% CI]"] = [_pct(r, lo, hi) for r, lo, hi in
                                         zip(frame.false_over_all, frame.all_ci_low, frame.all_ci_high)]
    out["false / delivered [95% CI]"] = [_pct(r, lo, hi) for r, lo, hi in
                                         zip(frame.false_over_delivered, frame.delivered_ci_low, frame.delivered_ci_high)]
    out["V FPR_h (measured)"] = [_fpr_h(v, n, a) for v, n, a in zip(frame.v_fpr_h, frame.v_fpr_h_tasks, frame.arm)]
    out["kind"] = frame["rate_kind"].to_numpy()
    for col in ("tasks", "delivered", "refused", "false_deliveries", "run_id"):
        out[col] = frame[col].to_numpy()
    return out


def _false_delivery(r: Reader, s: Section) -> None:
    if not r.has("gate_rates", GATE.table):
        return
    frame = false_delivery(r.con)
    if frame.empty:
        return
    runs = list(dict.fromkeys(frame["run_id"]))
    shown = frame[frame["run_id"].isin(runs[:5])]
    if len(runs) > 5:
        s.notes.append(f"showing the newest 5 of {len(runs)} gate runs; all of them: "
                       "acceptgate sql \"select * from gate_rates order by run_id, arm\"")
    s.tables["per gate run and arm (Wilson 95% CIs; newest run first)"] = shown.reset_index(drop=True)
    latest = frame[frame["run_id"] == runs[0]]
    s.charts.append(Chart(pd.DataFrame({"label": [label_arm(a, short=True) for a in latest["arm"]],
                                        "value": latest["false_over_all"].astype(float) * 100,
                                        "low": latest["all_ci_low"].astype(float) * 100,
                                        "high": latest["all_ci_high"].astype(float) * 100}),
                          "false deliveries, % of all tasks (Wilson 95% interval)", f"gate run {runs[0]}"))
    _demo(s, frame["arm"])
    s.queries += [("each task's delivery and GT result in a run",
                   f"select arm, task_id, delivered, refused, false_delivery from deliveries where run_id = '{runs[0]}'"),
                  ("tasks paired across arms", f"select * from deliveries_paired where run_id = '{runs[0]}'")]


MORE_AUDITS = 5  # other audit runs offered, folded, beside the main one


def _audit(r: Reader, s: Section) -> None:
    """The main job first -- the newest finished audit of all the tasks (no --limit; else the widest
    limit) -- so a small run after it (a nightly's) does not take its place; the newest others folded."""
    if not r.has("executions_by_verdict", AUDIT.table):
        return
    runs = [row[0] for row in r.con.execute(
        "select run_id from runs where status = 'ok' "
        "order by task_limit is null desc, task_limit desc nulls first, finished_at desc").fetchall()]
    if not runs:
        return
    query = ("select suite, role, verdict, executions, share from executions_by_verdict where run_id = ? "
             "order by suite, role, executions desc")
    main, others = runs[0], runs[1:]
    limit = r.scalar("select task_limit from runs where run_id = ?", [main])
    scope = "all tasks" if limit is None else f"--limit {limit}"
    s.tables[f"audit run {main} ({scope}; the main job)"] = r.frame(query, [main])
    newest = [row[0] for row in r.con.execute("select run_id, task_limit from runs where status = 'ok' "
                                              "order by finished_at desc").fetchall() if row[0] != main]
    for run_id in newest[:MORE_AUDITS]:
        limit = r.scalar("select task_limit from runs where run_id = ?", [run_id])
        s.more[f"audit run {run_id} ({'all tasks' if limit is None else f'--limit {limit}'})"] = r.frame(query, [run_id])
    if len(others) > MORE_AUDITS:
        s.notes.append(f"{len(others) - MORE_AUDITS} older audit runs not shown: acceptgate sql "
                       "\"select * from executions_by_verdict where run_id = 'RUN'\"")
    s.queries.append(("every execution of the main run with its verdict",
                      f"select task_id, suite, role, verdict from executions where run_id = '{main}'"))


def _v4v(r: Reader, s: Section) -> None:
    if not r.has("v4v_verifier_summary"):
        return
    latest = (r.scalar("select run_id from v4v_runs where run_id in (select run_id from v4v_verifier_summary) "
                       "order by started_at desc limit 1") if r.has(CERTIFY.table) else
              r.scalar("select max(run_id) from v4v_verifier_summary"))
    if not latest:
        return
    if r.has("v4v_task_certificates"):
        done = r.frame("select count(*) as tasks, count(*) filter (where certified) as certified "
                       "from v4v_task_certificates where run_id = ?", [latest])
        if int(done["tasks"].iloc[0]):
            s.notes.append(f"task certification (GT with the construction labels, six gates): "
                           f"{int(done['certified'].iloc[0])} of {int(done['tasks'].iloc[0])} tasks certified; the "
                           "other verifiers are measured on the certified tasks (why a task failed: acceptgate sql "
                           f"\"select task_id, reason from v4v_task_certificates where run_id = '{latest}' and not "
                           "certified\"; GT's disagreements with labels: v4v_findings)")
    has_role = "role" in r.frame("select * from v4v_verifier_summary limit 0").columns
    extra = ("coalesce(role, 'measured') as role, round(heldout_ba_norm, 1) as heldout_ba_norm, " if has_role else "")
    summary = r.frame("select verifier, round(ba_norm, 1) as ba_norm, round(tpr, 1) as tpr, round(tnr, 1) as tnr, "
                      f"diagnosis, {extra}gates_passed || '/' || gates_applicable as gates_passed, family, tasks, "
                      "round(fpr_attack, 1) as fpr_h, round(100 * mutation_score, 1) as mutation_pct, "
                      "errors_crash + errors_timeout + errors_malformed as errors "
                      "from v4v_verifier_summary where run_id = ? order by ba_norm desc nulls last, verifier", [latest])
    s.tables[f"verifiers of certification run {latest} (best BA_norm first)"] = summary
    runs = r.scalar("select count(distinct run_id) from v4v_verifier_summary")
    if runs > 1:
        s.notes.append(f"the newest of {runs} certification runs; the others: acceptgate sql \"select * from "
                       "v4v_verifier_summary order by run_id, verifier\"")
    s.notes.append("TPR: legal candidates accepted; TNR: illegal candidates rejected; BA_norm = TPR + TNR - 100 "
                   "(unweighted means of per-task rates, %, median-BA round); FPR_h: attacks accepted; held-out "
                   "BA_norm: on the part of each pool made from the run's secret seed (a memoriser of the published "
                   "part is all-accept there). A crash, timeout or malformed answer stays in the denominator with no "
                   "credit. Labels come from construction only; GT (the source) passes the six gates on a certified "
                   "task by definition, so its row is its certification, not a measurement.")
    chart = summary.dropna(subset=["ba_norm"])
    if not chart.empty:
        s.charts.append(Chart(pd.DataFrame({"label": chart["verifier"], "value": chart["ba_norm"],
                                            "low": chart["ba_norm"], "high": chart["ba_norm"]}),
                              "BA_norm (TPR + TNR - 100), %", f"certification run {latest}", xlim=(-100, 100),
                              zero_line=True))
    s.queries += [("which gate failed on which task",
                   f"select * from v4v_gates where run_id = '{latest}' and status = 'fail' order by verifier, task_id"),
                  ("per-task TPR / TNR / BA_norm",
                   f"select task_id, verifier, tpr, tnr, ba_norm from v4v_task_metrics where run_id = '{latest}'"),
                  ("every decision (candidate, verifier, label, decision)",
                   f"select * from v4v_decisions where run_id = '{latest}' limit 100"),
                  ("pool composition", f"select * from v4v_pool_composition where run_id = '{latest}'")]


def _leak(r: Reader, s: Section) -> None:
    if not r.has("leak_verdicts", "leak_run_summary"):
        return
    total = r.scalar("select count(*) from leak_run_summary")
    if not total:
        return
    controls = ""
    if r.has("leak_scans"):
        controls = (", (select string_agg(distinct case when control_passed and negative_passed then 'passed' "
                    "else 'FAILED' end, ', ') from leak_scans c where c.run_id = s.run_id) as controls")
    query = ("select run_id, violation, unverifiable, clean, records" + controls + ", v1_flagged, items_v1, items_v2" +
             " from leak_run_summary s order by started_at desc nulls last, run_id")
    s.tables["verdicts per run (with the planted-leak and negative controls)"] = limited(
        s, r.frame(query + f" limit {MAX_ROWS}"), total, "runs", query)
    arms = r.frame("select arm, violation, unverifiable, clean, records, runs, v1_flagged, items_v2 "
                   "from leak_arm_summary order by violation desc, arm")
    _demo(s, arms["arm"])
    arms["arm"] = [label_arm(a) for a in arms["arm"]]
    s.tables["verdicts per arm, over every run scanned"] = arms
    s.notes.append("v2 (authorship) decides the verdict: hidden-test material in text the harness wrote is a "
                   "violation; v1_flagged counts what the keyword scan (v1) would have flagged. A failed control "
                   "makes every record of its scan unverifiable.")
    if r.has("leak_violations"):
        n = r.scalar("select count(*) from leak_violations")
        if n:
            q = "select run_id, arm, task_id, purpose, rule, needle, context from leak_violations"
            s.tables["violations (the harness's text around the hidden material)"] = limited(
                s, r.frame(q + f" order by run_id, arm, task_id limit {min(MAX_ROWS, 10)}"), n, "violations", q)
    s.queries += [("every verdict with its reasons", "select * from leak_verdicts order by run_id, arm, task_id"),
                  ("every hit of both scanners", "select * from leak_hits limit 100")]


def _stats(r: Reader, s: Section) -> None:
    if not r.has("stats_effects", STATS.table):
        return
    if not r.scalar("select count(*) from stats_effects"):
        s.note = ("no statistics published to this snapshot: run 'acceptgate stats' (its rows reach the "
                  "report when its run is published)")
        return
    latest = r.scalar("select run_id from stats_runs order by written_at desc limit 1")
    effects = r.frame("select e.measure, e.config, e.condition_a, e.condition_b, e.n_units, e.rate_a, e.rate_b, "
                      "e.estimate, e.ci_low, e.ci_high, e.p, e.p_holm, e.confidence, e.source_run_id, s.kind "
                      "from stats_effects e join stats_runs s using (run_id) where e.run_id = ? "
                      "order by e.measure, e.config", [latest])
    show = pd.DataFrame({
        "measure": effects["measure"].str.replace("_", " "),
        "compared (a vs b)": [f"{label_arm(a, short=True)} vs {b}" if k == "gate" else f"{c}: {a} vs {b}"
                              for a, b, c, k in zip(effects.condition_a, effects.condition_b, effects.config,
                                                    effects.kind)],
        "Delta = b - a [CI]": [f"{100 * d:+.1f} pp [{100 * lo:+.1f}, {100 * hi:+.1f}]"
                               for d, lo, hi in zip(effects.estimate, effects.ci_low, effects.ci_high)],
        "rate a / b": [f"{100 * a:.1f}% / {100 * b:.1f}%" for a, b in zip(effects.rate_a, effects.rate_b)],
        "Holm p": effects["p_holm"], "p": effects["p"], "units": effects["n_units"]})
    if len(effects):
        conf = float(effects["confidence"].iloc[0])
        s.tables[f"paired effects of stats run {latest} over {effects['kind'].iloc[0]} run "
                 f"{effects['source_run_id'].iloc[0]} ({100 * conf:g}% bootstrap CIs)"] = show
        s.charts.append(Chart(pd.DataFrame({"label": show["measure"] + ": " + show["compared (a vs b)"],
                                            "value": effects["estimate"] * 100, "low": effects["ci_low"] * 100,
                                            "high": effects["ci_high"] * 100}),
                              "Delta, percentage points (bootstrap CI)", f"stats run {latest}",
                              xlim=(-100, 100), zero_line=True))
        if effects["kind"].iloc[0] == "gate":
            _demo(s, effects["condition_a"])
    if r.has("stats_agreement") and r.scalar("select count(*) from stats_agreement where run_id = ?", [latest]):
        s.tables["judge vs human agreement"] = r.frame("select * exclude (run_id) from stats_agreement where run_id = ?",
                                                       [latest])
    s.queries += [("every effect of every stats run", "select * from stats_report order by written_at desc"),
                  ("run stability (per-run Delta)", f"select * from stats_stability where run_id = '{latest}'")]


SECTIONS: list[SectionSpec] = [
    SectionSpec("runs", "Runs", _runs),
    SectionSpec("false-delivery", "False delivery by arm", _false_delivery),
    SectionSpec("audit", "Audit executions by verdict", _audit),
    SectionSpec("v4v", "V4V certification", _v4v),
    SectionSpec("leak", "Leak verdicts", _leak),
    SectionSpec("agreement", "Statistics and agreement", _stats),
]


def register(spec: SectionSpec, *, after: str | None = None) -> None:
    """Add a section (e.g. from ``acceptgate.report.seed004``): its collector fills a ``Section``'s
    tables, notes, charts and queries; the renderers need nothing else. Placed after ``after``'s key,
    else last; registering a key again replaces it."""
    keys = [x.key for x in SECTIONS]
    if spec.key in keys:
        SECTIONS[keys.index(spec.key)] = spec
        return
    SECTIONS.insert(keys.index(after) + 1 if after in keys else len(SECTIONS), spec)


def _plugins() -> None:
    """Section modules that register themselves when present."""
    import importlib

    for name in ("acceptgate.report.seed004",):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


def collect(snapshot: str | Path) -> ReportData:
    """Read every section from a published snapshot (``<warehouse>.snapshot.duckdb``)."""
    snapshot = Path(snapshot)
    if not snapshot.is_file():
        raise InvalidInput("no published snapshot here: run a flow (acceptgate audit, gate, serve) first",
                           source=str(snapshot))
    _plugins()
    with warehouse.connect(snapshot, read_only=True) as con:
        reader = Reader(con)
        published = (reader.scalar("select max(published_at) from snapshot_info")
                     if reader.has("snapshot_info") else None)
        sections = []
        for spec in SECTIONS:
            section = Section(spec.key, spec.title)
            spec.collect(reader, section)
            if not section.ran and not section.note:
                section.note = spec.empty
            sections.append(section)
    return ReportData(snapshot, str(published) if published else "unknown", sections)
