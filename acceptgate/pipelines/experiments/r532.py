"""Seed 000's R532 arithmetic: false delivery over all tasks and over delivered tasks, and the relative
cut with one denominator ("about 43 %, not halved"), from any gate run and from the seed's own counts."""

from __future__ import annotations

import dataclasses
import os

from acceptgate.gates import delivery
from acceptgate.store import warehouse
from acceptgate.gates.delivery import ArmSummary, GateCut, pct
from acceptgate._util.errors import InvalidInput
from acceptgate.pipelines.experiments.result import ExperimentResult, Row

# The seed's figures, as its table prints them (seed 000, "假交付率").
SEED_FIGURES = {"gated_all": "14.4%", "gated_delivered": "14.8%", "baseline_all": "25.2%",
                "cut": "about 40% (43%), not halved"}


def rows(cut: GateCut, *, seeded: bool, basis: str = "measured") -> list[Row]:
    """The four R532 rows for a cut; the seed's figures beside them only for conform vs off. ``basis``:
    measured for a gate run's deliveries, demonstration for the seed's own counts (the arithmetic)."""
    g, b = cut.gated, cut.baseline
    seed = SEED_FIGURES if seeded else {}
    refuses = "" if b.refused else " (it refuses nothing here: over all tasks = over delivered)"
    return [dataclasses.replace(r, basis=basis) for r in [
        Row("gated/false_over_all", f"{g.arm.upper()} false delivery / all tasks", seed.get("gated_all"),
            g.false_rate_over_all_tasks, f"{pct(g.false_rate_over_all_tasks)} ({g.false_deliveries}/{g.tasks})",
            "share", g.false_deliveries, g.tasks, g.as_row()),
        Row("gated/false_over_delivered", f"{g.arm.upper()} false delivery / delivered", seed.get("gated_delivered"),
            g.false_rate_over_delivered,
            f"{pct(g.false_rate_over_delivered)} ({g.false_deliveries}/{g.delivered})", "share",
            g.false_deliveries, g.delivered, g.as_row()),
        Row("baseline/false_over_all", f"{b.arm.upper()} false delivery / all tasks{refuses}", seed.get("baseline_all"),
            b.false_rate_over_all_tasks, f"{pct(b.false_rate_over_all_tasks)} ({b.false_deliveries}/{b.tasks})",
            "share", b.false_deliveries, b.tasks, b.as_row()),
        Row("cut", f"relative cut, {g.arm.upper()} vs {b.arm.upper()}, same denominator", seed.get("cut"),
            cut.relative_cut, cut.verdict(), "ratio", None, None,
            {"halved": cut.halved}),
    ]]


def golden() -> ExperimentResult:
    """The seed's own counts (R532: 836 tasks; CONFORM 811 accepted, 120 false; OFF 625 accepted, 211 false)."""
    counts = delivery.SEED_R532
    res = ExperimentResult("r532", "seed counts", {"counts": counts})
    res.inputs = [f"{k}\t{v}" for k, v in sorted(counts.items())]
    # the seed's own counts through the arithmetic: true by construction, a check of the arithmetic only
    res.rows = [Row(f"golden/{r.key}", f"seed R532: {r.label}", r.seed_figure, r.measured, r.measured_text,
                    r.unit, r.numerator, r.denominator, r.detail, basis="demonstration")
                for r in rows(delivery.seed_r532_cut(counts), seeded=True, basis="demonstration")]
    return res


def from_gate_run(path: str | os.PathLike, gate_run: str | None, *, gated: str = "conform",
                  baseline: str = "off") -> ExperimentResult:
    """The same arithmetic on a gate run's deliveries, with the golden case's rows after them."""
    from acceptgate.pipelines.stats import latest_gate_run

    with warehouse.connect(path, read_only=True) as con:
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        if "deliveries" not in tables:
            raise InvalidInput("the warehouse has no gate results (table deliveries)", source=str(path))
        gate_run = gate_run or latest_gate_run(con, baseline)
        got = con.execute(
            "select arm, count(*), count(*) filter (where delivered), count(*) filter (where refused), "
            "count(*) filter (where false_delivery), string_agg(task_id || ':' || delivered || ':' || false_delivery, "
            "',' order by task_id) from deliveries where run_id = ? group by arm", [gate_run]).fetchall()
    if not got:
        raise InvalidInput(f"no deliveries for gate run {gate_run!r}", source=str(path), field="--gate-run")
    summaries = {arm: ArmSummary(arm, n, d, r, f) for arm, n, d, r, f, _ in got}
    try:
        cut = delivery.gate_cut(summaries, gated, baseline)
    except (KeyError, ValueError) as exc:
        raise InvalidInput(f"gate run {gate_run}: {exc.args[0]}", field="--gate-run") from None
    res = ExperimentResult("r532", gate_run, {"gated": gated, "baseline": baseline})
    res.inputs = sorted(f"{arm}\t{tasks}" for arm, *_, tasks in got if arm in (gated, baseline))
    res.rows = rows(cut, seeded=(gated, baseline) == ("conform", "off")) + golden().rows
    res.notes.append(f"gate run {gate_run}: {gated} vs {baseline} over {cut.gated.tasks} tasks "
                     "(seed figures shown beside a conform-vs-off run for comparison, not as its expected values)")
    return res
